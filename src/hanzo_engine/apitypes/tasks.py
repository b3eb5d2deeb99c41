"""Task vocabulary (= `meilisearch-types::tasks` + the task filters of `routes/tasks.rs`).

Task kinds and statuses with their wire names, the date and duration formats of task views, and the
query language of `GET /tasks`, `GET /batches`, `POST /tasks/cancel` and `DELETE /tasks`:

- dates are `time`'s RFC 3339: UTC shown with `Z`, the fraction printed only when non-zero and
  without trailing zeros (`2024-08-08T16:37:09.971853Z`, `2024-08-08T16:37:09Z`);
- durations are Meilisearch's ISO-8601 subset: days, then seconds with 3, 6 or 9 fraction digits
  (`PT0.040S`, `P1DT3.500S`), never hours or minutes;
- filters AND across parameters and OR within one; `*` anywhere in a list means "no filter"; date
  bounds are exclusive and a bare `after*` date means "after that whole day".

Timestamps are integers of nanoseconds since the Unix epoch everywhere in the engine.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Literal, TypeVar
from urllib.parse import urlencode

from hanzo_engine.apitypes.deserr import (
    U32_MAX,
    invalid_parameter,
    parse_bool_param,
    parse_uint_param,
    split_comma_list,
    unknown_parameter,
)
from hanzo_engine.apitypes.errors import MeiliError, invalid_index_uid
from hanzo_engine.apitypes.index_uid import is_valid_index_uid

__all__ = [
    "DEFAULT_TASK_LIMIT",
    "FINISHED_STATUSES",
    "INDEX_SCOPED_TYPES",
    "TASK_STATUSES",
    "TASK_TYPES",
    "TaskQuery",
    "format_duration",
    "format_timestamp",
    "original_filter",
    "parse_batch_uid",
    "parse_filter_date",
    "parse_task_query",
    "parse_task_uid",
    "parse_timestamp",
    "task_matches",
]

# Meilisearch's `Kind` enum order: error messages list them in this order.
TASK_TYPES: Final[tuple[str, ...]] = (
    "documentAdditionOrUpdate",
    "documentEdition",
    "documentDeletion",
    "settingsUpdate",
    "indexCreation",
    "indexDeletion",
    "indexUpdate",
    "indexSwap",
    "taskCancelation",
    "taskDeletion",
    "dumpCreation",
    "snapshotCreation",
    "export",
    "upgradeDatabase",
    "indexCompaction",
    "networkTopologyChange",
    "dsrUpdate",
    "dsrClear",
)
TASK_STATUSES: Final[tuple[str, ...]] = ("enqueued", "processing", "succeeded", "failed", "canceled")
FINISHED_STATUSES: Final[frozenset[str]] = frozenset({"succeeded", "failed", "canceled"})
# `Kind::related_to_one_index`: only these survive an `indexUids` filter
INDEX_SCOPED_TYPES: Final[frozenset[str]] = frozenset(
    {
        "documentAdditionOrUpdate",
        "documentEdition",
        "documentDeletion",
        "settingsUpdate",
        "indexCreation",
        "indexDeletion",
        "indexUpdate",
        "indexCompaction",
    }
)
DEFAULT_TASK_LIMIT: Final = 20

_NS: Final = 1_000_000_000
_DAY_NS: Final = 86_400 * _NS

# --------------------------------------------------------------------------------------------------
# Calendar arithmetic (proleptic Gregorian, any year; Howard Hinnant's algorithms)
# --------------------------------------------------------------------------------------------------


def _days_from_civil(year: int, month: int, day: int) -> int:
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146_097 + doe - 719_468


def _civil_from_days(days: int) -> tuple[int, int, int]:
    days += 719_468
    era = days // 146_097
    doe = days - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + (3 if mp < 10 else -9)
    return yoe + era * 400 + (month <= 2), month, day


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


# --------------------------------------------------------------------------------------------------
# Timestamps and durations
# --------------------------------------------------------------------------------------------------


def format_timestamp(ns: int) -> str:
    """RFC 3339 in UTC as the `time` crate writes it: fraction only when non-zero, zeros trimmed."""
    seconds, nanos = divmod(ns, _NS)
    days, second_of_day = divmod(seconds, 86_400)
    year, month, day = _civil_from_days(days)
    if not 0 <= year <= 9999:
        raise ValueError(f"timestamp {ns} is outside the years 0000-9999 that RFC 3339 can show")
    hour, rest = divmod(second_of_day, 3600)
    minute, second = divmod(rest, 60)
    fraction = f".{nanos:09d}".rstrip("0") if nanos else ""
    return f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}{fraction}Z"


# `time`'s Rfc3339 parser: any single byte separates date and time; `Z` in either case; the fraction
# needs one digit and keeps at most nine; offsets are `±HH:MM`.
_RFC3339_RE: Final = re.compile(
    rb"(\d{4})-(\d{2})-(\d{2}).(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2}):(\d{2}))", re.DOTALL
)
_DATE_RE: Final = re.compile(r"([+-]?)(\d{4})-(\d{2})-(\d{2})", re.ASCII)


def _parse_rfc3339(text: str) -> int | None:
    m = _RFC3339_RE.fullmatch(text.encode())
    if m is None:
        return None
    year, month, day, hour, minute, second = (int(g) for g in m.group(1, 2, 3, 4, 5, 6))
    nanos = int((m.group(7) or b"0")[:9].ljust(9, b"0"))
    offset = 0
    if m.group(8) is not None:
        offset_hour, offset_minute = int(m.group(9)), int(m.group(10))
        if offset_hour > 23 or offset_minute > 59:
            return None
        offset = (offset_hour * 3600 + offset_minute * 60) * (-1 if m.group(8) == b"-" else 1)
    leap = second == 60
    if leap:  # `time` stands a leap second in as 23:59:59.999999999 UTC on a month's last day
        second, nanos = 59, 999_999_999
    if not (1 <= month <= 12 and 1 <= day <= _days_in_month(year, month)):
        return None
    if hour > 23 or minute > 59 or second > 59:
        return None
    ns = (_days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset) * _NS
    ns += nanos
    if leap:
        utc_year, utc_month, utc_day = _civil_from_days(ns // _DAY_NS)
        if ns % _DAY_NS != _DAY_NS - 1 or utc_day != _days_in_month(utc_year, utc_month):
            return None
    return ns


def parse_timestamp(text: str) -> int:
    """Parse an RFC 3339 date-time (any offset) to UTC nanoseconds; ValueError when invalid."""
    ns = _parse_rfc3339(text)
    if ns is None:
        raise ValueError(f"`{text}` is not an RFC 3339 date-time")
    return ns


def parse_filter_date(text: str, *, after: bool) -> int | None:
    """A task-filter bound: RFC 3339, or `YYYY-MM-DD` meaning midnight UTC (`after*`: the next day)."""
    ns = _parse_rfc3339(text)
    if ns is not None:
        return ns
    m = _DATE_RE.fullmatch(text)
    if m is None:
        return None
    year = int(m.group(2)) * (-1 if m.group(1) == "-" else 1)
    month, day = int(m.group(3)), int(m.group(4))
    if not (1 <= month <= 12 and 1 <= day <= _days_in_month(year, month)):
        return None
    days = _days_from_civil(year, month, day)
    # the day after 9999-12-31 does not exist for `time`, which then keeps the date unchanged
    if after and (year, month, day) != (9999, 12, 31):
        days += 1
    return days * _DAY_NS


def format_duration(ns: int | None) -> str | None:
    """Meilisearch's ISO-8601 duration: `PT2S`, `PT0.040S`, `P1DT3.500S`, `P1D`; None if negative."""
    if ns is None or ns < 0:
        return None
    seconds, nanos = divmod(ns, _NS)
    days, seconds = divmod(seconds, 86_400)
    out = f"P{days}D" if days else "P"
    if seconds or nanos or not days:
        if nanos == 0:
            out += f"T{seconds}S"
        elif nanos % 1_000_000 == 0:
            out += f"T{seconds}.{nanos // 1_000_000:03d}S"
        elif nanos % 1_000 == 0:
            out += f"T{seconds}.{nanos // 1_000:06d}S"
        else:
            out += f"T{seconds}.{nanos:09d}S"
    return out


