"""HNSW indexes for the large tenants on PostgreSQL: one partial pgvector index per tenant, built in the background.

Why: a tenant's vector search is exact by default (:class:`~.indexes.PgVectorIndex`: pgvector
scores every current fact of the tenant), which costs time in proportion to the tenant's
facts. Past ``exact_below`` current facts an approximate index answers faster
(``bench/pg_vectors.py`` measures where; docs/postgres.md gives the figures). One HNSW
index over every tenant's vectors would make each small tenant's search filter the whole
table's graph, and every insert pay for it; so a large tenant gets an index of their own.

**Not on ``facts``.** A partial index per tenant on ``facts`` would be one more predicate for
the planner to test in *every* statement over ``facts``, of every tenant: measured, 100 such
indexes made ``get_context`` of a small tenant about twice as slow. So the indexed tenants'
current vectors are copied into a table of their own, ``ann_vectors``, and the partial
indexes are on it::

    CREATE INDEX CONCURRENTLY ann_hnsw_<hash> ON zep.ann_vectors
    USING hnsw ((embedding::vector(D)) vector_ip_ops)
    WHERE user_id = '<tenant>' AND dims = D

(``dims``: the vector's dimension, a stored column, so the planner knows how many rows match.)

**The copy is never behind.** Each write of facts updates ``ann_vectors`` in its own
transaction (:meth:`~zep_core.stores.postgres.facts.PgFactRows.write_facts`, ``update_facts``,
``set_embeddings``: :data:`SYNC`), for a tenant with a row in ``vector_tiers`` (whichever
process marked it); that write first takes a shared advisory lock on the tenant, and the
build takes it exclusively while it marks the tenant and copies their vectors, so no write
can fall between the copy and the mark. A search uses the index when it repeats its
predicate with the tenant named literally (:func:`approximate_query`); row-level security
still admits only the tenant's rows.

**When.** Each fact write names its tenant to :meth:`HnswIndexes.written` (cheap: a dict);
a background thread counts the tenant's current facts once the write committed, and at
``exact_below`` or more copies their vectors and builds the index with ``CONCURRENTLY``
(writes go on meanwhile) on a connection of its own, as the URL's user (who owns the
tables: the tenant roles own nothing). Only once the index is valid is the tenant marked
``ready``, and only then do its searches use it. A build cut off (a crash, a closed memory)
leaves an invalid index, dropped and built again on the next try; two processes serialize
on an advisory lock. A tenant stays indexed until forgotten or a rebuild. Every process
reads the marks again every ``refresh_s`` seconds, so the servers sharing a database use an
index whichever of them built it.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ...tenant import Tenant, key
from .connection import SCOPE_SQL, STORE, Scope, advisory_key, scope_settings
from .schema import CURRENT as _CURRENT

__all__ = ["EF_SEARCH", "SYNC", "HnswIndexes", "approximate_query", "build_key", "index_name", "lock_key"]

log = logging.getLogger("zep_core.stores.postgres")

_BUILDING, _READY = "building", "ready"
#: Candidates HNSW keeps while searching (``hnsw.ef_search``), at least the ``k`` asked for (pgvector's
#: most: 1,000; past it the iterative scan, in strict order, goes on until ``k`` are found).
EF_SEARCH = 100
#: Seconds before a tenant whose build failed (a user that does not own the tables…) is tried again.
RETRY_S = 600
#: Tenants whose count a process remembers: past it the oldest are forgotten (counted again when written to).
REMEMBERED = 50_000
#: Memory a build may use on the server (``maintenance_work_mem``): a graph that outgrows it builds far slower.
BUILD_MEMORY = "256MB"


#: Keep a tenant's ``ann_vectors`` rows equal to their current facts' vectors, for the ids just written,
#: when the tenant is marked (any state); params ``{"u": tenant, "ids": [...]}``. Run after taking
#: :func:`lock_key` shared, in the write's transaction.
SYNC = f"""
WITH marked AS (SELECT 1 FROM vector_tiers WHERE user_id = %(u)s),
gone AS (DELETE FROM ann_vectors a WHERE a.user_id = %(u)s AND a.id = ANY(%(ids)s) AND NOT EXISTS (
    SELECT 1 FROM facts f WHERE f.user_id = a.user_id AND f.id = a.id AND {_CURRENT}))
