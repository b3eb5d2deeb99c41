"""Documents' `_vectors`: validation (Meilisearch's messages), the normalized stored form, and
keeping the vector store in step with documents and settings.

A document's `_vectors.<name>` is an array of floats, an array of arrays of floats, `null` (opt-out:
no vectors) or `{"embeddings": <those or null>, "regenerate": bool}`. For a configured embedder the
stored document keeps it normalized as `{"embeddings": [[...]], "regenerate": bool}`, which is what
`retrieveVectors` shows; the vectors themselves are also written to the `VectorStore` in the same
write transaction. Entries naming no configured embedder are kept as sent.

`userProvided` embedders take the vectors documents carry; generating embedders (`rest`, `openAi`,
`ollama`) embed the text their document template renders, unless the document provides vectors
(`generate.py` has the rules, `embedders.py` the presets and settings rules).

Every document of a task is validated, and embedded, before the first write, so a failing task
leaves the index as it was. Settings changes are planned the same way (`plan_embedders`) and
applied by `configure_embedders`.

Each write also keeps the embedding status (`status.py`: which documents' embeddings the user
provided, which must not be regenerated) in step, in the same transaction: `prepare_documents`
decides a `StatusAction` per document and embedder, `write_vectors` applies it, settings changes
update or drop the statuses of the embedders they touch, and `import_vectors` loads a dumped
document's vectors and status.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.engine.index import IndexWriter
from hanzo_engine.engine.update.writer import document_writer
from hanzo_engine.engine.vector import embedders as embedder_rules
from hanzo_engine.engine.vector.generate import (
    MISSING,
    Pending,
    SettingsPlan,
    check_dimensions,
    decide,
    entry_of,
    generators,
    hints,
    plan_for_settings,
    render_error,
)
from hanzo_engine.engine.vector.liquid_values import RenderError
from hanzo_engine.engine.vector.status import (
    FREEZE,
    GENERATED,
    EmbedderStatus,
    StatusAction,
    provided,
    stored_entries,
    tracked_embedders,
)
from hanzo_engine.engine.vector.store import EmbedderConfig, VectorStore

VECTORS: Final = "_vectors"
MAX_VECTORS: Final = 256
# embedders a documents task found unconfigured in the vector store, created before its first write
_UNCONFIGURED: weakref.WeakKeyDictionary[IndexWriter, dict[str, EmbedderConfig]] = weakref.WeakKeyDictionary()


def user_provided(settings: dict[str, Any]) -> dict[str, EmbedderConfig]:
    """The `userProvided` embedders of complete settings and how their vectors are stored."""
    out: dict[str, EmbedderConfig] = {}
    for name, conf in (settings.get("embedders") or {}).items():
        if isinstance(conf, dict) and conf.get("source") == "userProvided" and conf.get("dimensions"):
            out[name] = EmbedderConfig(
                dimensions=int(conf["dimensions"]),
                binary_quantized=bool(conf.get("binaryQuantized") or False),
            )
    return out


def _describe(value: Any) -> str:
    text = json.dumps(value, separators=(",", ":"))
    if isinstance(value, bool):
        return f"a boolean: `{text}`"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return f"a number: `{text}`"
    if isinstance(value, str):
        return f"a string: `{text}`"
    if isinstance(value, list):
        return f"an array: `{text}`"
    return f"an object: `{text}`"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _embeddings(value: list[Any], path: str) -> list[list[float]]:
    """An array of floats (one embedding) or of arrays of floats; ValueError(message) otherwise."""
    if not value:
        return []
    first = value[0]
    if _is_number(first):
        for i, item in enumerate(value):
            if not _is_number(item):
                raise ValueError(
                    f"Invalid value type at `{path}[{i}]`: expected a number, but found {_describe(item)}"
                )
        return [[float(x) for x in value]]
    if not isinstance(first, list):
        raise ValueError(
            f"Invalid value type at `{path}[0]`: expected a number or an array, but found {_describe(first)}"
        )
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, list):
            raise ValueError(
                f"Invalid value type at `{path}[{i}]`: expected an array, but found {_describe(item)}"
            )
        for j, x in enumerate(item):
            if not _is_number(x):
                raise ValueError(
                    f"Invalid value type at `{path}[{i}][{j}]`: expected a number, but found {_describe(x)}"
                )
        out.append([float(x) for x in item])
    return out


def parse_entry(name: str, value: Any) -> tuple[list[list[float]] | None, bool]:
    """`(embeddings, regenerate)` of one `_vectors.<name>` value; embeddings None = keep the old ones
    (object form without embeddings). ValueError(message) on a malformed value."""
    path = f"._vectors.{name}"
    if value is None:
        return [], False
    if isinstance(value, list):
        return _embeddings(value, path), False
    if isinstance(value, dict):
        if "regenerate" not in value:
            raise ValueError(
                f"Missing field `{path}.regenerate`\n  - note: `{path}` must be an array of floats, "
                "an array of arrays of floats, or an object with field `regenerate`"
            )
        regenerate = value["regenerate"]
        if not isinstance(regenerate, bool):
            raise ValueError(
                f"Could not parse `{path}.regenerate`: invalid type: {_describe(regenerate)}, "
                "expected a boolean"
            )
        embeddings = value.get("embeddings")
        if embeddings is None:
            return None, regenerate
        if not isinstance(embeddings, list):
            raise ValueError(
                f"Invalid value type at `{path}.embeddings`: expected null or an array, but found "
                f"{_describe(embeddings)}"
            )
        return _embeddings(embeddings, f"{path}.embeddings"), regenerate
    raise ValueError(
        f"Invalid value type at `{path}`: expected null, an array or an object, but found {_describe(value)}"
    )


@dataclass
class DocumentVectors:
    """What writing one document does to the vectors: `changes` {embedder: vectors to set, [] = none}
    and `status` {embedder: its `StatusAction`; absent = unchanged}."""

    changes: dict[str, list[list[float]]] = field(default_factory=dict)
    status: dict[str, StatusAction] = field(default_factory=dict)


# (external id, the document to write, its vectors)
Prepared = tuple[str, dict[str, Any], DocumentVectors]


def _sent_action(embeddings: list[list[float]] | None, regenerate: bool) -> StatusAction:
    """The status of an entry the document sent (`status.py` transitions)."""
    if embeddings is not None:
        return provided(regenerate)
    return GENERATED if regenerate else FREEZE


def prepare_documents(
    w: IndexWriter,
    uid: str,
    settings: dict[str, Any],
    items: Iterable[tuple[str, dict[str, Any]]],
    *,
    merge: bool,
) -> list[Prepared]:
    """Validates and normalizes every document's `_vectors` (MeiliError as Meilisearch's, prefixed with
    the index), and computes the embeddings of generating embedders (`generate.decide`), before
    anything is written. With `merge`, entries the update does not name are kept."""
    settings = complete(settings)
    _ = document_writer(w).embedding_status  # loaded (or rebuilt, for an older index) before the first write
    embedders = user_provided(settings)
    gens = (
        generators(w, settings, uid)
        if any(embedder_rules.is_generating(c) for c in settings["embedders"].values())
        else {}
    )
    out: list[Prepared] = []
    missing: dict[str, list[str]] = {}
    typos: dict[str, dict[str, int]] = {}
    pending = Pending()
    sent_docs: list[dict[str, Any]] = []
    for ext_id, doc in items:
        raw = doc.get(VECTORS)
        if raw is not None and not isinstance(raw, dict):
            raise MeiliError(
                "invalid_vectors_type",
                f"Index `{uid}`: The `_vectors` field in the document with id: "
                f"`{ext_id}` is not an object. Was expecting an object with a key for each embedder "
                f"with manually provided vectors, but instead got `{json.dumps(raw, separators=(',', ':'))}`",
            )
        if not embedders and not gens:
            out.append((ext_id, doc, DocumentVectors()))
            continue
        sent: dict[str, Any] = dict(raw or {})
        old: dict[str, Any] = {}
        existing: dict[str, Any] | None = None
        if merge or gens or any(isinstance(v, dict) and v.get("embeddings") is None for v in sent.values()):
            existing = w.get_document(ext_id)
            if existing is not None and isinstance(existing.get(VECTORS), dict):
                old = existing[VECTORS]
        merged = {**old, **sent} if merge else dict(sent)
        prepared = DocumentVectors()
        changes, actions = prepared.changes, prepared.status
        for name, config in embedders.items():
            if name not in sent:
                kept = entry_of(parse_entry, name, merged.get(name, MISSING))
                if kept is not None and kept["regenerate"]:
                    actions[name] = GENERATED  # an update naming no vectors: regenerated (Meilisearch)
                if name not in merged:
                    missing.setdefault(name, []).append(ext_id)
                    for key in sent:
                        typos.setdefault(name, {}).setdefault(f"_vectors.{key}", 0)
                        typos[name][f"_vectors.{key}"] += 1
                    if "_vector" in doc:
                        typos.setdefault(name, {}).setdefault("_vector", 0)
                        typos[name]["_vector"] += 1
                continue
            try:
                embeddings, regenerate = parse_entry(name, sent[name])
            except ValueError as err:
                raise MeiliError(
                    "invalid_vectors_type",
                    f"Index `{uid}`: Bad embedder configuration in the document with id: `{ext_id}`. {err}",
                ) from None
            actions[name] = _sent_action(embeddings, regenerate)
            if embeddings is None:  # `{regenerate}` alone: the old vectors stay
                prev = entry_of(parse_entry, name, old.get(name, MISSING))
                embeddings = (prev["embeddings"] if prev is not None else None) or []
            else:
                changes[name] = embeddings
            _check_vectors(uid, ext_id, name, embeddings, config.dimensions)
            merged[name] = {"embeddings": embeddings, "regenerate": regenerate}
        if gens:
            sent_docs.append(doc)
            plain = {k: v for k, v in doc.items() if k != VECTORS}
            old_plain = None if existing is None else {k: v for k, v in existing.items() if k != VECTORS}
            new_doc = {**old_plain, **plain} if merge and old_plain is not None else plain
            for name, gen in gens.items():
                try:
                    kind, value = decide(
                        gen,
                        parse_entry,
                        sent.get(name, MISSING),
                        entry_of(parse_entry, name, old.get(name, MISSING)),
                        new_doc,
                        old_plain,
                    )
                except ValueError as err:
                    raise MeiliError(
                        "invalid_vectors_type",
                        f"Index `{uid}`: Bad embedder configuration in the "
                        f"document with id: `{ext_id}`. {err}",
                    ) from None
                except RenderError as err:
                    raise render_error(uid, ext_id, err) from None
                if kind == "set":
                    embeddings, regenerate = value
                    _check_vectors(uid, ext_id, name, embeddings, gen.dimensions)
                    merged[name] = {"embeddings": embeddings, "regenerate": regenerate}
                    changes[name] = embeddings
                    actions[name] = _sent_action(parse_entry(name, sent[name])[0], regenerate)
                elif kind == "keep":
                    merged[name] = value
                    if value["regenerate"]:
                        actions[name] = GENERATED
                else:
                    pending.add(name, value, merged, changes)
                    actions[name] = GENERATED
        if raw is not None or merged or gens:
            doc = {**doc, VECTORS: merged}  # `merged` itself: pending embeddings land in it
        out.append((ext_id, doc, prepared))
    for name, ids in missing.items():
        more = f" and at least {len(ids) - 1} other document(s)" if len(ids) > 1 else ""
        hint = f"- Hint: opt-out for a document with `_vectors.{name}: null`"
        for typo, count in (typos.get(name) or {}).items():
            target = "_vectors" if typo == "_vector" else f"_vectors.{name}"
            hint = f"- Hint: try replacing `{typo}` by `{target}` in {count} document(s)."
            break
        raise MeiliError(
            "vector_embedding_error",
            f"Index `{uid}`: While embedding documents for embedder `{name}`: "
            f"no vectors provided for document `{ids[0]}`{more}\n- Note: `{name}` has `source: "
            f"userProvided`, so documents must provide embeddings as an array in `_vectors.{name}`."
            f"\n{hint}",
        )
    pending.run(gens, uid, lambda name: hints(name, sent_docs, settings["embedders"]))
    store = VectorStore.of(w.index)
    unconfigured = {n: g.store_config for n, g in gens.items() if store.config(w, n) is None}
    if unconfigured:
        _UNCONFIGURED[w] = unconfigured
    return out


def _check_vectors(uid: str, ext_id: str, name: str, embeddings: list[list[float]], dimensions: int) -> None:
    if len(embeddings) > MAX_VECTORS:
        raise MeiliError(
            "too_many_vectors",
            f"Index `{uid}`: Too many vectors for document with id "
            f"{ext_id}: found {len(embeddings)}, but limited to {MAX_VECTORS}.",
        )
    check_dimensions(uid, ext_id, name, embeddings, dimensions)


def complete(settings: dict[str, Any]) -> dict[str, Any]:
    return settings if "embedders" in settings else {**settings, "embedders": {}}


def write_vectors(w: IndexWriter, ext_id: str, vectors: DocumentVectors) -> None:
    """Sets the vectors and the embedding status of a document just written by `put_document`."""
    if not vectors.changes and not vectors.status:
        return
    docid = w.internal_id(ext_id)
    if docid is None:
        return
    store = VectorStore.of(w.index)
    unconfigured = _UNCONFIGURED.get(w)
    for name, embeddings in vectors.changes.items():
        if unconfigured and name in unconfigured:
            store.configure(w, name, unconfigured.pop(name))
        store.add(w, name, docid, embeddings)
    status = document_writer(w).embedding_status
    for name, action in vectors.status.items():
        status.apply(name, docid, action)


def import_vectors(w: IndexWriter, ext_id: str, document: dict[str, Any], settings: dict[str, Any]) -> None:
    """Loads the `_vectors` of a document a dump import just wrote (`put_document`) into the vector
    store and the embedding status. As in Meilisearch, dumped embeddings count as user-provided and
    keep their `regenerate`; nothing is embedded (a document without vectors stays without), and
    vectors whose dimensions do not fit the embedder are skipped."""
    raw = document.get(VECTORS)
    if not isinstance(raw, dict):
        return
    tracked = tracked_embedders(settings)
    docid = w.internal_id(ext_id)
    if docid is None or not tracked:
        return
    store = VectorStore.of(w.index)
    for name, value in raw.items():
        if name not in tracked:
            continue
        try:
            embeddings, regenerate = parse_entry(name, value)
        except ValueError:
            continue
        config = store.config(w, name)
        if embeddings is not None and config is not None:
            fitting = [e for e in embeddings if len(e) == config.dimensions]
            try:
                store.add(w, name, docid, fitting)
            except ValueError:  # a non-finite value
                pass
        document_writer(w).embedding_status.apply(name, docid, _sent_action(embeddings, regenerate))


def embedders_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether a settings change concerns the vectors: the embedders changed, or the searchable
    attributes (the default document template renders only searchable fields)."""
    if old.get("embedders") != new.get("embedders"):
        return True
    return old.get("searchableAttributes") != new.get("searchableAttributes") and any(
        embedder_rules.is_generating(conf) for conf in (new.get("embedders") or {}).values()
    )


