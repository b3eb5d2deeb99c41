"""Geometry of the geo filters and the geo sort: haversine distances of `_geo` points, and the
`_geojson` shapes the `_geoPolygon`, `_geoRadius` and `_geoBoundingBox` filters select (`filter.py`).

Meilisearch answers geo filters on `_geojson` with cellulite (H3 cells over the shapes, then exact
checks). What it computes, which this module reproduces without the cells:

* the filter area is a polygon whose edges are great-circle arcs: geo's `Haversine.densify(…, 1 km)`
  replaces every edge by points at most 1 km apart on its great circle (the ring is closed first,
  like `geo_types::Polygon::new`), and the tests are then planar in (lng, lat) on those points;
* a point matches when it is *strictly* inside the area (geo's `Contains`: the boundary is out), a
  multi-point when one of its points does; a line or a polygon (holes ignored) when it intersects
  the area (touching counts), which includes a polygon containing the whole area.

Longitudes of the area are unwrapped (consecutive points less than 180° apart) and shapes are also
tested against the area shifted by ±360°, so an area crossing the antimeridian is taken the short
way; Meilisearch documents such areas as unsupported (its answers there depend on its cells).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Final

import numpy as np
from pyroaring import BitMap

from hanzo_engine.engine.documents.geojson import GEOJSON_FIELD

from .facet_store import FacetStore

EARTH_RADIUS_M: Final = 6_371_000.0  # milli's `distance_between_two_points`
MEAN_EARTH_RADIUS_M: Final = 6_371_008.8  # geo's `Haversine` (densify, circle destinations)
DENSIFY_MAX_M: Final = 1_000.0
_MAX_PAIRS: Final = 2_000_000  # (segment, edge) pairs tested at once
_SHAPES_LOCK = threading.Lock()

Ring = tuple[np.ndarray, np.ndarray]  # closed ring: x (lng) and y (lat), last point == first

__all__ = [
    "EARTH_RADIUS_M",
    "GeoShapes",
    "Ring",
    "box_ring",
    "circle_ring",
    "densify",
    "geo_shapes",
    "haversine",
    "haversine_many",
    "polygon_ring",
    "segments_intersect",
    "strictly_inside",
]


def haversine(lat1: float, lng1: float, lat2: float, lng2: float) -> float:
    """Great-circle distance in meters (geoutils' `haversine_distance_to`, as milli uses it)."""
    t1, t2 = math.radians(lat1), math.radians(lat2)
    dt, dl = math.radians(lat2 - lat1), math.radians(lng2 - lng1)
    a = math.sin(dt / 2) ** 2 + math.cos(t1) * math.cos(t2) * math.sin(dl / 2) ** 2
    return EARTH_RADIUS_M * 2 * math.asin(math.sqrt(a))


def haversine_many(lat: float, lng: float, lats: np.ndarray, lngs: np.ndarray) -> np.ndarray:
    t1, t2 = math.radians(lat), np.radians(lats)
    dt, dl = np.radians(lats - lat), np.radians(lngs - lng)
    a = np.sin(dt / 2) ** 2 + math.cos(t1) * np.cos(t2) * np.sin(dl / 2) ** 2
    result: np.ndarray = EARTH_RADIUS_M * 2 * np.arcsin(np.sqrt(np.minimum(a, 1.0)))
    return result


def densify(lats: Sequence[float], lngs: Sequence[float]) -> Ring:
    """The closed ring of the polygon with these vertices, every edge replaced by points at most
    1 km apart along its great circle (spherical interpolation; the vertices themselves are kept
    exactly), longitudes unwrapped."""
    lat = np.asarray(lats, dtype=np.float64)
    lng = np.asarray(lngs, dtype=np.float64)
    if len(lat) and (lat[0] != lat[-1] or lng[0] != lng[-1]):
        lat, lng = np.append(lat, lat[0]), np.append(lng, lng[0])
    if len(lat) < 2:
        return lng.copy(), lat.copy()
    phi, lam = np.radians(lat), np.radians(lng)
    p1, p2, l1, l2 = phi[:-1], phi[1:], lam[:-1], lam[1:]
    a = np.sin((p2 - p1) / 2) ** 2 + np.cos(p1) * np.cos(p2) * np.sin((l2 - l1) / 2) ** 2
    angle = 2 * np.arcsin(np.sqrt(np.minimum(a, 1.0)))
    steps = np.maximum(np.ceil(angle * MEAN_EARTH_RADIUS_M / DENSIFY_MAX_M), 1).astype(np.int64)
    edge = np.repeat(np.arange(len(steps)), steps)
    first = np.cumsum(steps) - steps
    k = np.arange(len(edge)) - first[edge]
    f = k / steps[edge]
    d = angle[edge]
    with np.errstate(divide="ignore", invalid="ignore"):
        wa = np.sin((1 - f) * d) / np.sin(d)
        wb = np.sin(f * d) / np.sin(d)
    c1, c2 = np.cos(p1)[edge], np.cos(p2)[edge]
    x = wa * c1 * np.cos(l1)[edge] + wb * c2 * np.cos(l2)[edge]
    y = wa * c1 * np.sin(l1)[edge] + wb * c2 * np.sin(l2)[edge]
    z = wa * np.sin(p1)[edge] + wb * np.sin(p2)[edge]
    out_lat = np.degrees(np.arctan2(z, np.hypot(x, y)))
    out_lng = np.degrees(np.arctan2(y, x))
    start = k == 0
    out_lat[start] = lat[:-1][edge[start]]
    out_lng[start] = lng[:-1][edge[start]]
    keep = np.isfinite(out_lat) & np.isfinite(out_lng)  # antipodal edges have no single great circle
    out_lat = np.append(out_lat[keep], lat[-1])
    out_lng = np.append(out_lng[keep], lng[-1])
    # unwrap by whole turns only, so that coordinates that need no shift stay bit for bit the same
    turns = np.round((np.mod(np.diff(out_lng) + 180.0, 360.0) - 180.0 - np.diff(out_lng)) / 360.0)
    if turns.any():
        out_lng = out_lng + 360.0 * np.concatenate(([0.0], np.cumsum(turns)))
    return out_lng, out_lat


def polygon_ring(coords: Sequence[tuple[float, float]]) -> Ring:
    """The area of `_geoPolygon` from its (lat, lng) vertices."""
    return densify([lat for lat, _ in coords], [lng for _, lng in coords])


def box_ring(top: float, right: float, bottom: float, left: float) -> Ring:
    """The area milli's `_geoBoundingBox` asks cellulite for: the four corners, densified."""
    return densify([top, top, bottom, bottom], [right, left, left, right])


def circle_ring(lat: float, lng: float, radius: float, resolution: int) -> Ring:
    """The area of `_geoRadius` on shapes: `resolution` points at `radius` meters from the center at
    bearings 360°·i/n (geo's haversine `destination`), densified."""
    phi, lam = math.radians(lat), math.radians(lng)
    theta = np.radians(360.0 * np.arange(resolution) / resolution)
    delta = radius / MEAN_EARTH_RADIUS_M
    phi2 = np.arcsin(math.sin(phi) * math.cos(delta) + math.cos(phi) * math.sin(delta) * np.cos(theta))
    lam2 = lam + np.arctan2(
        np.sin(theta) * math.sin(delta) * math.cos(phi), math.cos(delta) - math.sin(phi) * np.sin(phi2)
    )
    return densify(np.degrees(phi2).tolist(), np.degrees(lam2).tolist())


def strictly_inside(ring: Ring, px: np.ndarray, py: np.ndarray) -> np.ndarray:
    """For each point, whether it is strictly inside the closed ring (even-odd rule; a point on an
    edge is outside).

    A point crosses the edge (x1, y1)-(x2, y2) when ``(y1 > py) != (y2 > py)`` and
    ``px < x1 + (py - y1) * (x2 - x1) / (y2 - y1)``; it is on the edge when
    ``(x2 - x1) * (py - y1) - (y2 - y1) * (px - x1) == 0`` within the edge's bounding box. Only the
    points whose latitude lies in an edge's latitude range are paired with it (points sorted by
    latitude, a binary search per edge), so a densified ring of many short edges costs about two
    pairs per point."""
    m = len(px)
    if m == 0 or len(ring[0]) < 4:
        return np.zeros(m, dtype=bool)
    rx, ry = ring
    x1, y1, x2, y2 = rx[:-1], ry[:-1], rx[1:], ry[1:]
    order = np.argsort(py, kind="stable")
    ys, xs = py[order], px[order]
    lo = np.searchsorted(ys, np.minimum(y1, y2), "left")
    hi = np.searchsorted(ys, np.maximum(y1, y2), "right")
    counts = hi - lo
    parity = np.zeros(m, dtype=np.int64)
    on_edge = np.zeros(m, dtype=bool)
    for first, last in _chunks(counts):
        c = counts[first:last]
        e = np.repeat(np.arange(first, last), c)
        p = np.repeat(lo[first:last] - (np.cumsum(c) - c), c) + np.arange(int(c.sum()))
        ex1, ey1, ex2, ey2, qx, qy = x1[e], y1[e], x2[e], y2[e], xs[p], ys[p]
        with np.errstate(divide="ignore", invalid="ignore"):
            crossing = ((ey1 > qy) != (ey2 > qy)) & (qx < ex1 + (qy - ey1) * (ex2 - ex1) / (ey2 - ey1))
        parity += np.bincount(p[crossing], minlength=m)
        touching = (
            ((ex2 - ex1) * (qy - ey1) - (ey2 - ey1) * (qx - ex1) == 0)
            & (qx >= np.minimum(ex1, ex2))
            & (qx <= np.maximum(ex1, ex2))
        )
        on_edge[p[touching]] = True
    inside = np.empty(m, dtype=bool)
    inside[order] = ((parity & 1) == 1) & ~on_edge
    return inside


def _chunks(counts: np.ndarray) -> list[tuple[int, int]]:
    """Consecutive ranges of `counts` whose sums stay near `_MAX_PAIRS` (memory bound)."""
    ranges: list[tuple[int, int]] = []
    total = np.cumsum(counts)
    first = 0
    while first < len(counts):
        base = total[first - 1] if first else 0
        last = int(np.searchsorted(total, base + _MAX_PAIRS, "right"))
        last = max(last, first + 1)
        ranges.append((first, last))
        first = last
    return ranges


def _orientation(
    ax: np.ndarray, ay: np.ndarray, bx: np.ndarray, by: np.ndarray, cx: np.ndarray, cy: np.ndarray
) -> np.ndarray:
    result: np.ndarray = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax)
    return result


