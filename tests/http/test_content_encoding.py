"""Compressed request bodies: gzip, deflate, br and zstd are decoded before parsing, as Meilisearch."""

from __future__ import annotations

import gzip
import zlib

import brotli
import httpx
import msgspec
import pytest
import zstandard

from tests.conftest import wait_task

DOCS = [{"id": i, "title": f"compressed document {i}"} for i in range(50)]
ENCODERS = {
    "gzip": gzip.compress,
    "deflate": zlib.compress,
    "br": brotli.compress,
    "zstd": lambda b: zstandard.ZstdCompressor().compress(b),
}


@pytest.mark.parametrize("encoding", list(ENCODERS))
def test_compressed_document_payloads(http: httpx.Client, index_uid: str, encoding: str) -> None:
    body = ENCODERS[encoding](msgspec.json.encode(DOCS))
    r = http.post(
        f"/indexes/{index_uid}/documents",
        content=body,
        headers={"Content-Type": "application/json", "Content-Encoding": encoding},
    )
    assert r.status_code == 202, r.text
    task = wait_task(http, r.json()["taskUid"])
    assert task["status"] == "succeeded"
    assert task["details"] == {"receivedDocuments": 50, "indexedDocuments": 50}
    assert http.get(f"/indexes/{index_uid}/documents/7").json() == DOCS[7]


@pytest.mark.parametrize("encoding", ["br", "zstd"])
def test_corrupt_compressed_body_is_refused(http: httpx.Client, index_uid: str, encoding: str) -> None:
    body = ENCODERS[encoding](msgspec.json.encode(DOCS))[:-7]
    r = http.post(
        f"/indexes/{index_uid}/documents",
        content=body,
        headers={"Content-Type": "application/json", "Content-Encoding": encoding},
    )
    assert r.status_code == 400
    assert r.json()["code"] == "bad_request"
    assert http.get(f"/indexes/{index_uid}").status_code == 404
