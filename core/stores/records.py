"""SQLite, through sqlite-utils: the system of record.

Episodes with their messages, facts, entities, aliases, embeddings (float32 blobs),
the chat-session buffer used by the adapters, the lexical (FTS5) index over each user's
facts (:mod:`zep_core.stores.fts`, written with them), and an **outbox** of pending index
writes all live in ``zep.db``. A write commits records and outbox rows in one
transaction; the derived indexes are brought in line afterwards (and on the next
open if the process died in between).

One connection, shared by threads under a lock (``check_same_thread=False``), in WAL
mode with a busy timeout so a second process waits instead of failing.

The store is split by job, each written once for both SQL stores (:mod:`zep_core.stores.sql`):
users with their episodes and sessions, facts, entities, what retrieval reads, the outbox, the
lexical index's upkeep. SQLite's own (:mod:`zep_core.stores.recordstore`) are its connection
and how its lexical index makes and ranks terms (FTS5's tokenizer, the BM25 statement). What
each consumer needs of it is a Protocol (:mod:`zep_core.stores.record_protocols`).
"""

from __future__ import annotations

from .recordstore.connection import Connection
from .recordstore.facts import FactRows
from .recordstore.search import SearchRows
from .rows import StoredFact, iso
from .schema import SCHEMA_VERSION
from .sql.entities import SqlEntityRows
from .sql.outbox import SqlOutboxRows
from .sql.users import SqlUserRows

__all__ = ["RecordStore", "StoredFact", "iso", "SCHEMA_VERSION"]


class RecordStore(SqlUserRows, FactRows, SearchRows, SqlEntityRows, SqlOutboxRows, Connection):
    """The SQLite system of record: every job's rows (:mod:`zep_core.stores.recordstore`) over one connection.

    A method that reads or changes one user's rows takes that user as a
    :class:`~zep_core.tenant.Tenant` (a user id checked at the API boundary; anything else is
    a ``TypeError``) and seeks keys led by it. The methods over every user (the outbox, the
    id namespace, checks and rebuilds) say so; records written carry their own checked
    ``user_id``.
    """
