"""The one list of the backends the test suite is parametrised from, and how a test opens each one's record store.

A suite that runs on every backend names :data:`BACKENDS` (the ``backend`` fixture of
``conftest.py``, :func:`tests.pg.both_backends`, the record contract suite); a new backend is
one entry here and one in :data:`OPENERS`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: Every backend a memory can run on, the embedded default first.
BACKENDS = ("sqlite", "postgres")


def _sqlite(request: Any, tmp_path: Any) -> Any:
    from zep_core.stores.records import RecordStore

    return RecordStore(tmp_path / "zep.db")


def _postgres(request: Any, tmp_path: Any) -> Any:
    from zep_core.stores.postgres import PgRecordStore

    return PgRecordStore(request.getfixturevalue("pg_url"))


#: A bare record store of each backend, for a test: ``OPENERS[name](request, tmp_path)``.
OPENERS: dict[str, Callable[[Any, Any], Any]] = {"sqlite": _sqlite, "postgres": _postgres}
