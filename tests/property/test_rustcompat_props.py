"""`rustcompat` invariants over arbitrary inputs: float texts round-trip, the Debug escaper is a
faithful quoting, the serde_json reader agrees with the JSON grammar on what Python serialises."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hanzo_engine.rustcompat.floats import _ryu_digits, f64_display, parse_f64, ryu
from hanzo_engine.rustcompat.serde_json import to_json, value_error
from hanzo_engine.rustcompat.strings import debug_str

finite = st.floats(allow_nan=False, allow_infinity=False)


@given(finite)
def test_float_texts_round_trip(value: float) -> None:
    for text in (f64_display(value), ryu(value)):
        parsed = parse_f64(text)
        assert parsed == value and math.copysign(1.0, parsed) == math.copysign(1.0, value), text
    assert "e" not in f64_display(value)


@given(
    st.one_of(
        finite, st.floats(1e-5, 1e17), st.floats(-1e17, -1e-5), st.integers(-(10**17), 10**17).map(float)
    )
)
def test_ryu_fast_path_writes_what_the_digit_path_writes(value: float) -> None:
    assert ryu(value) == _ryu_digits(value)


@given(st.text())
def test_debug_str_quotes_without_losing_anything(text: str) -> None:
    out = debug_str(text)
    assert out[0] == out[-1] == '"'
    body = out[1:-1]
    # every quote and backslash of the body is escaped, and no raw control character is left
    assert all(ch.isprintable() or ch == " " for ch in body)
    i = 0
    while i < len(body):
        if body[i] == "\\":
            assert body[i + 1] in '\\"0tnru'
            i += 2
        else:
            assert body[i] != '"'
            i += 1


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | finite | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300)
@given(json_values)
def test_serde_reader_accepts_and_displays_json(value: Any) -> None:
    body = json.dumps(value, ensure_ascii=False).encode()
    assert value_error(body) is None
    shown = to_json(value)
    assert value_error(shown.encode()) is None
    assert json.loads(shown) == json.loads(body)