# --------------------------------------------------------------------------------------------------
# Path uids
# --------------------------------------------------------------------------------------------------


def parse_task_uid(text: str) -> int:
    """`/tasks/{uid}`: a u32 or 400 `invalid_task_uids`."""
    uid = parse_uint_param(text, U32_MAX)
    if uid is None:
        raise MeiliError(
            "invalid_task_uids", f"Task uid `{text}` is invalid. It should only contain numeric characters."
        )
    return uid


def parse_batch_uid(text: str) -> int:
    """`/batches/{uid}`: a u32 or 400 `invalid_batch_uids`."""
    uid = parse_uint_param(text, U32_MAX)
    if uid is None:
        raise MeiliError(
            "invalid_batch_uids", f"Batch uid `{text}` is invalid. It should only contain numeric characters."
        )
    return uid


# --------------------------------------------------------------------------------------------------
# Task filters
# --------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class TaskQuery:
    """Parsed filters. None means "not filtered" (absent or `*`); an empty set matches nothing.

    Date bounds are exclusive, in UTC nanoseconds. `limit`, `from_` and `reverse` only page results
    (`GET /tasks`, `GET /batches`); they never take part in `task_matches` nor in `total`.
    """

    uids: set[int] | None = None
    batch_uids: set[int] | None = None
    canceled_by: set[int] | None = None
    index_uids: set[str] | None = None
    statuses: set[str] | None = None
    types: set[str] | None = None
    after_enqueued_at: int | None = None
    before_enqueued_at: int | None = None
    after_started_at: int | None = None
    before_started_at: int | None = None
    after_finished_at: int | None = None
    before_finished_at: int | None = None
    limit: int = DEFAULT_TASK_LIMIT
    from_: int | None = None
    reverse: bool = False


