"""Highlighting, cropping and `_matchesPosition` (engine/search/format.py).

The expected strings are Meilisearch's own (milli `search/new/matches/mod.rs` tests and the
`tests/search/formatted.rs` snapshots). `MatchingWords` is built by hand the way the engine builds
it: whole words (exact or typo derivations), the last query word as a prefix, phrases; `ids` gives
each query term's position (a phrase spans its words' positions).
"""

from __future__ import annotations

from typing import Any

import pytest

from hanzo_engine.engine.search.format import (
    FormatOptions,
    Highlighter,
    best_match_interval,
    format_document,
    formatted_options,
)
from hanzo_engine.engine.search.types import MatchingWords
from hanzo_engine.engine.tokenizer import Tokenizer, normalize

HIGHLIGHT = FormatOptions(highlight=True)
CROP_10 = FormatOptions(crop=10)
BOTH_10 = FormatOptions(highlight=True, crop=10)


def words(
    *terms: str,
    prefix: str | None = None,
    phrases: list[list[str]] | None = None,
    ids: dict[str, tuple[int, int]] | None = None,
) -> MatchingWords:
    matching = MatchingWords(words=set(terms), prefixes=[prefix] if prefix else [], phrases=phrases or [])
    if ids is not None:
        matching.ids = ids  # type: ignore[attr-defined]  # the engine's optional term positions
    return matching


def highlighter(matching: MatchingWords, **tags: str) -> Highlighter:
    return Highlighter(matching, Tokenizer(), **tags)


# "split the world": `world` is the last query word, hence also a prefix
SPLIT_THE_WORLD = words(
    "split", "the", "world", prefix="world", ids={"split": (0, 0), "the": (1, 1), "world": (2, 2)}
)
NO_MATCH = "A quick brown fox can not jump 32 feet, right? Brr, it is cold!"
ALL_MATCHES = (
    "Natalie risk her future to build a world with the boy she loves. Emily Henry: The Love That Split "
    "The World."
)
SOME_MATCHES = "Natalie risk her future to build a world with the boy she loves."


# -- highlight -----------------------------------------------------------------------------------


def test_no_format_asked_returns_the_text() -> None:
    h = highlighter(SPLIT_THE_WORLD)
    for text in (NO_MATCH, ALL_MATCHES, SOME_MATCHES):
        assert h.format(text, FormatOptions()) == text


def test_highlight() -> None:
    h = highlighter(SPLIT_THE_WORLD)
    assert h.format("", HIGHLIGHT) == ""
    assert h.format(":-)", HIGHLIGHT) == ":-)"
    assert h.format(NO_MATCH, HIGHLIGHT) == NO_MATCH
    assert h.format(ALL_MATCHES, HIGHLIGHT) == (
        "Natalie risk her future to build a <em>world</em> with <em>the</em> boy she loves. Emily Henry: "
        "<em>The</em> Love That <em>Split</em> <em>The</em> <em>World</em>."
    )
    assert h.format(SOME_MATCHES, HIGHLIGHT) == (
        "Natalie risk her future to build a <em>world</em> with <em>the</em> boy she loves."
    )


def test_prefix_highlight_wraps_only_the_original_characters_of_the_prefix() -> None:
    h = highlighter(words("world", prefix="world"))
    assert h.format("Ŵôřlḑôle", HIGHLIGHT) == "<em>Ŵôřlḑ</em>ôle"
    assert h.format("Ŵôřlḑ", HIGHLIGHT) == "<em>Ŵôřlḑ</em>"
    assert (
        highlighter(words("westfali", prefix="westfali")).format("Westfália", HIGHLIGHT)
        == "<em>Westfáli</em>a"
    )


def test_typo_derivations_highlight_the_whole_word() -> None:
    h = highlighter(words("world", "wordl"))
    assert h.format("hello wordl and world", HIGHLIGHT) == "hello <em>wordl</em> and <em>world</em>"


