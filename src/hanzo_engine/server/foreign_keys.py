"""Document joins over the `foreignKeys` index setting (Meilisearch 1.50, experimental `foreignKeys`).

Two things read the foreign index named by a `{foreignIndexUid, fieldName}` entry:

* a `_foreign(field, filter)` clause (`resolve_foreign`): `filter` is evaluated on the foreign index and
  the clause becomes `"field" IN [<the matching documents' ids>]` on the searched index, as Meilisearch's
  `filters_into_index_filters` does. Errors keep Meilisearch's wording and codes: a field that is not a
  foreign key or a nested `_foreign` names the searched index (`invalid_search_filter`), an error of the
  inner filter names the foreign index (`invalid_document_filter`, position line from the clause on), and
  more than 100 matching foreign documents per foreign index are refused. The rewritten clause's own
  errors (e.g. the field is not filterable) point into its printed form, `"author" IN ["a1"]`.
* hydration (`hydrate_hits`): every leaf value under a foreign-key field of a hit (and of its
  `_formatted`) that is a valid document id is replaced by that document of the foreign index, reduced
  to its displayed attributes; an id no document has becomes `{}`, a value that is no valid id stays.

Both run only while the feature is on (the caller passes a `ForeignIndexes` then, None otherwise); a
foreign index that does not exist answers `index_not_found`, as Meilisearch's `user_index` does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from pyroaring import BitMap

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.apitypes.settings import complete_settings
from hanzo_engine.engine.documents.fields import select_fields
from hanzo_engine.engine.documents.primary_key import extract_document_id, normalize_document_id
from hanzo_engine.engine.index import IndexReader
from hanzo_engine.engine.search.filter import FilterContext, FilterOperatorError
from hanzo_engine.filter_parser import (
    And,
    FilterError,
    Foreign,
    In,
    Node,
    Not,
    Or,
    Token,
    quote,
    uses_foreign,
)

from .http import IndexSource, read_index

__all__ = ["MAX_FOREIGN_FILTER_DOCIDS", "ForeignIndexes", "hydrate_hits", "resolve_foreign"]

MAX_FOREIGN_FILTER_DOCIDS: Final = 100
# hit keys that are not document fields (hydration leaves them alone)
_HIT_EXTRAS: Final = frozenset(
    {
        "_formatted",
        "_matchesPosition",
        "_rankingScore",
        "_rankingScoreDetails",
        "_geoDistance",
        "_vectors",
        "_federation",
    }
)
_VECTORS: Final = "_vectors"

T = TypeVar("T")


@dataclass(frozen=True)
class ForeignIndexes:
    """Read access to the instance's other indexes, given to a search while `foreignKeys` is on."""

    source: IndexSource

    def read(self, uid: str, read: Callable[[IndexReader], T]) -> T:
        return read_index(self.source, uid, read)


# --------------------------------------------------------------------------------------------------
# `_foreign(..)` filters
# --------------------------------------------------------------------------------------------------


def _clauses(node: Node) -> list[Foreign]:
    out: list[Foreign] = []
    stack: list[Node] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, Foreign):
            out.append(current)
        elif isinstance(current, Or | And):
            stack.extend(reversed(current.children))
        elif isinstance(current, Not):
            stack.append(current.child)
    return out


def _filter_error(uid: str, message: str) -> MeiliError:
    return MeiliError("invalid_search_filter", f"Index `{uid}`: {message}")


def _in_clause(field: str, ids: list[str]) -> In:
    """`"field" IN ["id", ...]` whose tokens point into that very text (its errors print it)."""
    text = f"{quote(field)} IN [{', '.join(quote(i) for i in ids)}]"
    quoted = quote(field)
    values = []
    at = len(quoted) + len(" IN [")
    for i in ids:
        q = quote(i)
        values.append(Token(i, text, at + 1, at + len(q) - 1))
        at += len(q) + 2
    return In(Token(field, text, 1, len(quoted) - 1), values)


def _external_ids(reader: IndexReader, docids: BitMap) -> dict[int, str]:
    primary_key = reader.primary_key
    out: dict[int, str] = {}
    if primary_key is None:
        return out
    for docid in docids:
        document = reader.document_by_internal_id(docid)
        if document is not None:
            try:
                out[docid] = extract_document_id(document, primary_key)
            except MeiliError:
                continue
    return out


