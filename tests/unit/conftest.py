"""Fixtures shared by the unit tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hanzo_engine.scheduler.scheduler import Scheduler


@pytest.fixture
def sched(tmp_path: Path) -> Iterator[Scheduler]:
    """A scheduler over a fresh data directory (no writer thread), closed after the test."""
    s = Scheduler(tmp_path / "data.ms")
    yield s
    s.mapper.close()
    s.store.close()
