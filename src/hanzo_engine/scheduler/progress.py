"""Progress of the batch being processed, as Meilisearch's `progress` object.

`{"steps": [{"currentStep", "finished", "total"}, ...], "percentage"}`: a stack of nested steps, the
percentage combining them (each level subdivides one unit of its parent). Written by the writer
thread, read by request threads; a lock keeps snapshots consistent.
"""

from __future__ import annotations

import threading
from typing import Any


class Progress:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._steps: list[list[Any]] = []  # [name, finished, total]

    def start(self, name: str, total: int) -> None:
        """Set the top-level step, dropping any nested one."""
        with self._lock:
            self._steps = [[name, 0, max(total, 1)]]

    def nested(self, name: str, total: int) -> None:
        """Open (or replace) the step nested directly under the top-level one."""
        with self._lock:
            self._steps = [*self._steps[:1], [name, 0, max(total, 1)]]

    def advance(self, finished: int) -> None:
        with self._lock:
            if self._steps:
                self._steps[-1][1] = min(finished, self._steps[-1][2])

    def clear(self) -> None:
        with self._lock:
            self._steps = []

    def view(self) -> dict[str, Any] | None:
        with self._lock:
            if not self._steps:
                return None
            percentage = 0.0
            unit = 100.0
            for _name, finished, total in self._steps:
                percentage += unit * finished / total
                unit /= total
            return {
                "steps": [{"currentStep": n, "finished": f, "total": t} for n, f, t in self._steps],
                "percentage": round(percentage, 3),
            }
