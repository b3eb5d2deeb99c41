"""`_geoPolygon` (and the geometry under it) against plain Python predicates in exact arithmetic.

Coordinates are on a grid of 2⁻¹⁰ degree near (45°N, 7°E): every coordinate, difference and product
the engine computes is then exact in floating point, so points exactly on an edge or a vertex are
frequent and must come out the same on both sides. The reference works on the integer grid indices
(an affine map with positive factors keeps every orientation and comparison). Areas span at most 6 grid cells (< 1 km per
edge), so the engine's 1 km great-circle densification adds no point: the area is the plain polygon
of the filter's vertices, and the reference is the textbook even-odd test with the boundary excluded
(Meilisearch's `Contains`), or, for lines and polygons, "shares a point with the area".
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hanzo_engine.engine.search.geo import segments_intersect, strictly_inside
from tests.unit.test_filter_eval import Fixture

CELL = 2.0**-10
LAT0, LNG0 = 45.0, 7.0
Pt = tuple[int, int]  # grid indices (x = lng, y = lat)


def _coord(i: int, j: int) -> tuple[float, float]:
    """(lat, lng) of grid position (i, j) in half cells."""
    return LAT0 + i * CELL / 2, LNG0 + j * CELL / 2


# -- exact reference ----------------------------------------------------------------------------------


def _pt(i: int, j: int) -> Pt:
    return j, i


def _cross(o: Pt, a: Pt, b: Pt) -> int:
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def _on_segment(p: Pt, a: Pt, b: Pt) -> bool:
    return (
        _cross(a, b, p) == 0
        and min(a[0], b[0]) <= p[0] <= max(a[0], b[0])
        and min(a[1], b[1]) <= p[1] <= max(a[1], b[1])
    )


def _edges(ring: list[Pt]) -> Iterator[tuple[Pt, Pt]]:
    for k in range(len(ring)):
        yield ring[k], ring[(k + 1) % len(ring)]


def degenerate(ring: list[Pt]) -> bool:
    """No interior: fewer than three distinct vertices, or all on one line."""
    others = [p for p in ring if p != ring[0]]
    return not others or all(_cross(ring[0], others[0], p) == 0 for p in others)


def inside(ring: list[Pt], p: Pt) -> bool:
    """Strictly inside the polygon `ring` (not closed), even-odd rule."""
    x, y = p
    odd = False
    for a, b in _edges(ring):
        if _on_segment(p, a, b):
            return False
        if (a[1] > y) != (b[1] > y):
            # x < a.x + (y - a.y) (b.x - a.x) / (b.y - a.y), without the division
            lhs, rhs = (x - a[0]) * (b[1] - a[1]), (y - a[1]) * (b[0] - a[0])
            if (lhs < rhs) if b[1] > a[1] else (lhs > rhs):
                odd = not odd
    return odd


def meet(a: Pt, b: Pt, c: Pt, d: Pt) -> bool:
    o1, o2, o3, o4 = _cross(c, d, a), _cross(c, d, b), _cross(a, b, c), _cross(a, b, d)
    if ((o1 > 0 > o2) or (o1 < 0 < o2)) and ((o3 > 0 > o4) or (o3 < 0 < o4)):
        return True
    return _on_segment(a, c, d) or _on_segment(b, c, d) or _on_segment(c, a, b) or _on_segment(d, a, b)


def line_meets_area(line: list[Pt], ring: list[Pt], closed: bool) -> bool:
    if any(inside(ring, p) for p in line):
        return True
    segments = list(_edges(line)) if closed else list(pairwise(line)) or [(line[0], line[0])]
    return any(meet(a, b, c, d) for a, b in segments for c, d in _edges(ring))


def polygon_meets_area(polygon: list[Pt], ring: list[Pt]) -> bool:
    return line_meets_area(polygon, ring, True) or inside(polygon, ring[0])


# -- strategies ---------------------------------------------------------------------------------------

# area vertices on whole cells (even half-cell indices) in a 6-cell window
vertex = st.tuples(st.integers(0, 6).map(lambda v: 2 * v), st.integers(0, 6).map(lambda v: 2 * v))
areas = st.lists(vertex, min_size=3, max_size=7)


def _filter(area: list[tuple[int, int]]) -> str:
    return (
        "_geoPolygon("
        + ", ".join(f"[{lat!r}, {lng!r}]" for lat, lng in map(lambda v: _coord(*v), area))
        + ")"
    )


def _ring(area: list[tuple[int, int]]) -> list[Pt]:
    return [_pt(*v) for v in area]


# -- the pure functions -------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(areas, st.lists(st.tuples(st.integers(-2, 14), st.integers(-2, 14)), min_size=1, max_size=40))
def test_strictly_inside_is_the_even_odd_rule(
    area: list[tuple[int, int]], points: list[tuple[int, int]]
) -> None:
    ring = _ring(area)
    closed = [_coord(*v) for v in [*area, area[0]]]
    rx, ry = np.array([c[1] for c in closed]), np.array([c[0] for c in closed])
    coords = [_coord(*p) for p in points]
    got = strictly_inside((rx, ry), np.array([c[1] for c in coords]), np.array([c[0] for c in coords]))
    assert got.tolist() == [inside(ring, _pt(*p)) for p in points]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(-3, 3), st.integers(-3, 3)), min_size=4, max_size=4))
def test_segments_intersect_is_exact(ends: list[tuple[int, int]]) -> None:
    a, b, c, d = (_pt(*p) for p in ends)
    args = [np.array([v]) for p in ends for v in reversed(_coord(*p))]
    assert bool(segments_intersect(*args)[0]) == meet(a, b, c, d)


# -- through the index --------------------------------------------------------------------------------

GRID = [(i, j) for i in range(-2, 15) for j in range(-2, 15)]  # half cells: on and between vertices


@pytest.fixture(scope="module")
def points_index(tmp_path_factory: pytest.TempPathFactory) -> Fixture:
    docs: list[dict[str, Any]] = []
    for n, (i, j) in enumerate(GRID):
        lat, lng = _coord(i, j)
        doc: dict[str, Any] = {"id": n, "_geojson": {"type": "Point", "coordinates": [lng, lat]}}
        if n % 5 == 0:
            doc["_geo"] = {"lat": lat, "lng": lng}  # never looked at by `_geoPolygon`
        docs.append(doc)
    docs.append({"id": len(GRID), "title": "no shape"})
    return Fixture(
        Path(tmp_path_factory.mktemp("pts")) / "i", {"filterableAttributes": ["_geojson", "_geo"]}, docs
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(area=areas)
def test_polygon_filter_selects_the_points_inside(points_index: Fixture, area: list[tuple[int, int]]) -> None:
    ring = _ring(area)
    expected = [n for n, (i, j) in enumerate(GRID) if inside(ring, _pt(i, j))]
    assert points_index.ids(_filter(area)) == expected


# lines and polygons: fixed, varied shapes over and around the window
_rng = np.random.default_rng(7)
SHAPES: list[tuple[str, list[tuple[int, int]]]] = []
for _k in range(120):
    _kind = "LineString" if _k % 2 else "Polygon"
    _size = int(_rng.integers(1 if _kind == "LineString" else 3, 6))
    _center = _rng.integers(-6, 20, size=2)
    _pts = [
        (int(_center[0] + _rng.integers(-4, 5)), int(_center[1] + _rng.integers(-4, 5))) for _ in range(_size)
    ]
    SHAPES.append((_kind, _pts))
SHAPES.append(("Polygon", [(-40, -40), (60, -40), (60, 60), (-40, 60)]))  # contains every area


def _shape_doc(n: int, kind: str, pts: list[tuple[int, int]]) -> dict[str, Any]:
    coords = [[_coord(*p)[1], _coord(*p)[0]] for p in pts]
    value = {"type": kind, "coordinates": [[*coords, coords[0]]] if kind == "Polygon" else coords}
    return {"id": n, "_geojson": value}


@pytest.fixture(scope="module")
def shapes_index(tmp_path_factory: pytest.TempPathFactory) -> Fixture:
    docs = [_shape_doc(n, kind, pts) for n, (kind, pts) in enumerate(SHAPES)]
    return Fixture(Path(tmp_path_factory.mktemp("shp")) / "i", {"filterableAttributes": ["_geojson"]}, docs)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(area=areas)
def test_polygon_filter_selects_the_shapes_meeting_it(
    shapes_index: Fixture, area: list[tuple[int, int]]
) -> None:
    ring = _ring(area)
    expected = []
    for n, (kind, pts) in enumerate(SHAPES):
        if degenerate(ring):  # an area without interior selects nothing
            break
        shape = [_pt(*p) for p in pts]
        hit = polygon_meets_area(shape, ring) if kind == "Polygon" else line_meets_area(shape, ring, False)
        if hit:
            expected.append(n)
    assert shapes_index.ids(_filter(area)) == expected
