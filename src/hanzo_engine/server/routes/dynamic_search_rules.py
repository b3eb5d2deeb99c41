"""Dynamic search rule routes (= Meilisearch's `routes/dynamic_search_rules.rs`), experimental feature
`dynamicSearchRules`.

- `POST /dynamic-search-rules` lists (body `{offset, limit, filter: {query, active}}`);
- `DELETE /dynamic-search-rules` enqueues a `dsrClear` task;
- `GET /dynamic-search-rules/{uid}` shows one rule;
- `PATCH /dynamic-search-rules/{uid}` creates or updates a rule, `DELETE` removes it: `dsrUpdate` tasks.

As with Meilisearch's extractors, the body is validated before the feature gate is checked. The rules are
stored by the scheduler (`scheduler/dynamic_search_rules.py`) in the tasks environment.
"""

from __future__ import annotations

import re
from typing import Any, Final

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from hanzo_engine.apitypes.deserr import Field, InvalidValue, decode_json_body, deserialize_object
from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.apitypes.index_uid import is_valid_index_uid
from hanzo_engine.apitypes.tasks import format_timestamp, parse_timestamp
from hanzo_engine.scheduler import dynamic_search_rules as dsr

from ..app_state import custom_metadata, state
from ..features import feature_not_enabled, runtime_features
from ..http import JSONResponse, read_body

DISCUSSION: Final = "https://github.com/orgs/meilisearch/discussions/884"
FEATURE_LABEL: Final = "dynamic search rules"
WRITE_ACTION: Final = "Using the `/dynamic-search-rules` routes"

_ACTIONS_CODE: Final = "invalid_dynamic_search_rule_actions"
_CONDITIONS_CODE: Final = "invalid_dynamic_search_rule_conditions"


def check_feature(request: Request, action: str) -> None:
    """400 `feature_not_enabled` unless `dynamicSearchRules` is on."""
    if not runtime_features(request).enabled("dynamicSearchRules"):
        raise feature_not_enabled(action, FEATURE_LABEL, DISCUSSION)


def _rule_uid(request: Request) -> str | None:
    """The path's rule uid; None when invalid (it fails actix's path extraction: a 404 without a body)."""
    uid: str = request.path_params["rule_uid"]
    return uid if is_valid_index_uid(uid) else None


# -- the PATCH body --------------------------------------------------------------------------------

_OFFSET_RE: Final = re.compile(r".*(?:[Zz]|([+-])(\d{2}):(\d{2}))")


def _time_bound(text: str) -> dict[str, int]:
    try:
        ns = parse_timestamp(text)
    except ValueError:
        raise InvalidValue(
            f"`{text}` is an invalid date-time. It should follow the YYYY-MM-DD or RFC 3339 date-time format."
        ) from None
    m = _OFFSET_RE.fullmatch(text)
    offset = 0
    if m is not None and m.group(1) is not None:
        offset = (int(m.group(2)) * 3600 + int(m.group(3)) * 60) * (-1 if m.group(1) == "-" else 1)
    return {"ns": ns, "offset": offset}


def _time_display(bound: dict[str, int]) -> str:
    """`OffsetDateTime`'s Display (`2025-11-28 0:00:00.0 +00:00:00`), used in validation messages."""
    offset = bound["offset"]
    local = format_timestamp(bound["ns"] + offset * 1_000_000_000)[:-1]
    date, _, clock = local.partition("T")
    hms, _, fraction = clock.partition(".")
    hour, minute, second = hms.split(":")
    sign = "-" if offset < 0 else "+"
    oh, rest = divmod(abs(offset), 3600)
    om, osec = divmod(rest, 60)
    return f"{date} {int(hour)}:{minute}:{second}.{fraction or '0'} {sign}{oh:02d}:{om:02d}:{osec:02d}"


