"""The dump v6 vocabulary: member names, metadata, dump uids and the JSON shapes shared by both sides.

Shapes follow Meilisearch's `dump` crate (serde names, which differ per type, on purpose):

- `metadata.json`: camelCase, `{"dumpVersion": "V6", "dbVersion": "1.50.0", "dumpDate": RFC 3339}`;
- a key line (`meilisearch_types::keys::Key`): snake_case and RFC 3339 dates,
  `{"description"?, "name"?, "uid", "actions", "indexes", "expires_at", "created_at", "updated_at"}`
  (`name`/`description` are left out when null);
- an index `metadata.json`: camelCase, `{"uid", "primaryKey", "createdAt", "updatedAt"}`;
- task and batch lines: see `hanzo_engine.scheduler.dump_records`, which maps them to the queue's records.

The dump uid is the dump's start time, `YYYYMMDD-HHMMSSmmm` in UTC.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, Final

from hanzo_engine.apitypes.tasks import format_timestamp, parse_timestamp

DUMP_VERSION: Final = "V6"
# Versions a Meilisearch reader may meet; only V6 is read here (older ones are converted by Meilisearch).
KNOWN_VERSIONS: Final = ("V1", "V2", "V3", "V4", "V5", "V6")

METADATA: Final = "metadata.json"
INSTANCE_UID: Final = "instance_uid.uuid"
KEYS: Final = "keys.jsonl"
EXPERIMENTAL_FEATURES: Final = "experimental-features.json"
WEBHOOKS: Final = "webhooks.json"
NETWORK: Final = "network.json"
TASKS_QUEUE: Final = "tasks/queue.jsonl"
UPDATE_FILES_DIR: Final = "tasks/update_files"
BATCHES_QUEUE: Final = "batches/queue.jsonl"
INDEXES_DIR: Final = "indexes"

# `/experimental-features` defaults (docs/api-contract.md §9.1): what a dump holds when nothing was toggled.
DEFAULT_FEATURES: Final[dict[str, bool]] = {
    "metrics": False,
    "logsRoute": False,
    "editDocumentsByFunction": False,
    "containsFilter": False,
    "dynamicSearchRules": False,
    "network": False,
    "getTaskDocumentsRoute": False,
    "taskQueueCompactionRoute": False,
    "compositeEmbedders": False,
    "chatCompletions": False,
    "multimodal": False,
    "foreignKeys": False,
    "disableDocumentsFetchQueue": False,
    "legacySearch": False,
    "renderRoute": False,
}


class DumpFormatError(Exception):
    """The archive is not a dump this build can read (bad member, unsupported version...)."""


def update_file_member(task_uid: int) -> str:
    return f"{UPDATE_FILES_DIR}/{task_uid}.jsonl"


def index_member(uid: str, name: str) -> str:
    return f"{INDEXES_DIR}/{uid}/{name}"


def dump_uid(ns: int) -> str:
    """`YYYYMMDD-HHMMSSmmm` (UTC) of a unix-nanosecond time, Meilisearch's dump uid."""
    moment = datetime.fromtimestamp(ns // 1_000_000_000, UTC)
    millis = (ns // 1_000_000) % 1000
    return moment.strftime("%Y%m%d-%H%M%S") + f"{millis:03d}"


def dump_metadata(db_version: str, dump_date_ns: int) -> dict[str, str]:
    return {"dumpVersion": DUMP_VERSION, "dbVersion": db_version, "dumpDate": format_timestamp(dump_date_ns)}


def check_metadata(metadata: Any) -> dict[str, Any]:
    """The parsed `metadata.json`, or DumpFormatError when it is not a V6 dump's."""
    if not isinstance(metadata, dict) or "dumpVersion" not in metadata:
        raise DumpFormatError("`metadata.json` is missing `dumpVersion`")
    version = metadata["dumpVersion"]
    if version != DUMP_VERSION:
        if version in KNOWN_VERSIONS:
            raise DumpFormatError(
                f"dump version {version} is not supported by hanzo-engine, which reads {DUMP_VERSION} dumps "
                "(Meilisearch v1.x). Import it into Meilisearch v1.x and create a new dump there."
            )
        raise DumpFormatError(f"unknown dump version `{version}`")
    return metadata


def parse_instance_uid(text: str) -> str | None:
    """The instance uid file's content as a hyphenated UUID, None when it is not one."""
    try:
        return str(uuid.UUID(text.strip()))
    except ValueError:
        return None


def index_metadata(uid: str, primary_key: str | None, created_at: int, updated_at: int) -> dict[str, Any]:
    return {
        "uid": uid,
        "primaryKey": primary_key,
        "createdAt": format_timestamp(created_at),
        "updatedAt": format_timestamp(updated_at),
    }


def parse_index_metadata(metadata: Any) -> tuple[str, str | None, int, int]:
    """(uid, primaryKey, createdAt ns, updatedAt ns) of an index `metadata.json`."""
    try:
        return (
            str(metadata["uid"]),
            metadata.get("primaryKey"),
            parse_timestamp(metadata["createdAt"]),
            parse_timestamp(metadata["updatedAt"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise DumpFormatError(f"malformed index metadata: {exc}") from None


def key_line(record: dict[str, Any]) -> dict[str, Any]:
    """A key line of `keys.jsonl` from a key record (`auth.Key.to_record()`: camelCase, nanoseconds)."""
    line: dict[str, Any] = {}
    if record.get("description") is not None:
        line["description"] = record["description"]
    if record.get("name") is not None:
        line["name"] = record["name"]
    line["uid"] = record["uid"]
    line["actions"] = list(record["actions"])
    line["indexes"] = list(record["indexes"])
    expires = record.get("expiresAt")
    line["expires_at"] = None if expires is None else format_timestamp(expires)
    line["created_at"] = format_timestamp(record["createdAt"])
    line["updated_at"] = format_timestamp(record["updatedAt"])
    return line


def key_record(line: Any) -> dict[str, Any]:
    """The key record (`auth.Key.from_record` input) of a `keys.jsonl` line; DumpFormatError if malformed."""
    try:
        expires = line.get("expires_at")
        return {
            "uid": str(uuid.UUID(line["uid"])),
            "name": line.get("name"),
            "description": line.get("description"),
            "actions": list(line["actions"]),
            "indexes": list(line["indexes"]),
            "expiresAt": None if expires is None else parse_timestamp(expires),
            "createdAt": parse_timestamp(line["created_at"]),
            "updatedAt": parse_timestamp(line["updated_at"]),
        }
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise DumpFormatError(f"malformed key line: {exc}") from None
