"""Embeddings computed by generating embedders (`rest`, `openAi`, `ollama`, `composite`), as Meilisearch's
`extract/vectors`: when documents are added or updated, and when the embedder settings change.

A document's entry `_vectors.<name>` is stored as `{"embeddings": [[...]], "regenerate": bool}`.
`regenerate: false` marks vectors the user provided: they are never recomputed. For each document
and generating embedder (`decide`):

- a new document is embedded, unless it provides `embeddings` (used as given, with its `regenerate`)
  or `{"regenerate": false}` alone (no vectors);
- an updated document keeps its old embeddings when its entry says `regenerate: false`; otherwise
  it is embedded again only when the text its template renders changed (or when `regenerate` has
  just been turned on); embeddings sent with the update replace the old ones.

On a settings change (`regenerate_for_settings`), `embedders.reindex_action` decides: `full`
recomputes every `regenerate: true` document (a new embedder also takes the vectors documents
carried in `_vectors` before it existed); `prompts` recomputes those whose rendered text changed.
The plan also records the embedding status of the documents it touches (`status.py`): taken vectors
are user-provided, every `regenerate: true` document of a reindexed embedder is (false, true).

Texts are embedded after every document of the task was rendered and checked, in batches, and the
results written only when all succeeded: a failure (`vector_embedding_error`, Meilisearch's
`While embedding documents for embedder ...` message and hints) or a template that needs a field a
document lacks (`invalid_document_fields`) fails the task with the index as it was.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.engine.update.writer import document_writer
from hanzo_engine.engine.vector.embedders import (
    Runtime,
    build,
    check_composite,
    is_generating,
    reindex_action,
)
from hanzo_engine.engine.vector.liquid_values import RenderError
from hanzo_engine.engine.vector.rest import EmbedderError
from hanzo_engine.engine.vector.status import FREEZE, GENERATED, StatusAction, provided
from hanzo_engine.engine.vector.store import EmbedderConfig, VectorStore
from hanzo_engine.rustcompat.distance import osa_distance

if TYPE_CHECKING:
    from hanzo_engine.engine.index import IndexReader, IndexWriter

VECTORS: Final = "_vectors"
MISSING: Final = object()

# (embeddings or None = none sent, regenerate); ValueError(message) for a malformed entry
ParseEntry = Callable[[str, Any], tuple[list[list[float]] | None, bool]]


@dataclass
class Generator:
    """One generating embedder while a task runs: its runtime, dimensions and rendering context."""

    name: str
    conf: dict[str, Any]
    runtime: Runtime
    dimensions: int
    searchable: list[str] | None
    field_order: list[str]

    @property
    def store_config(self) -> EmbedderConfig:
        return EmbedderConfig(
            dimensions=self.dimensions, binary_quantized=bool(self.conf.get("binaryQuantized"))
        )

    def render(self, document: dict[str, Any]) -> str:
        return self.runtime.prompt.render(document, self.searchable, self.field_order)


def _embedding_error(uid: str, err: EmbedderError) -> MeiliError:
    return MeiliError("vector_embedding_error", f"Index `{uid}`: Error while generating embeddings: {err}")


def render_error(uid: str, ext_id: str, err: RenderError) -> MeiliError:
    return MeiliError(
        "invalid_document_fields", f"Index `{uid}`: user error: missing field in document `{ext_id}`: {err}"
    )


def generators(
    reader: IndexReader, settings: dict[str, Any], uid: str, *, known_dimensions: dict[str, int] | None = None
) -> dict[str, Generator]:
    """The generating embedders of complete settings. Dimensions: configured, else the vector store's
    (`known_dimensions` overrides it), else learned from a test embedding."""
    out: dict[str, Generator] = {}
    store = VectorStore.of(reader.index)
    searchable = settings.get("searchableAttributes")
    order = reader.fields_ids_map()
    for name, conf in (settings.get("embedders") or {}).items():
        if not is_generating(conf):
            continue
        try:
            runtime = build(name, conf)
            dims = runtime.dimensions or (known_dimensions or {}).get(name)
            if runtime.search is not None:
                dims = check_composite(runtime, conf)  # both embedders agree before the first use
            elif dims is None:
                stored = store.config(reader, name)
                dims = stored.dimensions if stored is not None else runtime.infer_dimensions()
        except EmbedderError as err:
            raise _embedding_error(uid, err) from None
        out[name] = Generator(
            name, conf, runtime, dims, None if searchable is None else list(searchable), order
        )
    return out


def entry_of(parse_entry: ParseEntry, name: str, value: Any) -> dict[str, Any] | None:
    """A stored entry normalized as `{embeddings, regenerate}`; None when absent or unreadable."""
    if value is MISSING:
        return None
    try:
        embeddings, regenerate = parse_entry(name, value)
    except ValueError:
        return None
    return {"embeddings": embeddings, "regenerate": regenerate}


def decide(
    gen: Generator,
    parse_entry: ParseEntry,
    sent: Any,
    old_entry: dict[str, Any] | None,
    new_doc: dict[str, Any],
    old_doc: dict[str, Any] | None,
) -> tuple[str, Any]:
    """What becomes of one document's vectors (module docstring): `("set", (embeddings, regenerate))`,
    `("keep", entry)` or `("embed", text)`. ValueError for a malformed sent entry, RenderError for a
    template the new document cannot fill."""
    regenerate_sent = None
    if sent is not MISSING:
        embeddings, regenerate_sent = parse_entry(gen.name, sent)
        if embeddings is not None:
            return "set", (embeddings, regenerate_sent)
        if not regenerate_sent:
            old_embeddings = (old_entry or {}).get("embeddings") or []
            return "set", (old_embeddings, False)
    if old_doc is None:
        return "embed", gen.render(new_doc)
    old_regenerate = True if old_entry is None else bool(old_entry["regenerate"])
    if regenerate_sent is None and not old_regenerate:
        return "keep", old_entry
    text = gen.render(new_doc)
    if not old_regenerate or old_entry is None or old_entry["embeddings"] is None:
        return "embed", text
    try:
        unchanged = gen.render(old_doc) == text
    except RenderError:
        unchanged = False
    return ("keep", {**old_entry, "regenerate": True}) if unchanged else ("embed", text)


def hints(name: str, documents: Iterable[dict[str, Any]], configured: Iterable[str]) -> str:
    """Meilisearch's misspelling hints of an embedding error: fields that look like `_vectors`, and
    `_vectors` keys naming no embedder that look like `name`."""
    names = set(configured)
    fields: Counter[str] = Counter()
    keys: Counter[str] = Counter()
    for doc in documents:
        for key in doc:
            if key != VECTORS and "." not in key and 0 < osa_distance(key, VECTORS) <= 2:
                fields[key] += 1
        vectors = doc.get(VECTORS)
        if isinstance(vectors, dict):
            for key in vectors:
                if key not in names and 0 < osa_distance(key, name) <= 2:
                    keys[key] += 1
    out = [
        f"\n- Hint: try replacing `{f}` by `_vectors` in {n} document(s)."
        for f, n in sorted(fields.items())[:2]
    ]
    out += [
        f"\n- Hint: try replacing `_vectors.{k}` by `_vectors.{name}` in {n} document(s)."
        for k, n in sorted(keys.items())[:2]
    ]
    return "".join(out)


@dataclass
class Pending:
    """Texts waiting to be embedded, and where each embedding goes."""

    texts: dict[str, list[str]] = field(default_factory=dict)
    targets: dict[str, list[tuple[dict[str, Any], dict[str, list[list[float]]] | None]]] = field(
        default_factory=dict
    )

    @property
    def size(self) -> int:
        return sum(len(texts) for texts in self.texts.values())

    def add(
        self, name: str, text: str, entries: dict[str, Any], changes: dict[str, list[list[float]]] | None
    ) -> None:
        """Queues `text`; its embedding will become `entries[name]` (and `changes[name]`)."""
        self.texts.setdefault(name, []).append(text)
        self.targets.setdefault(name, []).append((entries, changes))

    def run(self, gens: dict[str, Generator], uid: str, hint: Callable[[str], str]) -> None:
        """Embeds every queued text (MeiliError on the first embedder that fails) and fills the targets."""
        for name, texts in self.texts.items():
            gen = gens[name]
            try:
                embeddings = gen.runtime.embed_many(texts, gen.dimensions)
            except EmbedderError as err:
                if err.fault == "bug":
                    raise
                raise MeiliError(
                    "vector_embedding_error",
                    f"Index `{uid}`: While embedding documents for embedder `{name}`: {err}{hint(name)}",
                ) from None
            for (entries, changes), embedding in zip(self.targets[name], embeddings, strict=True):
                entries[name] = {"embeddings": [embedding], "regenerate": True}
                if changes is not None:
                    changes[name] = [embedding]


def check_dimensions(uid: str, ext_id: str, name: str, embeddings: list[list[float]], dims: int) -> None:
    for i, emb in enumerate(embeddings):
        if len(emb) != dims:
            raise MeiliError(
                "invalid_vector_dimensions",
                f"Index `{uid}`: Invalid vector dimensions in document with "
                f"id `{ext_id}` in `._vectors.{name}`.\n  - note: embedding #{i} has dimensions "
                f"{len(emb)}\n  - note: embedder `{name}` requires {dims}",
            )


# -- settings changes ---------------------------------------------------------------------------------


def _external_ids(w: IndexWriter) -> dict[int, str]:
    out: dict[int, str] = {}
    with w.txn.cursor(db=w.index.db_external) as cursor:
        for key, value in cursor:
            out[int.from_bytes(bytes(value), "big")] = bytes(key).decode()
    return out


def _without_vectors(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k != VECTORS}


@dataclass
class SettingsPlan:
    """The vector changes of a settings task, computed (templates rendered, texts embedded) before
    anything is written; `apply` writes them."""

    configs: dict[str, tuple[EmbedderConfig, bool]] = field(default_factory=dict)  # name -> (config, rebuild)
    removed: list[str] = field(default_factory=list)
    documents: dict[int, tuple[str, dict[str, Any]]] = field(default_factory=dict)  # docid -> (id, new doc)
    vectors: dict[str, list[tuple[int, list[list[float]]]]] = field(default_factory=dict)
    status: dict[str, dict[int, StatusAction]] = field(default_factory=dict)  # name -> docid -> action

    def apply(self, w: IndexWriter) -> None:
        store = VectorStore.of(w.index)
        for name, (config, rebuild) in self.configs.items():
            if rebuild:
                store.drop(w, name)
                store.configure(w, name, config)
            else:
                try:
                    store.configure(w, name, config)
                except (
                    ValueError
                ):  # quantized vectors cannot be un-quantized; refused before (settings check)
                    pass
        for name in self.removed:
            store.drop(w, name)
        for ext_id, doc in self.documents.values():
            w.put_document(ext_id, doc, merge=False)
        for name, items in self.vectors.items():
            if items:
                store.add_many(w, name, items)
        status = document_writer(w).embedding_status
        for name in self.removed:
            status.drop(name)
        for name, actions in self.status.items():
            for docid, action in actions.items():
                status.apply(name, docid, action)


def plan_for_settings(
    w: IndexWriter, uid: str, old: dict[str, Any], new: dict[str, Any], parse_entry: ParseEntry
) -> SettingsPlan:
    """What changed settings do to the generating embedders' vectors (module docstring): removed ones
    lose their generated entries, others are reconfigured and re-embedded as `reindex_action` says."""
    store = VectorStore.of(w.index)
    plan = SettingsPlan()
    old_all: dict[str, Any] = old.get("embedders") or {}
    new_all: dict[str, Any] = new.get("embedders") or {}
    plan.removed = [n for n, c in old_all.items() if is_generating(c) and not is_generating(new_all.get(n))]
    searchable_changed = old.get("searchableAttributes") != new.get("searchableAttributes")
    actions: dict[str, str | None] = {}
    for name, conf in new_all.items():
        if not is_generating(conf):
            continue
        prev = old_all.get(name)
        if (
            isinstance(prev, dict)
            and prev.get("binaryQuantized") is True
            and conf.get("binaryQuantized") is False
        ):
            raise MeiliError(
                "invalid_settings_embedders",
                f"Index `{uid}`: `.embedders.{name}.binaryQuantized`: Cannot "
                "disable the binary quantization.\n - Note: Binary quantization is a lossy operation that "
                "cannot be reverted.\n - Hint: Add a new embedder that is non-quantized and regenerate "
                "the vectors.",
            )
        action = reindex_action(prev if isinstance(prev, dict) else None, conf, searchable_changed)
        if action is not None or prev != conf or store.config(w, name) is None:
            actions[name] = action
    if not actions and not plan.removed:
        return plan
    known: dict[str, int] = {}
    for name, action in actions.items():
        stored = store.config(w, name)
        if (
            stored is not None
            and action != "full"
            and new_all[name].get("dimensions") in (None, stored.dimensions)
        ):
            known[name] = stored.dimensions  # no reindex: no test embedding either
    gens = {n: g for n, g in generators(w, new, uid, known_dimensions=known).items() if n in actions}
    for name, gen in gens.items():
        stored = store.config(w, name)
        if stored is None or stored.dimensions != gen.dimensions:
            actions[name] = "full"  # the vectors cannot follow a change of dimensions
        plan.configs[name] = (gen.store_config, actions[name] == "full")
    work = {name: action for name, action in actions.items() if action is not None}
    if work or plan.removed:
        olds = {}
        if "prompts" in work.values():
            olds = generators(w, old, uid, known_dimensions={n: g.dimensions for n, g in gens.items()})
        _plan_documents(w, uid, plan, old_all, work, gens, olds, parse_entry)
    return plan


def _plan_documents(
    w: IndexWriter,
    uid: str,
    plan: SettingsPlan,
    old_all: dict[str, Any],
    actions: dict[str, str],
    gens: dict[str, Generator],
    olds: dict[str, Generator],
    parse_entry: ParseEntry,
) -> None:
    externals = _external_ids(w)
    pending = Pending()
    plan.vectors = {name: [] for name in actions}
    plan.status = {name: {} for name in actions}
    filled: list[tuple[int, dict[str, list[list[float]]]]] = []
    for docid, raw in w.iter_raw_documents():
        doc = json.loads(raw)
        ext_id = externals.get(docid, "")
        entries = dict(doc[VECTORS]) if isinstance(doc.get(VECTORS), dict) else {}
        dirty = False
        for name in plan.removed:
            entry = entry_of(parse_entry, name, entries.get(name, MISSING))
            if entry is not None and entry["regenerate"]:
                del entries[name]
                dirty = True
        changes: dict[str, list[list[float]]] = {}
        plain = _without_vectors(doc)
        queued = pending.size
        for name, action in actions.items():
            gen = gens[name]
            value = entries.get(name, MISSING)
            try:
                parsed = None if value is MISSING else parse_entry(name, value)
            except ValueError as err:
                raise MeiliError(
                    "invalid_vectors_type",
                    f"Index `{uid}`: Bad embedder configuration in the document with id: `{ext_id}`. {err}",
                ) from None
            embeddings, regenerate = (None, True) if parsed is None else parsed
            try:
                if embeddings is not None and action == "full" and name not in old_all:
                    # vectors a document carried before its embedder existed
                    check_dimensions(uid, ext_id, name, embeddings, gen.dimensions)
                    entries[name] = {"embeddings": embeddings, "regenerate": regenerate}
                    plan.vectors[name].append((docid, embeddings))
                    plan.status[name][docid] = provided(regenerate)
                    dirty = dirty or entries[name] != value
                elif regenerate and action == "full":
                    pending.add(name, gen.render(plain), entries, changes)
                    plan.status[name][docid] = GENERATED
                elif regenerate:  # prompts: only the documents whose text changed
                    plan.status[name][docid] = GENERATED
                    text = gen.render(plain)
                    try:
                        same = embeddings is not None and olds[name].render(plain) == text
                    except RenderError:
                        same = False
                    if not same:
                        pending.add(name, text, entries, changes)
                elif action == "full" and embeddings:
                    kept = [e for e in embeddings if len(e) == gen.dimensions]
                    if kept:  # user-provided vectors survive the rebuild of the graph
                        plan.vectors[name].append((docid, kept))
                elif name not in old_all:  # `{"regenerate": false}` carried before the embedder existed
                    plan.status[name][docid] = FREEZE
            except RenderError as err:
                raise render_error(uid, ext_id, err) from None
        if dirty or pending.size > queued:
            doc[VECTORS] = entries  # filled by `pending.run` below
            plan.documents[docid] = (ext_id, doc)
            filled.append((docid, changes))
    docs = [_without_vectors(d) for _, d in plan.documents.values()]
    pending.run(gens, uid, lambda name: hints(name, docs, gens))
    for _, doc in plan.documents.values():
        if not doc[VECTORS]:
            del doc[VECTORS]
    for docid, changes in filled:
        for name, embeddings in changes.items():
            plan.vectors[name].append((docid, embeddings))