_TIME_FIELDS: Final = (
    Field("start", "string", _CONDITIONS_CODE, nullable=True, validate=_time_bound),
    Field("end", "string", _CONDITIONS_CODE, nullable=True, validate=_time_bound),
)
_QUERY_FIELDS: Final = (
    Field("isEmpty", "boolean", _CONDITIONS_CODE, nullable=True),
    Field("words", "string", _CONDITIONS_CODE, nullable=True),
)
_FILTER_FIELDS: Final = (Field("values", "object", _CONDITIONS_CODE, default=dict),)
_CONDITION_FIELDS: Final = (
    Field("time", "object", _CONDITIONS_CODE, nullable=True, fields=_TIME_FIELDS),
    Field("query", "object", _CONDITIONS_CODE, nullable=True, fields=_QUERY_FIELDS),
    Field("filter", "object", _CONDITIONS_CODE, nullable=True, fields=_FILTER_FIELDS),
)
_SELECTOR_FIELDS: Final = (
    Field("indexUid", "string", _ACTIONS_CODE, nullable=True),
    Field("id", "string", _ACTIONS_CODE, required=True, missing_code=_ACTIONS_CODE),
)
_RULE_ACTION_FIELDS: Final = (
    Field(
        "selector",
        "object",
        _ACTIONS_CODE,
        required=True,
        missing_code=_ACTIONS_CODE,
        fields=_SELECTOR_FIELDS,
    ),
    Field("action", "object", _ACTIONS_CODE, required=True, missing_code=_ACTIONS_CODE),
)
_PIN_FIELDS: Final = (
    Field("type", "string", _ACTIONS_CODE, required=True, missing_code=_ACTIONS_CODE, choices=("pin",)),
    Field("position", "u32", _ACTIONS_CODE, required=True, missing_code=_ACTIONS_CODE),
)
_RULE_FIELDS: Final = (
    Field("description", "string", "invalid_dynamic_search_rule_description", nullable=True),
    Field("precedence", "u64", "invalid_dynamic_search_rule_priority", nullable=True),
    Field("active", "boolean", "invalid_dynamic_search_rule_active", nullable=True),
    Field("conditions", "object", _CONDITIONS_CODE, nullable=True),
    Field("actions", "array", _ACTIONS_CODE, nullable=True),
)


def _conditions(value: dict[str, Any]) -> dict[str, Any]:
    out = deserialize_object(value, _CONDITION_FIELDS, unknown_code=_CONDITIONS_CODE, path=".conditions")
    query = out.get("query")
    if query is not None:
        query = {k: v for k, v in query.items() if v is not None}
        if query.get("isEmpty") is True and "words" in query:
            raise MeiliError(
                "bad_request",
                "Invalid value at `.conditions.query`: either `isEmpty` or `words` "
                "can be used, not both at once",
            )
    time = out.get("time")
    if time is not None:
        time = {k: v for k, v in time.items() if v is not None}
        start, end = time.get("start"), time.get("end")
        if start is not None and end is not None and start["ns"] > end["ns"]:
            raise MeiliError(
                "bad_request",
                f"Invalid value at `.conditions.time`: `end` (`{_time_display(end)}`) "
                f"should be later than `start` (`{_time_display(start)}`)",
            )
    stored: dict[str, Any] = {}
    for key, item in (("time", time), ("query", query), ("filter", out.get("filter"))):
        if item is not None:
            stored[key] = item
    return stored


def _actions(value: list[Any]) -> list[dict[str, Any]]:
    out = []
    for i, item in enumerate(value):
        path = f".actions[{i}]"
        rule_action = deserialize_object(item, _RULE_ACTION_FIELDS, unknown_code=_ACTIONS_CODE, path=path)
        selector = {k: v for k, v in rule_action["selector"].items() if v is not None}
        index_uid = selector.get("indexUid")
        if index_uid is not None and not is_valid_index_uid(index_uid):
            raise MeiliError(
                _ACTIONS_CODE,
                f"Invalid value at `{path}.selector.indexUid`: `{index_uid}` is not a valid index uid. Index uid "
                "can be an integer or a string containing only alphanumeric characters, hyphens (-) and "
                "underscores (_), and can not be more than 512 bytes.",
            )
        action = deserialize_object(
            rule_action["action"], _PIN_FIELDS, unknown_code=_ACTIONS_CODE, path=f"{path}.action"
        )
        out.append({"selector": selector, "action": {"type": action["type"], "position": action["position"]}})
    return out


