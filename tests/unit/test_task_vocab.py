"""Task vocabulary: names, dates, durations and the task filter language, checked against Meilisearch."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.apitypes.tasks import (
    FINISHED_STATUSES,
    INDEX_SCOPED_TYPES,
    TASK_STATUSES,
    TASK_TYPES,
    TaskQuery,
    format_duration,
    format_timestamp,
    original_filter,
    parse_batch_uid,
    parse_filter_date,
    parse_task_query,
    parse_task_uid,
    parse_timestamp,
    task_matches,
)

NS = 1_000_000_000
MS = 1_000_000
US = 1_000


def ns_of(text: str) -> int:
    """Reference conversion through the stdlib (microsecond precision is enough for these cases)."""
    dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    delta = dt - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * NS + delta.microseconds * US


def error_of(fn: Any, *args: Any, **kwargs: Any) -> tuple[str, str]:
    with pytest.raises(MeiliError) as info:
        fn(*args, **kwargs)
    assert info.value.status == 400
    return info.value.code, info.value.message


# ------------------------------------------------------------------------------------------------
# Names
# ------------------------------------------------------------------------------------------------


def test_task_types_in_meilisearch_order() -> None:
    assert TASK_TYPES == (
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
    assert TASK_STATUSES == ("enqueued", "processing", "succeeded", "failed", "canceled")
    assert FINISHED_STATUSES == {"succeeded", "failed", "canceled"}
    assert INDEX_SCOPED_TYPES < set(TASK_TYPES)
    assert "indexSwap" not in INDEX_SCOPED_TYPES and "indexCompaction" in INDEX_SCOPED_TYPES


# ------------------------------------------------------------------------------------------------
# Durations and timestamps
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (40 * MS, "PT0.040S"),
        (2 * NS, "PT2S"),
        (86_400 * NS + 3 * NS + 500 * MS, "P1DT3.500S"),
        (86_400 * NS, "P1D"),
        (2 * 86_400 * NS + 61 * NS, "P2DT61S"),
        (0, "PT0S"),
        (9_330 * US, "PT0.009330S"),
        (364_788 * US, "PT0.364788S"),
        (1, "PT0.000000001S"),
        (3_600 * NS + 123_456_789, "PT3600.123456789S"),
        (None, None),
        (-1, None),
    ],
)
def test_format_duration(ns: int | None, text: str | None) -> None:
    assert format_duration(ns) == text


@pytest.mark.parametrize(
    "text",
    [
        "2024-08-08T16:37:09.971853Z",
        "2024-08-08T16:37:09Z",
        "2024-08-08T16:37:09.1Z",
        "1970-01-01T00:00:00Z",
        "2000-02-29T23:59:59.999999Z",
        "0001-01-01T00:00:00Z",
    ],
)
def test_format_timestamp_matches_time_crate(text: str) -> None:
    assert format_timestamp(ns_of(text)) == text


def test_format_timestamp_fraction_digits() -> None:
    base = ns_of("2024-08-08T16:37:09Z")
    assert format_timestamp(base + 971_853_000) == "2024-08-08T16:37:09.971853Z"
    assert format_timestamp(base + 971_853_123) == "2024-08-08T16:37:09.971853123Z"
    assert format_timestamp(base + 100 * MS) == "2024-08-08T16:37:09.1Z"
    assert format_timestamp(-1) == "1969-12-31T23:59:59.999999999Z"
    with pytest.raises(ValueError):
        format_timestamp(ns_of("9999-12-31T23:59:59Z") + NS)


MIN_NS = -62_167_219_200 * NS  # 0000-01-01T00:00:00Z
MAX_NS = 253_402_300_800 * NS - 1  # 9999-12-31T23:59:59.999999999Z


@given(st.integers(min_value=MIN_NS, max_value=MAX_NS))
def test_timestamp_round_trip(ns: int) -> None:
    text = format_timestamp(ns)
    assert parse_timestamp(text) == ns
    assert text.endswith("Z") and len(text) <= len("0000-00-00T00:00:00.000000000Z")


@given(st.datetimes(timezones=st.just(UTC)))
def test_format_timestamp_agrees_with_stdlib(dt: datetime) -> None:
    ns = ns_of(dt.isoformat())
    naive = dt.replace(tzinfo=None).isoformat()  # fraction, when present, has 6 digits
    stdlib = (naive.rstrip("0") if "." in naive else naive) + "Z"
    assert format_timestamp(ns) == stdlib


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1997-11-12T09:55:06-06:20", "1997-11-12T16:15:06Z"),
        ("1997-11-12T09:55:06+00:00", "1997-11-12T09:55:06Z"),
        ("1997-11-12T09:55:06-00:00", "1997-11-12T09:55:06Z"),
        ("1997-11-12t09:55:06z", "1997-11-12T09:55:06Z"),
        ("1997-11-12 09:55:06Z", "1997-11-12T09:55:06Z"),
        ("1997-11-12T09:55:06.200000300Z", "1997-11-12T09:55:06.2000003Z"),
        ("1997-11-12T09:55:06.1234567891234Z", "1997-11-12T09:55:06.123456789Z"),
        ("2016-12-31T23:59:60Z", "2016-12-31T23:59:59.999999999Z"),
        ("2016-12-31T22:59:60-01:00", "2016-12-31T23:59:59.999999999Z"),
    ],
)
def test_parse_timestamp(text: str, expected: str) -> None:
    assert format_timestamp(parse_timestamp(text)) == expected


@pytest.mark.parametrize(
    "text",
    [
        "2021",
        "2021-12",
        "2021-12-03",
        "2021-12-03T23",
        "2021-12-03T23:45",
        "2021-12-03T23:45:23",
        "2021-12-03T23:45:23.Z",
        "2021-02-29T00:00:00Z",
        "2021-13-01T00:00:00Z",
        "2021-00-01T00:00:00Z",
        "2021-12-03T24:00:00Z",
        "2021-12-03T23:60:00Z",
        "2021-12-03T23:45:23+24:00",
        "2021-12-03T23:45:23+01:60",
        "2021-12-03T23:45:23+0100",
        "2016-12-30T23:59:60Z",
        "2021-12-03T23:45:23Z ",
        "2021-12-03é23:45:23Z",
        "２０２１-12-03T23:45:23Z",
    ],
)
def test_parse_timestamp_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_timestamp(text)


def test_bare_dates_in_filters() -> None:
    day = ns_of("2021-12-03T00:00:00Z")
    assert parse_filter_date("2021-12-03", after=False) == day
    assert parse_filter_date("2021-12-03", after=True) == day + 86_400 * NS
    assert parse_filter_date("2021-12-03T23:45:23Z", after=True) == ns_of("2021-12-03T23:45:23Z")
    assert parse_filter_date("9999-12-31", after=True) == ns_of("9999-12-31T00:00:00Z")
    assert parse_filter_date("2020-02-29", after=False) == ns_of("2020-02-29T00:00:00Z")
    assert parse_filter_date("+2021-12-03", after=False) == day
    assert parse_filter_date("-0001-01-01", after=False) == MIN_NS - 365 * 86_400 * NS  # year -1 is not leap
    for bad in ("2021-02-29", "2021-1-01", "21-01-01", "2021-12-03T"):
        assert parse_filter_date(bad, after=False) is None


# ------------------------------------------------------------------------------------------------
# Path uids
# ------------------------------------------------------------------------------------------------


def test_path_uids() -> None:
    assert parse_task_uid("12") == 12
    assert parse_task_uid("+7") == 7
    assert error_of(parse_task_uid, "doggo") == (
        "invalid_task_uids",
        "Task uid `doggo` is invalid. It should only contain numeric characters.",
    )
    assert error_of(parse_task_uid, "4294967296")[0] == "invalid_task_uids"
    assert parse_batch_uid("0") == 0
    assert error_of(parse_batch_uid, "-1") == (
        "invalid_batch_uids",
        "Batch uid `-1` is invalid. It should only contain numeric characters.",
    )


# ------------------------------------------------------------------------------------------------
# Filter parsing
# ------------------------------------------------------------------------------------------------

LIST_PARAMS = (
    "`limit`, `from`, `reverse`, `batchUids`, `uids`, `canceledBy`, `types`, `statuses`, `indexUids`, "
    "`afterEnqueuedAt`, `beforeEnqueuedAt`, `afterStartedAt`, `beforeStartedAt`, `afterFinishedAt`, "
    "`beforeFinishedAt`"
)
FILTER_PARAMS = (
    "`uids`, `batchUids`, `canceledBy`, `types`, `statuses`, `indexUids`, `afterEnqueuedAt`, "
    "`beforeEnqueuedAt`, `afterStartedAt`, `beforeStartedAt`, `afterFinishedAt`, `beforeFinishedAt`"
)
ALL_TYPES = ", ".join(f"`{t}`" for t in TASK_TYPES)
INDEX_UID_RULE = (
    "is not a valid index uid. Index uid can be an integer or a string containing only alphanumeric "
    "characters, hyphens (-) and underscores (_), and can not be more than 512 bytes."
)
DATE_RULE = "is an invalid date-time. It should follow the YYYY-MM-DD or RFC 3339 date-time format."


def q(query: str, route: str = "tasks") -> TaskQuery:
    pairs = [tuple(p.split("=", 1)) for p in query.split("&") if p]
    return parse_task_query(pairs, route)  # type: ignore[arg-type]


def q_error(query: str, route: str = "tasks") -> tuple[str, str]:
    return error_of(q, query, route)


def test_defaults() -> None:
    assert q("") == TaskQuery()
    assert TaskQuery().limit == 20 and TaskQuery().from_ is None and TaskQuery().reverse is False


def test_general_query() -> None:
    parsed = q(
        "from=12&limit=15&indexUids=toto,tata-78&statuses=succeeded,enqueued&afterEnqueuedAt=2012-04-23&uids=1,2,3"
    )
    assert parsed == TaskQuery(
        uids={1, 2, 3},
        index_uids={"toto", "tata-78"},
        statuses={"succeeded", "enqueued"},
        after_enqueued_at=ns_of("2012-04-24T00:00:00Z"),
        limit=15,
        from_=12,
    )


def test_stars_mean_no_filter() -> None:
    parsed = q(
        "indexUids=*&statuses=succeeded,*&afterEnqueuedAt=*&uids=1,2,3&types=*&batchUids=*&canceledBy=*"
    )
    assert parsed == TaskQuery(uids={1, 2, 3})


def test_case_insensitive_names() -> None:
    parsed = q("types=INDEXCREATION,indexUpdate,DsrClear&statuses=Succeeded,PROCESSING")
    assert parsed.types == {"indexCreation", "indexUpdate", "dsrClear"}
    assert parsed.statuses == {"succeeded", "processing"}


def test_empty_list_matches_nothing() -> None:
    assert q("uids=").uids == set()
    assert q("uids=,1,,").uids == {1}


def test_reverse_and_batches_route() -> None:
    assert q("reverse=true", "batches").reverse is True
    assert q_error("reverse=1", "batches") == (
        "invalid_task_reverse",
        "Invalid value in parameter `reverse`: could not parse `1` as a boolean, expected either `true` or `false`",
    )


@pytest.mark.parametrize("route", ["tasks", "batches"])
def test_unknown_parameter_on_list_routes(route: str) -> None:
    assert q_error("lol=pied", route) == (
        "bad_request",
        f"Unknown parameter `lol`: expected one of {LIST_PARAMS}",
    )


@pytest.mark.parametrize("route", ["cancel", "delete"])
@pytest.mark.parametrize("param", ["limit", "from", "reverse"])
def test_paging_is_unknown_on_cancel_and_delete(route: str, param: str) -> None:
    assert q_error(f"{param}=12", route) == (
        "bad_request",
        f"Unknown parameter `{param}`: expected one of {FILTER_PARAMS}",
    )


@pytest.mark.parametrize(("route", "verb"), [("cancel", "cancel"), ("delete", "delete")])
def test_missing_task_filters(route: str, verb: str) -> None:
    assert q_error("", route) == (
        "missing_task_filters",
        f"Query parameters to filter the tasks to {verb} are missing. Available query parameters are: "
        "`uids`, `indexUids`, `statuses`, `types`, `canceledBy`, `beforeEnqueuedAt`, `afterEnqueuedAt`, "
        "`beforeStartedAt`, `afterStartedAt`, `beforeFinishedAt`, `afterFinishedAt`.",
    )
    # a star is still a filter: it selects every task
    assert q("statuses=*", route) == TaskQuery()


@pytest.mark.parametrize(
    ("query", "code", "message"),
    [
        (
            "uids=doggo",
            "invalid_task_uids",
            "Invalid value in parameter `uids`: could not parse `doggo` as a positive integer",
        ),
        (
            "uids=cat,*,dog",
            "invalid_task_uids",
            "Invalid value in parameter `uids[0]`: could not parse `cat` as a positive integer",
        ),
        (
            "uids=78,hello,world",
            "invalid_task_uids",
            "Invalid value in parameter `uids[1]`: could not parse `hello` as a positive integer",
        ),
        (
            "uids=4294967296",
            "invalid_task_uids",
            "Invalid value in parameter `uids`: could not parse `4294967296` as a positive integer",
        ),
        (
            "batchUids=doggo",
            "invalid_batch_uids",
            "Invalid value in parameter `batchUids`: could not parse `doggo` as a positive integer",
        ),
        (
            "canceledBy=doggo",
            "invalid_task_canceled_by",
            "Invalid value in parameter `canceledBy`: could not parse `doggo` as a positive integer",
        ),
        (
            "types=doggo",
            "invalid_task_types",
            f"Invalid value in parameter `types`: `doggo` is not a valid task type. Available types are {ALL_TYPES}.",
        ),
        (
            "types=indexCreation,createIndex",
            "invalid_task_types",
            f"Invalid value in parameter `types[1]`: `createIndex` is not a valid task type. Available types are {ALL_TYPES}.",
        ),
        (
            "statuses=finished",
            "invalid_task_statuses",
            "Invalid value in parameter `statuses`: `finished` is not a valid task status. Available statuses are `enqueued`, `processing`, `succeeded`, `failed`, `canceled`.",
        ),
        (
            "indexUids=hé",
            "invalid_index_uid",
            f"Invalid value in parameter `indexUids`: `hé` {INDEX_UID_RULE}",
        ),
        (
            "indexUids=1,hé",
            "invalid_index_uid",
            f"Invalid value in parameter `indexUids[1]`: `hé` {INDEX_UID_RULE}",
        ),
        (
            "indexUids=the good doggo",
            "invalid_index_uid",
            f"Invalid value in parameter `indexUids`: `the good doggo` {INDEX_UID_RULE}",
        ),
        (
            "indexUids=" + "a" * 401,
            "invalid_index_uid",
            f"Invalid value in parameter `indexUids`: `{'a' * 401}` {INDEX_UID_RULE}",
        ),
        (
            "limit=doggo",
            "invalid_task_limit",
            "Invalid value in parameter `limit`: could not parse `doggo` as a positive integer",
        ),
        (
            "limit=-1",
            "invalid_task_limit",
            "Invalid value in parameter `limit`: could not parse `-1` as a positive integer",
        ),
        (
            "from=*",
            "invalid_task_from",
            "Invalid value in parameter `from`: could not parse `*` as a positive integer",
        ),
        (
            "afterEnqueuedAt=2021-12",
            "invalid_task_after_enqueued_at",
            f"Invalid value in parameter `afterEnqueuedAt`: `2021-12` {DATE_RULE}",
        ),
        (
            "beforeEnqueuedAt=2021-12-03T23",
            "invalid_task_before_enqueued_at",
            f"Invalid value in parameter `beforeEnqueuedAt`: `2021-12-03T23` {DATE_RULE}",
        ),
        (
            "afterStartedAt=2021-12-03T23:45",
            "invalid_task_after_started_at",
            f"Invalid value in parameter `afterStartedAt`: `2021-12-03T23:45` {DATE_RULE}",
        ),
        (
            "beforeStartedAt=pied",
            "invalid_task_before_started_at",
            f"Invalid value in parameter `beforeStartedAt`: `pied` {DATE_RULE}",
        ),
        (
            "afterFinishedAt=2021",
            "invalid_task_after_finished_at",
            f"Invalid value in parameter `afterFinishedAt`: `2021` {DATE_RULE}",
        ),
        (
            "beforeFinishedAt=2021",
            "invalid_task_before_finished_at",
            f"Invalid value in parameter `beforeFinishedAt`: `2021` {DATE_RULE}",
        ),
    ],
)
def test_filter_errors(query: str, code: str, message: str) -> None:
    for route in ("tasks", "batches", "cancel", "delete"):
        if route in ("cancel", "delete") and query.split("=")[0] in ("limit", "from"):
            continue
        assert q_error(query, route) == (code, message)


def test_first_bad_parameter_wins() -> None:
    assert q_error("uids=x&types=y")[0] == "invalid_task_uids"
    assert q_error("types=y&uids=x")[0] == "invalid_task_types"


def test_dates() -> None:
    parsed = q(
        "afterEnqueuedAt=2021-12-03&beforeEnqueuedAt=2021-12-03&afterStartedAt=2021-12-03T23:45:23Z"
        "&beforeStartedAt=1997-11-12T09:55:06-06:20&afterFinishedAt=1997-11-12T09:55:06.200000300Z"
        "&beforeFinishedAt=2021-12-03",
        "delete",
    )
    assert parsed.after_enqueued_at == ns_of("2021-12-04T00:00:00Z")
    assert parsed.before_enqueued_at == ns_of("2021-12-03T00:00:00Z")
    assert parsed.after_started_at == ns_of("2021-12-03T23:45:23Z")
    assert parsed.before_started_at == ns_of("1997-11-12T16:15:06Z")
    assert parsed.after_finished_at == ns_of("1997-11-12T09:55:06Z") + 200_000_300
    assert parsed.before_finished_at == ns_of("2021-12-03T00:00:00Z")


# ------------------------------------------------------------------------------------------------
# Matching
# ------------------------------------------------------------------------------------------------

T0 = ns_of("2024-01-01T00:00:00Z")


def task(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "uid": 5,
        "batch_uid": 2,
        "index_uid": "movies",
        "status": "succeeded",
        "type_": "documentAdditionOrUpdate",
        "canceled_by": None,
        "enqueued_at": T0,
        "started_at": T0 + NS,
        "finished_at": T0 + 2 * NS,
    }
    base.update(overrides)
    return base


def matches(query: str, **overrides: Any) -> bool:
    return task_matches(q(query), **task(**overrides))


def test_no_filter_matches_everything() -> None:
    assert matches("")
    assert matches(
        "", index_uid=None, type_="dumpCreation", batch_uid=None, started_at=None, finished_at=None
    )


def test_and_across_or_within() -> None:
    assert matches("uids=1,5,9&statuses=failed,succeeded")
    assert not matches("uids=1,5,9&statuses=failed")
    assert not matches("uids=1,9&statuses=succeeded")
    assert matches("types=settingsUpdate,documentAdditionOrUpdate&batchUids=2")
    assert not matches("batchUids=3")
    assert not matches("batchUids=2", batch_uid=None)
    assert not matches("uids=")


def test_canceled_by() -> None:
    assert matches("canceledBy=7,8", canceled_by=8, status="canceled")
    assert not matches("canceledBy=7")


def test_index_filter_hides_global_tasks() -> None:
    assert matches("indexUids=movies,books")
    assert not matches("indexUids=books")
    assert not matches(
        "indexUids=movies", type_="indexSwap", index_uid=None, touched_indexes=("movies", "books")
    )
    assert not matches("indexUids=movies", type_="taskDeletion", index_uid=None)
    # an index rename is reachable through its new name as well
    assert matches("indexUids=films", type_="indexUpdate", touched_indexes=("films",))
    assert matches("indexUids=*", type_="dumpCreation", index_uid=None)


def test_date_bounds_are_exclusive() -> None:
    assert not matches(f"afterStartedAt={format_timestamp(T0 + NS)}")
    assert not matches(f"beforeStartedAt={format_timestamp(T0 + NS)}")
    assert matches(f"afterStartedAt={format_timestamp(T0)}&beforeStartedAt={format_timestamp(T0 + 2 * NS)}")
    assert matches("afterEnqueuedAt=2023-12-30&beforeEnqueuedAt=2024-01-02")
    assert not matches("afterEnqueuedAt=2023-12-31")  # bare `after` date: after that whole day
    assert not matches("beforeEnqueuedAt=2024-01-01")  # bare `before` date: before its midnight


def test_tasks_without_a_date_fail_that_date_filter() -> None:
    assert not matches("afterFinishedAt=2020-01-01", status="enqueued", started_at=None, finished_at=None)
    assert not matches("beforeStartedAt=2030-01-01", status="enqueued", started_at=None, finished_at=None)
    assert matches("beforeEnqueuedAt=2030-01-01", status="enqueued", started_at=None, finished_at=None)


def test_original_filter() -> None:
    assert original_filter("uids=0") == "?uids=0"
    assert (
        original_filter("indexUids=the%20good%20doggo&uids=1,2") == "?indexUids=the%20good%20doggo&uids=1,2"
    )
    assert original_filter([("uids", "1,2"), ("statuses", "*")]) == "?uids=1,2&statuses=*"
