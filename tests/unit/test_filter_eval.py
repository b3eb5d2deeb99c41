"""Filter evaluation on the facet structures (engine/search/filter.py over engine/update/facets.py),
in process on a real LMDB index: Meilisearch's semantics operator by operator, the granular
`filterableAttributes` gating and its messages, geo filters, and the structures following document
writes and settings changes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyroaring import BitMap

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.apitypes.settings import complete_settings
from hanzo_engine.engine.index import Index
from hanzo_engine.engine.search import facet_store
from hanzo_engine.engine.search.facet_store import NUMBERS, STRINGS, FacetStore
from hanzo_engine.engine.search.filter import FilterContext, FilterOperatorError
from hanzo_engine.engine.storage.codecs import decode_bitmap, decode_f64, encode_bitmap, encode_f64
from hanzo_engine.engine.update.facets import (
    MAX_FACET_VALUE_LENGTH,
    FacetRules,
    check_geo,
    extract_facets,
    normalize_facet,
)
from hanzo_engine.engine.update.settings_hook import reindex_for_settings
from hanzo_engine.filter_parser import FilterError, parse_filter_value

DOCS: list[dict[str, Any]] = [
    {"id": 1, "title": "Shazam!", "genres": ["Action", "Adventure"], "year": 2019, "rating": 7.5},
    {"id": 2, "title": "Captain Marvel", "genres": ["Action", "Adventure"], "year": "2019"},
    {"id": 3, "title": "Escape Room", "genres": ["Horror", "Thriller"], "year": 2018, "rating": None},
    {"id": 4, "title": "  Gläss ", "genres": [], "year": 2019, "nested": {"a": {"b": 3}}, "flag": True},
    {"id": 5, "title": "", "nested": [{"a": 1}, {"a": [2, None]}], "flag": False, "empty": {}},
    {"id": 6, "title": "Crêpe", "doggos": [{"name": "Bobby", "age": 2}, {"name": "buddy", "age": 4}]},
]


class Fixture:
    def __init__(self, path: Path, settings: dict[str, Any], docs: list[dict[str, Any]]) -> None:
        self.index = Index.create(path, primary_key="id", created_at=0)
        self.settings = complete_settings({})
        self.set(settings)
        self.add(docs)

    def set(self, settings: dict[str, Any]) -> None:
        new = complete_settings({**self.settings, **settings})
        with self.index.write() as w:
            reindex_for_settings(w, self.settings, new, "test")
            w.set_settings(new)
            w.touch()
        self.settings = new

    def add(self, docs: list[dict[str, Any]], merge: bool = False) -> None:
        with self.index.write() as w:
            for doc in docs:
                w.put_document(str(doc["id"]), doc, merge=merge)
            w.touch()

    def delete(self, *ids: int) -> None:
        with self.index.write() as w:
            w.delete_documents(str(i) for i in ids)
            w.touch()

    def ids(self, expr: Any) -> list[int]:
        node = parse_filter_value(expr)
        assert node is not None
        with self.index.read() as r:
            bm = FilterContext(r, self.settings).evaluate(node)
            return sorted(int((r.document_by_internal_id(d) or {})["id"]) for d in bm)

    def error(self, expr: Any) -> str:
        node = parse_filter_value(expr)
        assert node is not None
        with self.index.read() as r, pytest.raises((FilterError, FilterOperatorError)) as info:
            FilterContext(r, self.settings).evaluate(node)
        assert isinstance(info.value, (FilterError, FilterOperatorError))
        return str(info.value.message)


ALL_FIELDS = ["title", "genres", "year", "rating", "nested", "flag", "empty", "doggos", "id"]


@pytest.fixture
def fx(tmp_path: Path) -> Iterator[Fixture]:
    f = Fixture(tmp_path / "idx", {"filterableAttributes": ALL_FIELDS}, DOCS)
    yield f
    f.index.close()


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("title = 'Shazam!'", [1]),
        ("title = 'shazam!'", [1]),
        ("title = 'gläss'", [4]),  # trimmed and lowercased, accents kept (NFKD)
        ("title = glass", []),
        ("title = 'Crêpe'", [6]),
        ("year = 2019", [1, 2, 4]),  # the number 2019 and the string "2019"
        ("year = 2019.0", [1, 4]),  # as a string "2019.0" matches nothing, as a number only numbers
        ("year > 2018", [1, 2, 4]),  # numbers, and strings above "2018"
        ("year >= 2019", [1, 2, 4]),
        ("year < 2019", [3]),
        ("year <= 2018", [3]),
        ("year 2018 TO 2019", [1, 2, 3, 4]),
        ("year 2020 TO 2019", []),  # lower above upper selects nothing
        ("rating > 7 AND rating < 8", [1]),
        ("genres = action", [1, 2]),
        ("genres IN [horror, ADVENTURE]", [1, 2, 3]),
        ("genres NOT IN [horror, adventure]", [4, 5, 6]),
        ("genres != action", [3, 4, 5, 6]),  # documents without the field included
        ("NOT genres = action", [3, 4, 5, 6]),
        ("genres IS EMPTY", [4]),
        ("title IS EMPTY", [5]),
        ("empty IS EMPTY", [5]),
        ("rating IS NULL", [3]),
        ("rating IS NOT NULL", [1, 2, 4, 5, 6]),
        ("rating EXISTS", [1, 3]),
        ("rating NOT EXISTS", [2, 4, 5, 6]),
        ("nested.a = 2", [5]),
        ("nested.a IS NULL", []),  # a null inside an array is not "null"
        ("nested.a.b = 3", [4]),
        ("nested EXISTS", [4, 5]),
        ("nested.a EXISTS", [4, 5]),
        ("flag = true", [4]),
        ("flag = false", [5]),
        ("flag > f", [4, 5]),  # booleans are the strings "true" / "false"
        ("doggos.name = bobby", [6]),
        ("doggos.age > 3", [6]),
        ("doggos.age 5 TO 10", []),
        ("title STARTS WITH sha", [1]),
        ("title STARTS WITH ''", [1, 2, 3, 4, 5, 6]),  # an empty prefix: every document with the field
        ("title NOT STARTS WITH c", [1, 3, 4, 5]),
        ("title CONTAINS arv", [2]),
        ("title NOT CONTAINS e", [1, 4, 5]),
        ("id IN [1, 3]", [1, 3]),
        ("(year = 2019 AND genres = action) OR id = 5", [1, 2, 5]),
        ("NOT (year = 2019 OR id = 5)", [3, 6]),
        (["genres = action", ["id = 1", "id = 3"]], [1]),
        ("id = 3 AND NOT id = 3", []),
    ],
)
def test_operators(fx: Fixture, expr: Any, expected: list[int]) -> None:
    assert fx.ids(expr) == expected


def test_not_filterable_is_positioned(fx: Fixture) -> None:
    assert fx.error("id = 1 AND unknown = 3") == (
        "Attribute `unknown` is not filterable. Available filterable attribute patterns are: `doggos`, "
        "`empty`, `flag`, `genres`, `id`, `nested`, `rating`, `title`, `year`.\n12:19 id = 1 AND unknown = 3"
    )


def test_field_never_seen_selects_nothing(tmp_path: Path) -> None:
    f = Fixture(tmp_path / "i", {"filterableAttributes": ["ghost", "id"]}, DOCS)
    assert f.ids("ghost = 1") == []
    assert f.ids("ghost NOT EXISTS") == [1, 2, 3, 4, 5, 6]
    assert f.ids("NOT ghost = 1") == [1, 2, 3, 4, 5, 6]


GRANULAR = [
    {"attributePatterns": ["year"], "features": {"filter": {"equality": True, "comparison": False}}},
    {"attributePatterns": ["rating"], "features": {"filter": {"equality": False, "comparison": True}}},
    {"attributePatterns": ["doggos.a*"], "features": {"filter": {"equality": False, "comparison": False}}},
    {"attributePatterns": ["doggos.*"]},
    "title",
]


def test_granular_operator_gating(tmp_path: Path) -> None:
    f = Fixture(tmp_path / "i", {"filterableAttributes": GRANULAR}, DOCS)
    assert f.ids("year = 2019") == [1, 2, 4]
    assert f.ids("year EXISTS") == [1, 2, 3, 4]
    assert f.ids("rating > 7") == [1]
    assert f.error("year > 2000") == (
        "Filter operator `>` is not allowed for the attribute `year`.\n"
        "  - Note: allowed operators: OR, AND, NOT, =, !=, IN, IS EMPTY, IS NULL, EXISTS.\n"
        "  - Note: field `year` matched rule #0 in `filterableAttributes`\n"
        "  - Hint: enable comparison in rule #0 by modifying the features.filter object\n"
        "  - Hint: prepend another rule matching `year` with appropriate filter features before rule #0"
    )
    assert f.error("year 1 TO 3").startswith("Filter operator `TO` is not allowed for the attribute `year`.")
    assert f.error("rating IN [7.5]") == (
        "Filter operator `=` is not allowed for the attribute `rating`.\n"
        "  - Note: allowed operators: OR, AND, NOT, <, >, <=, >=, TO, IS EMPTY, IS NULL, EXISTS.\n"
        "  - Note: field `rating` matched rule #1 in `filterableAttributes`\n"
        "  - Hint: enable equality in rule #1 by modifying the features.filter object\n"
        "  - Hint: prepend another rule matching `rating` with appropriate filter features before rule #1"
    )
    assert f.error("rating != 7.5").startswith("Filter operator `!=` is not allowed")
    # the first matching rule wins: `doggos.age` matches the disabled rule #2, `doggos.name` rule #3
    assert f.ids("doggos.name = bobby") == [6]
    assert f.error("doggos.age > 2") == (
        "Attribute `doggos.age` is not filterable. Available filterable attribute patterns are: `doggos.*`, "
        "`rating`, `title`, `year`.\n1:11 doggos.age > 2"
    )
    # a granular pattern does not cover nested fields, a plain name does
    assert "Attribute `title.x`" not in f.error("year > 1")  # (gating error above, not filterability)


def test_and_stops_at_the_first_empty_operand(tmp_path: Path) -> None:
    f = Fixture(tmp_path / "i", {"filterableAttributes": GRANULAR}, DOCS)
    # milli evaluates `AND` left to right and stops once nothing is left: the gated operator after an
    # empty operand raises nothing, in the other order it does
    assert f.ids("year = 1900 AND year > 3") == []
    assert f.error("year > 3 AND year = 1900").startswith("Filter operator `>`")


GEO_DOCS = [
    {"id": 1, "name": "Taco Truck", "_geo": {"lat": 34.0522, "lng": -118.2437}},
    {"id": 2, "name": "La Bella Italia", "_geo": {"lat": "45.4777599", "lng": "9.1967508"}},
    {"id": 3, "name": "Crêpe Truck"},
    {"id": 4, "name": "Fiji", "_geo": {"lat": -17.7, "lng": 178.1}},
    {"id": 5, "name": "Samoa", "_geo": {"lat": -13.8, "lng": -172.1}},
    {"id": 6, "name": "nothing", "_geo": None},
]


def test_geo_filters(tmp_path: Path) -> None:
    f = Fixture(tmp_path / "i", {"filterableAttributes": ["_geo"]}, GEO_DOCS)
    assert f.ids("_geoRadius(45.472735, 9.184019, 2000)") == [2]
    assert f.ids("_geoRadius(45.472735, 9.184019, 1000)") == []
    assert f.ids("_geoRadius(0, 0, 20100000)") == [1, 2, 4, 5]
    assert f.ids("_geoBoundingBox([89, 179], [-89, -179])") == [1, 2, 4, 5]
    assert f.ids("_geoBoundingBox([89, 170], [-89, -170])") == [1, 2]
    # crossing the antimeridian: east edge -170, west edge 170
    assert f.ids("_geoBoundingBox([0, -170], [-20, 170])") == [4, 5]
    assert f.ids("NOT _geoBoundingBox([50, 10], [40, 0])") == [1, 3, 4, 5, 6]
    assert f.error("_geoRadius(100, 0, 10)") == (
        "Bad latitude `100`. Latitude must be contained between -90 and 90 degrees.\n12:15 _geoRadius(100, 0, 10)"
    )
    assert f.error("_geoBoundingBox([1, 2], [3, 4])") == (
        "The top latitude `1` is below the bottom latitude `3`.\n29:30 _geoBoundingBox([1, 2], [3, 4])"
    )


def test_geo_needs_geo_filterable(tmp_path: Path) -> None:
    f = Fixture(tmp_path / "i", {"filterableAttributes": ["name"], "sortableAttributes": ["_geo"]}, GEO_DOCS)
    assert f.error("_geoRadius(1, 2, 3)") == (
        "Attribute `_geo/_geojson` is not filterable. Available filterable attribute patterns are: `name`."
        "\n12:13 _geoRadius(1, 2, 3)"
    )
    assert f.error("_geoPolygon([1, 2], [3, 4], [5, 6])").startswith(
        "Attribute `_geojson` is not filterable."
    )


def test_geo_validation_messages() -> None:
    settings = complete_settings({"sortableAttributes": ["_geo"]})

    def message(geo: Any) -> str:
        with pytest.raises(MeiliError) as info:
            check_geo(settings, [("11", {"id": "11", "_geo": geo})], "test")
        assert info.value.code == "invalid_document_geo_field"
        return info.value.message

    assert message("foobar") == (
        'Index `test`: The `_geo` field in the document with the id: `"11"` is not an object. Was expecting an '
        'object with the `_geo.lat` and `_geo.lng` fields but instead got `"foobar"`.'
    )
    assert message({}) == (
        "Index `test`: Could not find latitude nor longitude in the document with the id: "
        '`"11"`. Was expecting `_geo.lat` and `_geo.lng` fields.'
    )
    assert message({"doggos": "are good"}).endswith("Was expecting `_geo.lat` and `_geo.lng` fields.")
    assert message({"lat": 12}) == (
        'Index `test`: Could not find longitude in the document with the id: `"11"`. '
        "Was expecting a `_geo.lng` field."
    )
    assert message({"lng": True}).startswith("Index `test`: Could not find latitude in the document")
    assert message({"lat": False, "lng": True}) == (
        'Index `test`: Could not parse latitude nor longitude in the document with the id: `"11"`. Was '
        "expecting finite numbers but instead got `false` and `true`."
    )
    assert message({"lat": "doggo", "lng": 1}).endswith(
        'Was expecting a finite number but instead got `"doggo"`.'
    )
    assert message({"lat": 1, "lng": "inf"}).startswith("Index `test`: Could not parse longitude")
    assert message({"lat": 1, "lng": 2, "extra": 3}) == (
        'Index `test`: The `_geo` field in the document with the id: `"11"` contains the following unexpected '
        'fields: `{"extra":3}`.'
    )
    check_geo(settings, [("1", {"_geo": None}), ("2", {"_geo": {"lat": "1.5", "lng": 2}})], "test")
    # without `_geo` sortable or filterable nothing is checked
    check_geo(complete_settings({}), [("1", {"_geo": "foobar"})], "test")


def test_writes_keep_structures_in_step(fx: Fixture) -> None:
    fx.add([{"id": 1, "title": "Other"}])  # replace: the old values go
    assert fx.ids("genres = action") == [2]
    assert fx.ids("title = other") == [1]
    fx.add([{"id": 2, "year": 1990}], merge=True)  # update: top-level fields overwrite, others stay
    assert fx.ids("year = 1990") == [2]
    assert fx.ids("genres = action") == [2]
    fx.delete(2, 3)
    assert fx.ids("genres EXISTS") == [4]
    assert fx.ids("NOT id = 1") == [4, 5, 6]
    with fx.index.write() as w:
        w.clear_documents()
        w.touch()
    assert fx.ids("NOT id = 1") == []
    fx.add([{"id": 9, "genres": "Drama"}])
    assert fx.ids("genres = drama") == [9]


def test_add_then_remove_in_one_transaction(fx: Fixture) -> None:
    with fx.index.write() as w:
        w.put_document("7", {"id": 7, "year": 1234}, merge=False)
        w.put_document("7", {"id": 7, "year": 4321}, merge=False)
        w.put_document("8", {"id": 8, "year": 1234}, merge=False)
        w.delete_document("8")
        w.touch()
    assert fx.ids("year = 1234") == []
    assert fx.ids("year = 4321") == [7]


def test_settings_rebuild_only_what_changed(tmp_path: Path) -> None:
    f = Fixture(tmp_path / "i", {"filterableAttributes": ["title"]}, DOCS)
    with f.index.read() as r:
        store = FacetStore(r)
        assert store.fid("genres") is None
    f.set({"filterableAttributes": ["title", "genres"]})
    assert f.ids("genres = horror") == [3]
    f.set({"filterableAttributes": ["genres"], "sortableAttributes": ["year"]})
    with f.index.read() as r:
        store = FacetStore(r)
        title = store.fid("title")
        assert title is not None
        # the field is no longer faceted: every structure of it is gone
        assert not store.flag_docids(b"e", title)
        assert len(store.column(title, STRINGS)) == 0
        year = store.fid("year")
        assert year is not None and len(store.column(year, NUMBERS)) == 2  # sortable only: faceted too
    # a custom ranking rule and the distinct attribute facet their fields as well
    rules = FacetRules(
        complete_settings({"rankingRules": ["words", "rating:desc"], "distinctAttribute": "id"})
    )
    assert rules.is_faceted("rating") and rules.is_faceted("id") and not rules.is_faceted("title")
    assert not rules.is_filterable("rating")


def test_making_geo_filterable_validates_stored_documents(tmp_path: Path) -> None:
    f = Fixture(tmp_path / "i", {}, [{"id": 1, "_geo": {"lat": 1}}])
    with pytest.raises(MeiliError) as info:
        f.set({"filterableAttributes": ["_geo"]})
    assert info.value.message.startswith("Index `test`: Could not find longitude in the document")


def test_values() -> None:
    assert normalize_facet("  Ŝuper\tCAFÉ ") == "s\u0302uper\tcafe\u0301"
    for x in (-1e300, -2.5, -0.0, 0.0, 1e-300, 3.0, 2**60):
        assert decode_f64(encode_f64(x)) == x
    encoded = [encode_f64(x) for x in (-1e300, -2.5, -1e-300, 0.0, 1e-300, 3.0, 1e300)]
    assert encoded == sorted(encoded)
    assert encode_f64(-0.0) == encode_f64(0.0)
    long = "é" * 400  # 800 bytes: cut at a character boundary under 468 bytes
    values = extract_facets({"t": long}, FacetRules(complete_settings({"filterableAttributes": ["t"]})))
    (key,) = values["t"].strings
    assert len(key.encode()) == MAX_FACET_VALUE_LENGTH and normalize_facet(long).startswith(key)
    assert values["t"].strings[key] == long  # the original spelling is kept whole


def test_bitmap_codec() -> None:
    ranged = BitMap()
    ranged.add_range(10, 70_000)  # run containers serialize small: never mistaken for plain u32s
    for bitmap in (
        BitMap([5]),
        BitMap(range(7)),
        BitMap(range(8)),
        BitMap(range(0, 10**6, 7)),
        ranged,
        BitMap(range(8)) | BitMap([2**32 - 1]),
    ):
        raw = encode_bitmap(bitmap)
        assert decode_bitmap(raw) == bitmap
        assert (len(raw) <= 28) == (len(bitmap) <= 7)


@pytest.mark.parametrize("small", [False, True])
def test_column_levels_cover_every_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small: bool
) -> None:
    if small:  # every range unions kept bitmaps, every group from level 1 up is built with the column
        monkeypatch.setattr(facet_store, "LOOSE_UNION_SIZE", 0)
        monkeypatch.setattr(facet_store, "EAGER_SPAN", 4)
    docs: list[dict[str, Any]] = [
        {"id": i, "n": i % 97 if i % 5 else 3, "s": f"v{i % 41:03d}"} for i in range(500)
    ]
    f = Fixture(tmp_path / "i", {"filterableAttributes": ["n", "s"]}, docs)
    with f.index.read() as r:
        store = FacetStore(r)
        fid = store.fid("n")
        assert fid is not None
        column = store.column(fid, NUMBERS)
        assert column.sizes == [97, 25, 7]  # milli's bulk levels: 4 values a group, 5 groups or more
        if small:  # built with the column, before any range asked for them
            assert set(column._groups) >= {(1, j) for j in range(25)} | {(2, j) for j in range(7)}
        bitmaps = [BitMap(d["id"] for d in docs if d["n"] == n) for n in range(97)]
        assert [column.bitmap(i) for i in range(97)] == bitmaps
        for lo in range(0, 97, 3):
            for hi in range(lo, 98, 5):
                expected = BitMap()
                for i in range(lo, hi):
                    expected |= bitmaps[i]
                got = column.union(lo, hi)
                assert got == expected, (lo, hi)
                got.add(10_000)  # what a caller does to its union never reaches the kept bitmaps
                assert column.union(lo, hi) == expected, (lo, hi)
        candidates = BitMap(range(0, 500, 3))
        walked = [i for i, _ in column.walk(candidates)]
        assert walked == [i for i in range(97) if bitmaps[i] & candidates]
        assert [i for i, _ in column.walk(candidates, reverse=True)] == walked[::-1]
        counts = list(column.by_count(candidates))
        assert sorted(c for _, c, _ in counts) == sorted(len(bitmaps[i] & candidates) for i in walked)
        assert [c for _, c, _ in counts] == sorted((c for _, c, _ in counts), reverse=True)
    assert f.ids("n 2 TO 12") == [d["id"] for d in docs if 2 <= d["n"] <= 12]
    assert f.ids("s >= v038") == [i for i in range(500) if i % 41 >= 38]
