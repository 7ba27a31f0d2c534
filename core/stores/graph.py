"""Kùzu: the graph index (Entity nodes, FACT relationships), derived from SQLite.

All Cypher of the project's own lives in this module, behind :class:`KuzuGraphIndex`, so
the maintained fork (LadybugDB) or a server graph can replace Kùzu. Writes are
serialized (Kùzu allows one write transaction at a time), a call's rows in one
transaction, batched into a statement per chunk of rows once that beats a statement per
row; reads use one connection per thread. Times are stored as sortable ISO strings, so
any year from 1 to 9999 fits.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import QueryError, StoreError, StoreLockedError, StoreUnavailableError, is_io_failure, store_error
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

# The batched forms: one statement over a list of rows. Kùzu 0.11.3 plans them as hash joins
# with one scan of each table only when the ids come in as plain variables (``WITH r.s AS s``)
# and two nodes not linked by the pattern are looked up in MATCHes of their own; a struct field
# in the pattern (``{id: r.s}``) or both nodes in one MATCH is planned as a cross product (~34
# rows/s). ``COPY ... FROM (UNWIND ...)`` is no faster than these and unsafe: rolling back a
# transaction that holds a COPY dropped every committed relationship of the table, or crashed
# the process on close.
_EXISTING_NODES = "UNWIND $ids AS i MATCH (e:Entity {id: i}) RETURN e.id"
_CREATE_NODES = ("UNWIND $rows AS n CREATE (:Entity {id: n.id, user_id: n.user_id, name: n.name, "
                 "entity_type: n.entity_type})")
_CREATE_EDGES = ("UNWIND $rows AS r WITH r, r.s AS s MATCH (a:Entity {id: s}) WITH a, r, r.o AS o "
                 "MATCH (b:Entity {id: o}) CREATE (a)-[:FACT {fact_id: r.f, user_id: r.u, predicate: r.p, "
                 "valid_from: r.vf, valid_until: r.vu, current: r.c}]->(b)")
_DELETE_EDGES = ("UNWIND $rows AS k WITH k.s AS s, k.o AS o, k.f AS f "
                 "MATCH (a:Entity {id: s})-[r:FACT]->(b:Entity {id: o}) WHERE r.fact_id = f DELETE r")
_COUNT_NODES = "MATCH (e:Entity) RETURN count(*)"
_COUNT_EDGES = "MATCH (:Entity)-[r:FACT]->(:Entity) RETURN count(*)"

#: Rows per batched statement (a call's chunks share its one transaction).
_CHUNK = 2000
#: A batched statement scans the node table (and, for edges, the relationship table) once;
#: one statement per row costs about as much as scanning this many table rows (measured on
#: Kùzu 0.11.3: ~1.4 ms per edge, ~0.3 ms per node, ~0.3 µs per scanned relationship), so
#: small calls on a large graph stay one statement per row.
_SCAN_ROWS_PER_ROW = 4000
#: Calls with fewer rows never batch.
_MIN_BATCH = 2


#: Kùzu 0.11.3 needs its graph to fit its buffer pool: past it a write fails ("the buffer pool
#: is full") or the process dies of a general protection fault inside Kùzu (measured: a 256 MB
#: pool crashed a build at a 300 MB graph, 55,600 tenants; a 16 MB pool crashed at 16 MB, or
#: failed writes from 11 MB on disk). So the pool is at least this many times the graph's size
#: on disk when it opens, room for the graph to grow ...
POOL_PER_GRAPH = 4
#: ... and a write that finds the graph (file and log) past this share of its pool is refused
#: with a StoreUnavailableError (its index writes stay queued; the next open sizes the pool
#: again), before Kùzu fails or crashes: half, the least headroom measured to be enough.
POOL_FULL = 0.5


def default_buffer_pool_mb() -> int:
    """Kùzu's buffer pool when none is set: a quarter of the machine's memory, at least 256 MB.

    Only the pages the graph uses are resident; the rest is address space.
    """
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # no sysconf (Windows): assume 4 GB
        memory = 4 << 30
    return max(256, (memory // 4) >> 20)


def graph_megabytes(path: Path) -> float:
    """The graph's size on disk (its file and its write-ahead log), in MB."""
    total = 0
    for file in (path, path.with_name(path.name + ".wal")):
        try:
            total += file.stat().st_size
        except OSError:
            pass
    return total / 2**20