def test_custom_tags() -> None:
    h = highlighter(SPLIT_THE_WORLD, highlight_pre_tag="_", highlight_post_tag="__")
    assert (
        h.format(SOME_MATCHES, HIGHLIGHT)
        == "Natalie risk her future to build a _world__ with _the__ boy she loves."
    )
    h = highlighter(SPLIT_THE_WORLD, highlight_pre_tag="", highlight_post_tag="")
    assert h.format(SOME_MATCHES, HIGHLIGHT) == SOME_MATCHES


def test_japanese_highlight() -> None:
    h = highlighter(words(normalize("で")))  # matching words are normalized (NFKD: て + dakuten)
    assert (
        h.format("この度、クーポンで無料で頂きました。", HIGHLIGHT)
        == "この度、クーポン<em>で</em>無料<em>で</em>頂きました。"
    )


def test_phrases_and_partial_matches() -> None:
    # query `the "t he" door "do or"`: `door` also matches as the split `do or`
    matching = words("the", "door", phrases=[["t", "he"], ["do", "or"]])
    h = highlighter(matching, highlight_pre_tag="_", highlight_post_tag="_")
    assert h.format("the do or die can't be he do and or isn't he", HIGHLIGHT) == (
        "_the_ _do or_ die can't be he do and or isn'_t he_"
    )


def test_stop_word_tokens_never_match_a_word() -> None:
    matching = words("the", "world")
    assert (
        Highlighter(matching, Tokenizer(stop_words=["the"])).format("the world", HIGHLIGHT)
        == "the <em>world</em>"
    )
    assert highlighter(matching).format("the world", HIGHLIGHT) == "<em>the</em> <em>world</em>"


# -- crop ----------------------------------------------------------------------------------------


def test_crop() -> None:
    h = highlighter(SPLIT_THE_WORLD)
    assert h.format("", CROP_10) == ""
    assert h.format(":-)", CROP_10) == ":-)"
    assert h.format(NO_MATCH, CROP_10) == "A quick brown fox can not jump 32 feet, right…"
    assert h.format(f"({NO_MATCH})", CROP_10) == "(A quick brown fox can not jump 32 feet, right…"
    assert (
        h.format(
            "Natalie risk her future. Split The World is a book written by Emily Henry. I never read it.",
            CROP_10,
        )
        == "…Split The World is a book written by Emily Henry…"
    )
    assert h.format(SOME_MATCHES, CROP_10) == "…future to build a world with the boy she loves…"
    assert h.format(ALL_MATCHES, CROP_10) == "…she loves. Emily Henry: The Love That Split The World."
    # ordered matches beat unordered ones, denser intervals beat sparse ones
    for text in (
        "The world split void void void void void void void void void split the world void void",
        "split void the void void world void void void void void void void void void void split the world void void",
        "split split split split split split void void void void void void void void void void split the world void "
        "void",
    ):
        assert h.format(text, CROP_10) == "…void void void void void split the world void void"


def test_highlight_and_crop() -> None:
    h = highlighter(SPLIT_THE_WORLD)
    assert h.format("", BOTH_10) == ""
    assert h.format(":-)", BOTH_10) == ":-)"
    assert h.format(NO_MATCH, BOTH_10) == "A quick brown fox can not jump 32 feet, right…"
    assert (
        h.format(SOME_MATCHES, BOTH_10)
        == "…future to build a <em>world</em> with <em>the</em> boy she loves…"
    )
    assert h.format(ALL_MATCHES, BOTH_10) == (
        "…she loves. Emily Henry: <em>The</em> Love That <em>Split</em> <em>The</em> <em>World</em>."
    )
    assert (
        h.format(
            "The world split void void void void void void void void void split the world void void", BOTH_10
        )
        == "…void void void void void <em>split</em> <em>the</em> <em>world</em> void void"
    )


def test_smaller_crop_than_the_matches() -> None:
    h = highlighter(SPLIT_THE_WORLD)
    text = "void void split the world void void."
    assert h.format(text, FormatOptions(crop=2)) == "…split the…"
    assert h.format(text, FormatOptions(crop=1)) == "…split…"
    assert h.format(text, FormatOptions(crop=0)) == text  # a zero crop length does not crop


