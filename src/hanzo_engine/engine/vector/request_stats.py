"""Counts of the embedder requests a batch makes (Meilisearch's `EmbedderStats`, shown as the batch's
`stats.embedderRequests`): every attempt counts, a failed attempt also counts as failed and keeps its
message as `lastError`.

The collector of the running batch lives in a context variable set by the scheduler's writer thread, so
query embeddings made by searches elsewhere are never counted; threads that embed for the batch run
in a copy of the writer's context (`contextvars.copy_context`).
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator
from typing import Any


class RequestStats:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.total = 0
        self.failed = 0
        self.last_error: str | None = None

    def record(self, error: str | None) -> None:
        with self._lock:
            self.total += 1
            if error is not None:
                self.failed += 1
                self.last_error = error

    def view(self) -> dict[str, Any] | None:
        """`{"total", "failed", "lastError"?}`, None when no request was made."""
        with self._lock:
            if not self.total and not self.failed and self.last_error is None:
                return None
            out: dict[str, Any] = {"total": self.total, "failed": self.failed}
            if self.last_error is not None:
                out["lastError"] = self.last_error
            return out


_current: contextvars.ContextVar[RequestStats | None] = contextvars.ContextVar(
    "embedder_requests", default=None
)


@contextlib.contextmanager
def collecting() -> Iterator[RequestStats]:
    """Count the embedder requests made in this context (and in copies of it) until the block ends."""
    stats = RequestStats()
    token = _current.set(stats)
    try:
        yield stats
    finally:
        _current.reset(token)


def record(error: str | None) -> None:
    """One request attempt, failed with `error` or not; counted only while a batch collects."""
    stats = _current.get()
    if stats is not None:
        stats.record(error)