INSERT INTO ann_vectors(user_id, id, embedding)
SELECT user_id, id, embedding FROM facts
WHERE user_id = %(u)s AND id = ANY(%(ids)s) AND {_CURRENT} AND EXISTS (SELECT 1 FROM marked)
ON CONFLICT (user_id, id) DO UPDATE SET embedding = excluded.embedding"""


def lock_key(tenant: Tenant) -> int:
    """The advisory lock of a tenant's copy: writes take it shared, the copy (a short transaction) exclusively."""
    return advisory_key(b"zep-ann", tenant)


def build_key(tenant: Tenant) -> int:
    """The advisory lock one process holds while it builds a tenant's index (its session's, for the whole build).

    Never :func:`lock_key`: a write waiting for that one while ``CREATE INDEX CONCURRENTLY``
    waits for the write's transaction to end is a deadlock.
    """
    return advisory_key(b"zep-ann-build", tenant)


def index_name(tenant: Tenant) -> str:
    """The name of a tenant's HNSW index: a hash of the user id (any text may be one; a name may not)."""
    return "ann_hnsw_" + hashlib.sha256(key(tenant).encode()).hexdigest()[:24]


def _predicate(psycopg: Any, tenant: Tenant, dimension: int) -> Any:
    """The index's ``WHERE``, the tenant and dimension as literals (what a query must repeat to use it)."""
    sql = psycopg.sql
    return sql.SQL("user_id = {} AND dims = {}").format(sql.Literal(key(tenant)),
                                                                          sql.Literal(int(dimension)))


def approximate_query(psycopg: Any, tenant: Tenant, dimension: int) -> Any:
    """The k-nearest search that the tenant's index answers: params ``(vector, vector, k)``.

    The tenant is a literal here (the index's predicate must be repeated as written), in a
    statement with ``%s`` parameters: a ``%`` in it is doubled, so that the driver reads it
    as the character, never as a placeholder ("100%", "x%%y" are user ids like any other).
    """
    sql = psycopg.sql
    cast = sql.SQL("::vector({})").format(sql.Literal(int(dimension)))
    where = sql.SQL(_predicate(psycopg, tenant, dimension).as_string(None).replace("%", "%%"))
    return sql.SQL("SELECT id, -((embedding{cast}) <#> %s{cast}) FROM ann_vectors WHERE {where} "
                   "ORDER BY (embedding{cast}) <#> %s{cast} LIMIT %s").format(cast=cast, where=where)


