"""Processing of a `documentEdition` task: run the task's function on every document its filter selects
(Meilisearch's `process_index_operation.rs` `DocumentEdition` and `update_by_function.rs`).

Changes are written as the function runs, a chunk at a time (memory stays bounded); a script error (or a
document it breaks) raises `TaskAborted`, which aborts the batch's write transaction: the task fails and
every document stays untouched. Edited documents replace the stored ones; `doc = ()` deletes.
Both counters of the details are the number of candidates, as Meilisearch reports them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.apitypes.settings import complete_settings
from hanzo_engine.engine.documents import edit_function
from hanzo_engine.engine.documents.primary_key import extract_document_id
from hanzo_engine.engine.index import IndexWriter
from hanzo_engine.engine.vector.documents import prepare_documents, write_vectors

from .processing import INTERRUPT_CHECK_EVERY, Interrupted, TaskAborted, TaskResult, succeeded
from .store import Task

if TYPE_CHECKING:
    from .scheduler import Scheduler

ERROR_CODE = "edit_documents_by_function_error"


def _candidates(w: IndexWriter, uid: str, value: Any) -> Any:
    from hanzo_engine.engine.search.filter import FilterContext, FilterOperatorError
    from hanzo_engine.filter_parser import FilterError, parse_filter_value

    if value is None:
        return w.documents_ids()
    try:
        node = parse_filter_value(value)
        if node is None:
            return w.documents_ids()
        return FilterContext(w, complete_settings(w.settings())).evaluate(node)
    except (FilterError, FilterOperatorError) as err:
        raise TaskAborted("invalid_document_filter", f"Index `{uid}`: {err.message}") from None


def _edition_error(uid: str, message: str, code: str = ERROR_CODE) -> TaskAborted:
    return TaskAborted(code, f"Index `{uid}`: {message}")


def edit_documents(sched: Scheduler, w: IndexWriter, uid: str, task: Task) -> TaskResult:
    kind = task["kind"]
    candidates = _candidates(w, uid, kind.get("filter"))
    count = len(candidates)
    if not count:
        return succeeded(dict(task["details"], editedDocuments=0, deletedDocuments=0))
    try:
        program = edit_function.compile_script(kind["function"])
    except edit_function.ScriptError as err:
        raise _edition_error(
            uid, f"Document edition runtime error encountered while compiling the function: {err}"
        ) from None
    context: dict[str, Any] | None = kind.get("context")
    pk = w.primary_key
    assert pk is not None  # the index has documents
    settings = w.settings()
    deletions: list[str] = []
    updates: list[tuple[str, dict[str, Any]]] = []

    def flush() -> None:
        try:
            prepared = prepare_documents(w, uid, settings, updates, merge=False)
        except MeiliError as err:
            raise TaskAborted(err.code, err.message) from None
        for ext_id, doc, vectors in prepared:
            w.put_document(ext_id, doc, merge=False)
            write_vectors(w, ext_id, vectors)
        if deletions:
            w.delete_documents(deletions)
        updates.clear()
        deletions.clear()

    sched.progress.nested("computing document changes", count)
    for i, docid in enumerate(candidates):
        if i % INTERRUPT_CHECK_EVERY == 0:
            if w.interrupted():
                raise Interrupted
            sched.progress.advance(i)
            if updates or deletions:
                flush()
        document = w.document_by_internal_id(docid)
        if document is None:
            continue
        ext_id = extract_document_id(document, pk)
        try:
            new = edit_function.run_on_document(program, document, context)
        except edit_function.ScriptError as err:
            raise _edition_error(
                uid, f"Document edition runtime error encountered while running the function: {err}"
            ) from None
        if new is None:
            deletions.append(ext_id)
            continue
        if not isinstance(new, dict):
            raise _edition_error(uid, "Document editions must keep documents as objects")
        if new == document:
            continue
        try:
            new_id = extract_document_id(new, pk)
        except MeiliError as err:
            raise _edition_error(uid, err.message, err.code) from None
        if new_id != ext_id:
            raise _edition_error(uid, "Document editions cannot modify a document's primary key")
        updates.append((ext_id, new))
    flush()
    return succeeded(dict(task["details"], editedDocuments=count, deletedDocuments=count))
