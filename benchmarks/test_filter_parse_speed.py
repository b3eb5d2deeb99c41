"""Filter parsing time for 20-clause expressions (issue 4 target: under 50 µs per parse).

20-clause filters, each parsed many times; the best round (process CPU time) is reported in µs per
parse. Rounds are short (200 parses) and many (60): on a shared machine the best of many short
rounds is the parse cost with the least interference from neighbours, which long rounds never see.

* ``flat``: ``=``/``>``/``TO``/``IN``/``EXISTS``/``IS NULL``/quoted values joined by AND and OR;
* ``nested``: the same kinds of clauses grouped in parentheses, with NOT;
* ``fallback``: ``nested`` with one clause replaced by a ``_geoRadius``, which the scanner hands to
  the general parser's geo rule;
* ``escaped``: ``nested`` with a quoted value holding escaped quotes (decoded by `unquote`);
* ``regex``: ``nested`` through the regex whole-filter path (`_fast.fast_chain`), what runs when the
  native scanner gives up (non-ASCII text, a keyword glued to a word);
* ``general``: ``nested`` through the general parser with every fast path off (worst case).

The first four go through the native whole-filter scanner (`_native.filter_scan`).

Smoke mode (HANZO_BENCH_SCALE=smoke, with --benchmark-disable in CI) parses each once.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import pytest

from hanzo_engine.filter_parser import parse_filter
from hanzo_engine.filter_parser._fast import fast_chain
from hanzo_engine.filter_parser.parser import _geo_rule, parse_expression

SMOKE = os.environ.get("HANZO_BENCH_SCALE", "full") == "smoke"
REPEAT = 1 if SMOKE else 200
ROUNDS = 1 if SMOKE else 60
TARGET_US = 50.0

CLAUSES = [
    "genres = Horror",
    "release_date > 946684800",
    "rating >= 4.5",
    "director = 'Christopher Nolan'",
    "price 10 TO 100",
    'tags IN [action, "science fiction", drama]',
    "poster EXISTS",
    "color != red",
    "stock < 5",
    "language = en",
    "studio.name = 'Warner Bros.'",
    "runtime <= 180",
    "country NOT IN [fr, de]",
    "overview IS NOT EMPTY",
    "votes 1000 TO 50000",
    "adult = false",
    "budget IS NULL",
    "collection NOT EXISTS",
    "year >= 1990",
    "id != 42",
]
FLAT = " AND ".join(CLAUSES[:10]) + " OR " + " AND ".join(CLAUSES[10:])
NESTED = " AND ".join(
    ("NOT " if i % 3 == 0 else "") + f"({CLAUSES[2 * i]} OR {CLAUSES[2 * i + 1]})" for i in range(10)
)
FALLBACK = NESTED.replace("stock < 5", "_geoRadius(45.47, 9.18, 2000)")
ESCAPED = NESTED.replace("'Christopher Nolan'", "'Christopher \\'Chris\\' Nolan'")
EXPRESSIONS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "flat": (FLAT, parse_filter),
    "nested": (NESTED, parse_filter),
    "fallback": (FALLBACK, parse_filter),
    "escaped": (ESCAPED, parse_filter),
    "regex": (NESTED, lambda e: fast_chain(e, _geo_rule)),
    "general": (NESTED, lambda e: parse_expression(e, fast=False)),
}
RESULTS: dict[str, float] = {}


def _run(expr: str, parse: Callable[[str], Any]) -> float:
    # CPU time of this process: on a shared machine the neighbours inflate it far less than wall time.
    start = time.process_time()
    for _ in range(REPEAT):
        parse(expr)
    return time.process_time() - start


@pytest.mark.parametrize("name", list(EXPRESSIONS))
def test_filter_parse_speed(benchmark: Any, name: str) -> None:
    expr, parse = EXPRESSIONS[name]
    # same tree whichever path parses it, and 20 clauses indeed
    assert parse(expr) == parse_expression(expr, fast=False)
    assert sum(expr.count(k) for k in (" AND ", " OR ")) >= 19
    timings: list[float] = []
    benchmark.pedantic(lambda: timings.append(_run(expr, parse)), rounds=ROUNDS, iterations=1)
    per_parse_us = min(timings) / REPEAT * 1e6
    benchmark.extra_info["us_per_parse"] = per_parse_us
    RESULTS[name] = per_parse_us


@pytest.fixture(scope="module", autouse=True)
def report() -> Any:
    yield
    if RESULTS:
        line = ", ".join(f"{name} {us:.1f} µs" for name, us in RESULTS.items())
        print(f"\n[filter parse] 20 clauses, best of {ROUNDS}×{REPEAT}: {line} (target {TARGET_US:.0f} µs)")