def test_crop_markers() -> None:
    h = highlighter(SPLIT_THE_WORLD, crop_marker="[...]")
    assert h.format(SOME_MATCHES, CROP_10) == "[...]future to build a world with the boy she loves[...]"
    h = highlighter(SPLIT_THE_WORLD, crop_marker="")
    assert h.format(SOME_MATCHES, CROP_10) == "future to build a world with the boy she loves"


PHRASE_TEXT = (
    "The groundbreaking invention had the power to split the world between those who embraced progress "
    "and those who resisted change!"
)


@pytest.mark.parametrize(
    ("matching", "expected"),
    [
        (
            words(phrases=[["the", "world"]]),
            "…the power to split <em>the world</em> between those who embraced…",
        ),
        (
            words("those", phrases=[["and", "those"]], ids={"those": (0, 0), "and those": (1, 2)}),
            "…world between <em>those</em> who embraced progress <em>and those</em> who resisted…",
        ),
        (
            words(phrases=["the groundbreaking invention had the power to split the world".split()]),
            "<em>The groundbreaking invention had the power to split the world</em>…",
        ),
        (
            words(
                phrases=[
                    "the groundbreaking invention had the power to split the world between those".split()
                ]
            ),
            "<em>The groundbreaking invention had the power to split the world</em>…",
        ),
        (
            words(
                phrases=[
                    "the groundbreaking invention".split(),
                    "embraced progress and those who resisted change".split(),
                ]
            ),
            "…between those who <em>embraced progress and those who resisted change</em>…",
        ),
        (
            words(phrases=["groundbreaking invention".split(), "split the world between".split()]),
            "…<em>groundbreaking invention</em> had the power to <em>split the world between</em>…",
        ),
        (
            words(
                phrases=[
                    "groundbreaking invention".split(),
                    "had the power to split the world between those".split(),
                ]
            ),
            "…<em>invention</em> <em>had the power to split the world between those</em>…",
        ),
    ],
)
def test_phrase_crop_windows(matching: MatchingWords, expected: str) -> None:
    assert highlighter(matching).format(PHRASE_TEXT, BOTH_10) == expected


def test_phrase_crop_in_the_middle() -> None:
    h = highlighter(words(phrases=[["dei", "liger"]]))
    text = "Dei store fiskane eta dei små — dei liger under som minst förmå."
    assert (
        h.format(text, HIGHLIGHT)
        == "Dei store fiskane eta dei små — <em>dei liger</em> under som minst förmå."
    )
    assert h.format(text, FormatOptions(True, 2)) == "…<em>dei liger</em>…"
    assert h.format(text, FormatOptions(False, 2)) == "…dei liger…"
    assert h.format(text, FormatOptions(True, 4)) == "…små — <em>dei liger</em> under…"
    assert h.format(text, FormatOptions(False, 4)) == "…små — dei liger under…"


def test_best_interval_prefers_distinct_terms_then_density_then_order() -> None:
    h = highlighter(SPLIT_THE_WORLD)
    # all three terms either way: the denser interval wins
    _, _, matches = h.analyze("split void the void void world " + "void " * 10 + "split the world")
    first, last = best_match_interval(matches, 10)
    assert (first.first_word, last.last_word) == (16, 18)
    # a gap of 6 lets `world` join the second interval, whose gaps then outweigh the first's
    _, _, matches = h.analyze("split void the void void world " + "void " * 6 + "split the world")
    first, last = best_match_interval(matches, 10)
    assert (first.first_word, last.last_word) == (0, 5)


# -- match positions ------------------------------------------------------------------------------


def test_match_bounds_are_byte_offsets() -> None:
    h = highlighter(SPLIT_THE_WORLD)
    assert h.match_bounds(SOME_MATCHES) == [{"start": 35, "length": 5}, {"start": 46, "length": 3}]
    assert h.match_bounds(NO_MATCH) == []
    assert h.match_bounds("", (1,)) == []


