"""The one list of the backends the test suite is parametrised from, and how a test opens each one's record store.

A suite that runs on every backend names :data:`BACKENDS` (the ``backend`` fixture of
``conftest.py``, :func:`tests.pg.both_backends`, the record contract suite); a new backend is
one entry here and one in :data:`OPENERS`. Beside them, :data:`DOUBLE`: the store seam in
dicts, which the core behaviour suites of :data:`ON_THE_DOUBLE` run on too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

#: Every backend a memory can run on, the embedded default first.
BACKENDS = ("sqlite", "postgres")

#: The double of the whole store seam (:mod:`tests.stores.memory_backend`): records, vectors and graph in
#: dicts, opened through ``Memory(config, stores=...)``. No backend a user can choose: the proof that the
#: domain code reaches the stores through the Protocols alone (as httpx's ``MockTransport`` is to its transports).
DOUBLE = "memory"

#: The core behaviour suites whose memories (the ``memory``/``make_memory`` fixtures) also run on the double,
#: besides SQLite (:func:`with_the_double`): the update rules, time, sessions, queries, the write path. Suites
#: about the real stores' files (recovery, the stores, crashes, Cypher isolation, the lexical index, Chroma's
#: indexer) stay on them; so does a test marked ``data_folder`` in a suite listed here. A suite that names its
#: backends itself names the double there (test_rival_facts, test_history_order, test_default_episode_id).
ON_THE_DOUBLE = (
    "tests/core/test_update_rules.py",
    "tests/core/test_true_now.py",
    "tests/core/test_write_path.py",
    "tests/core/test_sessions.py",
    "tests/core/test_time_bounds.py",
    "tests/core/test_queries.py",
    "tests/core/test_assistant_questions.py",
    "tests/core/test_catch_up.py",
    "tests/core/test_date_edges.py",
    "tests/core/test_own_words.py",
    "tests/core/test_time_questions.py",
    "tests/core/test_tenant.py",
    "tests/core/test_handler.py",
    "tests/core/test_episode_order.py",
    "tests/core/test_talk.py",
    "tests/core/test_bulk_ingest.py",
    "tests/core/test_message_extra.py",
    "tests/core/test_rule_reads.py",
)


def _sqlite(request: Any, tmp_path: Any) -> Any:
    from zep_core.stores.records import RecordStore

    return RecordStore(tmp_path / "zep.db")


def _postgres(request: Any, tmp_path: Any) -> Any:
    from zep_core.stores.postgres import PgRecordStore

    return PgRecordStore(request.getfixturevalue("pg_url"))


def _memory(request: Any, tmp_path: Any) -> Any:
    from tests.stores.memory_records import MemoryRecordStore

    return MemoryRecordStore()


#: A bare record store of each backend and of the double, for a test: ``OPENERS[name](request, tmp_path)``.
OPENERS: dict[str, Callable[[Any, Any], Any]] = {"sqlite": _sqlite, "postgres": _postgres, DOUBLE: _memory}


def with_the_double(metafunc: pytest.Metafunc) -> None:
    """A ``pytest_generate_tests``: each test of an :data:`ON_THE_DOUBLE` suite that asks for ``backend``
    (through ``make_memory`` or ``memory``) runs on SQLite and on the double, unless it is marked
    ``data_folder`` or names its backends itself."""
    definition = metafunc.definition
    if "backend" not in metafunc.fixturenames or definition.get_closest_marker("data_folder"):
        return
    if any("backend" in _names(mark.args[0]) for mark in definition.iter_markers("parametrize")):
        return
    if definition.path.relative_to(metafunc.config.rootpath).as_posix() in ON_THE_DOUBLE:
        metafunc.parametrize("backend", [BACKENDS[0], DOUBLE])


def _names(argnames: str | list[str] | tuple[str, ...]) -> list[str]:
    return [n.strip() for n in argnames.split(",")] if isinstance(argnames, str) else list(argnames)