def buffer_pool_for(path: Path, wanted_mb: int | None) -> int:
    """The buffer pool (MB) to open the graph at ``path`` with: ``wanted_mb`` (None: the default), raised to fit it."""
    pool = default_buffer_pool_mb() if wanted_mb is None else int(wanted_mb)
    need = int(POOL_PER_GRAPH * graph_megabytes(path)) + 1
    if need > pool:
        log.warning("the graph index %s holds %.0f MB: its buffer pool is raised from %d to %d MB (Kùzu needs "
                    "its graph to fit; set graph_buffer_pool_mb to choose)", path, need / POOL_PER_GRAPH, pool, need)
        pool = need
    return pool


def _rel_filter(as_of: str | None) -> str:
    if as_of is None:
        return "r.current"
    return "r.valid_from <= $as_of AND (r.valid_until IS NULL OR r.valid_until > $as_of)"


log = logging.getLogger("zep_core")

#: Databases :meth:`KuzuGraphIndex.close` had to leave open (a full disk), by folder, with their connection.
#: A reference is held from C as well, so that not even the interpreter's exit destroys (closes) them.
_UNCLOSED: dict[Path, tuple[Any, Any]] = {}


def _check_not_held(path: Path) -> None:
    """Refuse to open a folder whose database an earlier close in this process had to leave open."""
    if path in _UNCLOSED:
        raise StoreUnavailableError(f"the graph store {path} is still held by this process, which could not close it "
                                    "when its disk filled up; restart the process to open the folder again (nothing "
                                    "is lost: the next open replays Kùzu's log)")


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
        buffer_pool_mb: Kùzu's buffer pool; None: :func:`default_buffer_pool_mb`. Raised at
            open to :data:`POOL_PER_GRAPH` times the graph's size on disk (:func:`buffer_pool_for`).
        query_timeout_ms: Kùzu's timeout for each read (the reads are our own hop queries;
            tenants' Cypher runs in :mod:`zep_core.stores.sandbox`, not here).
        batch_from: write calls of at least this many rows with one statement per chunk of
            rows, smaller ones with one per row; None (the default) decides by the graph's
            size, as measured to be fastest.

    """

    def __init__(self, path: Path, *, buffer_pool_mb: int | None = None, query_timeout_ms: int = 30_000,
                 batch_from: int | None = None) -> None:
        import kuzu

        self.path = Path(path).resolve()
        self._io_failed = False  # a write failed for want of space since the last one that committed
        #: Set once a write failed for want of space: the next open checks the vector index's files too.
        self.needs_check = False
        #: Called when ``needs_check`` is set (:func:`zep_core.stores.folder.open_folder` records it in the lock file).
        self.on_failure: Callable[[], None] | None = None
        _check_not_held(self.path)
        self.buffer_pool_mb = buffer_pool_for(self.path, buffer_pool_mb)
        try:
            self._db = kuzu.Database(str(path), buffer_pool_size=self.buffer_pool_mb << 20,
                                     max_num_threads=2, max_db_size=1 << 40)
        except RuntimeError as exc:
            if "lock" in str(exc).lower():
                raise StoreLockedError(
                    f"the graph store {path} is open in another process; close it there first "
                    f"({exc})") from exc
            raise store_error(f"could not open the Kùzu graph store {path}: {exc}") from exc
        self._kuzu = kuzu
        # Kùzu 0.11's execute(query, params) prepares anew on every call and never frees the
        # statement (measured: +64 KB per call until the buffer pool is full); preparing each
        # of our fixed queries once per connection is flat and 2x faster. The API is marked
        # deprecated in 0.11 but is the only leak-free path.
        self._write = _Conn(kuzu.Connection(self._db))
        self._write_lock = threading.Lock()
        self._local = threading.local()
        self._timeout_ms = query_timeout_ms
        # Rows in the graph (nodes, edges) as last counted, an upper bound kept up by the writes
        # since, and how many rows were written since: what a batched statement would scan.
        self._sizes: tuple[int, int] | None = None
        self._written = 0
        self._batch_from = batch_from
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

    @contextmanager
    def _writing(self) -> Iterator[Callable[[str, dict], Any]]:
        """One write transaction; yields a function that runs a statement in it.

        Refused before it begins when the graph has grown past :data:`POOL_FULL` of the buffer
        pool: Kùzu would fail it, or crash the process (see :data:`POOL_PER_GRAPH`).
        """
        with self._write_lock:
            size = graph_megabytes(self.path)
            if size > POOL_FULL * self.buffer_pool_mb:
                raise StoreUnavailableError(
                    f"the graph index {self.path} has grown to {size:.0f} MB, near its buffer pool of "
                    f"{self.buffer_pool_mb} MB, past which Kùzu fails or crashes; the index writes stay queued. "
                    "Open the memory again (the open sizes the pool from the graph) or set a larger "
                    "graph_buffer_pool_mb")
            conn = self._write.conn
            conn.execute("BEGIN TRANSACTION")
            try:
                yield self._write.run
                conn.execute("COMMIT")
                self._io_failed = False
            except BaseException as exc:
                try:
                    conn.execute("ROLLBACK")
                except RuntimeError:  # Kùzu already rolled the failed transaction back
                    pass
                # Kùzu raises RuntimeError for a failed statement, ValueError or TypeError for a
                # value it cannot convert (the transaction stays open then: rolled back above).
                if isinstance(exc, (RuntimeError, ValueError, TypeError)):
                    error = store_error(f"Kùzu write failed: {exc}")
                    if is_io_failure(str(exc)):
                        self._io_failed = self.needs_check = True
                        if self.on_failure is not None:
                            self.on_failure()
                    raise error from exc
                raise

    def _batched(self, run: Callable[[str, dict], Any], rows: int, *, edges: bool) -> bool:
        """Whether one statement per chunk beats one per row for ``rows`` rows (inside the write lock).

        A batched statement scans the node table, and for edges the relationship table, so
        it pays once the rows outnumber the graph's size over :data:`_SCAN_ROWS_PER_ROW`.
        The size is counted again once the rows written since the last count could have
        changed it by a quarter.
        """
        if self._batch_from is not None:
            return rows >= self._batch_from
        if rows < _MIN_BATCH:
            return False
        if self._sizes is None or self._written * 4 > sum(self._sizes):
            self._sizes = (run(_COUNT_NODES, {}).get_next()[0], run(_COUNT_EDGES, {}).get_next()[0])
            self._written = 0
        nodes, edge_count = self._sizes
        return rows * _SCAN_ROWS_PER_ROW >= nodes + (edge_count if edges else 0)

    def _wrote(self, nodes: int = 0, edges: int = 0, deleted: int = 0) -> None:
        """Note rows possibly added or deleted (inside the write lock), for :meth:`_batched`."""
        self._written += nodes + edges + deleted
        if self._sizes is not None:
            self._sizes = (self._sizes[0] + nodes, self._sizes[1] + edges)

    def upsert_entities(self, nodes: Iterable[EntityNode]) -> None:
        """Insert nodes that are missing; idempotent.

        A node already stored is left as it is, and of nodes with the same id in one call
        the first is the one inserted.
        """
        rows: dict[str, dict] = {}
        for n in nodes:
            rows.setdefault(n.id, {"id": n.id, "user_id": n.user_id, "name": n.name, "entity_type": n.entity_type})
        if not rows:
            return
        with self._writing() as run:
            if not self._batched(run, len(rows), edges=False):
                for params in rows.values():
                    run(_UPSERT_NODE, params)
                self._wrote(nodes=len(rows))
                return
            items = list(rows.items())
            for i in range(0, len(items), _CHUNK):
                chunk = items[i:i + _CHUNK]
                stored = {r[0] for r in run(_EXISTING_NODES, {"ids": [k for k, _ in chunk]}).get_all()}
                missing = [row for k, row in chunk if k not in stored]
                if missing:
                    run(_CREATE_NODES, {"rows": missing})
                    self._wrote(nodes=len(missing))

    def upsert_facts(self, edges: Iterable[FactEdge]) -> None:
        """Insert or update relationships keyed by fact id; idempotent.

        Each edge replaces the stored relationships of its fact id between its two entities;
        an edge whose subject or object entity is not stored is left out, as Kùzu's
        ``MATCH ... CREATE`` leaves it (the indexer checks the owners first). Of edges with
        the same fact id and entities in one call, the last one is stored.
        """
        rows: dict[tuple[str, str, str], dict] = {}
        for e in edges:
            key = (e.fact_id, e.subject_id, e.object_id)
            rows.pop(key, None)  # the last one wins, as when they are written one by one
            rows[key] = {"s": e.subject_id, "o": e.object_id, "f": e.fact_id, "u": e.user_id, "p": e.predicate,
                         "vf": e.valid_from, "vu": e.valid_until, "c": e.current}
        if not rows:
            return
        with self._writing() as run:
            if not self._batched(run, len(rows), edges=True):
                for params in rows.values():
                    run(_DELETE_EDGE, {"f": params["f"], "s": params["s"], "o": params["o"]})
                    run(_CREATE_EDGE, params)
            else:
                items = list(rows.values())
                for i in range(0, len(items), _CHUNK):
                    chunk = items[i:i + _CHUNK]
                    run(_DELETE_EDGES, {"rows": [{"s": r["s"], "o": r["o"], "f": r["f"]} for r in chunk]})
                    run(_CREATE_EDGES, {"rows": chunk})
            self._wrote(edges=len(rows))

    def delete_facts(self, edges: Iterable[tuple[str, str, str]]) -> None:
        """Delete relationships given ``(fact_id, subject_id, object_id)``."""
        keys = list(dict.fromkeys((f, s, o) for f, s, o in edges))
        if not keys:
            return
        with self._writing() as run:
            if not self._batched(run, len(keys), edges=True):
                for f, s, o in keys:
                    run(_DELETE_EDGE, {"f": f, "s": s, "o": o})
            else:
                for i in range(0, len(keys), _CHUNK):
                    run(_DELETE_EDGES, {"rows": [{"s": s, "o": o, "f": f} for f, s, o in keys[i:i + _CHUNK]]})
            self._wrote(deleted=len(keys))

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
        with self._writing() as run:
            run("MATCH (:Entity)-[r:FACT]->(:Entity) WHERE r.user_id = $u DELETE r", {"u": user_id})
            run("MATCH (e:Entity) WHERE e.user_id = $u DELETE e", {"u": user_id})
            self._sizes = None

    def reset(self) -> None:
        """Delete every node and relationship (relationships first; see :meth:`drop_user`)."""
        with self._writing() as run:
            run("MATCH (:Entity)-[r:FACT]->(:Entity) DELETE r", {})
            run("MATCH (e:Entity) DELETE e", {})
            self._sizes = None

    def close(self) -> None:
        """Close connections and the database (releases the file lock).

        After a write failed for want of space (and none committed since), the database
        is left open until this process exits, with a warning: closing it, or even a
        ``CHECKPOINT``, then crashes the whole process in Kùzu 0.11 (SIGABRT or SIGSEGV,
        seen on a full tmpfs, whether or not space came back). Nothing is lost: the graph
        is derived, and the next open rebuilds it from SQLite (:func:`zep_core.stores.folder.open_folder`).
        """
        with self._write_lock:
            self._local = threading.local()
            if self._io_failed:
                _UNCLOSED[self.path] = (self._db, self._write.conn)
                for obj in _UNCLOSED[self.path]:
                    ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))
                log.warning("the graph store %s is not closed after its disk failed a write (Kùzu would crash the "
                            "process); it stays open until this process exits, and the next open rebuilds it from "
                            "SQLite", self.path)
                return
            self._write.conn.close()
            self._db.close()