def test_match_bounds_with_non_ascii_text() -> None:
    title = 'Разработка заданий на развитие функциональной грамотности по теме "Африка"'
    bounds = highlighter(words("африка")).match_bounds(title)
    assert bounds == [{"start": 125, "length": 12}]
    assert title.encode()[125:137].decode() == "Африка"
    # the length is counted on the normalized word, as milli does (`pésti` is 6 bytes, reported 5)
    assert highlighter(words("pesti")).match_bounds("pésti") == [{"start": 0, "length": 5}]
    assert highlighter(words("world", prefix="world")).match_bounds("x Ŵôřlḑôle") == [
        {"start": 2, "length": 5}
    ]
    assert highlighter(words(normalize("で"))).match_bounds("クーポンで無料で") == [
        {"start": 12, "length": 3},
        {"start": 21, "length": 3},
    ]


def test_phrase_bounds_cover_the_whole_phrase() -> None:
    h = highlighter(words(phrases=[["dei", "liger"]]))
    text = "Dei store — dei  liger under"
    start = text.encode().index(b"dei  liger")
    assert h.match_bounds(text, (0, 2)) == [{"start": start, "length": 10, "indices": [0, 2]}]


# -- documents -----------------------------------------------------------------------------------

NESTED = {
    "id": 852,
    "father": "jean",
    "mother": "michelle",
    "doggos": [{"name": "bobby", "age": 2}, {"name": "buddy", "age": 4}],
    "cattos": "pésti",
}
NESTED_FIELDS = ["id", "father", "mother", "doggos", "cattos", "doggos.name", "doggos.age"]


def fmt(
    document: dict[str, Any],
    matching: MatchingWords,
    *,
    highlight: list[str] | None = None,
    crop: list[str] | None = None,
    crop_length: int = 10,
    to_retrieve: list[str] | None = None,
    displayed: list[str] | None = None,
    fields: list[str] | None = None,
    positions: bool = False,
    **tags: str,
) -> tuple[dict[str, Any], Any]:
    fields = fields if fields is not None else NESTED_FIELDS
    displayed = displayed if displayed is not None else fields
    to_retrieve = to_retrieve if to_retrieve is not None else displayed
    options = formatted_options(
        attributes_to_highlight=highlight,
        attributes_to_crop=crop,
        crop_length=crop_length,
        to_retrieve=to_retrieve,
        displayed=displayed,
        fields=fields,
    )
    return format_document(
        document, highlighter(matching, **tags), options, displayed=displayed, show_matches_position=positions
    )


PESTI = words("pesti", prefix="pesti")


def test_formatted_holds_retrieved_fields_with_numbers_as_strings() -> None:
    formatted, positions = fmt(
        NESTED, PESTI, highlight=["*"], displayed=["id", "cattos"], to_retrieve=[], positions=True
    )
    assert formatted == {"id": "852", "cattos": "<em>pésti</em>"}
    assert positions == {"cattos": [{"start": 0, "length": 5}]}


def test_no_formatting_rule_means_no_formatted() -> None:
    assert fmt(NESTED, PESTI) == ({}, None)
    formatted, positions = fmt(NESTED, PESTI, positions=True)
    assert formatted == {}
    assert positions == {"cattos": [{"start": 0, "length": 5}]}
    # a rule naming an unknown or hidden field does not count
    assert fmt(NESTED, PESTI, highlight=["nope"], crop=["mother"], displayed=["id"]) == ({}, None)


def test_highlight_on_one_field_formats_every_retrieved_field() -> None:
    formatted, positions = fmt(NESTED, PESTI, highlight=["id"], positions=True)
    assert formatted == {
        "id": "852",
        "father": "jean",
        "mother": "michelle",
        "doggos": [{"name": "bobby", "age": "2"}, {"name": "buddy", "age": "4"}],
        "cattos": "pésti",
    }
    assert positions == {"cattos": [{"start": 0, "length": 5}]}


def test_nested_rules() -> None:
    formatted, _ = fmt(NESTED, PESTI, highlight=["doggos.name"], to_retrieve=[])
    assert formatted == {"doggos": [{"name": "bobby"}, {"name": "buddy"}]}
    formatted, _ = fmt(NESTED, PESTI, highlight=["doggos.age"], to_retrieve=["doggos.name"])
    assert formatted == {"doggos": [{"name": "bobby", "age": "2"}, {"name": "buddy", "age": "4"}]}
    formatted, _ = fmt(NESTED, PESTI, highlight=["doggos.age"], crop=["doggos.name"], to_retrieve=[])
    assert formatted == {"doggos": [{"name": "bobby", "age": "2"}, {"name": "buddy", "age": "4"}]}