def plan_embedders(w: IndexWriter, old: dict[str, Any], new: dict[str, Any], uid: str = "") -> SettingsPlan:
    """The generating embedders' part of a settings change, computed before any write (it may embed
    documents over the network and fail the task); `configure_embedders` applies it."""
    _ = document_writer(w).embedding_status  # loaded (or rebuilt, for an older index) before the first write
    return plan_for_settings(w, uid, complete(old), complete(new), parse_entry)


def configure_embedders(
    w: IndexWriter, old: dict[str, Any], new: dict[str, Any], plan: SettingsPlan | None = None
) -> None:
    """Brings the vector store in line with the `embedders` setting: the generating embedders' `plan`
    is applied first (a source switching to `userProvided` was dropped there); then removed
    `userProvided` embedders are dropped, new ones (or ones whose dimensions changed) are created
    and filled from the stored documents' `_vectors`, others are reconfigured (binary quantization).
    The embedding statuses follow: those of removed embedders are dropped, the filled ones rebuilt."""
    status = document_writer(w).embedding_status
    if plan is not None:
        plan.apply(w)
    before, after = user_provided(old), user_provided(new)
    store = VectorStore.of(w.index)
    for name in status.names - set(new.get("embedders") or {}):
        status.drop(name)
    for name in before:
        if name not in after and not embedder_rules.is_generating((new.get("embedders") or {}).get(name)):
            store.drop(w, name)
    fill: list[str] = []
    for name, config in after.items():
        prev = before.get(name)
        if prev is not None and prev.dimensions != config.dimensions:
            store.drop(w, name)
            prev = None
        if prev is None:
            store.drop(w, name)
            store.configure(w, name, config)
            fill.append(name)
        elif prev != config:
            try:
                store.configure(w, name, config)
            except ValueError:
                raise MeiliError(
                    "invalid_settings_embedders",
                    f"`.embedders.{name}.binaryQuantized`: Cannot disable "
                    "the binary quantization.\n - Note: Binary quantization is a lossy operation that "
                    "cannot be reverted.\n - Hint: Add a new embedder that is non-quantized and "
                    "regenerate the vectors.",
                ) from None
    if not fill:
        return
    filled = {name: EmbedderStatus() for name in fill}
    documents = ((docid, json.loads(raw)) for docid, raw in w.iter_raw_documents())
    for name, docid, embeddings, regenerate in stored_entries(documents, fill, parse_entry):
        filled[name].apply(docid, _sent_action(embeddings, regenerate))
        ok = [e for e in embeddings or [] if len(e) == after[name].dimensions]
        if ok:
            store.add(w, name, docid, ok)
    for name, fresh in filled.items():
        status.replace(name, fresh)


def check_embedders(settings: dict[str, Any], uid: str) -> None:
    """Per-source rules (`embedders.check_embedders`) checked when a settings task is processed."""
    embedder_rules.check_embedders(settings, uid)