def parse_rule_update(body: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The PATCH body as (stored update, submitted keys for the task details); 400 with Meilisearch's codes."""
    raw = deserialize_object(body, _RULE_FIELDS, unknown_code="bad_request")
    update: dict[str, Any] = {}
    for key, value in raw.items():
        if value is None:
            update[key] = None
        elif key == "conditions":
            update[key] = _conditions(value)
        elif key == "actions":
            update[key] = _actions(value)
        else:
            update[key] = value
    submitted = {key: value for key, value in update.items()}
    if isinstance(submitted.get("conditions"), dict):
        submitted["conditions"] = dsr.conditions_view(submitted["conditions"])
    return update, submitted


# -- the list body ---------------------------------------------------------------------------------

_LIST_FILTER_FIELDS: Final = (
    Field("query", "string", "invalid_dynamic_search_rule_filter_query", nullable=True),
    Field("active", "boolean", "invalid_dynamic_search_rule_filter_active", nullable=True),
)
_LIST_FIELDS: Final = (
    Field("offset", "usize", "invalid_dynamic_search_rule_offset", default=0),
    Field("limit", "usize", "invalid_dynamic_search_rule_limit", default=20),
    Field(
        "filter",
        "object",
        "invalid_dynamic_search_rule_filter",
        nullable=True,
        fields=_LIST_FILTER_FIELDS,
        unknown_code="invalid_dynamic_search_rule_filter",
    ),
)

_WORD_RE: Final = re.compile(r"\w+")


def _words(text: str) -> list[str]:
    return [w.casefold() for w in _WORD_RE.findall(text)]


def _matches_query(rule: dict[str, Any], query: str) -> bool:
    """Every word of `query` is a word of the rule's description or `conditions.query.words` (the last
    one as a prefix, as a search-as-you-type query)."""
    wanted = _words(query)
    if not wanted:
        return True
    text = " ".join(
        filter(
            None, [rule.get("description"), ((rule.get("conditions") or {}).get("query") or {}).get("words")]
        )
    )
    have = set(_words(text))
    *full, last = wanted
    return all(w in have for w in full) and any(h.startswith(last) for h in have)


# -- routes ----------------------------------------------------------------------------------------


async def list_rules(request: Request) -> Response:
    raw = await read_body(request)
    body = decode_json_body(raw, request.headers.get("content-type")) if raw.strip() else {}
    params = deserialize_object(body, _LIST_FIELDS, unknown_code="bad_request")
    check_feature(request, "Calling the `POST /dynamic-search-rules` route")
    rules = await run_in_threadpool(dsr.all_rules, state(request).scheduler.store)
    flt = params.get("filter") or {}
    if flt.get("active") is not None:
        rules = [r for r in rules if r.get("active", True) is flt["active"]]
    if flt.get("query") is not None:
        rules = [r for r in rules if _matches_query(r, flt["query"])]
    offset, limit = params["offset"], params["limit"]
    page = [dsr.rule_view(r) for r in rules[offset : offset + limit]]
    return JSONResponse({"results": page, "offset": offset, "limit": limit, "total": len(rules)})


async def clear_rules(request: Request) -> Response:
    meta = custom_metadata(request)
    check_feature(request, WRITE_ACTION)
    task = await run_in_threadpool(
        state(request).scheduler.register,
        "dsrClear",
        dsr.DSR_INDEX_UID,
        details={"deletedDocuments": None},
        kind={},
        custom_metadata=meta,
    )
    return JSONResponse(task, status_code=202)


async def get_rule(request: Request) -> Response:
    uid = _rule_uid(request)
    if uid is None:
        return Response(status_code=404)
    check_feature(request, "Calling the `GET /dynamic-search-rules/{:ruleUid}` route")
    rule = await run_in_threadpool(dsr.get_rule, state(request).scheduler.store, uid)
    if rule is None:
        raise MeiliError("dynamic_search_rule_not_found", f"Dynamic search rule `{uid}` not found.")
    return JSONResponse(dsr.rule_view(rule))


async def update_rule(request: Request) -> Response:
    uid = _rule_uid(request)
    if uid is None:
        return Response(status_code=404)
    meta = custom_metadata(request)
    body = decode_json_body(await read_body(request), request.headers.get("content-type"))
    update, submitted = parse_rule_update(body)
    check_feature(request, WRITE_ACTION)
    task = await run_in_threadpool(
        state(request).scheduler.register,
        "dsrUpdate",
        dsr.DSR_INDEX_UID,
        details={"rule": submitted, "updatedRules": 1},
        kind={"op": "update", "uid": uid, "update": update},
        custom_metadata=meta,
    )
    return JSONResponse(task, status_code=202)


async def delete_rule(request: Request) -> Response:
    uid = _rule_uid(request)
    if uid is None:
        return Response(status_code=404)
    meta = custom_metadata(request)
    if uid is None:
        return Response(status_code=404)
    check_feature(request, WRITE_ACTION)
    task = await run_in_threadpool(
        state(request).scheduler.register,
        "dsrUpdate",
        dsr.DSR_INDEX_UID,
        details={"updatedRules": 1},
        kind={"op": "delete", "uid": uid},
        custom_metadata=meta,
    )
    return JSONResponse(task, status_code=202)