def test_a_rule_on_a_parent_applies_to_its_children() -> None:
    bobby = words("bobby", prefix="bobby")
    formatted, positions = fmt(NESTED, bobby, highlight=["doggos"], to_retrieve=["doggos"], positions=True)
    assert formatted == {"doggos": [{"name": "<em>bobby</em>", "age": "2"}, {"name": "buddy", "age": "4"}]}
    assert positions == {"doggos.name": [{"start": 0, "length": 5, "indices": [0]}]}


def test_crop_length_per_attribute() -> None:
    doc = {"id": 1, "a": "one two three four five six", "b": "one two three four five six"}
    matching = words("one")
    formatted, _ = fmt(doc, matching, crop=["a:2", "b"], crop_length=3, fields=["id", "a", "b"])
    assert formatted == {"id": "1", "a": "one two…", "b": "one two three…"}
    formatted, _ = fmt(doc, matching, crop=["*:1", "b:abc"], crop_length=4, fields=["id", "a", "b"])
    assert formatted == {"id": "1", "a": "one…", "b": "one two three four…"}
    formatted, _ = fmt(doc, matching, highlight=["a"], crop=["a:2"], fields=["id", "a", "b"])
    assert formatted == {"id": "1", "a": "<em>one</em> two…", "b": "one two three four five six"}


def test_values_other_than_strings_and_numbers_are_copied() -> None:
    doc: dict[str, Any] = {"id": 1, "f": 1.5, "g": 3.0, "t": True, "n": None, "e": [], "o": {}}
    formatted, _ = fmt(doc, words(), highlight=["*"], fields=["id", "f", "g", "t", "n", "e", "o"])
    assert formatted == {"id": "1", "f": "1.5", "g": "3.0", "t": True, "n": None, "e": [], "o": {}}


def test_numbers_are_matched_on_their_text() -> None:
    formatted, positions = fmt(
        {"id": 852, "year": 1852}, words("852"), highlight=["*"], fields=["id", "year"], positions=True
    )
    assert formatted == {"id": "<em>852</em>", "year": "1852"}
    assert positions == {"id": [{"start": 0, "length": 3}]}


def test_array_positions_keep_the_last_matching_element() -> None:
    doc = {"tags": ["a pésti", "none", ["x", "pésti pésti"]]}
    formatted, positions = fmt(doc, PESTI, highlight=["tags"], fields=["tags"], positions=True)
    assert formatted == {"tags": ["a <em>pésti</em>", "none", ["x", "<em>pésti</em> <em>pésti</em>"]]}
    # each matching leaf replaces the key's entry, as Meilisearch's `format_fields` does
    assert positions == {
        "tags": [{"start": 0, "length": 5, "indices": [2, 1]}, {"start": 7, "length": 5, "indices": [2, 1]}]
    }


def test_positions_cover_displayed_fields_only_and_are_sorted() -> None:
    doc = {"z": "pésti", "a": "pésti", "hidden": "pésti"}
    _, positions = fmt(doc, PESTI, fields=["z", "a", "hidden"], displayed=["z", "a"], positions=True)
    assert list(positions) == ["a", "z"]


def test_formatted_options_order_and_merging() -> None:
    options = formatted_options(
        attributes_to_highlight=["b", "*"],
        attributes_to_crop=["a:3"],
        crop_length=10,
        to_retrieve=["c"],
        displayed=["a", "b", "c"],
        fields=["c", "a", "b", "d"],
    )
    assert options == {
        "c": FormatOptions(True, None),
        "a": FormatOptions(True, 3),
        "b": FormatOptions(True, None),
    }
    assert list(options) == ["c", "a", "b"]
    assert (
        formatted_options(
            attributes_to_highlight=None,
            attributes_to_crop=None,
            crop_length=10,
            to_retrieve=["a"],
            displayed=["a"],
            fields=["a"],
        )
        == {}
    )