def resolve_foreign(node: Node, settings: dict[str, Any], uid: str, indexes: ForeignIndexes) -> Node:
    """`node` with every `_foreign(..)` clause replaced by the `IN` filter it stands for on `uid`."""
    clauses = _clauses(node)
    if not clauses:
        return node
    targets = {
        key["fieldName"]: key["foreignIndexUid"] for key in reversed(settings.get("foreignKeys") or [])
    }
    by_index: dict[str, list[int]] = {}
    for i, clause in enumerate(clauses):
        target = targets.get(clause.field.value)
        if target is None:
            raise _filter_error(uid, f"Field `{clause.field.value}` is not a foreign key")
        if uses_foreign(clause.filter) is not None:
            raise _filter_error(uid, "Nested foreign filters are not supported")
        by_index.setdefault(target, []).append(i)

    ids: dict[int, list[str]] = {}
    for target, positions in by_index.items():

        def evaluate(reader: IndexReader, target: str = target, positions: list[int] = positions) -> None:
            context = FilterContext(reader, complete_settings(reader.settings()))
            found: list[BitMap] = []
            for position in positions:
                clause = clauses[position]
                try:
                    found.append(context.evaluate(clause.filter))
                except (FilterError, FilterOperatorError) as err:
                    raise MeiliError(
                        "invalid_document_filter", f"Index `{target}`: {clause.clause_message(err.message)}"
                    ) from None
            union = BitMap.union(*found) if found else BitMap()
            if len(union) > MAX_FOREIGN_FILTER_DOCIDS:
                raise _filter_error(
                    target,
                    "Foreign filter is retrieving too many documents, foreign filters "
                    f"can't retrieve more than {MAX_FOREIGN_FILTER_DOCIDS} documents per index",
                )
            external = _external_ids(reader, union)
            for position, docids in zip(positions, found, strict=True):
                ids[position] = [external[d] for d in docids if d in external]

        indexes.read(target, evaluate)

    replaced = iter(range(len(clauses)))

    def rebuild(current: Node) -> Node:
        if isinstance(current, Foreign):
            return _in_clause(current.field.value, ids[next(replaced)])
        if isinstance(current, Or):
            return Or([rebuild(c) for c in current.children])
        if isinstance(current, And):
            return And([rebuild(c) for c in current.children])
        if isinstance(current, Not):
            return Not(rebuild(current.child))
        return current

    return rebuild(node)


# --------------------------------------------------------------------------------------------------
# Hydration
# --------------------------------------------------------------------------------------------------


def _covers(selector: str, key: str) -> bool:
    """permissive-json-pointer's two-way `contained_in`: one path is the other or lies below it."""
    if selector == key:
        return True
    short, long = (key, selector) if len(key) < len(selector) else (selector, key)
    return long.startswith(short) and long[len(short)] == "."


def _map_leaves(value: Any, selectors: list[str], base: str, mapper: Callable[[Any], Any]) -> Any:
    if isinstance(value, dict):
        _map_object(value, selectors, base, mapper)
        return value
    if isinstance(value, list):
        for i, item in enumerate(value):
            value[i] = _map_leaves(item, selectors, base, mapper)
        return value
    return mapper(value)


def _map_object(obj: dict[str, Any], selectors: list[str], base: str, mapper: Callable[[Any], Any]) -> None:
    for key in list(obj):
        path = f"{base}.{key}" if base else key
        if any(_covers(selector, path) for selector in selectors):
            obj[key] = _map_leaves(obj[key], selectors, path, mapper)


class _DocumentMaker:
    """The documents of one foreign index as a hit shows them: displayed attributes only."""

    def __init__(self, reader: IndexReader) -> None:
        from hanzo_engine.engine.search.format import is_faceted_by

        from .search import known_fields  # the search module imports this one

        self.reader = reader
        displayed = complete_settings(reader.settings()).get("displayedAttributes") or ["*"]
        shown = None if displayed == ["*"] else set(displayed)
        self.displayed = [
            f
            for f in known_fields(reader)
            if not is_faceted_by(f, _VECTORS) and (shown is None or f in shown)
        ]
        self.cache: dict[str, dict[str, Any]] = {}

    def __call__(self, value: Any) -> Any:
        external = normalize_document_id(value)
        if external is None:
            return value  # not a document id: left as it is
        if external not in self.cache:
            document = self.reader.get_document(external)
            self.cache[external] = {} if document is None else dict(select_fields(document, self.displayed))
        return {k: _copy(v) for k, v in self.cache[external].items()}


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def hydrate_hits(hits: list[dict[str, Any]], settings: dict[str, Any], indexes: ForeignIndexes) -> None:
    """Replace, in place, the foreign-key values of `hits` (and of their `_formatted`) by the documents."""
    keys = settings.get("foreignKeys") or []
    if not keys or not hits:
        return
    fields_by_index: dict[str, list[str]] = {}
    for key in keys:
        fields_by_index.setdefault(key["foreignIndexUid"], []).append(key["fieldName"])
    for target, field_names in fields_by_index.items():

        def hydrate(reader: IndexReader, field_names: list[str] = field_names) -> None:
            maker = _DocumentMaker(reader)
            for hit in hits:
                for key in list(hit):
                    if key not in _HIT_EXTRAS and any(_covers(name, key) for name in field_names):
                        hit[key] = _map_leaves(hit[key], field_names, key, maker)
                formatted = hit.get("_formatted")
                if isinstance(formatted, dict):
                    _map_object(formatted, field_names, "", maker)

        indexes.read(target, hydrate)
