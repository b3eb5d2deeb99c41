"""The official Python SDK (meilisearch) against editing documents by function and the task
documents route: its own suite's case (`test_client_update_document_by_functions.py`), its models
parsing the task."""

from __future__ import annotations

from typing import Any

import pytest
from meilisearch.errors import MeilisearchApiError
from meilisearch.models.task import Task

MOVIES = [
    {"id": "287947", "title": "Shazam", "genre": "action"},
    {"id": "522681", "title": "Escape Room", "genre": "horror"},
    {"id": "166428", "title": "How to Train Your Dragon", "genre": "family"},
]


def test_update_documents_by_function(client: Any, index_uid: str) -> None:
    client.update_experimental_features({"editDocumentsByFunction": True})
    try:
        task = client.index(index_uid).add_documents(MOVIES)
        client.wait_for_task(task.task_uid, interval_in_ms=10)
        function = 'if doc.id == "522681" {doc = () } else {doc.title = `* ${doc.title} *`}'
        response = client.update_documents_by_function(index_uid, {"function": function})
        assert isinstance(response, dict)
        assert isinstance(response["taskUid"], int)
        assert response["indexUid"] == index_uid
        done = client.wait_for_task(response["taskUid"], interval_in_ms=10)
        assert isinstance(done, Task)
        assert (done.status, done.type) == ("succeeded", "documentEdition")
        assert done.details == {
            "editedDocuments": 3,
            "deletedDocuments": 3,
            "originalFilter": None,
            "context": None,
            "function": function,
        }
        titles = sorted(d.title for d in client.index(index_uid).get_documents().results)
        assert titles == ["* How to Train Your Dragon *", "* Shazam *"]
        # with a context and a filter, as the SDK documents it
        client.index(index_uid).update_filterable_attributes(["genre"])
        response = client.update_documents_by_function(
            index_uid,
            {
                "function": "doc.title = `${context.prefix}${doc.title.to_upper()}`",
                "filter": "genre = action",
                "context": {"prefix": "> "},
            },
        )
        done = client.wait_for_task(response["taskUid"], interval_in_ms=10)
        assert done.status == "succeeded", done.error
        assert client.index(index_uid).get_document("287947").title == "> * SHAZAM *"
    finally:
        client.update_experimental_features({"editDocumentsByFunction": False})


def test_update_documents_by_function_is_gated(client: Any, index_uid: str) -> None:
    with pytest.raises(MeilisearchApiError) as excinfo:
        client.update_documents_by_function(index_uid, {"function": "doc.a = 1"})
    assert (excinfo.value.status_code, excinfo.value.code) == (400, "feature_not_enabled")
