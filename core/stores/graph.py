"""Kùzu: the graph index (Entity nodes, FACT relationships), derived from SQLite.

All Cypher of the project's own lives in this module, behind :class:`KuzuGraphIndex`, so
the maintained fork (LadybugDB) or a server graph can replace Kùzu. Writes are
serialized (Kùzu allows one write transaction at a time); reads use one connection
per thread. Times are stored as sortable ISO strings, so any year from 1 to 9999 fits.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..errors import QueryError, StoreError, StoreLockedError
from .base import EntityNode, FactEdge

__all__ = ["SCHEMA", "KuzuGraphIndex"]

#: The graph tables (also those of the Cypher sandbox, :mod:`zep_core.stores.sandbox`).
SCHEMA = (
    "CREATE NODE TABLE IF NOT EXISTS Entity(id STRING PRIMARY KEY, user_id STRING, name STRING, "
    "entity_type STRING)",
    "CREATE REL TABLE IF NOT EXISTS FACT(FROM Entity TO Entity, fact_id STRING, user_id STRING, "
    "predicate STRING, valid_from STRING, valid_until STRING, current BOOLEAN)",
)

_UPSERT_NODE = ("MERGE (e:Entity {id: $id}) ON CREATE SET e.user_id = $user_id, e.name = $name, "
                "e.entity_type = $entity_type")
# Kùzu 0.11 keeps every in-place update of a relationship property in memory until the
# buffer pool is full (measured: +130 KB per SET, flat with delete + create), so an edge
# is upserted by deleting and re-creating it.
_CREATE_EDGE = ("MATCH (a:Entity {id: $s}), (b:Entity {id: $o}) CREATE (a)-[:FACT {fact_id: $f, user_id: $u, "
                "predicate: $p, valid_from: $vf, valid_until: $vu, current: $c}]->(b)")
_DELETE_EDGE = "MATCH (a:Entity {id: $s})-[r:FACT]->(b:Entity {id: $o}) WHERE r.fact_id = $f DELETE r"


def _rel_filter(as_of: str | None) -> str:
    if as_of is None:
        return "r.current"
    return "r.valid_from <= $as_of AND (r.valid_until IS NULL OR r.valid_until > $as_of)"


class _Conn:
    """A Kùzu connection with its prepared statements, keyed by query text."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self._prepared: dict[str, Any] = {}

    def run(self, query: str, params: dict) -> Any:
        stmt = self._prepared.get(query)
        if stmt is None:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="The use of separate prepare", category=DeprecationWarning)
                stmt = self._prepared[query] = self.conn.prepare(query)
            if not stmt.is_success():
                self._prepared.pop(query)
                raise RuntimeError(stmt.get_error_message())
        return self.conn.execute(stmt, params)


