"""The PostgreSQL record store's connection: opening (and migrating) the database, transactions, scoped statements.

Every statement names its scope: a :class:`~zep_core.tenant.Tenant` (it runs as
:data:`~.schema.TENANT_ROLE` with ``zep.tenant`` set to that tenant, and row-level security
admits that tenant's rows only) or :data:`STORE` (store-wide work, as
:data:`~.schema.STORE_ROLE`). There is no way to run one without: the scope is set in the
statement's own transaction, with ``SET LOCAL`` semantics, from the one ``Tenant`` value
the call was given (:mod:`.schema` says why).

**One writer per tenant, whatever the number of processes.** A write transaction takes its
tenant's advisory lock (:func:`tenant_lock_key`) with its first statement of that tenant, and
holds it until it ends: the update rules read a tenant's current facts, then write, and a
second server on the same database doing the same for the same tenant waits until the
first has committed, then reads what it wrote. Tenants are locked in the order a
transaction first names them; one that will name several locks them first, sorted
(:meth:`PgConnection.lock_tenants`), so that two such writers never wait for each other.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import unquote

from ...errors import ConfigError, RecordStoreError, StoreError, StoreUnavailableError, install_hint
from ...tenant import Tenant, key
from ..sql.dialect import POSTGRES, STORE, Scope, SqlBase
from .schema import MIGRATION_LOCK, MIGRATIONS, SCHEMA_NAME, SCHEMA_VERSION, STORE_ROLE, TENANT_ROLE

log = logging.getLogger("zep_core.stores.postgres")

__all__ = ["SCOPE_SQL", "STORE", "PgConnection", "Scope", "public_url", "scope_settings", "url_without_password"]


_CHUNK = 500  # ids per ``= ANY(%s)`` list
#: Take the role and name the tenant, both for the rest of the transaction only (``SET LOCAL``).
SCOPE_SQL = "SELECT set_config('role', %s, %s), set_config('zep.tenant', %s, %s)"


def scope_settings(scope: Scope) -> tuple[str, str]:
    """``(role, tenant)`` that :data:`SCOPE_SQL` sets for ``scope``: the tenant role and its key, or the store's."""
    return (STORE_ROLE, "") if scope is STORE else (TENANT_ROLE, key(scope))


def advisory_key(space: bytes, tenant: Tenant) -> int:
    """A 64-bit advisory lock key for ``tenant`` in the key space ``space`` (a hash: any text may be a user id)."""
    return int.from_bytes(hashlib.sha256(space + b"\0" + key(tenant).encode()).digest()[:8], "big", signed=True)


def tenant_lock_key(tenant: Tenant) -> int:
    """The advisory lock a write transaction holds on its tenant until it ends (see the module's docstring)."""
    return advisory_key(b"zep-tenant", tenant)


def episode_claim_key(tenant: Tenant, episode_id: str) -> int:
    """The advisory lock of the session extracting one episode of ``tenant`` (:meth:`PgConnection.claim_episode`)."""
    return advisory_key(b"zep-episode:" + episode_id.encode(), tenant)


def _parts(url: str) -> tuple[str, str | None, str | None, str, list[str]]:
    """``(scheme://, user, password, host and path, query parameters)`` of a URL, as libpq reads one.

    libpq ends the user part at an ``@`` before any ``/``, so a password may hold ``#``, ``?``
    or ``:`` unencoded (a general URL parser would cut it at the first of them). The last such
    ``@`` is taken: a password with an ``@`` of its own is still all hidden.
    """
    head, sep, tail = url.partition("://")
    if not sep:
        return url, None, None, "", []
    authority = tail.split("/", 1)[0]
    at, ask = authority.rfind("@"), authority.find("?")
    user = password = None
    if at >= 0 and not (0 <= ask < authority.find("@") and ":" not in authority[:ask]):  # not an @ of a parameter
        user, colon, secret = tail[:at].partition(":")
        password, tail = (secret if colon else None), tail[at + 1:]
    where, mark, query = tail.partition("?")
    return head + sep, user, password, where, query.split("&") if mark else []


def _is_password(parameter: str) -> bool:
    return unquote(parameter.partition("=")[0]).strip().lower() == "password"


def _url(head: str, user: str | None, password: str | None, where: str, parameters: list[str]) -> str:
    userinfo = "" if user is None else user + ("" if password is None else ":" + password) + "@"
    return head + userinfo + where + ("?" + "&".join(parameters) if parameters else "")


def public_url(url: str) -> str:
    """The database URL as it may be shown: its password (in the user part or a parameter) replaced by ``***``."""
    head, user, password, where, parameters = _parts(url)
    return _url(head, user, None if password is None else "***", where,
                [p.partition("=")[0] + "=***" if _is_password(p) else p for p in parameters])