class HnswIndexes:
    """Which tenants have an HNSW index of their own, and the thread that builds (and drops) them.

    Args:
        records: the :class:`~zep_core.stores.postgres.PgRecordStore` (the marks, read by searches).
        connect: opens a new autocommit connection as the URL's user: the builder's own, for the
            counts, copies and builds (the store's connection is never held meanwhile).
        exact_below: tenants with fewer current facts than this are searched exactly.
        refresh_s: how often the marks are read again (another process's builds).

    """

    def __init__(self, records: Any, connect: Callable[[], Any], *, exact_below: int,
                 refresh_s: float = 10.0) -> None:
        self.records = records
        self.exact_below = exact_below
        self.refresh_s = refresh_s
        self._connect = connect
        self._lock = threading.Condition()
        self._ready: set[Tenant] = set()
        self._read_at = 0.0
        self._todo: dict[Tenant, str] = {}  # tenant -> "check" | "drop", in arrival order
        self._checked: dict[Tenant, int] = {}  # current facts counted at the last check
        self._added: dict[Tenant, int] = {}  # facts written since
        self._thread: threading.Thread | None = None
        self._conn: Any = None  # the builder's own connection (see :meth:`_own`)
        self._work = threading.RLock()  # one job at a time on it (the thread's, or a rebuild's drop_all)
        self._building = False  # a CREATE INDEX runs on it: close() cancels it
        self._closed = False
        self._failed_at: dict[Tenant, float] = {}  # when a tenant's last build failed
        self.failures = 0  # builds that failed (logged); the tenant stays exact

    # -- what queries ask ---------------------------------------------------------------------

    def ready(self, tenant: Tenant) -> bool:
        """Whether the tenant's searches go to their HNSW index (the marks read again every ``refresh_s``)."""
        now = time.monotonic()
        if now - self._read_at > self.refresh_s:
            self._read_at = now
            self._ready = {t for t, state in self.records.vector_tiers().items() if state == _READY}
        return tenant in self._ready

    def searched(self, tenant: Tenant) -> None:
        """An exact search of a tenant this process has not counted yet: count it (in the background)."""
        if tenant not in self._checked and tenant not in self._todo:
            self.written(tenant, 0)

    # -- what writes tell ---------------------------------------------------------------------

    def written(self, tenant: Tenant, facts: int) -> None:
        """``facts`` were written (and committed) for ``tenant``: count it in the background if it may be large now.

        A tenant whose build failed is not tried again for :data:`RETRY_S` seconds.
        """
        with self._lock:
            if self._closed or tenant in self._ready:
                return
            failed = self._failed_at.get(tenant)
            if failed is not None and time.monotonic() - failed < RETRY_S:
                return
            self._added[tenant] = self._added.get(tenant, 0) + facts
            known = self._checked.get(tenant)
            if known is not None and known + self._added[tenant] < self.exact_below:
                return  # certainly still small: no count
            self._todo.setdefault(tenant, "check")
            self._start()

    def forgotten(self, tenant: Tenant) -> None:
        """A tenant's rows were deleted: drop their index (in the background) and stop using it."""
        with self._lock:
            self._ready.discard(tenant)
            self._checked.pop(tenant, None)
            self._added.pop(tenant, None)
            if self._closed:
                return
            self._todo.pop(tenant, None)
            self._todo[tenant] = "drop"
            self._start()

    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="zep-hnsw", daemon=True)
            self._thread.start()
        self._lock.notify()

    # -- the thread ---------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._todo and not self._closed:
                    self._lock.wait()
                if self._closed:
                    return
                tenant, job = next(iter(self._todo.items()))
                del self._todo[tenant]
                self._added.pop(tenant, None)
            try:
                if job == "drop":
                    self.drop(tenant)
                else:
                    self.check(tenant)
            except Exception as exc:  # noqa: BLE001 - an index only makes search faster: log it, stay exact
                if self._closed:
                    return  # close() cancelled the build: the next try starts it again
                self.failures += 1
                with self._lock:
                    self._failed_at[tenant] = time.monotonic()
                log.warning("the HNSW index of a tenant could not be %s (its searches stay exact; tried again "
                            "in %d s at the earliest): %s", "dropped" if job == "drop" else "built", RETRY_S, exc)

    @contextmanager
    def _scoped(self, scope: Scope) -> Iterator[Any]:
        """The builder's own connection in a transaction under ``scope`` (as the store's statements run)."""
        role, tenant = scope_settings(scope)
        conn = self._own()
        with conn.transaction():
            conn.execute(SCOPE_SQL, [role, True, tenant, True])
            yield conn

    def _own(self) -> Any:
        """The builder's connection (as the URL's user), opened on first use and again if it was lost."""
        if self._conn is None or self._conn.closed:
            self._conn = self._connect()
        return self._conn

    def check(self, tenant: Tenant) -> bool:
        """Count the tenant's current facts; build their index if there are ``exact_below`` or more.

        Returns whether the tenant is indexed now. Runs in the caller's thread (the
        background thread's job; tests and benchmarks call it directly), on the builder's
        own connection: the store's is never held while a tenant is counted or copied.
        """
        with self._work:
            with self._scoped(tenant) as conn:
                count = conn.execute(f"SELECT count(*) FROM facts WHERE user_id = %s AND {_CURRENT}",
                                     [key(tenant)]).fetchone()[0]
                dims = conn.execute(f"SELECT vector_dims(embedding) FROM facts WHERE user_id = %s AND {_CURRENT} "
                                    "LIMIT 1", [key(tenant)]).fetchall()
            with self._lock:
                self._checked.pop(tenant, None)
                self._checked[tenant] = count  # newest last: the oldest are forgotten first
                for old in list(itertools.islice(self._checked, max(0, len(self._checked) - REMEMBERED))):
                    del self._checked[old]
                    self._added.pop(old, None)
            if count < max(self.exact_below, 1) or not dims:
                return False
            return self._build(tenant, int(dims[0][0]))

    def _build(self, tenant: Tenant, dimension: int) -> bool:
        """Build the tenant's index (``CONCURRENTLY``) unless a valid one exists, then mark them ready.

        Returns whether it did; False when another process builds it, or :meth:`close` came first.
        """
        sql = self.records._psycopg.sql
        name = index_name(tenant)
        conn = self._own()
        if not conn.execute("SELECT pg_try_advisory_lock(%s)", [build_key(tenant)]).fetchone()[0]:
            return False  # another process builds it; its mark reaches us on the next refresh
        try:
            with self._scoped(tenant) as conn:
                state = conn.execute("SELECT state FROM vector_tiers WHERE user_id = %s", [key(tenant)]).fetchall()
            if state != [(_READY,)]:
                self._copy(tenant)
                conn.execute("ANALYZE ann_vectors")  # the planner learns the copy's size: the index pays
            valid = conn.execute("SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                                 "JOIN pg_namespace n ON n.oid = c.relnamespace "
                                 "WHERE n.nspname = current_schema() AND c.relname = %s", [name]).fetchall()
            if valid and not valid[0][0]:  # a build cut off: start again
                conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name)))
            if not valid or not valid[0][0]:
                started = time.perf_counter()
                conn.execute(sql.SQL("SET maintenance_work_mem = {}").format(sql.Literal(BUILD_MEMORY)))
                with self._lock:
                    if self._closed:
                        return False
                    self._building = True
                try:
                    conn.execute(sql.SQL("CREATE INDEX CONCURRENTLY IF NOT EXISTS {} ON ann_vectors "
                                         "USING hnsw ((embedding::vector({})) vector_ip_ops) WHERE {}").format(
                        sql.Identifier(name), sql.Literal(int(dimension)),
                        _predicate(self.records._psycopg, tenant, dimension)))
                finally:
                    with self._lock:
                        self._building = False
                log.info("built an HNSW index for a tenant of %d dimensions in %.1f s", dimension,
                         time.perf_counter() - started)
            with self._scoped(tenant) as conn:
                conn.execute("UPDATE vector_tiers SET state = %s WHERE user_id = %s", [_READY, key(tenant)])
            with self._lock:
                self._ready.add(tenant)
            return True
        finally:
            if not conn.closed:
                conn.execute("SELECT pg_advisory_unlock(%s)", [build_key(tenant)])

    def _copy(self, tenant: Tenant) -> None:
        """Mark the tenant (their writes keep the copy from now on) and copy their current vectors, atomically."""
        with self._scoped(tenant) as conn:
            user = key(tenant)
            conn.execute("SELECT pg_advisory_xact_lock(%s)", [lock_key(tenant)])
            conn.execute("INSERT INTO vector_tiers(user_id, state) VALUES (%s, %s) "
                         "ON CONFLICT (user_id) DO UPDATE SET state = excluded.state", [user, _BUILDING])
            conn.execute("DELETE FROM ann_vectors WHERE user_id = %s", [user])
            conn.execute("INSERT INTO ann_vectors(user_id, id, embedding) SELECT user_id, id, embedding "
                         f"FROM facts WHERE user_id = %s AND {_CURRENT}", [user])

    def drop(self, tenant: Tenant) -> None:
        """Drop the tenant's index, mark and copy (a forgotten tenant's index would hold nothing)."""
        sql = self.records._psycopg.sql
        with self._work:
            self._own().execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(
                sql.Identifier(index_name(tenant))))
            with self._scoped(tenant) as conn:
                conn.execute("DELETE FROM vector_tiers WHERE user_id = %s", [key(tenant)])
                conn.execute("DELETE FROM ann_vectors WHERE user_id = %s", [key(tenant)])
        with self._lock:
            self._ready.discard(tenant)

    def drop_all(self) -> int:
        """Drop every tenant's index, mark and copy (a rebuild: the vectors may have changed dimension); how many."""
        sql = self.records._psycopg.sql
        with self._work:
            conn = self._own()
            names = [r[0] for r in conn.execute(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = current_schema() AND c.relkind = 'i' AND c.relname LIKE 'ann\\_hnsw\\_%%'")]
            for name in names:
                conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name)))
            with self._scoped(STORE) as conn:
                conn.execute("DELETE FROM vector_tiers")
                conn.execute("DELETE FROM ann_vectors")
        with self._lock:
            self._ready.clear()
            self._checked.clear()
        return len(names)

    def close(self) -> None:
        """Stop the thread; a build under way is cancelled (its invalid index is dropped on the next try)."""
        with self._lock:
            self._closed = True
            self._todo.clear()
            building = self._building
            self._lock.notify_all()
        if building and self._conn is not None:
            try:
                self._conn.cancel_safe(timeout=5)
            except Exception:  # noqa: BLE001 - the connection is closed next anyway
                pass
        if self._thread is not None:
            self._thread.join(timeout=10)
        with self._work:
            if self._conn is not None:
                self._conn.close()
