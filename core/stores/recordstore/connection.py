"""The record store's connection: opening (and migrating) ``zep.db``, transactions, reads, checkpoints."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlite_utils

from ...errors import RecordStoreError, StoreError, is_io_failure, store_error
from ...names import normalize_name
from ...tenant import Tenant, key
from .. import fts
from ..schema import SCHEMA, SCHEMA_VERSION
from ..sql.dialect import SQLITE, Scope, SqlBase

log = logging.getLogger("zep_core.stores.records")


_CHUNK = 500  # ids per ``IN (?, …)`` list
_MAX_STEMS = fts.MAX_STEMS  # query words (and terms counted per user) a store remembers


def _log_progress(done: int, users: int) -> None:
    """The lexical index's migration, told every 1,000 users (and at the end) where there are many."""
    if users >= 1000 and (done % 1000 == 0 or done == users):
        log.warning("migrating the lexical index to shared tables: %d of %d users", done, users)
#: With checkpoints in the background (:meth:`RecordStore.checkpoint_in_background`), the writer
#: checkpoints the write-ahead log itself only past this many pages (~64 MB): a backstop if the
#: checkpointing thread falls behind. SQLite's default is 1,000 pages, checkpointed inside a commit.
_WAL_BACKSTOP_PAGES = 16_000
#: ... and the log file is cut back to this size when it restarts after a checkpoint (SQLite
#: reuses the file and never shrinks it): about what SQLite's own checkpoints leave.
_WAL_KEEP_BYTES = 4 << 20
#: Indexes of older folders that keys led by ``user_id`` replaced (:data:`~zep_core.stores.schema.SCHEMA`).
_RETIRED_INDEXES = "DROP INDEX IF EXISTS messages_user; DROP INDEX IF EXISTS aliases_entity;"

#: Reads go through a memory map of the file (SQLite caps it at its build's maximum, 2 GiB here):
#: a query reads a user's ~500 vectors and their rows page by page, and each page read from the
#: operating system's cache costs a system call without it (a LongMemEval-S user's vectors: 1.27
#: → 0.84 ms). Writes still go through the file, so a full disk fails a write as before. The price
#: (SQLite's "mmap" page): a disk that fails a *read* stops the process with SIGBUS instead of
#: raising an error, as in any store that maps its file (LMDB); what was committed is in the file
#: and its log either way, and the next open recovers it.
_MMAP_BYTES = 1 << 31


