"""Progress of the batch being processed, as Meilisearch's `progress` object.

`{"steps": [{"currentStep", "finished", "total"}, ...], "percentage"}`: a stack of nested steps, the
percentage combining them (each level subdivides one unit of its parent). Written by the writer
thread, read by request threads; a lock keeps snapshots consistent.

Each step also records how long it ran, under its path (`"processing tasks > indexing documents"`), as
milli's `Progress::accumulated_durations`: `trace()` is the batch's `progressTrace` (a step that runs
again accumulates). The trace restarts when a step starts with no step open (a new batch).
"""

from __future__ import annotations

import threading
import time
from typing import Any


class Progress:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._steps: list[list[Any]] = []  # [name, finished, total, started (monotonic)]
        self._durations: dict[str, float] = {}

    def _end_from(self, level: int, now: float) -> None:
        """Record the durations of the open steps from `level` down (innermost first) and close them."""
        for i in range(len(self._steps) - 1, level - 1, -1):
            path = " > ".join(str(step[0]) for step in self._steps[: i + 1])
            self._durations[path] = self._durations.get(path, 0.0) + now - self._steps[i][3]
        del self._steps[level:]

    def start(self, name: str, total: int) -> None:
        """Set the top-level step, dropping any nested one (the same top-level step keeps running)."""
        now = time.monotonic()
        with self._lock:
            if not self._steps:
                self._durations = {}
            if self._steps and self._steps[0][0] == name:
                self._end_from(1, now)
                self._steps[0][1:3] = [0, max(total, 1)]
                return
            self._end_from(0, now)
            self._steps = [[name, 0, max(total, 1), now]]

    def nested(self, name: str, total: int) -> None:
        """Open (or replace) the step nested directly under the top-level one."""
        now = time.monotonic()
        with self._lock:
            self._end_from(1, now)
            self._steps = [*self._steps[:1], [name, 0, max(total, 1), now]]

    def advance(self, finished: int) -> None:
        with self._lock:
            if self._steps:
                self._steps[-1][1] = min(finished, self._steps[-1][2])

    def clear(self) -> None:
        """Close every step; their durations stay in `trace()` until the next batch starts."""
        now = time.monotonic()
        with self._lock:
            self._end_from(0, now)

    def trace(self) -> dict[str, str]:
        """The durations of the steps so far (open ones up to now), formatted as Rust's `{:.2?}`."""
        from .stats import rust_duration

        now = time.monotonic()
        with self._lock:
            durations = dict(self._durations)
            for i in range(len(self._steps) - 1, -1, -1):
                path = " > ".join(str(step[0]) for step in self._steps[: i + 1])
                durations[path] = durations.get(path, 0.0) + now - self._steps[i][3]
        return {path: rust_duration(seconds) for path, seconds in durations.items()}

    def view(self) -> dict[str, Any] | None:
        with self._lock:
            if not self._steps:
                return None
            percentage = 0.0
            unit = 100.0
            for _name, finished, total, _started in self._steps:
                percentage += unit * finished / total
                unit /= total
            return {
                "steps": [{"currentStep": n, "finished": f, "total": t} for n, f, t, _ in self._steps],
                "percentage": round(percentage, 3),
            }
