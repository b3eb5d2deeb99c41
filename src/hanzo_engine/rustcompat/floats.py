"""f64 text as Rust prints and parses it.

- `f64_display`: `format!("{}", x)`: the shortest digits that round-trip, positional, never an
  exponent, no `.0` on whole numbers (`1`, `0.000001`, `100000000000000000000`).
- `ryu`: how serde_json writes a finite f64 (the `ryu` crate's pretty form): `1.0`, `1e16`,
  `0.0001`, `1.5e-7`; the exponent form from 17 integer digits on and below 1e-5.
- `parse_f64`: `str::parse::<f64>().ok()`: ASCII digits only, no surrounding whitespace, no `_`,
  `inf`/`infinity`/`nan` in any case, an optional sign.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Final

__all__ = ["f64_display", "parse_f64", "ryu"]

_F64_RE: Final = re.compile(
    r"[+-]?(?:inf|infinity|nan|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?)", re.ASCII | re.IGNORECASE
)


def parse_f64(text: str) -> float | None:
    """`text.parse::<f64>().ok()`."""
    if _F64_RE.fullmatch(text) is None:
        return None
    return float(text)


def f64_display(value: float) -> str:
    """`format!("{}", value)` for a Rust f64."""
    text = repr(value)
    if "e" not in text and "n" not in text:  # repr is positional already (no exponent, inf or nan)
        return text[:-2] if text.endswith(".0") else text
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = format(Decimal(repr(value)), "f")  # the shortest round-trip digits, padded with zeros
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def ryu(value: float) -> str:
    """serde_json's text of a finite f64."""
    if 1e-4 <= abs(value) < 1e16:
        # Python's repr writes the same shortest digits in the same fixed notation in this range
        # (the property tests hold it to `_ryu_digits`)
        return repr(value)
    return _ryu_digits(value)


def _ryu_digits(value: float) -> str:
    """`ryu` built from the decimal digits (every finite f64)."""
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    mantissa, _, exp_text = repr(abs(value)).partition("e")
    int_part, _, frac_part = mantissa.partition(".")
    digits = (int_part + frac_part).lstrip("0")
    # decimal exponent so that value = 0.d1d2d3... * 10**kk
    kk = len(int_part.lstrip("0")) if int_part.strip("0") else -(len(frac_part) - len(frac_part.lstrip("0")))
    if exp_text:
        kk += int(exp_text)
    digits = digits.rstrip("0") or "0"
    length = len(digits)
    if length <= kk <= 16:
        return f"{sign}{digits}{'0' * (kk - length)}.0"
    if 0 < kk <= 16:
        return f"{sign}{digits[:kk]}.{digits[kk:]}"
    if -5 < kk <= 0:
        return f"{sign}0.{'0' * -kk}{digits}"
    exponent = kk - 1
    if length == 1:
        return f"{sign}{digits}e{exponent}"
    return f"{sign}{digits[0]}.{digits[1:]}e{exponent}"
