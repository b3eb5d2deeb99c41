"""A one-worker Starlette + uvicorn + tantivy search server: the throughput floor of `test_throughput`.

What a small team would write in an afternoon to serve full-text search from Python: tantivy (PyPI
`tantivy`) indexes `title` and `overview` (default tokenizer, BM25) and keeps each document whole in a
stored bytes field; one uvicorn worker (uvloop + httptools when installed) serves

- `POST /indexes/{uid}/search` with `{"q", "limit", "offset"}`: the words of `q` ORed over both fields
  (tantivy's query parser), the stored documents of the top hits and a Meilisearch-shaped body
  (`hits`, `query`, `processingTimeMs`, `limit`, `offset`, `estimatedTotalHits`);
- `GET /health`: `{"status": "available"}` once the index is built.

Run as a script: `python tantivy_server.py --docs corpus.ndjson --index-dir DIR --port PORT`. It reads
the NDJSON documents, builds the index in DIR (one commit), then serves on 127.0.0.1:PORT.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path
from typing import Any

import tantivy
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

WORD = re.compile(r"\w+")


def build_index(docs_path: Path, index_dir: Path) -> tantivy.Index:
    """Index every document of an NDJSON file: title and overview searchable, the whole record stored."""
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("title")
    sb.add_text_field("overview")
    sb.add_bytes_field("source", stored=True)
    index = tantivy.Index(sb.build(), path=str(index_dir))
    writer = index.writer()
    with docs_path.open("rb") as lines:
        for line in lines:
            doc = json.loads(line)
            writer.add_document(
                tantivy.Document(
                    title=str(doc.get("title", "")),
                    overview=str(doc.get("overview", "")),
                    source=line.rstrip(),
                )
            )
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    return index


def make_app(index: tantivy.Index) -> Starlette:
    searcher = index.searcher()

    async def search(request: Request) -> Response:
        started = time.perf_counter()
        body: dict[str, Any] = await request.json()
        q = str(body.get("q") or "")
        limit, offset = int(body.get("limit", 20)), int(body.get("offset", 0))
        words = WORD.findall(q)  # the words alone: the query parser's syntax is not for end users
        hits: list[Any] = []
        total = 0
        if words:
            query = index.parse_query(" ".join(words), ["title", "overview"])
            result = searcher.search(query, limit + offset, count=True)
            total = getattr(result, "count", None) or 0  # the number of matches (count=True)
            hits = [json.loads(searcher.doc(address)["source"][0]) for _, address in result.hits[offset:]]
        return JSONResponse(
            {
                "hits": hits,
                "query": q,
                "processingTimeMs": round((time.perf_counter() - started) * 1000),
                "limit": limit,
                "offset": offset,
                "estimatedTotalHits": total,
            }
        )

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "available"})

    return Starlette(
        routes=[
            Route("/indexes/{uid}/search", search, methods=["POST"]),
            Route("/health", health, methods=["GET"]),
        ]
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=Path, required=True, help="NDJSON documents")
    ap.add_argument("--index-dir", type=Path, required=True, help="an empty directory for the index")
    ap.add_argument("--port", type=int, required=True)
    args = ap.parse_args()
    args.index_dir.mkdir(parents=True, exist_ok=True)
    app = make_app(build_index(args.docs, args.index_dir))
    uvicorn.run(
        app, host="127.0.0.1", port=args.port, workers=1, log_level="warning", access_log=False, backlog=4096
    )


if __name__ == "__main__":
    main()
