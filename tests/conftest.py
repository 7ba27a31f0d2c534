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


def every_user_in_chroma(make):
    """``make_memory`` with every user's vectors in a Chroma collection (``vector_exact_below=0``).

    For the tests of Chroma itself (its child process, losing and rebuilding its
    collections, its files): by default a small user's vectors are searched in SQLite and
    Chroma is never started.
    """
    def make_with_collections(data_dir=None, **options):
        options.setdefault("vector_exact_below", 0)
        return make(data_dir, **options)

    return make_with_collections


@pytest.fixture
def make_memory(tmp_path, embedder, clock):
    """Open memories on real SQLite/Chroma/Kùzu in tmp_path; closed after the test."""
    opened: list[Memory] = []

    def make(data_dir=None, **options) -> Memory:
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


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory):
    """A real PostgreSQL with pgvector for the session (:mod:`tests.pg`)."""
    from tests.pg import start_server

    return start_server(tmp_path_factory.mktemp("postgres") / "data")


@pytest.fixture
def pg_url(pg_server):
    """The URL of a new, empty database on the session's PostgreSQL, dropped after the test."""
    from tests.pg import drop_database, fresh_database

    url = fresh_database(pg_server)
    yield url
    drop_database(pg_server, url)