def _within(
    ax: np.ndarray, ay: np.ndarray, bx: np.ndarray, by: np.ndarray, cx: np.ndarray, cy: np.ndarray
) -> np.ndarray:
    """c lies in the bounding box of segment ab (with c collinear: on the segment)."""
    result: np.ndarray = (
        (cx >= np.minimum(ax, bx))
        & (cx <= np.maximum(ax, bx))
        & (cy >= np.minimum(ay, by))
        & (cy <= np.maximum(ay, by))
    )
    return result


def segments_intersect(
    ax: np.ndarray,
    ay: np.ndarray,
    bx: np.ndarray,
    by: np.ndarray,
    cx: np.ndarray,
    cy: np.ndarray,
    dx: np.ndarray,
    dy: np.ndarray,
) -> np.ndarray:
    """Whether segments ab and cd share a point (touching and collinear overlap included)."""
    o1 = _orientation(cx, cy, dx, dy, ax, ay)
    o2 = _orientation(cx, cy, dx, dy, bx, by)
    o3 = _orientation(ax, ay, bx, by, cx, cy)
    o4 = _orientation(ax, ay, bx, by, dx, dy)
    proper = (((o1 > 0) & (o2 < 0)) | ((o1 < 0) & (o2 > 0))) & (((o3 > 0) & (o4 < 0)) | ((o3 < 0) & (o4 > 0)))
    touching = (
        ((o1 == 0) & _within(cx, cy, dx, dy, ax, ay))
        | ((o2 == 0) & _within(cx, cy, dx, dy, bx, by))
        | ((o3 == 0) & _within(ax, ay, bx, by, cx, cy))
        | ((o4 == 0) & _within(ax, ay, bx, by, dx, dy))
    )
    result: np.ndarray = proper | touching
    return result


