"""Evaluation-time checks of geo filters and number literals, with Meilisearch's messages.

Meilisearch's *parser* only checks the shape of ``_geoRadius`` / ``_geoBoundingBox`` /
``_geoPolygon`` (argument counts, pairs, at least three polygon points). Latitude, longitude,
resolution and "top below bottom" are checked by milli when the filter is *evaluated*, after the
filterability checks; these helpers do exactly those checks, in milli's order, so the engine calls
them at that point:

* radius: parse lat and lng, check lat, check lng, parse the radius, then the optional resolution
  (truncated to an unsigned integer like Rust's ``as usize``, default 125, must be 3..=1000);
* bounding box: parse the four numbers, check top-right lat, lng, bottom-left lat, lng, then
  ``top < bottom`` (reported on the bottom-left *longitude* token, as milli does);
* polygon: for each point parse lat, lng, then check lat, lng. (milli first requires ``_geojson``
  to be filterable; that check is the engine's.)

`rust_parse_f64` follows Rust's ``str::parse::<f64>`` grammar (no surrounding spaces, no ``_``,
``inf``/``infinity``/``nan`` in any case), which is also how milli decides whether a filter literal is
a number (`finite_float`).
"""

from __future__ import annotations

import math

from hanzo_engine.rustcompat.floats import parse_f64 as rust_parse_f64

from .ast import GeoBoundingBox, GeoPolygon, GeoRadius, Token
from .errors import rust_f64_display

__all__ = [
    "DEFAULT_RESOLUTION",
    "finite_float",
    "geo_bounding_box_params",
    "geo_polygon_coords",
    "geo_radius_params",
    "parse_finite_float",
    "rust_parse_f64",
]

DEFAULT_RESOLUTION = 125
_USIZE_MAX = 2**64 - 1


def finite_float(text: str) -> float | None:
    """The number a filter literal stands for, if it parses as a finite f64 (else None)."""
    value = rust_parse_f64(text)
    if value is None or not math.isfinite(value):
        return None
    return value


def parse_finite_float(token: Token) -> float:
    """milli's ``Token::parse_finite_float``: errors are positioned on the token."""
    value = rust_parse_f64(token.value)
    if value is None:
        raise token.error(
            "cannot parse float from empty string" if not token.value else "invalid float literal"
        )
    if not math.isfinite(value):
        raise token.error("Non finite floats are not supported")
    return value


def _rem_euclid(x: float, m: float) -> float:
    r = math.fmod(x, m)
    return r + abs(m) if r < 0.0 else r


def _check_lat(token: Token, lat: float) -> None:
    if not -90.0 <= lat <= 90.0:
        raise token.error(
            f"Bad latitude `{rust_f64_display(lat)}`. Latitude must be contained between -90 and 90 degrees."
        )


def _check_lng(token: Token, lng: float) -> None:
    if not -180.0 <= lng <= 180.0:
        normalized = _rem_euclid(lng + 180.0, 360.0) - 180.0
        raise token.error(
            f"Bad longitude `{rust_f64_display(lng)}`. Longitude must be contained between -180 and 180 "
            f"degrees. Hint: try using `{rust_f64_display(normalized)}` instead."
        )


def geo_radius_params(node: GeoRadius) -> tuple[float, float, float, int]:
    """(lat, lng, radius in meters, resolution) of a ``_geoRadius``, validated as milli does."""
    lat = parse_finite_float(node.lat)
    lng = parse_finite_float(node.lng)
    _check_lat(node.lat, lat)
    _check_lng(node.lng, lng)
    radius = parse_finite_float(node.meters)
    resolution = DEFAULT_RESOLUTION
    if node.resolution is not None:
        raw = parse_finite_float(node.resolution)
        # Rust `f64 as usize` truncates toward zero and saturates at both ends.
        resolution = 0 if raw <= 0 else min(int(raw), _USIZE_MAX)
        if not 3 <= resolution <= 1000:
            raise node.resolution.error(
                f"Invalid resolution `{resolution}`. Resolution must be between 3 and 1000."
            )
    return lat, lng, radius, resolution


def geo_bounding_box_params(node: GeoBoundingBox) -> tuple[tuple[float, float], tuple[float, float]]:
    """((top, right), (bottom, left)) of a ``_geoBoundingBox``, validated as milli does."""
    tr_lat_tok, tr_lng_tok = node.top_right
    bl_lat_tok, bl_lng_tok = node.bottom_left
    tr_lat, tr_lng = parse_finite_float(tr_lat_tok), parse_finite_float(tr_lng_tok)
    bl_lat, bl_lng = parse_finite_float(bl_lat_tok), parse_finite_float(bl_lng_tok)
    _check_lat(tr_lat_tok, tr_lat)
    _check_lng(tr_lng_tok, tr_lng)
    _check_lat(bl_lat_tok, bl_lat)
    _check_lng(bl_lng_tok, bl_lng)
    if tr_lat < bl_lat:
        raise bl_lng_tok.error(
            f"The top latitude `{rust_f64_display(tr_lat)}` is below the bottom latitude "
            f"`{rust_f64_display(bl_lat)}`."
        )
    return (tr_lat, tr_lng), (bl_lat, bl_lng)


def geo_polygon_coords(node: GeoPolygon) -> list[tuple[float, float]]:
    """The (lat, lng) vertices of a ``_geoPolygon``, validated as milli does."""
    coords: list[tuple[float, float]] = []
    for lat_tok, lng_tok in node.points:
        lat = parse_finite_float(lat_tok)
        lng = parse_finite_float(lng_tok)
        _check_lat(lat_tok, lat)
        _check_lng(lng_tok, lng)
        coords.append((lat, lng))
    return coords