def url_without_password(url: str) -> str:
    """The database URL with no password at all: what a saved reference keeps.

    The process that opens it again gives the password the way PostgreSQL's clients do
    (``PGPASSWORD``, or a ``~/.pgpass`` file), never the saved data.
    """
    head, user, _, where, parameters = _parts(url)
    return _url(head, user, None, where, [p for p in parameters if not _is_password(p)])


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise ConfigError(f"a postgresql:// database needs psycopg and pgvector: {install_hint('postgres')}") from None
    return psycopg


class PgConnection(SqlBase):
    """One PostgreSQL connection shared by threads under a lock: what every job of the record store goes through."""

    dialect = POSTGRES

    def __init__(self, url: str, *, connect_timeout_s: float = 10.0) -> None:
        self._psycopg = _psycopg()
        self.url = public_url(url)
        self._dsn, self._connect_timeout = url, max(1, int(connect_timeout_s))
        self._lock = threading.RLock()
        #: ``(role, tenant)`` the session runs its autocommit statements under (None: not set yet).
        self._session_scope: tuple[str, str] | None = None
        #: Settings (``hnsw.ef_search``…) the session holds, set by :meth:`_rows_tuned` when they change.
        self._session_settings: dict[str, str] = {}
        self._depth = 0  # transactions open (nested: savepoints)
        #: ``(role, tenant)`` set with ``SET LOCAL`` in the open transaction, at this savepoint level (None: unknown).
        self._local_scope: tuple[str, str] | None = None
        #: The tenants whose advisory lock the open transaction holds (until it ends: a savepoint keeps them).
        self._locked: set[str] = set()
        self._after_commit: list[Callable[[], None]] = []
        self.conn = self._connect()
        try:
            self._migrate()
        except BaseException:
            self.conn.close()
            raise

    def new_connection(self) -> Any:
        """A connection of its own, as the URL's user: autocommit, our schema first (for work beside the store's)."""
        psycopg = self._psycopg
        try:
            return psycopg.connect(self._dsn, autocommit=True, connect_timeout=self._connect_timeout,
                                   options=f"-c search_path={SCHEMA_NAME},public")
        except psycopg.Error as exc:
            raise StoreUnavailableError(f"could not connect to the PostgreSQL database {self.url}: "
                                        f"{_first_line(exc)}. Check that the server runs and the URL's "
                                        "host, port, user and database are right") from None

    def _connect(self) -> Any:
        """The store's connection: autocommit, our schema first, pgvector's types registered."""
        from pgvector.psycopg import register_vector

        conn = self.new_connection()
        try:
            register_vector(conn)
        except self._psycopg.ProgrammingError:  # a new database: the extension comes with the first migration
            pass
        self._session_scope = None
        self._session_settings = {}
        self._local_scope = None
        return conn

    def _live(self) -> Any:
        """The connection, made again if the last one was lost (a restarted server, a dropped link).

        The call that saw it go failed with a :class:`StoreUnavailableError` and committed
        nothing; the next call gets a new connection (call under the lock, outside a transaction).
        """
        if self.conn.closed:
            self.conn = self._connect()
        return self.conn

    # -- migrations ---------------------------------------------------------------------------

    def _migrate(self) -> None:
        """Apply the migrations this database lacks, in order, each in one transaction (see :mod:`.schema`)."""
        psycopg = self._psycopg
        conn = self.conn
        if self._up_to_date():
            return
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", [MIGRATION_LOCK])
                conn.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA_NAME}")
                conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                             "description TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
                applied = {r[0] for r in conn.execute("SELECT version FROM schema_migrations").fetchall()}
                newer = max(applied, default=0)
                if newer > SCHEMA_VERSION:
                    raise StoreError(f"the database {self.url} has schema version {newer}, newer than this "
                                     f"zep-memory's ({SCHEMA_VERSION}); upgrade zep-memory to open it")
                for version, description, statements in MIGRATIONS:
                    if version in applied:
                        continue
                    log.warning("migrating %s to schema version %d: %s", self.url, version, description)
                    with conn.transaction():
                        conn.execute(statements)
                        conn.execute("INSERT INTO schema_migrations(version, description) VALUES (%s, %s)",
                                     [version, description])
            from pgvector.psycopg import register_vector

            register_vector(conn)  # the extension exists now
        except psycopg.errors.InsufficientPrivilege as exc:
            raise StoreError(f"could not create zep-memory's tables in {self.url}: {_first_line(exc)}. The first "
                             "open needs a user that may create a schema, roles and (once per database) the pgvector "
                             "extension; an administrator can run CREATE EXTENSION vector and open it once") from None
        except psycopg.Error as exc:
            raise StoreError(f"could not migrate the PostgreSQL database {self.url}: {_first_line(exc)}") from None

    def _up_to_date(self) -> bool:
        """Whether the database already has every migration: then opening it needs no DDL, nor its privileges.

        Read as the store's role, so a user who does not own the tables (a member of the two
        roles) opens a database the owner migrated. Anything unclear (no such table yet, a
        version missing, no privilege) leaves it to :meth:`_migrate` to do or to explain.
        """
        psycopg = self._psycopg
        conn = self.conn
        try:
            with conn.transaction():
                if conn.execute(f"SELECT to_regclass('{SCHEMA_NAME}.schema_migrations')").fetchone()[0] is None:
                    return False
                role, tenant = scope_settings(STORE)
                conn.execute(SCOPE_SQL, [role, True, tenant, True])
                applied = {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
        except psycopg.Error:
            return False
        if max(applied, default=0) > SCHEMA_VERSION:
            return False  # refused, with its message, by _migrate
        if not {v for v, _, _ in MIGRATIONS} <= applied:
            return False
        from pgvector.psycopg import register_vector

        register_vector(conn)
        return True

    def schema_version(self) -> int:
        """The newest migration applied to this database."""
        return int(self._rows(STORE, "SELECT COALESCE(max(version), 0) FROM schema_migrations")[0][0])

    # -- transactions and statements ----------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic write: everything inside commits together or not at all (nested: a savepoint)."""
        with self._lock:
            idle = self.conn.closed or self.conn.info.transaction_status == self._psycopg.pq.TransactionStatus.IDLE
            conn = self._live() if idle else self.conn  # outside a transaction: a lost connection is made again
            outermost, committed = self._depth == 0, False
            self._depth += 1
            try:
                with conn.transaction():
                    yield
                committed = outermost
            except self._psycopg.Error as exc:
                raise self._failed("write", exc) from None
            finally:
                self._depth -= 1
                # a savepoint rolled back undoes the SET LOCALs made in it, and a transaction's end
                # all of them: what the next statement finds set is not known, it sets its own
                self._local_scope = None
                done = self._after_commit if outermost else []
                if outermost:
                    self._after_commit = []
                    self._locked = set()
        for call in done if committed else ():
            call()

    def lock_tenants(self, tenants: Iterable[Tenant]) -> None:
        """Inside a write that will name several tenants: take their locks now, in one order (by key).

        Two writers that each lock tenants as they first name them could each hold one the
        other waits for; taken sorted, first, they never do. Outside a write: nothing.
        """
        with self._lock:
            if not self._depth:
                return
            for tenant in sorted({key(t): t for t in tenants}.items()):
                with self._scoped(tenant[1]):
                    pass

    def claim_episode(self, tenant: Tenant, episode_id: str) -> bool:
        """Whether this session now extracts the episode: no other session (another process) does.

        A session advisory lock (:func:`episode_claim_key`), so the database decides, and the
        claim of a process that dies goes with its connection. Give it back with :meth:`release_episode`.
        """
        return bool(self._rows(STORE, "SELECT pg_try_advisory_lock(%s)", [episode_claim_key(tenant, episode_id)])[0][0])

    def release_episode(self, tenant: Tenant, episode_id: str) -> None:
        """Give back :meth:`claim_episode` (a connection made again since holds none: nothing to do then)."""
        with self._lock:
            if self.conn.closed:
                return
            self._rows(STORE, "SELECT pg_advisory_unlock(%s)", [episode_claim_key(tenant, episode_id)])

    def after_commit(self, call: Callable[[], None]) -> None:
        """Run ``call`` once the write under way commits (never if it rolls back); at once outside a write.

        For what must see the write committed, from another connection (the HNSW builder's count).
        """
        with self._lock:
            if self._depth:
                self._after_commit.append(call)
                return
        call()

    @contextmanager
    def _scoped(self, scope: Scope) -> Iterator[Any]:
        """A cursor whose statements run under ``scope``.

        Inside an open transaction (a write), the scope is set for the rest of that transaction
        only (``SET LOCAL``), unless the transaction's last statement at this savepoint level
        already set this very scope (a write of one tenant's rows: one round trip per statement,
        not two). A statement on its own (a read) runs in autocommit under the connection's
        session scope, set first whenever it is not already this one (one round trip per
        statement, not four: ``BEGIN``, the scope, the statement, ``COMMIT``).
        """
        role, tenant = scope_settings(scope)
        with self._lock:
            conn = self.conn
            try:
                if conn.info.transaction_status == self._psycopg.pq.TransactionStatus.IDLE or conn.closed:
                    conn = self._live()
                cur = conn.cursor(binary=True)  # binary results: a vector is read as bytes, not parsed from text
                if conn.info.transaction_status != self._psycopg.pq.TransactionStatus.IDLE:
                    lock = bool(self._depth) and scope is not STORE and tenant not in self._locked
                    if lock:  # a write's first statement of this tenant: it waits for the tenant's other writer
                        self._local_scope = None
                        cur.execute(SCOPE_SQL + ", pg_advisory_xact_lock(%s)",
                                    [role, True, tenant, True, tenant_lock_key(scope)])
                        self._locked.add(tenant)
                        self._local_scope = (role, tenant)
                    elif not self._depth or self._local_scope != (role, tenant):
                        self._local_scope = None  # unknown until the server said yes
                        cur.execute(SCOPE_SQL, [role, True, tenant, True])
                        self._local_scope = (role, tenant)
                elif self._session_scope != (role, tenant):
                    self._session_scope = None  # unknown until the server said yes
                    cur.execute(SCOPE_SQL, [role, False, tenant, False])
                    self._session_scope = (role, tenant)
                yield cur
            except self._psycopg.Error as exc:
                raise self._failed("statement", exc) from None

    def _failed(self, what: str, exc: Exception) -> StoreError:
        """The error for a failed statement or commit; a lost connection says the database is unavailable."""
        if isinstance(exc, self._psycopg.OperationalError) or self.conn.closed:
            return StoreUnavailableError(f"the PostgreSQL database {self.url} failed a {what}: {_first_line(exc)}. "
                                         "Nothing of this call was committed; retry once the server answers")
        return RecordStoreError(f"PostgreSQL {what} failed in {self.url}: {_first_line(exc)}")

    def _rows(self, scope: Scope, sql: str, params: Sequence[Any] | dict = ()) -> list[tuple]:
        with self._scoped(scope) as cur:
            cur.execute(sql, params)
            return cur.fetchall()

    def _rows_tuned(self, scope: Scope, settings: dict[str, str], sql: Any, params: Sequence[Any] = ()) -> list[tuple]:
        """Rows of one statement run with server settings (``hnsw.ef_search``…) in force.

        On its own, a statement finds them set for the session (set first when they are not
        already these, as its scope is); inside a transaction, for that transaction only.
        """
        with self._scoped(scope) as cur:
            local = self.conn.info.transaction_status != self._psycopg.pq.TransactionStatus.IDLE
            wanted = {k: v for k, v in settings.items() if local or self._session_settings.get(k) != v}
            if wanted:
                cur.execute("SELECT " + ", ".join(["set_config(%s, %s, %s)"] * len(wanted)),
                            [x for k, v in wanted.items() for x in (k, v, local)])
                if not local:
                    self._session_settings.update(wanted)
            cur.execute(sql, params)
            return cur.fetchall()

    def _exec(self, scope: Scope, sql: str, params: Sequence[Any] | dict = ()) -> int:
        """Run one statement; return how many rows it changed."""
        with self._scoped(scope) as cur:
            cur.execute(sql, params)
            return cur.rowcount

    def _many(self, scope: Scope, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        rows = list(rows)
        if rows:
            with self._scoped(scope) as cur:
                cur.executemany(sql, rows)

    def _rows_in(self, scope: Scope, sql: str, ids: Sequence[str], before: Sequence[Any] = ()) -> list[tuple]:
        """Run ``sql`` once per chunk of ``ids`` (its last ``%s`` the chunk, as an array for ``= ANY(%s)``)."""
        out: list[tuple] = []
        unique = list(dict.fromkeys(ids))
        for i in range(0, len(unique), _CHUNK):
            out += self._rows(scope, sql, [*before, unique[i:i + _CHUNK]])
        return out

    def _select(self, scope: Scope, sql: str, params: Sequence[Any] | dict = ()) -> list[tuple]:
        return self._rows(scope, POSTGRES.sql(sql), params)

    def _change(self, scope: Scope, sql: str, params: Sequence[Any] | dict = ()) -> int:
        return self._exec(scope, POSTGRES.sql(sql), params)

    def _change_many(self, scope: Scope, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self._many(scope, POSTGRES.sql(sql), rows)

    def _select_in(self, scope: Scope, sql: str, ids: Sequence[Any], before: Sequence[Any] = ()) -> list[tuple]:
        return self._rows_in(scope, POSTGRES.sql(sql), ids, before)

    # -- the end ------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection (committed work is the server's)."""
        with self._lock:
            self.conn.close()


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
