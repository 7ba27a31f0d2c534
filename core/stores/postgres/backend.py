"""Opening a memory on PostgreSQL, and measuring it: what the registry's PostgreSQL entry calls.

The record store, and its own tables as the two indexes (:mod:`.indexes`); no folder lock:
the database serializes its writers, and row-level security scopes each statement to its
tenant. The data folder is made for this process's scratch (the Cypher sandbox's copies) only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import StoreError
from ..opened import Stores
from .connection import _first_line, _psycopg, public_url
from .schema import SCHEMA_NAME

if TYPE_CHECKING:
    from ...config import MemoryConfig

__all__ = ["database_bytes", "open_database"]

#: The bytes of zep-memory's tables in the database, each with its indexes and TOAST data.
_SIZE_SQL = ("SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
             "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'")


def open_database(config: MemoryConfig) -> Stores:
    """The stores on PostgreSQL (``config.database_url``): the record store, and its tables as the two indexes."""
    from . import PgRecordStore
    from .hnsw import HnswIndexes
    from .indexes import PgGraphIndex, PgVectorIndex

    records = PgRecordStore(config.database_url, connect_timeout_s=config.busy_timeout_ms / 1000)
    try:
        config.data_path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        records.close()
        raise StoreError(f"cannot create the scratch folder {config.data_path}: {exc}") from exc
    hnsw = HnswIndexes(records, records.new_connection, exact_below=config.postgres_exact_below)
    records.on_facts_written, records.on_user_deleted = hnsw.written, hnsw.forgotten
    return Stores(records, PgVectorIndex(records, hnsw), PgGraphIndex(records), None, derived=False)


def database_bytes(url: str, *, connect_timeout_s: float = 10.0) -> int:
    """The bytes zep-memory's tables take in the database of ``url`` (their indexes included).

    A connection of its own, closed at once: what ``zep-memory stats`` reports.

    Raises:
        StoreError: the database cannot be reached or read (the message shows the URL without its password).

    """
    psycopg = _psycopg()
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=max(1, int(connect_timeout_s))) as conn:
            return int(conn.execute(_SIZE_SQL, [SCHEMA_NAME]).fetchone()[0])
    except psycopg.Error as exc:
        raise StoreError(f"could not measure the PostgreSQL database {public_url(url)}: {_first_line(exc)}") from None
