"""Dynamic search rules (pinning rules): their durable storage and the `dsrUpdate` / `dsrClear` tasks.

Rules live in the `dynamic-search-rules` database of the tasks environment (rule uid -> stored rule), so
every server process reads the same rules, snapshots carry them, and a task's effect is committed in the
same write transaction as its final status (a crash never leaves a rule written by an unfinished task).

A stored rule is the public rule object (`uid`, `description`?, `precedence`?, `active`, `conditions`,
`actions`) plus `lastUpdatedAt` as UTC nanoseconds. Time bounds in `conditions.time` are kept as
`{"ns": <UTC nanoseconds>, "offset": <seconds east of UTC>}` so that they render with the offset they were
written with, as Meilisearch does.

The tasks report `indexUid: ".meili_dsr"`: Meilisearch keeps the rules in that hidden internal index.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

import lmdb
import msgspec

from hanzo_engine.apitypes.tasks import format_timestamp
from hanzo_engine.engine.index import now_ns

from .store import Batch, Task, TaskStore

if TYPE_CHECKING:
    from .processing import BatchOutcome
    from .scheduler import Scheduler

log = logging.getLogger("hanzo_engine.dynamic_search_rules")

DSR_INDEX_UID: Final = ".meili_dsr"
_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.decode

Rule = dict[str, Any]


def _db(store: TaskStore) -> Any:
    return getattr(store, "db_dsr", None)


# -- reads ------------------------------------------------------------------------------------------


def get_rule(store: TaskStore, uid: str) -> Rule | None:
    db = _db(store)
    if db is None:  # a read-only view opened before the database existed: no rule was ever written
        return None
    with store.env.begin() as txn:
        raw = txn.get(uid.encode(), db=db)
    return None if raw is None else _decode(raw)


def _iter_rules(store: TaskStore, txn: lmdb.Transaction) -> Iterator[Rule]:
    db = _db(store)
    if db is None:
        return
    with txn.cursor(db=db) as cursor:
        for _key, raw in cursor:
            yield _decode(raw)


def all_rules(store: TaskStore) -> list[Rule]:
    """Every stored rule, most recently written first (the list route's order)."""
    if store.db_dsr is None:  # a search worker's view of a tasks env written before rules existed
        return []
    with store.env.begin() as txn:
        rules = list(_iter_rules(store, txn))
    rules.sort(key=lambda rule: (-rule.get("lastUpdatedAt", 0), rule["uid"]))
    return rules


# -- the public view ---------------------------------------------------------------------------------


def format_bound(bound: dict[str, int]) -> str:
    """An RFC 3339 date-time as the `time` crate writes it, in the offset it was given with."""
    offset = bound["offset"]
    text = format_timestamp(bound["ns"] + offset * 1_000_000_000)
    if offset == 0:
        return text
    sign = "+" if offset > 0 else "-"
    hours, minutes = divmod(abs(offset) // 60, 60)
    return f"{text[:-1]}{sign}{hours:02d}:{minutes:02d}"


def conditions_view(conditions: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    time = conditions.get("time")
    if time is not None:
        out["time"] = {key: format_bound(time[key]) for key in ("start", "end") if time.get(key) is not None}
    for key in ("query", "filter"):
        if conditions.get(key) is not None:
            out[key] = conditions[key]
    return out


def rule_view(rule: Rule) -> dict[str, Any]:
    """The rule object of GET and list answers, in Meilisearch's key order, unset optionals omitted."""
    out: dict[str, Any] = {"uid": rule["uid"]}
    if rule.get("description") is not None:
        out["description"] = rule["description"]
    out["lastUpdatedAt"] = format_timestamp(rule["lastUpdatedAt"]) if rule.get("lastUpdatedAt") else None
    if rule.get("precedence") is not None:
        out["precedence"] = rule["precedence"]
    out["active"] = rule.get("active", True)
    out["conditions"] = conditions_view(rule.get("conditions") or {})
    out["actions"] = rule.get("actions") or []
    return out


# -- writes (in the tasks env's finishing transaction) -------------------------------------------------


def apply_update(old: Rule | None, uid: str, update: dict[str, Any], updated_at: int) -> Rule:
    """Meilisearch's `apply_update`: an absent key keeps the old value, `null` resets it, a value replaces
    it (`conditions` and `actions` whole)."""
    rule: Rule = (
        dict(old) if old is not None else {"uid": uid, "active": True, "conditions": {}, "actions": []}
    )
    for key in ("description", "precedence"):
        if key in update:
            if update[key] is None:
                rule.pop(key, None)
            else:
                rule[key] = update[key]
    if "active" in update:
        rule["active"] = True if update["active"] is None else update["active"]
    if "conditions" in update:
        rule["conditions"] = update["conditions"] or {}
    if "actions" in update:
        rule["actions"] = update["actions"] or []
    rule["lastUpdatedAt"] = updated_at
    return rule


def _apply_task(store: TaskStore, txn: lmdb.Transaction, task: Task) -> dict[str, Any] | None:
    """Apply one task's change; returns its final details."""
    db = store.db_dsr
    kind = task["kind"]
    if task["type"] == "dsrClear":
        deleted = txn.stat(db)["entries"]
        txn.drop(db, delete=False)
        return dict(task.get("details") or {}, deletedDocuments=deleted)
    uid: str = kind["uid"]
    if kind["op"] == "delete":
        txn.delete(uid.encode(), db=db)
    else:
        raw = txn.get(uid.encode(), db=db)
        old = None if raw is None else _decode(raw)
        txn.put(uid.encode(), _encode(apply_update(old, uid, kind["update"], now_ns())), db=db)
    details: dict[str, Any] | None = task.get("details")
    return details


def apply(sched: Scheduler, tasks: list[Task]) -> BatchOutcome:
    """A batch of `dsrUpdate` / `dsrClear` tasks: applied in uid order in the tasks env's finishing
    transaction, where each task's final status is written too."""
    from .processing import BatchOutcome, succeeded

    outcome = BatchOutcome({t["uid"]: succeeded(t.get("details")) for t in tasks})

    def in_txn(txn: lmdb.Transaction, batch: Batch, now: int) -> list[Task]:
        for task in sorted(tasks, key=lambda t: t["uid"]):
            outcome.results[task["uid"]] = succeeded(_apply_task(sched.store, txn, task))
        return []

    outcome.on_tasks_txn = in_txn
    return outcome
