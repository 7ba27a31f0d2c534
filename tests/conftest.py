"""Shared fixtures: real stores in tmp_path, one embedding model per test session."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from zep_core import Memory, MemoryConfig

UTC = timezone.utc


class Clock:
    """A settable clock: the memory's idea of now."""

    def __init__(self, start: datetime = datetime(2024, 1, 1, 12, tzinfo=UTC)) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


@pytest.fixture(scope="session")
def embedder():
    from zep_core.providers.local import LocalEmbedder

    return LocalEmbedder()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def make_memory(tmp_path, embedder, clock):
    """Open memories on real SQLite/Chroma/Kùzu in tmp_path; closed after the test."""
    opened: list[Memory] = []

    def make(data_dir=None, **options) -> Memory:
        # Every user gets a Chroma collection here, so the suite keeps checking Chroma as it did before the
        # vector tiers; tests/stores/test_tiered.py (and tests that pass it) cover the exact tier.
        options.setdefault("vector_exact_below", 0)
        cfg = MemoryConfig(data_dir=data_dir or tmp_path / "data", embedder=options.pop("embedder", embedder),
                           **options)
        memory = Memory(cfg, clock=options.pop("clock", clock))
        opened.append(memory)
        return memory

    yield make
    for memory in opened:
        memory.close()


@pytest.fixture
def memory(make_memory) -> Memory:
    return make_memory()