TaskRoute = Literal["tasks", "batches", "cancel", "delete"]

_FILTER_PARAMS: Final = (
    "uids",
    "batchUids",
    "canceledBy",
    "types",
    "statuses",
    "indexUids",
    "afterEnqueuedAt",
    "beforeEnqueuedAt",
    "afterStartedAt",
    "beforeStartedAt",
    "afterFinishedAt",
    "beforeFinishedAt",
)
# declaration order of `TasksFilterQuery` / `TaskDeletionOrCancelationQuery` (the "expected one of" lists)
_LIST_PARAMS: Final = (
    "limit",
    "from",
    "reverse",
    "batchUids",
    "uids",
    "canceledBy",
    "types",
    "statuses",
    "indexUids",
    *_FILTER_PARAMS[6:],
)
_MISSING_FILTERS: Final = (
    "Query parameters to filter the tasks to {} are missing. Available query parameters are: `uids`, "
    "`indexUids`, `statuses`, `types`, `canceledBy`, `beforeEnqueuedAt`, `afterEnqueuedAt`, "
    "`beforeStartedAt`, `afterStartedAt`, `beforeFinishedAt`, `afterFinishedAt`."
)
_DATE_FIELDS: Final = {
    "afterEnqueuedAt": "after_enqueued_at",
    "beforeEnqueuedAt": "before_enqueued_at",
    "afterStartedAt": "after_started_at",
    "beforeStartedAt": "before_started_at",
    "afterFinishedAt": "after_finished_at",
    "beforeFinishedAt": "before_finished_at",
}
_TYPES_BY_LOWER: Final = {name.lower(): name for name in TASK_TYPES}
_STATUSES_BY_LOWER: Final = {name: name for name in TASK_STATUSES}

T = TypeVar("T")


def _ascii_lower(text: str) -> str:
    # Rust's `eq_ignore_ascii_case`: only ASCII letters fold
    return text.encode("utf-8", "surrogatepass").lower().decode("utf-8", "surrogatepass")


def _star_list(
    name: str, text: str, code: str, parse: Callable[[str], T | None], explain: Callable[[str], str]
) -> set[T] | None:
    """`OptionStarOrList`: comma list, `*` anywhere means None; errors name `param[i]` in lists."""
    items = split_comma_list(text)
    values: set[T] = set()
    star = False
    for i, item in enumerate(items):
        if item == "*":
            star = True
            continue
        value = parse(item)
        if value is None:
            raise invalid_parameter(f"{name}[{i}]" if len(items) > 1 else name, explain(item), code)
        values.add(value)
    return None if star else values


def _not_an_integer(item: str) -> str:
    return f"could not parse `{item}` as a positive integer"


def _u32(item: str) -> int | None:
    return parse_uint_param(item, U32_MAX)


def _index_uid(item: str) -> str | None:
    return item if is_valid_index_uid(item) else None


def _bad_type(item: str) -> str:
    listed = ", ".join(f"`{name}`" for name in TASK_TYPES)
    return f"`{item}` is not a valid task type. Available types are {listed}."


def _bad_status(item: str) -> str:
    listed = ", ".join(f"`{name}`" for name in TASK_STATUSES)
    return f"`{item}` is not a valid task status. Available statuses are {listed}."


def _bad_date(item: str) -> str:
    return f"`{item}` is an invalid date-time. It should follow the YYYY-MM-DD or RFC 3339 date-time format."


def _date_code(param: str) -> str:
    # afterEnqueuedAt -> invalid_task_after_enqueued_at
    return "invalid_task_" + re.sub(r"[A-Z]", lambda m: "_" + m.group(0).lower(), param)