class Connection(SqlBase):
    """One SQLite connection shared by threads under a lock: what every job of the record store goes through.

    A statement's scope (:data:`~zep_core.stores.sql.dialect.STORE` or a tenant) asks nothing
    of SQLite: one process holds the file, and every read names its user.
    """

    dialect = SQLITE

    def __init__(self, path: Path, *, busy_timeout_ms: int = 5000) -> None:
        try:
            conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None,
                                   timeout=busy_timeout_ms / 1000)
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            self.db = sqlite_utils.Database(conn, execute_plugins=False)
            self.db.enable_wal()
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute(f"PRAGMA mmap_size = {_MMAP_BYTES}")
            keyless = _lacks_column(conn, "facts", "object_key")  # a folder from before schema version 3
            if keyless:
                conn.execute("ALTER TABLE facts ADD COLUMN object_key TEXT")
            if _lacks_column(conn, "facts", "attribute"):  # a folder from before claims had an attribute
                conn.execute("ALTER TABLE facts ADD COLUMN attribute TEXT")
            conn.executescript(SCHEMA + fts.SCHEMA + _RETIRED_INDEXES)
            conn.executescript(fts.SCRATCH)  # the connection's own scratch tables (temp: nothing in the file)
        except sqlite3.Error as exc:
            raise store_error(f"could not open the record store {path}: {exc}", RecordStoreError) from exc
        self.path = path
        #: Set once a write failed for want of space (or by the file system): the disk that
        #: failed SQLite may have failed Chroma's files silently, so the next open checks them.
        self.needs_check = False
        #: Called when ``needs_check`` is set (:func:`zep_core.stores.folder.open_folder` records it in the lock file).
        self.on_failure: Callable[[], None] | None = None
        self._lock = threading.RLock()
        self._checkpointer: sqlite3.Connection | None = None  # opened by the first checkpoint()
        self._closing = False
        self._last_log = -1  # log pages at the last checkpoint(): unchanged means no commit since
        self._stems: dict[str, tuple[str, ...]] = {}  # a query word's FTS5 terms (cleared past _MAX_STEMS)
        #: Rows per term of a user's lexical index (``(term, with context)`` → rows), as counted; a
        #: user's entry goes whenever rows of theirs come or go, and all of them on a rollback.
        self._hits: dict[str, dict[tuple[str, bool], int]] = {}
        self._checkpoint_lock = threading.Lock()
        version = self.get_meta("schema_version")
        if version is not None and int(version) > SCHEMA_VERSION:
            raise StoreError(f"{path} has schema version {version}, newer than this zep-memory "
                             f"({SCHEMA_VERSION}); upgrade zep-memory to open it")
        if keyless:
            with self.transaction():
                self._fill_object_keys()
        if version is not None and int(version) < 6:  # 1 -> 2: the lexical index; 2 -> 3: its validity columns;
            with self.transaction():                   # 3 -> 4: a canonical fact indexed by its message's words;
                                                       # 4 -> 5: the state word; 5 -> 6: shared tables, not one per user
                self.rebuild_lexical(progress=_log_progress)
        if "extra" not in {r[1] for r in self._rows("PRAGMA table_info(session_messages)")}:  # 2 -> 3: turn data
            self._exec("ALTER TABLE session_messages ADD COLUMN extra TEXT")
        if version != str(SCHEMA_VERSION):
            self.set_meta("schema_version", str(SCHEMA_VERSION))

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic write: everything inside commits together or not at all.

        It takes SQLite's write lock when it begins (``BEGIN IMMEDIATE``; nested, a
        savepoint). A transaction begun for reading holds only a snapshot, and SQLite
        refuses at once ("database is locked", no waiting) to make it a writer if the log
        was reset since the snapshot, as the background checkpoint does to an idle log
        (:meth:`checkpoint`); holding the write lock, no reset can come in between.
        """
        with self._lock:
            conn = self.db.conn
            try:
                if conn.in_transaction:
                    with self.db.atomic():  # a savepoint inside the transaction already open
                        yield
                    return
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:  # SQLite may have rolled it back already
                        conn.execute("ROLLBACK")
                    raise
            except BaseException as exc:
                self._hits.clear()  # counts read inside may be of rows that are gone with it
                if isinstance(exc, sqlite3.Error):
                    raise self._failed(f"SQLite write failed in {self.path}: {exc}") from exc
                raise

    def lock_tenants(self, tenants: Iterable[Tenant]) -> None:
        """Nothing to do: a write holds SQLite's write lock for the whole file (``BEGIN IMMEDIATE``)."""

    def claim_episode(self, tenant: Tenant, episode_id: str) -> bool:
        """Always: one process holds a data folder (:class:`~zep_core.stores.lock.DataDirLock`).

        Its threads take turns in :class:`~zep_core.ingest.Ingestor`.
        """
        key(tenant)  # a checked tenant, as everywhere
        return True

    def release_episode(self, tenant: Tenant, episode_id: str) -> None:
        """Nothing to give back (see :meth:`claim_episode`)."""
        key(tenant)

    def _failed(self, message: str) -> StoreError:
        """The error for a failed write; one that says the disk failed marks the folder for a check."""
        error = store_error(message, RecordStoreError)
        if is_io_failure(message):
            self.needs_check = True
            if self.on_failure is not None:
                self.on_failure()
        return error

    def _rows(self, sql: str, params: Sequence[Any] | dict = ()) -> list[tuple]:
        with self._lock:
            try:
                return self.db.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise RecordStoreError(f"SQLite read failed in {self.path}: {exc}") from exc

    def _exec(self, sql: str, params: Sequence[Any] | dict = ()) -> int:
        """Run one statement; return how many rows it changed."""
        with self._lock:
            try:
                return self.db.execute(sql, params).rowcount
            except sqlite3.Error as exc:
                raise self._failed(f"SQLite write failed in {self.path}: {exc}") from exc

    def _many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with self._lock:
            try:
                self.db.conn.executemany(sql, rows)
            except sqlite3.Error as exc:
                raise self._failed(f"SQLite write failed in {self.path}: {exc}") from exc

    def _rows_in(self, sql: str, ids: Sequence[str], before: Sequence[Any] = ()) -> list[tuple]:
        """Run ``sql`` once per chunk of ``ids``, its ``{ids}`` standing for the chunk's ``?`` list."""
        out: list[tuple] = []
        unique = list(dict.fromkeys(ids))
        for i in range(0, len(unique), _CHUNK):
            chunk = unique[i:i + _CHUNK]
            out += self._rows(sql.replace("{ids}", ",".join("?" * len(chunk))), [*before, *chunk])
        return out

    def _select(self, scope: Scope, sql: str, params: Sequence[Any] | dict = ()) -> list[tuple]:
        return self._rows(sql, params)

    def _change(self, scope: Scope, sql: str, params: Sequence[Any] | dict = ()) -> int:
        return self._exec(sql, params)

    def _change_many(self, scope: Scope, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self._many(sql, rows)

    def _select_in(self, scope: Scope, sql: str, ids: Sequence[Any], before: Sequence[Any] = ()) -> list[tuple]:
        return self._rows_in(sql, ids, before)

    def _fill_object_keys(self, batch: int = 5000) -> None:
        """Set ``object_key`` of the facts that have none (a migrated folder), a batch at a time."""
        while True:
            rows = self._rows("SELECT rowid, object FROM facts WHERE object_key IS NULL LIMIT ?", [batch])
            if not rows:
                return
            self._many("UPDATE facts SET object_key = ? WHERE rowid = ?", [(normalize_name(o), r) for r, o in rows])

    def close(self) -> None:
        """Close the connections (the writer's last: its close checkpoints the log and removes it)."""
        with self._checkpoint_lock:
            self._closing = True
            if self._checkpointer is not None:
                self._checkpointer.close()
                self._checkpointer = None
        with self._lock:
            self.db.close()

    def checkpoint_in_background(self) -> None:
        """Leave the write-ahead log's checkpoints to :meth:`checkpoint`, called from another thread.

        SQLite checkpoints inside the commit that passes 1,000 pages of log: the writer
        then copies pages into the database file and syncs it. At 100k facts that was
        ~12 % of a bulk ingest (bench/findings.md). Afterwards the writer checkpoints
        only past :data:`_WAL_BACKSTOP_PAGES`, should :meth:`checkpoint` stop being called, and
        a log grown meanwhile is cut back to :data:`_WAL_KEEP_BYTES` when it restarts.
        """
        self._exec(f"PRAGMA wal_autocheckpoint = {_WAL_BACKSTOP_PAGES}")
        self._exec(f"PRAGMA journal_size_limit = {_WAL_KEEP_BYTES}")

    def checkpoint(self) -> int:
        """Copy the committed log into the database file, beside the writer; return the log pages left uncopied.

        A ``PASSIVE`` checkpoint on a connection of its own: it never waits for the writer
        or a reader, and it holds none of this store's locks, so commits go on meanwhile.
        What it cannot copy yet (pages the writer is adding) is copied by the next call.
        Once nothing has been committed since the call before and the log is all copied,
        a log file grown past :data:`_WAL_KEEP_BYTES` is emptied (``TRUNCATE``; if a
        writer or reader is at work it is left for a later call, never waited for): an
        idle memory does not keep a bulk load's log on disk.
        """
        with self._checkpoint_lock:
            if self._closing:  # a late call from a thread being stopped: the writer's close checkpoints
                return 0
            try:
                if self._checkpointer is None:
                    self._checkpointer = sqlite3.connect(str(self.path), check_same_thread=False,
                                                         isolation_level=None, timeout=0)
                    self._checkpointer.execute("PRAGMA busy_timeout = 0")
                _, log_pages, copied = self._checkpointer.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                idle, self._last_log = log_pages == self._last_log, log_pages
                if idle and 0 < log_pages == copied and (
                        log_pages * self._checkpointer.execute("PRAGMA page_size").fetchone()[0] > _WAL_KEEP_BYTES):
                    self._checkpointer.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                    self._last_log = 0
                return max(int(log_pages) - int(copied), 0)  # -1, -1 when the database is not in WAL mode
            except sqlite3.Error as exc:
                raise self._failed(f"SQLite checkpoint failed in {self.path}: {exc}") from exc



def _lacks_column(conn: sqlite3.Connection, table: str, column: str) -> bool:
    """Whether ``table`` exists without ``column`` (a folder an older version made)."""
    columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
    return bool(columns) and column not in columns
