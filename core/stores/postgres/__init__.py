"""The record store on PostgreSQL (+ pgvector): the same Protocols as the SQLite store, row-level security per tenant.

Opened by a ``postgresql://`` URL. Needs the ``postgres`` extra (``psycopg``, ``pgvector``),
imported only here. :mod:`.schema` says how the tables, the roles and the migrations are laid
out; :mod:`.connection` how each statement is scoped to one tenant.
"""

from __future__ import annotations

from ..sql.entities import SqlEntityRows
from ..sql.outbox import SqlOutboxRows
from ..sql.search import SqlSearchRows
from .connection import STORE, public_url
from .facts import PgFactRows
from .schema import SCHEMA_VERSION, TENANT_TABLES
from .users import PgUserRows

__all__ = ["STORE", "SCHEMA_VERSION", "TENANT_TABLES", "PgRecordStore", "public_url"]


class PgRecordStore(SqlEntityRows, PgFactRows, SqlSearchRows, SqlOutboxRows, PgUserRows):
    """The PostgreSQL record store: its jobs over one connection (facts and the lexical index under entities)."""

    #: Set by a store whose disk failed (the SQLite store's flag); the server keeps its own files.
    needs_check = False

    def checkpoint_in_background(self) -> None:
        """Nothing to arrange: PostgreSQL checkpoints its own log."""

    def checkpoint(self) -> int:
        """Nothing to copy (PostgreSQL checkpoints its own log): no log pages are left."""
        return 0