def parse_task_query(params: Iterable[tuple[str, str]], route: TaskRoute) -> TaskQuery:
    """Parse decoded query pairs for a task route, raising Meilisearch's exact errors.

    Parameters are read in order (a repeated one keeps its first slot and last value) and the first
    invalid one is reported. `tasks`/`batches` also accept `limit`, `from`, `reverse`; `cancel` and
    `delete` reject them as unknown and need at least one filter (400 `missing_task_filters`).
    """
    paging = route in ("tasks", "batches")
    accepted = _LIST_PARAMS if paging else _FILTER_PARAMS
    pairs: dict[str, str] = {}
    for key, value in params:
        pairs[key] = value
    query = TaskQuery()
    for name, text in pairs.items():
        if name not in accepted:
            raise unknown_parameter(name, accepted)
        if name in ("limit", "from"):
            number = _u32(text)
            if number is None:
                raise invalid_parameter(name, _not_an_integer(text), f"invalid_task_{name}")
            if name == "limit":
                query.limit = number
            else:
                query.from_ = number
        elif name == "reverse":
            flag = parse_bool_param(text)
            if flag is None:
                message = f"could not parse `{text}` as a boolean, expected either `true` or `false`"
                raise invalid_parameter(name, message, "invalid_task_reverse")
            query.reverse = flag
        elif name == "uids":
            query.uids = _star_list(name, text, "invalid_task_uids", _u32, _not_an_integer)
        elif name == "batchUids":
            query.batch_uids = _star_list(name, text, "invalid_batch_uids", _u32, _not_an_integer)
        elif name == "canceledBy":
            query.canceled_by = _star_list(name, text, "invalid_task_canceled_by", _u32, _not_an_integer)
        elif name == "types":
            query.types = _star_list(
                name, text, "invalid_task_types", lambda s: _TYPES_BY_LOWER.get(_ascii_lower(s)), _bad_type
            )
        elif name == "statuses":
            query.statuses = _star_list(
                name,
                text,
                "invalid_task_statuses",
                lambda s: _STATUSES_BY_LOWER.get(_ascii_lower(s)),
                _bad_status,
            )
        elif name == "indexUids":
            query.index_uids = _star_list(
                name, text, "invalid_index_uid", _index_uid, lambda s: invalid_index_uid(s).message
            )
        elif text != "*":
            bound = parse_filter_date(text, after=name.startswith("after"))
            if bound is None:
                raise invalid_parameter(name, _bad_date(text), _date_code(name))
            setattr(query, _DATE_FIELDS[name], bound)
    if not paging and not pairs:
        raise MeiliError(
            "missing_task_filters", _MISSING_FILTERS.format("cancel" if route == "cancel" else "delete")
        )
    return query


def _within(value: int | None, after: int | None, before: int | None) -> bool:
    if after is None and before is None:
        return True
    if value is None:  # a task without that date is not in the date database at all
        return False
    return (after is None or value > after) and (before is None or value < before)


def task_matches(
    q: TaskQuery,
    *,
    uid: int,
    batch_uid: int | None,
    index_uid: str | None,
    status: str,
    type_: str,
    canceled_by: int | None,
    enqueued_at: int,
    started_at: int | None,
    finished_at: int | None,
    touched_indexes: Collection[str] = (),
) -> bool:
    """Whether one task passes the filters (AND across parameters, OR within one).

    For a processing task pass `status="processing"`, the processing batch's uid and its start date,
    as Meilisearch does. `touched_indexes` lists other indexes the task writes (an index rename's
    new uid): `indexUids` matches any of them, but only for kinds tied to one index, so global tasks
    (swaps, dumps, cancelations, ...) never pass an `indexUids` filter.

    Note: Meilisearch computes `total` before dropping global kinds for `indexUids`, so its `total`
    can count them; callers mimicking that must count with `index_uids` checked per index only.
    """
    if q.uids is not None and uid not in q.uids:
        return False
    if q.batch_uids is not None and (batch_uid is None or batch_uid not in q.batch_uids):
        return False
    if q.statuses is not None and status not in q.statuses:
        return False
    if q.types is not None and type_ not in q.types:
        return False
    if q.canceled_by is not None and (canceled_by is None or canceled_by not in q.canceled_by):
        return False
    if q.index_uids is not None:
        if type_ not in INDEX_SCOPED_TYPES:
            return False
        if index_uid not in q.index_uids and q.index_uids.isdisjoint(touched_indexes):
            return False
    return (
        _within(enqueued_at, q.after_enqueued_at, q.before_enqueued_at)
        and _within(started_at, q.after_started_at, q.before_started_at)
        and _within(finished_at, q.after_finished_at, q.before_finished_at)
    )


def original_filter(query: str | Sequence[tuple[str, str]]) -> str:
    """`details.originalFilter` of cancel/delete tasks: `?` + the raw query string, as received.

    Pass the raw (still percent-encoded) query string to be exact; decoded pairs are re-encoded.
    """
    raw = query if isinstance(query, str) else urlencode(list(query), safe="*,:")
    return "?" + raw