def _degenerate(ring: Ring) -> bool:
    """An area without interior (fewer than three distinct points, or all on one line) selects
    nothing: no point is strictly inside it, and Meilisearch's cells cover no zero-area polygon."""
    rx, ry = ring
    distinct = np.flatnonzero((rx != rx[0]) | (ry != ry[0])) if len(rx) else np.zeros(0, dtype=np.int64)
    if not len(distinct):
        return True
    k = distinct[0]
    cross = (rx[k] - rx[0]) * (ry - ry[0]) - (ry[k] - ry[0]) * (rx - rx[0])
    return not cross.any()


class GeoShapes:
    """Every document's `_geojson` shape as flat arrays.

    Points: `point_doc`, `point_x`, `point_y`. Lines and polygon rings ("parts"): their vertices in
    `vx`, `vy` (part `i` spans `part_start[i]:part_end[i]`), owner `part_doc`, `part_polygon`, and
    bounding boxes; their segments (a polygon's closing one included) in `seg_*`, with `seg_part`."""

    def __init__(self, store: FacetStore) -> None:
        fid = store.fid(GEOJSON_FIELD)
        docids = store.flag_docids(b"e", fid) if fid is not None else BitMap()
        point_doc: list[int] = []
        point_xy: list[float] = []
        vertices: list[float] = []
        part_doc: list[int] = []
        part_polygon: list[bool] = []
        part_start: list[int] = []
        part_end: list[int] = []
        for docid in docids:
            entry = store.doc_entry(docid)
            item = entry.get(fid) if entry is not None and fid is not None else None
            if item is None or len(item) < 4:
                continue
            points, lines, polygons = item[3]
            point_doc.extend([docid] * (len(points) // 2))
            point_xy.extend(points)
            for flat, polygon in [(line, False) for line in lines] + [(ring, True) for ring in polygons]:
                part_doc.append(docid)
                part_polygon.append(polygon)
                part_start.append(len(vertices) // 2)
                vertices.extend(flat)
                part_end.append(len(vertices) // 2)
        xy = np.asarray(point_xy, dtype=np.float64).reshape(-1, 2)
        self.point_doc = np.asarray(point_doc, dtype=np.uint32)
        self.point_x, self.point_y = xy[:, 0].copy(), xy[:, 1].copy()
        v = np.asarray(vertices, dtype=np.float64).reshape(-1, 2)
        self.vx, self.vy = v[:, 0].copy(), v[:, 1].copy()
        self.part_doc = np.asarray(part_doc, dtype=np.uint32)
        self.part_polygon = np.asarray(part_polygon, dtype=bool)
        self.part_start = np.asarray(part_start, dtype=np.int64)
        self.part_end = np.asarray(part_end, dtype=np.int64)
        nonempty = self.part_end > self.part_start
        self.part_minx = np.full(len(part_doc), np.inf)
        self.part_maxx = np.full(len(part_doc), -np.inf)
        self.part_miny = np.full(len(part_doc), np.inf)
        self.part_maxy = np.full(len(part_doc), -np.inf)
        if nonempty.any():
            starts = self.part_start[nonempty]
            self.part_minx[nonempty] = np.minimum.reduceat(self.vx, starts)
            self.part_maxx[nonempty] = np.maximum.reduceat(self.vx, starts)
            self.part_miny[nonempty] = np.minimum.reduceat(self.vy, starts)
            self.part_maxy[nonempty] = np.maximum.reduceat(self.vy, starts)
        # segments: consecutive vertices of a part, plus a polygon's closing edge
        seg_part: list[np.ndarray] = []
        seg_a: list[np.ndarray] = []
        seg_b: list[np.ndarray] = []
        for i in range(len(part_doc)):
            start, end = int(self.part_start[i]), int(self.part_end[i])
            a = np.arange(start, end - 1)
            b = a + 1
            if self.part_polygon[i] and end - start > 1:
                a, b = np.append(a, end - 1), np.append(b, start)
            if end - start == 1:  # a one-point line: a degenerate segment
                a, b = np.array([start]), np.array([start])
            seg_part.append(np.full(len(a), i, dtype=np.int64))
            seg_a.append(a)
            seg_b.append(b)
        self.seg_part = np.concatenate(seg_part) if seg_part else np.zeros(0, dtype=np.int64)
        a_idx = np.concatenate(seg_a) if seg_a else np.zeros(0, dtype=np.int64)
        b_idx = np.concatenate(seg_b) if seg_b else np.zeros(0, dtype=np.int64)
        self.seg_x1, self.seg_y1 = self.vx[a_idx], self.vy[a_idx]
        self.seg_x2, self.seg_y2 = self.vx[b_idx], self.vy[b_idx]

    def intersecting(self, ring: Ring) -> BitMap:
        """Documents whose shape is strictly inside or intersects the area (see the module notes)."""
        rx, ry = ring
        if _degenerate(ring):
            return BitMap()
        found: list[np.ndarray] = []
        for turn in (-360.0, 0.0, 360.0):
            shifted = (rx + turn, ry) if turn else ring
            found.extend(self._intersecting(shifted))
        docids = np.unique(np.concatenate(found)) if found else np.zeros(0, dtype=np.uint32)
        return BitMap(docids.tolist())

    def _intersecting(self, ring: Ring) -> list[np.ndarray]:
        rx, ry = ring
        minx, maxx, miny, maxy = rx.min(), rx.max(), ry.min(), ry.max()
        found: list[np.ndarray] = []
        near = (
            (self.point_x >= minx) & (self.point_x <= maxx) & (self.point_y >= miny) & (self.point_y <= maxy)
        )
        if near.any():
            inside = strictly_inside(ring, self.point_x[near], self.point_y[near])
            found.append(self.point_doc[near][inside])
        parts = np.flatnonzero(
            (self.part_maxx >= minx)
            & (self.part_minx <= maxx)
            & (self.part_maxy >= miny)
            & (self.part_miny <= maxy)
        )
        if not len(parts):
            return found
        hit = np.zeros(len(self.part_doc), dtype=bool)
        # a part with a vertex strictly inside the area (a part wholly inside has them all)
        firsts = self.part_start[parts]
        hit[parts[strictly_inside(ring, self.vx[firsts], self.vy[firsts])]] = True
        # a part crossing or touching the area's boundary
        candidate = np.zeros(len(self.part_doc), dtype=bool)
        candidate[parts] = True
        segs = np.flatnonzero(candidate[self.seg_part] & ~hit[self.seg_part])
        hit[self._crossing(ring, segs)] = True
        # a polygon that contains the whole area (no crossing: one point of the area decides)
        for i in parts[self.part_polygon[parts] & ~hit[parts]]:
            start, end = int(self.part_start[i]), int(self.part_end[i])
            part_ring = (
                np.append(self.vx[start:end], self.vx[start]),
                np.append(self.vy[start:end], self.vy[start]),
            )
            if strictly_inside(part_ring, rx[:1], ry[:1])[0]:
                hit[i] = True
        found.append(self.part_doc[hit])
        return found

    def _crossing(self, ring: Ring, segs: np.ndarray) -> np.ndarray:
        """Parts of the segments `segs` that share a point with an edge of the area."""
        if not len(segs):
            return np.zeros(0, dtype=np.int64)
        rx, ry = ring
        ex1, ey1, ex2, ey2 = rx[:-1], ry[:-1], rx[1:], ry[1:]
        emin = np.minimum(ey1, ey2)
        order = np.argsort(emin, kind="stable")
        emin_sorted = emin[order]
        tallest = float((np.maximum(ey1, ey2) - emin).max())
        sx1, sy1, sx2, sy2 = self.seg_x1[segs], self.seg_y1[segs], self.seg_x2[segs], self.seg_y2[segs]
        # edges whose latitude range can meet the segment's: their lowest point is within reach
        lo = np.searchsorted(emin_sorted, np.minimum(sy1, sy2) - tallest, "left")
        hi = np.searchsorted(emin_sorted, np.maximum(sy1, sy2), "right")
        counts = hi - lo
        parts: list[np.ndarray] = []
        for first, last in _chunks(counts):
            c = counts[first:last]
            s = np.repeat(np.arange(first, last), c)
            e = order[np.repeat(lo[first:last] - (np.cumsum(c) - c), c) + np.arange(int(c.sum()))]
            meets = segments_intersect(sx1[s], sy1[s], sx2[s], sy2[s], ex1[e], ey1[e], ex2[e], ey2[e])
            parts.append(self.seg_part[segs[s[meets]]])
        return np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)


def geo_shapes(store: FacetStore) -> GeoShapes:
    """The `_geojson` shapes of the store's index, cached per committed version like the `_geo`
    points (a write transaction builds its own)."""
    if not store.cached:
        return GeoShapes(store)
    index = store.reader.index
    version = store._version
    with _SHAPES_LOCK:
        found = index.__dict__.get("_facet_geojson")
    if found is not None and found[0] == version:
        shapes: GeoShapes = found[1]
        return shapes
    shapes = GeoShapes(store)
    with _SHAPES_LOCK:
        index.__dict__["_facet_geojson"] = (version, shapes)
    return shapes