class KuzuGraphIndex:
    """Entity nodes and FACT relationships in an embedded Kùzu database.

    Args:
        path: the database folder (``<data>/graph``).
        buffer_pool_mb: Kùzu's buffer pool (its default is most of the machine's RAM).
        query_timeout_ms: Kùzu's timeout for each read (the reads are our own hop queries;
            tenants' Cypher runs in :mod:`zep_core.stores.sandbox`, not here).

    """

    def __init__(self, path: Path, *, buffer_pool_mb: int = 256, query_timeout_ms: int = 30_000) -> None:
        import kuzu

        try:
            self._db = kuzu.Database(str(path), buffer_pool_size=buffer_pool_mb << 20,
                                     max_num_threads=2, max_db_size=1 << 40)
        except RuntimeError as exc:
            if "lock" in str(exc).lower():
                raise StoreLockedError(
                    f"the graph store {path} is open in another process; close it there first "
                    f"({exc})") from exc
            raise StoreError(f"could not open the Kùzu graph store {path}: {exc}") from exc
        self._kuzu = kuzu
        # Kùzu 0.11's execute(query, params) prepares anew on every call and never frees the
        # statement (measured: +64 KB per call until the buffer pool is full); preparing each
        # of our fixed queries once per connection is flat and 2x faster. The API is marked
        # deprecated in 0.11 but is the only leak-free path.
        self._write = _Conn(kuzu.Connection(self._db))
        self._write_lock = threading.Lock()
        self._local = threading.local()
        self._timeout_ms = query_timeout_ms
        for ddl in SCHEMA:
            self._write.conn.execute(ddl)

    def _reader(self) -> _Conn:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = _Conn(self._kuzu.Connection(self._db))
            conn.conn.set_query_timeout(self._timeout_ms)
            self._local.conn = conn
        return conn

    def _read(self, query: str, params: dict | None = None) -> list[list[Any]]:
        try:
            return self._reader().run(query, params or {}).get_all()
        except RuntimeError as exc:
            raise StoreError(f"Kùzu query failed: {exc}") from exc

    def _run_writes(self, statements: Iterable[tuple[str, dict]]) -> None:
        with self._write_lock:
            conn = self._write.conn
            conn.execute("BEGIN TRANSACTION")
            try:
                for query, params in statements:
                    self._write.run(query, params)
                conn.execute("COMMIT")
            except RuntimeError as exc:
                try:
                    conn.execute("ROLLBACK")
                except RuntimeError:  # Kùzu already rolled the failed transaction back
                    pass
                raise StoreError(f"Kùzu write failed: {exc}") from exc

    def upsert_entities(self, nodes: Iterable[EntityNode]) -> None:
        """Insert nodes that are missing; idempotent."""
        self._run_writes((_UPSERT_NODE, {"id": n.id, "user_id": n.user_id, "name": n.name,
                                         "entity_type": n.entity_type}) for n in nodes)

    def upsert_facts(self, edges: Iterable[FactEdge]) -> None:
        """Insert or update relationships keyed by fact id; idempotent."""
        def statements() -> Iterable[tuple[str, dict]]:
            for e in edges:
                yield _DELETE_EDGE, {"f": e.fact_id, "s": e.subject_id, "o": e.object_id}
                yield _CREATE_EDGE, {"s": e.subject_id, "o": e.object_id, "f": e.fact_id, "u": e.user_id,
                                     "p": e.predicate, "vf": e.valid_from, "vu": e.valid_until, "c": e.current}

        self._run_writes(statements())

    def delete_facts(self, edges: Iterable[tuple[str, str, str]]) -> None:
        """Delete relationships given ``(fact_id, subject_id, object_id)``."""
        self._run_writes((_DELETE_EDGE, {"f": f, "s": s, "o": o}) for f, s, o in edges)

    def neighbours(self, user_id: str, entity_ids: Sequence[str], *, as_of: str | None = None,
                   limit: int = 200) -> set[str]:
        """Entities one hop from ``entity_ids`` over current (or as-of) facts."""
        if not entity_ids:
            return set()
        rows = self._read(
            f"MATCH (e:Entity)-[r:FACT]-(x:Entity) WHERE e.id IN $ids AND e.user_id = $u AND {_rel_filter(as_of)} "
            "AND NOT x.id IN $ids RETURN DISTINCT x.id LIMIT $limit",
            {"ids": list(entity_ids), "u": user_id, "limit": limit, **({"as_of": as_of} if as_of else {})})
        return {r[0] for r in rows}

    def related(self, user_id: str, entity_id: str, *, hops: int = 2, limit: int = 10) -> list[str]:
        """The spec's RelatedEntities: distinct entities 1..hops away, start excluded.

        Nearest first, then by name, so the answer does not depend on storage order.
        """
        rows = self._read(
            f"MATCH (e:Entity {{id: $id}})-[r:FACT*1..{int(hops)}]-(related:Entity) "
            "WHERE e.user_id = $u AND related.user_id = $u AND related.id <> e.id "
            "WITH related, min(length(r)) AS hops "
            "RETURN related.id AS id ORDER BY hops, related.name, related.id LIMIT $limit",
            {"id": entity_id, "u": user_id, "limit": limit})
        return [r[0] for r in rows]

    def read_query(self, query: str, params: dict) -> list[dict]:
        """Run a query inside a read-only transaction; rows as dicts."""
        conn = self._reader().conn
        try:
            conn.execute("BEGIN TRANSACTION READ ONLY")
        except RuntimeError as exc:
            raise StoreError(f"Kùzu could not start a read transaction: {exc}") from exc
        try:
            result = conn.execute(query, params)
            names = result.get_column_names()
            rows = [dict(zip(names, row)) for row in result.get_all()]
        except RuntimeError as exc:
            raise QueryError(f"the Cypher query failed: {exc}") from exc
        finally:
            try:
                conn.execute("ROLLBACK")
            except RuntimeError:  # Kùzu already ended the transaction the query failed in
                pass
        return rows

    def snapshot(self, user_id: str | None = None) -> tuple[set[str], dict[str, bool]]:
        """Entity ids and ``{fact_id: current}`` stored, for one user or all."""
        where = "WHERE e.user_id = $u" if user_id is not None else ""
        params = {"u": user_id} if user_id is not None else {}
        nodes = {r[0] for r in self._read(f"MATCH (e:Entity) {where} RETURN e.id", params)}
        edges = {r[0]: bool(r[1]) for r in self._read(
            f"MATCH (e:Entity)-[r:FACT]->(:Entity) {where} RETURN r.fact_id, r.current", params)}
        return nodes, edges

    def drop_user(self, user_id: str) -> None:
        """Delete a user's nodes and their relationships.

        Relationships go first and nodes after, never by ``DETACH DELETE``: Kùzu 0.11.3
        replays a detach-delete from its WAL wrongly after a crash (the deleted
        relationship comes back in one direction only), which corrupts the graph.
        """
        self._run_writes([("MATCH (:Entity)-[r:FACT]->(:Entity) WHERE r.user_id = $u DELETE r", {"u": user_id}),
                          ("MATCH (e:Entity) WHERE e.user_id = $u DELETE e", {"u": user_id})])

    def reset(self) -> None:
        """Delete every node and relationship (relationships first; see :meth:`drop_user`)."""
        self._run_writes([("MATCH (:Entity)-[r:FACT]->(:Entity) DELETE r", {}), ("MATCH (e:Entity) DELETE e", {})])

    def close(self) -> None:
        """Close connections and the database (releases the file lock)."""
        with self._write_lock:
            self._local = threading.local()
            self._write.conn.close()
            self._db.close()
