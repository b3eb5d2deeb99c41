"""`_vectors` filters (`VectorExists`): the documents that have embeddings, as Meilisearch's
`milli/src/search/facet/filter_vector.rs` selects them. The filters need the `multimodal`
experimental feature (checked when the filter is parsed, `filter_parser.check_features`).

Per embedder E, with `embedded` = the documents that have vectors for E (the vector store) and the
embedding status of E (`engine/vector/status.py`):

- `_vectors.E EXISTS`                    `embedded`
- `_vectors.E.userProvided EXISTS`       the documents whose embeddings the user provided (a document
                                         that opted out with `null` included, as in Meilisearch)
- `_vectors.E.documentTemplate EXISTS`   `embedded` minus the user-provided ones; nothing when E has
                                         `indexingFragments`
- `_vectors.E.regenerate EXISTS`         `embedded` minus the documents whose `regenerate` is false
- `_vectors.E.fragments.F EXISTS`        the fragment's embeddings minus the user-provided ones. This
                                         engine embeds the document template even when fragments are
                                         configured, so no document has a fragment embedding: a
                                         configured fragment selects nothing, an unknown one fails.
- `_vectors EXISTS`                      the union of `_vectors.E EXISTS` over every configured
                                         embedder (none configured: nothing). The part after
                                         `_vectors.` always names an embedder: `_vectors.userProvided
                                         EXISTS` asks for an embedder called `userProvided`.

`NOT` forms complement within the enclosing `AND` (filter.py). Errors are positioned on the token,
with milli's messages: "The embedder `x` does not exist. Available embedders are: `a`, `b`." (sorted,
then " Did you mean `a`?" for the first name within two typos, a transposition counting one, as
milli's `DidYouMean`) or "This index does not have any configured embedders."; "The fragment `f`
does not exist on embedder `e`. Available fragments on this embedder are: ..." or "This embedder
does not have any configured fragments.". Routes map them to `invalid_search_filter` ("Index `uid`: "
prefixed) or `invalid_document_filter`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyroaring import BitMap

from hanzo_engine.engine.index import IndexReader
from hanzo_engine.engine.vector.status import read_status, tracked_embedders
from hanzo_engine.engine.vector.store import VectorStore
from hanzo_engine.filter_parser import FilterError, Token, VectorExists
from hanzo_engine.rustcompat.distance import osa_distance

__all__ = ["did_you_mean", "evaluate_vector_filter"]


def did_you_mean(value: str, available: Sequence[str]) -> str:
    """milli's `DidYouMean`: " Did you mean `x`?" for the first of `available` (in its order) within
    two typos of `value`, else ""."""
    for name in available:
        if osa_distance(value, name) <= 2:
            return f" Did you mean `{name}`?"
    return ""


def _listed(names: Sequence[str]) -> str:
    return ", ".join(f"`{name}`" for name in names)


def _unknown(token: Token, missing: str, configured: Sequence[str], none: str, listing: str) -> FilterError:
    """milli's message for a name that is not configured: `missing`, then `none` when nothing is
    configured, else `listing` with the sorted names and a did-you-mean."""
    if not configured:
        return token.error(f"{missing} {none}")
    available = sorted(configured)
    return token.error(f"{missing} {listing} {_listed(available)}.{did_you_mean(token.value, available)}")


def embedder_error(token: Token, configured: Sequence[str]) -> FilterError:
    return _unknown(
        token,
        f"The embedder `{token.value}` does not exist.",
        configured,
        "This index does not have any configured embedders.",
        "Available embedders are:",
    )


def fragment_error(embedder: Token, fragment: Token, configured: Sequence[str]) -> FilterError:
    return _unknown(
        fragment,
        f"The fragment `{fragment.value}` does not exist on embedder `{embedder.value}`.",
        configured,
        "This embedder does not have any configured fragments.",
        "Available fragments on this embedder are:",
    )


def _fragments(conf: Any) -> list[str]:
    fragments = conf.get("indexingFragments") if isinstance(conf, dict) else None
    if not isinstance(fragments, dict):
        return []
    return [name for name, value in fragments.items() if value is not None]


def evaluate_vector_filter(reader: IndexReader, settings: dict[str, Any], node: VectorExists) -> BitMap:
    """The documents `node` selects (FilterError for an unknown embedder or fragment)."""
    embedders: dict[str, Any] = settings.get("embedders") or {}
    if node.embedder is None:
        names = list(embedders)
    else:
        if node.embedder.value not in embedders:
            raise embedder_error(node.embedder, list(embedders))
        names = [node.embedder.value]
    parts = [_one(reader, name, embedders[name], node) for name in names]
    return BitMap.union(*parts) if parts else BitMap()


def _one(reader: IndexReader, name: str, conf: Any, node: VectorExists) -> BitMap:
    store = VectorStore.of(reader.index)
    fragments = _fragments(conf)
    kind = node.kind
    if kind == "fragment":
        assert node.fragment is not None and node.embedder is not None
        if node.fragment.value not in fragments:
            raise fragment_error(node.embedder, node.fragment, fragments)
        return BitMap()  # no document has a fragment embedding (module docstring)
    if kind == "documentTemplate" and fragments:
        return BitMap()
    embedded: BitMap | None = None

    def with_vectors() -> BitMap:
        nonlocal embedded
        if embedded is None:
            embedded = store.docids(reader, name)
        return embedded

    if kind == "none":
        return with_vectors()
    source = tracked_embedders({"embedders": {name: conf}}).get(name, "")
    status = read_status(reader, name, source, with_vectors)
    if kind == "userProvided":
        return BitMap(status.user_provided)
    if kind == "documentTemplate":
        return with_vectors() - status.user_provided
    if kind == "regenerate":
        return with_vectors() - status.skip_regenerate
    raise AssertionError(f"unexpected vector filter kind {kind!r}")
