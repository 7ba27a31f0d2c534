"""Shared fixtures: real stores in tmp_path, one embedding model per test session; the default selection.

Tests marked ``full_matrix`` (most adapter suites on PostgreSQL, the reliability runs on
PostgreSQL, the wheel installed into a fresh venv, cli.md's LoCoMo sample) run in CI's full
run: ``scripts/test.sh --full``, or ``ZEP_TEST_FULL=1``. Otherwise they are deselected,
unless nothing else was selected: a full-matrix test named on the command line runs.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone

import pytest
from zep_core import Memory, MemoryConfig
from zep_core.stores import open_stores

from tests.backends import BACKENDS, DOUBLE

UTC = timezone.utc


#: ``(tests selected, whether the full matrix)`` when the whole suite runs: what the README's count is checked against.
SUITE_SIZE = pytest.StashKey[tuple]()


def pytest_collection_modifyitems(config, items):
    """Leave CI's full-matrix tests out of the default run (see the module docstring)."""
    full_run = os.environ.get("ZEP_TEST_FULL", "0") not in ("", "0")
    full = [item for item in items if item.get_closest_marker("full_matrix")]
    if not full_run and full and len(full) < len(items):
        config.hook.pytest_deselected(items=full)
        items[:] = [item for item in items if not item.get_closest_marker("full_matrix")]
    whole = [a.rstrip("/") for a in config.args] in ([], ["tests"], [str(config.rootpath / "tests")])
    if whole and not config.option.keyword and not config.option.markexpr:
        config.stash[SUITE_SIZE] = (len(items), full_run)


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
def backend() -> str:
    """The stores a test's memories run on: ``sqlite`` (the data folder), unless a conftest parametrizes it.

    A directory whose suites run on both backends parametrizes it with :func:`tests.pg.both_backends`;
    the core suites that run on the double too, with :func:`tests.backends.with_the_double`.
    """
    return BACKENDS[0]


@pytest.fixture
def backend_options(request, backend):
    """``MemoryConfig`` options that put a data folder's memory on the test's backend.

    ``backend_options(data_dir)``: ``{}`` on SQLite and the double; on PostgreSQL the URL of a database of
    its own for each data folder (a test that opens two folders gets two databases).
    """
    if backend in ("sqlite", DOUBLE):
        return lambda data_dir: {}
    from tests.pg import fresh_database

    server = request.getfixturevalue("pg_server")
    databases: dict[str, str] = {}

    def options(data_dir) -> dict:
        key = str(data_dir)
        if key not in databases:
            databases[key] = fresh_database(server)
        return {"database_url": databases[key]}

    return options


@pytest.fixture
def backend_stores(backend):
    """What opens the stores of the test's memories: the registry's (``open_stores``), or the double's.

    The double's opener (:class:`tests.stores.memory_backend.MemoryBackend`) is one per test: a
    folder opened again in the test finds what was stored in it, as on disk.
    """
    if backend != DOUBLE:
        return open_stores
    from tests.stores.memory_backend import MemoryBackend

    return MemoryBackend()


@pytest.fixture
def make_memory(tmp_path, embedder, clock, backend_options, backend_stores):
    """Open memories on the test's backend (SQLite/Chroma/Kùzu in tmp_path, PostgreSQL, or the double); closed after."""
    opened: list[Memory] = []

    def make(data_dir=None, **options) -> Memory:
        data_dir = data_dir or tmp_path / "data"
        if "database_url" not in options:
            options.update(backend_options(data_dir))
        cfg = MemoryConfig(data_dir=data_dir, embedder=options.pop("embedder", embedder), **options)
        memory = Memory(cfg, clock=options.pop("clock", clock), stores=backend_stores)
        opened.append(memory)
        return memory

    yield make
    for memory in opened:
        memory.close()


@pytest.fixture
def memory(make_memory) -> Memory:
    return make_memory()


@pytest.fixture(scope="session")
def pg_server():
    """A real PostgreSQL with pgvector for the session (:mod:`tests.pg`), stopped and deleted at its end."""
    from tests.pg import running_server

    with running_server() as server:
        yield server


@pytest.fixture
def pg_url(pg_server):
    """The URL of a new, empty database on the session's PostgreSQL, dropped after the test."""
    from tests.pg import drop_database, fresh_database

    url = fresh_database(pg_server)
    yield url
    drop_database(pg_server, url)
