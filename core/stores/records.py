"""SQLite, through sqlite-utils: the system of record.

Episodes with their messages, facts, entities, aliases, embeddings (float32 blobs),
the chat-session buffer used by the adapters, the lexical (FTS5) index over each user's
facts (:mod:`zep_core.stores.fts`, written with them), and an **outbox** of pending index
writes all live in ``zep.db``. A write commits records and outbox rows in one
transaction; the derived indexes are brought in line afterwards (and on the next
open if the process died in between).

One connection, shared by threads under a lock (``check_same_thread=False``), in WAL
mode with a busy timeout so a second process waits instead of failing.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import sqlite_utils

from ..errors import StoreError, is_io_failure, store_error
from ..models import Entity, Episode, Fact, Message
from ..temporal import STATEMENT, normalize_name
from ..tenant import Tenant, key

__all__ = ["RecordStore", "StoredFact", "iso", "SCHEMA_VERSION"]

from . import fts
from .schema import (
    FACT_COLUMNS,
    SCHEMA,
    SCHEMA_VERSION,
    StoredFact,
    blob,
    entity_from_row,
    fact_from_row,
    iso,
    parse_time,
)

_CHUNK = 500  # ids per ``IN (?, …)`` list
_MAX_STEMS = 50_000  # query words whose terms a store remembers
log = logging.getLogger(__name__)


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
#: Fact columns, then the rowid: rows sorted by :func:`_storage_order` come in one order whatever the plan.
_ORDERED_FACTS = f"{FACT_COLUMNS}, rowid"
#: A user's facts by the rowids their lexical rows hold (``?`` = user id, then ``{ids}``): each
#: fact is reached from the user's own ``lexical_docs`` row, and must be that user's.
_BY_LEXICAL_ROW = ("SELECT {columns} FROM facts WHERE rowid IN (SELECT doc FROM lexical_docs WHERE user_id = ?1 "
                   "AND doc IN ({{ids}})) AND +user_id = ?1")  # +: by rowid, not a walk of the user's facts


#: Indexes of older folders that keys led by ``user_id`` replaced (:data:`~zep_core.stores.schema.SCHEMA`).
_RETIRED_INDEXES = "DROP INDEX IF EXISTS messages_user; DROP INDEX IF EXISTS aliases_entity;"


class RecordStore:
    """The SQLite system of record.

    A method that reads or changes one user's rows takes that user as a
    :class:`~zep_core.tenant.Tenant` (a user id checked at the API boundary; anything else is
    a ``TypeError``) and seeks keys led by it. The methods over every user (the outbox, the
    id namespace, checks and rebuilds) say so; records written carry their own checked
    ``user_id``.
    """

    def __init__(self, path: Path, *, busy_timeout_ms: int = 5000) -> None:
        try:
            conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None,
                                   timeout=busy_timeout_ms / 1000)
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            self.db = sqlite_utils.Database(conn, execute_plugins=False)
            self.db.enable_wal()
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            keyless = _lacks_column(conn, "facts", "object_key")  # a folder from before schema version 3
            if keyless:
                conn.execute("ALTER TABLE facts ADD COLUMN object_key TEXT")
            conn.executescript(SCHEMA + fts.SCHEMA + _RETIRED_INDEXES)
            conn.executescript(fts.SCRATCH)  # the connection's own scratch tables (temp: nothing in the file)
        except sqlite3.Error as exc:
            raise store_error(f"could not open the record store {path}: {exc}") from exc
        self.path = path
        #: Set once a write failed for want of space (or by the file system): the disk that
        #: failed SQLite may have failed Chroma's files silently, so the next open checks them.
        self.needs_check = False
        #: Called when ``needs_check`` is set (:func:`zep_core.stores.open_stores` records it in the lock file).
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
        if "extra" not in {c.name for c in self.db["session_messages"].columns}:  # 2 -> 3: adapters' turn data
            conn.execute("ALTER TABLE session_messages ADD COLUMN extra TEXT")
        if version != str(SCHEMA_VERSION):
            self.set_meta("schema_version", str(SCHEMA_VERSION))

    # -- plumbing ---------------------------------------------------------------

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

    def _failed(self, message: str) -> StoreError:
        """The error for a failed write; one that says the disk failed marks the folder for a check."""
        error = store_error(message)
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
                raise StoreError(f"SQLite read failed in {self.path}: {exc}") from exc

    def _exec(self, sql: str, params: Sequence[Any] | dict = ()) -> None:
        with self._lock:
            try:
                self.db.execute(sql, params)
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

    def get_meta(self, key: str) -> str | None:
        """Read one metadata value (schema version, embedder identity…)."""
        rows = self._rows("SELECT value FROM meta WHERE key = ?", [key])
        return rows[0][0] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        """Write one metadata value."""
        self._exec("INSERT INTO meta(key, value) VALUES (?, ?) "
                   "ON CONFLICT(key) DO UPDATE SET value = excluded.value", [key, value])

    # -- users ------------------------------------------------------------------

    def has_user(self, tenant: Tenant) -> bool:
        """Whether anything was ever stored for the tenant."""
        user_id = key(tenant)
        return bool(self._rows(
            "SELECT 1 FROM episodes WHERE user_id = ? UNION ALL "
            "SELECT 1 FROM session_messages WHERE user_id = ? LIMIT 1", [user_id, user_id]))

    def has_records(self, tenant: Tenant) -> bool:
        """Whether any row of the tenant is stored: episode, chat turn, fact, entity or alias (imports check it)."""
        return bool(self._rows(" UNION ALL ".join(
            f"SELECT 1 FROM {t} WHERE user_id = ?" for t in ("episodes", "session_messages", "facts", "entities",
                                                             "aliases")) + " LIMIT 1", [key(tenant)] * 5))

    def users(self) -> list[Tenant]:
        """Every user with stored episodes or chat messages (every user's: for maintenance)."""
        rows = self._rows("SELECT user_id FROM episodes UNION SELECT user_id FROM session_messages")
        return sorted(Tenant.stored(r[0]) for r in rows)

    def delete_user(self, tenant: Tenant) -> None:
        """Delete every row of a user, and their lexical index (call inside :meth:`transaction`)."""
        user_id = key(tenant)
        for table in ("messages", "episodes", "facts", "entities", "aliases", "session_messages"):
            self._exec(f"DELETE FROM {table} WHERE user_id = ?", [user_id])
        for table in ("lexical_postings", "lexical_docs", "lexical_stats"):
            self._exec(f"DELETE FROM {table} WHERE user_id = ?", [user_id])
        self._forget_hits(user_id)

    # -- vector tiers (zep_core.stores.tiered) ----------------------------------------

    def current_vectors(self, tenant: Tenant) -> list[tuple[str, bytes]]:
        """``(id, float32 blob)`` of every current fact of one user, in id order (one read by ``facts_current``)."""
        user_id = key(tenant)
        return self._rows("SELECT f.id, f.embedding FROM facts f INDEXED BY facts_current WHERE f.user_id = ? "
                          "AND f.valid_until IS NULL AND f.superseded_by IS NULL ORDER BY f.id", [user_id])

    def current_fact_count(self, tenant: Tenant) -> int:
        """How many current facts one user has (counted in ``facts_current``, no fact row read)."""
        return int(self._rows("SELECT count(*) FROM facts INDEXED BY facts_current WHERE user_id = ? "
                              "AND valid_until IS NULL AND superseded_by IS NULL", [key(tenant)])[0][0])

    def vector_tiers(self) -> dict[Tenant, str]:
        """Every user whose vectors have (or are getting) a Chroma collection: ``{user: 'building' | 'ready'}``."""
        return {Tenant.stored(u): state for u, state in self._rows("SELECT user_id, state FROM vector_tiers")}

    def set_vector_tier(self, tenant: Tenant, state: str) -> None:
        """Record that a user's collection is being built (``building``) or complete (``ready``)."""
        self._exec("INSERT INTO vector_tiers(user_id, state) VALUES (?, ?) "
                   "ON CONFLICT(user_id) DO UPDATE SET state = excluded.state", [key(tenant), state])

    def clear_vector_tier(self, tenant: Tenant | None = None) -> None:
        """Forget one user's collection mark, or every user's (None)."""
        if tenant is None:
            self._exec("DELETE FROM vector_tiers")
        else:
            self._exec("DELETE FROM vector_tiers WHERE user_id = ?", [key(tenant)])

    # -- episodes ---------------------------------------------------------------

    def episode_owner(self, episode_id: str) -> Tenant | None:
        """The user an episode id belongs to, or None if unknown.

        The id namespace (episode ids are unique across users): a client's episode id is
        checked here before it is used, and only the owner is read.
        """
        rows = self._rows("SELECT user_id FROM episodes WHERE id = ?", [episode_id])
        return Tenant.stored(rows[0][0]) if rows else None

    def insert_episode(self, episode: Episode, message_ids: Sequence[str]) -> None:
        """Store an episode and every message (call inside :meth:`transaction`)."""
        self._exec(
            "INSERT INTO episodes(id, user_id, session_id, summary, created_at, status) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [episode.id, episode.user_id, episode.session_id, episode.summary,
             iso(episode.created_at), episode.status])
        self._many(
            "INSERT INTO messages(episode_id, seq, user_id, message_id, role, name, content, timestamp) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(episode.id, i, episode.user_id, mid, m.role, m.name, m.content, iso(m.timestamp))
             for i, (m, mid) in enumerate(zip(episode.messages, message_ids))])

    def set_episode_status(self, tenant: Tenant, episode_id: str, status: str, *, error: str | None = None,
                           summary: str | None = None, usage: dict | None = None) -> None:
        """Record the outcome of an extraction attempt."""
        self._exec(
            "UPDATE episodes INDEXED BY episodes_key SET status = ?, error = ?, summary = COALESCE(?, summary), "
            "usage = COALESCE(?, usage), attempts = attempts + 1 WHERE user_id = ? AND id = ?",
            [status, error, summary, json.dumps(usage) if usage else None, key(tenant), episode_id])

    def get_episode(self, tenant: Tenant, episode_id: str) -> Episode | None:
        """Load one of the tenant's episodes with its messages (caller ids restored), or None."""
        user_id = key(tenant)
        rows = self._rows("SELECT id, user_id, session_id, summary, created_at, status, error "
                          "FROM episodes INDEXED BY episodes_key WHERE user_id = ? AND id = ?", [user_id, episode_id])
        if not rows:
            return None
        r = rows[0]
        msgs = self._rows("SELECT message_id, role, name, content, timestamp FROM messages INDEXED BY messages_key "
                          "WHERE user_id = ? AND episode_id = ? ORDER BY seq", [user_id, episode_id])
        messages = tuple(Message(content=m[3], role=m[1], name=m[2], id=m[0], timestamp=parse_time(m[4]))
                         for m in msgs)
        return Episode(id=r[0], user_id=Tenant.stored(r[1]), session_id=r[2], summary=r[3],
                       created_at=parse_time(r[4]), status=r[5], error=r[6], messages=messages)

    def episode_ids(self, tenant: Tenant | None = None, *, status: str | None = None,
                    limit: int = 1_000_000) -> list[str]:
        """Episode ids, oldest first: of the tenant, or of every user (None); of one status if given."""
        clauses, params = [], []
        if tenant is not None:
            clauses.append("user_id = ?")
            params.append(key(tenant))
        if status is not None:
            clauses.append("status = ?")
            params.append(status)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        by = "INDEXED BY episodes_key " if tenant is not None else ""  # one user's: by their key
        return [r[0] for r in self._rows(
            f"SELECT id FROM episodes {by}{where} ORDER BY created_at, rowid LIMIT ?", [*params, limit])]

    def episodes_with_status(self, status: str, *, limit: int = 1_000_000) -> list[tuple[str, Tenant]]:
        """``(episode_id, user)`` of every user's episodes of one status, oldest first (for maintenance)."""
        return [(r[0], Tenant.stored(r[1])) for r in self._rows(
            "SELECT id, user_id FROM episodes WHERE status = ? ORDER BY created_at, rowid LIMIT ?", [status, limit])]

    def episode_attempts(self, tenant: Tenant, episode_id: str) -> int:
        """How many extraction attempts one of the tenant's episodes has had (0 when unknown)."""
        rows = self._rows("SELECT attempts FROM episodes INDEXED BY episodes_key WHERE user_id = ? AND id = ?",
                          [key(tenant), episode_id])
        return int(rows[0][0]) if rows else 0

    def mark_episode_failed(self, tenant: Tenant, episode_id: str, reason: str) -> None:
        """Give up on a pending episode: status ``failed`` with the reason; its messages stay."""
        self._exec("UPDATE episodes INDEXED BY episodes_key SET status = 'failed', error = ? "
                   "WHERE user_id = ? AND id = ? AND status = 'pending'", [reason, key(tenant), episode_id])

    def failed_episodes(self, tenant: Tenant | None = None, *, limit: int = 1_000_000,
                        ) -> list[tuple[str, Tenant, str | None, int]]:
        """``(episode_id, user, error, attempts)`` of the failed episodes, oldest first (of every user: None)."""
        where, params = ("AND user_id = ?", [key(tenant)]) if tenant is not None else ("", [])
        by = "INDEXED BY episodes_key " if tenant is not None else ""  # one user's: by their key
        rows = self._rows(f"SELECT id, user_id, error, attempts FROM episodes {by}WHERE status = 'failed' {where} "
                          "ORDER BY created_at, rowid LIMIT ?", [*params, limit])
        return [(r[0], Tenant.stored(r[1]), r[2], int(r[3])) for r in rows]

    # -- facts ------------------------------------------------------------------

    def write_facts(self, facts: Iterable[StoredFact]) -> None:
        """Insert or replace fact rows and index them lexically (call inside :meth:`transaction`).

        A fact's episode (with its messages) is written first: the lexical index reads the
        message before the fact's source turn.
        """
        facts = list(facts)
        if not facts:
            return
        by_user: dict[Tenant, list[str]] = {}
        for s in facts:
            by_user.setdefault(Tenant.stored(s.fact.user_id), []).append(s.fact.id)
        for user, ids in by_user.items():
            self._unindex(user, ids)
        self._many(
            f"INSERT OR REPLACE INTO facts({FACT_COLUMNS}, embedding, object_key) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(f.id, f.user_id, f.episode_id, f.subject, f.predicate, f.object, f.content,
              f.confidence, iso(f.valid_from), iso(f.valid_until), f.superseded_by,
              iso(f.created_at), iso(f.expired_at), json.dumps(list(f.source_message_ids)),
              s.subject_id, s.object_id, blob(s.embedding), normalize_name(f.object))
             for s in facts for f in [s.fact]])
        for user, ids in by_user.items():
            self._index_lexical(user, ids)

    def _forget_hits(self, user: str | None = None) -> None:
        """Drop the counted rows per term of a user (None: of everyone): their rows changed."""
        if user is None:
            self._hits.clear()
        else:
            self._hits.pop(user, None)

    def _index_lexical(self, user: str, ids: Sequence[str] | None) -> None:
        """Add the user's facts with these ids (None: all of them) to the lexical tables (inside a transaction).

        Their texts go through the connection's scratch FTS5 table, which tokenizes them as
        the index always has; their terms, counts and lengths are written under the user's
        key, and the user's totals (rows, tokens) grow by theirs.
        """
        self._clear_scratch()  # a write cut short inside a savepoint may have left rows
        self._forget_hits(user)
        unique = [None] if ids is None else list(dict.fromkeys(ids))
        chunks = [None] if ids is None else [unique[i:i + _CHUNK] for i in range(0, len(unique), _CHUNK)]
        for chunk in chunks:  # a write: a full disk marks the folder, as any write does
            self._exec(fts.scratch_sql(chunk and ",".join("?" * len(chunk))), [user, *(chunk or ())])
        self._exec(fts.COUNT_SQL)
        for chunk in chunks:
            self._exec(fts.docs_sql(chunk and ",".join("?" * len(chunk))), [user, *(chunk or ())])
        self._exec(fts.POSTINGS_SQL, [user])
        self._exec("INSERT INTO lexical_stats(user_id, docs, tokens) SELECT ?1, count(*), coalesce(sum(ld.length), 0) "
                   "FROM lexical_docs ld WHERE ld.user_id = ?1 AND ld.doc IN (SELECT rowid FROM temp.lexical_scratch) "
                   "ON CONFLICT(user_id) DO UPDATE SET docs = docs + excluded.docs, tokens = tokens + excluded.tokens",
                   [user])
        self._clear_scratch()

    def _clear_scratch(self) -> None:
        for statement in fts.CLEAR_SQL:
            self._exec(statement)

    def _unindex(self, user: Tenant, ids: Sequence[str]) -> None:
        """Take stored facts of a user out of their lexical index (before they are replaced)."""
        rowids = [r[0] for r in self._rows_in("SELECT rowid FROM facts INDEXED BY facts_key WHERE user_id = ? "
                                              "AND id IN ({ids})", ids, [user])]
        docs = self._lexical_docs(user, rowids) if rowids else {}
        if docs:
            self._forget_hits(user)
            self._many("DELETE FROM lexical_postings WHERE user_id = ? AND term = ? AND live = ? AND doc = ?",
                       [(user, term, live, doc) for doc, (live, _, _, terms, _) in docs.items() for term in terms])
            self._many("DELETE FROM lexical_docs WHERE user_id = ? AND doc = ?", [(user, doc) for doc in docs])
            self._exec("UPDATE lexical_stats SET docs = docs - ?, tokens = tokens - ? WHERE user_id = ?",
                       [len(docs), sum(d[4] for d in docs.values()), user])

    def _lexical_docs(self, user: str, rowids: Sequence[int]) -> dict[int, tuple[int, str | None, str | None,
                                                                             list[str], int]]:
        """The lexical rows of a user's facts: ``{doc: (live, valid_from, valid_until, terms, length)}``."""
        rows = self._rows_in("SELECT doc, live, valid_from, valid_until, terms, length FROM lexical_docs "
                             "WHERE user_id = ? AND doc IN ({ids})", rowids, [user])
        return {r[0]: (r[1], r[2], r[3], r[4].split(" ") if r[4] else [], r[5]) for r in rows}

    def update_facts(self, facts: Iterable[Fact]) -> None:
        """Rewrite the mutable columns of stored facts (supersession, reinforcement).

        The validity their lexical rows keep follows in the same transaction.
        """
        facts = list(facts)
        if not facts:
            return
        self._many(
            "UPDATE facts INDEXED BY facts_key SET confidence = ?, valid_from = ?, valid_until = ?, "
            "superseded_by = ?, expired_at = ?, source_message_ids = ? WHERE user_id = ? AND id = ?",
            [(f.confidence, iso(f.valid_from), iso(f.valid_until), f.superseded_by,
              iso(f.expired_at), json.dumps(list(f.source_message_ids)), f.user_id, f.id)
             for f in facts])
        by_user: dict[str, dict[int, tuple[int, str | None, str | None]]] = {}
        for user in dict.fromkeys(f.user_id for f in facts):
            mine = [f for f in facts if f.user_id == user]
            rowids = dict(self._rows_in("SELECT id, rowid FROM facts INDEXED BY facts_key WHERE user_id = ? "
                                        "AND id IN ({ids})", [f.id for f in mine], [user]))
            for f in mine:
                if f.id in rowids:
                    by_user.setdefault(user, {})[rowids[f.id]] = (int(f.is_current), iso(f.valid_from),
                                                                  iso(f.valid_until))
        for user, wanted in by_user.items():  # only rows whose validity changed (a reinforced fact's did not)
            changed = {doc: (old, wanted[doc]) for doc, old in self._lexical_docs(user, list(wanted)).items()
                       if old[:3] != wanted[doc]}
            self._many("UPDATE lexical_docs SET live = ?, valid_from = ?, valid_until = ? "
                       "WHERE user_id = ? AND doc = ?",
                       [(*new, user, doc) for doc, (_, new) in changed.items()])
            self._many("UPDATE lexical_postings SET live = ? "
                       "WHERE user_id = ? AND term = ? AND live = ? AND doc = ?",
                       [(new[0], user, term, old[0], doc) for doc, (old, new) in changed.items() if old[0] != new[0]
                        for term in old[3]])

    def get_facts(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, Fact]:
        """Facts by id, for one user only."""
        rows = self._rows_in(f"SELECT {FACT_COLUMNS} FROM facts INDEXED BY facts_key WHERE user_id = ? "
                             "AND id IN ({ids})", ids, [key(tenant)])
        return {row[0]: fact_from_row(row) for row in rows}

    def stored_facts(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, StoredFact]:
        """Facts of one user by id, with entity ids and vectors (what the outbox writes to the indexes)."""
        rows = self._rows_in(f"SELECT {FACT_COLUMNS}, embedding FROM facts INDEXED BY facts_key WHERE user_id = ? "
                             "AND id IN ({ids})", ids, [key(tenant)])
        return {row[0]: StoredFact(fact_from_row(row), row[14], row[15], np.frombuffer(row[16], dtype=np.float32))
                for row in rows}

    def iter_fact_ids(self, tenant: Tenant, batch: int = 2000) -> Iterator[list[str]]:
        """Every fact id of one user, in batches (for rebuilds, checks and exports)."""
        user_id, last = key(tenant), ""
        while True:
            rows = self._rows("SELECT id FROM facts INDEXED BY facts_key WHERE user_id = ? AND id > ? "
                              "ORDER BY id LIMIT ?", [user_id, last, batch])
            if not rows:
                return
            yield [r[0] for r in rows]
            last = rows[-1][0]

    def fact_vectors(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors of some facts of one user."""
        rows = self._rows_in("SELECT id, embedding FROM facts INDEXED BY facts_key WHERE user_id = ? "
                             "AND id IN ({ids})", ids, [key(tenant)])
        return {fid: np.frombuffer(blob, dtype=np.float32) for fid, blob in rows}

    def ranking_rows(self, tenant: Tenant, ids: Sequence[str] = (), *, rowids: Sequence[int] = ()) -> list[tuple]:
        """Some facts of one user, by id or by rowid, as plain values: what ranking needs, and the fact itself.

        Rows are the :data:`~zep_core.stores.schema.FACT_COLUMNS`, then the rowid, then the
        vector (a read-only float32 array over the stored blob); times are the stored ISO
        strings (their order is time order), so validity is compared without building a
        record, and :func:`~zep_core.stores.schema.fact_from_row` builds only the facts
        that make the cut. Each fact is found by its key: ``(user_id, id)``, or by rowid
        through the user's own lexical rows (``rowids`` are what :meth:`lexical_ranking` gave).
        """
        user_id = key(tenant)
        columns = f"{FACT_COLUMNS}, rowid, embedding"
        rows = self._rows_in(f"SELECT {columns} FROM facts INDEXED BY facts_key WHERE user_id = ? AND id IN ({{ids}})",
                             ids, [user_id]) if ids else []
        if rowids:
            seen = {r[16] for r in rows}
            rows += self._rows_in(_BY_LEXICAL_ROW.format(columns=columns), [r for r in rowids if r not in seen],
                                  [user_id])
        return [(*r[:17], np.frombuffer(r[17], dtype=np.float32)) for r in rows]

    def neighbours(self, tenant: Tenant, entity_ids: Sequence[str], *, as_of: str | None = None,
                   limit: int = 200) -> set[str]:
        """Entities one hop from ``entity_ids`` over the user's current (or as-of) facts.

        The adjacency the graph index holds (an edge per fact with an object entity),
        read from the record store's own indexes: one indexed lookup instead of a query
        to the graph process, and never behind the last write. Current edges come from
        the partial indexes ``facts_out`` / ``facts_in`` alone (no fact row is read: the
        asker of a first-person question may have a thousand facts); as-of edges from
        ``(user_id, subject_id)`` and ``(user_id, object_id)``.
        """
        user_id = key(tenant)
        if not entity_ids:
            return set()
        marks = ",".join("?" * len(entity_ids))
        if as_of is None:  # the current edges, both ways, from the partial indexes alone
            when, times = "valid_until IS NULL AND superseded_by IS NULL AND object_id IS NOT NULL", []
            out, back = "INDEXED BY facts_out", "INDEXED BY facts_in"
        else:
            when, times = "valid_from <= ? AND (valid_until IS NULL OR valid_until > ?)", [as_of, as_of]
            out = back = ""
        sql = (f"SELECT object_id FROM facts {out} WHERE user_id = ? AND subject_id IN ({marks}) "
               f"AND object_id IS NOT NULL AND object_id NOT IN ({marks}) AND {when} "
               f"UNION SELECT subject_id FROM facts {back} WHERE user_id = ? AND object_id IN ({marks}) "
               f"AND subject_id NOT IN ({marks}) AND {when} LIMIT ?")
        ids = list(entity_ids)
        rows = self._rows(sql, [user_id, *ids, *ids, *times, user_id, *ids, *ids, *times, limit])
        return {r[0] for r in rows}

    def current_facts_about(self, tenant: Tenant, entity_ids: Sequence[str], *, limit: int = 10_000) -> list[Fact]:
        """Current facts whose subject is one of ``entity_ids``."""
        user_id = key(tenant)
        if not entity_ids:
            return []
        marks = ",".join("?" * len(entity_ids))
        rows = self._rows(
            f"SELECT {FACT_COLUMNS} FROM facts WHERE user_id = ? AND subject_id IN ({marks}) "
            "AND valid_until IS NULL AND superseded_by IS NULL LIMIT ?", [user_id, *entity_ids, limit])
        return [fact_from_row(r) for r in rows]

    def rule_candidates(self, tenant: Tenant, subject_ids: Sequence[str], *, rivals: Sequence[str],
                        restated: Sequence[tuple[str, str]], ids: Sequence[str] = ()) -> list[Fact]:
        """The current facts of these subjects a proposed fact can reinforce, end or supersede.

        That is every current fact with one of the ``rivals`` predicates (the proposals'
        single-valued ones: a new value supersedes any old one), the facts said again
        (``restated``: ``(predicate, object)`` pairs, matched by predicate and ``object_key``
        as the rules compare them: "I live in London!" is "i live in london" said again, and
        "I no longer like jazz" ends "likes jazz") and ``ids`` (facts an extractor flagged as
        contradicted). Nothing else can be touched: a fact of a predicate that holds many
        values conflicts with no other value. So a speaker's hundreds of other facts stay
        unread, and ingestion does not slow down as a user's memory grows: the read seeks
        ``facts_rule_keys`` (subject, predicate and object key of the current facts) and the
        flagged ids, nothing else. The quotes that retire with a retired fact come from
        :meth:`facts_from_messages`.
        """
        user_id = key(tenant)
        if not subject_ids:
            return []
        wanted = sorted({p.casefold() for p in rivals} - {STATEMENT})  # compared as the rules compare them
        keys: dict[str, set[str]] = {}
        for predicate, obj in restated:
            if predicate.casefold() not in wanted:
                keys.setdefault(predicate.casefold(), set()).add(normalize_name(obj))
        marks = ",".join("?" * len(subject_ids))
        where = f"user_id = ? AND subject_id IN ({marks}) AND valid_until IS NULL AND superseded_by IS NULL"
        head = f"SELECT {_ORDERED_FACTS} FROM facts INDEXED BY facts_rule_keys WHERE {where}"
        parts: list[tuple[str, list[Any]]] = []
        if wanted:
            parts.append((f"{head} AND lower(predicate) IN ({','.join('?' * len(wanted))})",
                          [user_id, *subject_ids, *wanted]))
        for predicate, objects in sorted(keys.items()):
            # lower() as the index has it; for statements the rules' own test is the exact predicate.
            # The unary + keeps SQLite from propagating the constant into lower(predicate) = ?, which
            # then no longer matches the index: it walked every current fact of the speaker.
            exact = " AND +predicate = 'statement'" if predicate == STATEMENT else ""
            parts.append((f"{head} AND lower(predicate) = ?{exact} AND object_key IN ({','.join('?' * len(objects))})",
                          [user_id, *subject_ids, predicate, *sorted(objects)]))
        if ids:
            parts.append((f"SELECT {_ORDERED_FACTS} FROM facts INDEXED BY facts_key WHERE user_id = ? "
                          f"AND id IN ({','.join('?' * len(ids))}) AND +subject_id IN ({marks}) "
                          "AND valid_until IS NULL AND superseded_by IS NULL", [user_id, *ids, *subject_ids]))
        if not parts:
            return []
        rows = self._rows(" UNION ALL ".join(q for q, _ in parts), [p for _, ps in parts for p in ps])
        return [fact_from_row(r) for r in sorted({r[0]: r for r in rows}.values(), key=_storage_order)]

    def told_at(self, tenant: Tenant, facts: Iterable[Fact]) -> dict[str, datetime]:
        """When each fact's first source message was said: its timestamp, else its episode's time.

        The update rules compare it with a fact's ``valid_from``: a present-tense
        statement ("I live in Paris") is dated when it was told.
        """
        user_id = key(tenant)
        wanted = {(f.episode_id, f.source_message_ids[0]): f.id for f in facts
                  if f.episode_id and f.source_message_ids}
        if not wanted:
            return {}
        episodes = sorted({e for e, _ in wanted})
        rows = self._rows(  # by episode under the user (its key), not all the user's messages
            "SELECT m.episode_id, m.message_id, coalesce(m.timestamp, e.created_at) FROM messages m "
            "INDEXED BY messages_key JOIN episodes e INDEXED BY episodes_key ON e.user_id = m.user_id "
            f"AND e.id = m.episode_id WHERE m.user_id = ? AND m.episode_id IN ({','.join('?' * len(episodes))})",
            [user_id, *episodes])
        out: dict[str, datetime] = {}
        for episode_id, message_id, when in rows:
            fid = wanted.get((episode_id, message_id))
            if fid is not None and fid not in out and when:
                out[fid] = parse_time(when)
        return out

    def facts_from_messages(self, tenant: Tenant, subject_ids: Sequence[str], message_ids: Collection[str], *,
                            exclude: Collection[str] = ()) -> list[Fact]:
        """The current facts of these subjects drawn from any of ``message_ids`` (``exclude`` left out).

        When the update rules retire a fact, the quote of its message retires with it
        unless another fact of that message stays (:func:`zep_core.temporal.plan_updates`):
        these are the quotes and their sibling facts. The subjects' entries of
        ``facts_sources`` (their source message lists, no fact row) are scanned for the
        quoted message ids, checked exactly here; only the rows that answer are read.
        """
        user_id = key(tenant)
        if not subject_ids or not message_ids:
            return []
        needles = [json.dumps(m) for m in sorted(message_ids)]
        wanted = set(message_ids)
        rows = self._rows(
            f"SELECT {_ORDERED_FACTS} FROM facts INDEXED BY facts_sources WHERE user_id = ? AND subject_id IN "
            f"({','.join('?' * len(subject_ids))}) AND valid_until IS NULL AND superseded_by IS NULL AND ("
            + " OR ".join(["instr(source_message_ids, ?) > 0"] * len(needles)) + ")", [user_id, *subject_ids, *needles])
        return [fact_from_row(r) for r in sorted(rows, key=_storage_order)
                if r[0] not in exclude and wanted & set(json.loads(r[13]))]

    def facts_touching(self, tenant: Tenant, entity_ids: Sequence[str], *, as_of: str | None = None,
                       among: Iterable[str] | None = None, limit: int = 20_000) -> list[str]:
        """Ids of current (or as-of) facts whose subject or object is in ``entity_ids``.

        ``among`` restricts the answer to those fact ids (the graph then only ranks facts
        found otherwise). ``limit`` bounds the scan; the order is not by age.
        """
        user_id = key(tenant)
        if not entity_ids:
            return []
        marks = ",".join("?" * len(entity_ids))
        if as_of is None:
            when = "valid_until IS NULL AND superseded_by IS NULL"
            params: list[Any] = []
        else:
            when = "valid_from <= ? AND (valid_until IS NULL OR valid_until > ?)"
            params = [as_of, as_of]
        if among is not None:
            ids = list(dict.fromkeys(among))
            if not ids:
                return []
            rows = self._rows_in(
                f"SELECT id FROM facts INDEXED BY facts_key WHERE user_id = ? AND {when} AND (subject_id IN ({marks}) "
                f"OR object_id IN ({marks})) AND id IN ({{ids}})", ids, [user_id, *params, *entity_ids, *entity_ids])
            return [r[0] for r in rows]
        sql = (f"SELECT id FROM facts WHERE user_id = ? AND subject_id IN ({marks}) AND {when} "
               f"UNION SELECT id FROM facts WHERE user_id = ? AND object_id IN ({marks}) AND {when} LIMIT ?")
        rows = self._rows(sql, [user_id, *entity_ids, *params, user_id, *entity_ids, *params, limit])
        return [r[0] for r in rows]

    def graph_rows(self, tenant: Tenant) -> tuple[list[tuple], list[tuple]]:
        """One user's graph as SQLite holds it: entity rows and relationship rows, nothing of anyone else.

        Entities are ``(id, user_id, name, entity_type)``; relationships are
        ``(subject_id, object_id, fact_id, user_id, predicate, valid_from, valid_until, current)``
        for the facts with an object entity, both ends the user's own — what
        :class:`~zep_core.sync.IndexSync` writes to the graph index.
        """
        user_id = key(tenant)
        entities = self._rows("SELECT id, user_id, name, entity_type FROM entities WHERE user_id = ?", [user_id])
        facts = self._rows(
            "SELECT f.subject_id, f.object_id, f.id, f.user_id, f.predicate, f.valid_from, f.valid_until, "
            "f.valid_until IS NULL AND f.superseded_by IS NULL FROM facts f "
            "JOIN entities s INDEXED BY entities_key ON s.user_id = f.user_id AND s.id = f.subject_id "
            "JOIN entities o INDEXED BY entities_key ON o.user_id = f.user_id AND o.id = f.object_id "
            "WHERE f.user_id = ?", [user_id])
        return entities, facts

    def history_search(self, tenant: Tenant, vector: np.ndarray, k: int, as_of: str) -> list[tuple[str, float]]:
        """The ``k`` superseded facts of a user valid at ``as_of`` nearest to ``vector``: ``(id, cosine)``, best first.

        What an ``as_of`` query needs beside the current facts' index: the facts that were
        true then and are no longer. Their vectors are the stored ones (unit length, as
        the embedder wrote them), searched exactly: only the facts valid at that moment
        are read, so the search grows with what was true then, not with the history.
        Vectors that cannot be compared (another dimension, not finite) are skipped.
        """
        user_id = key(tenant)
        rows = self._rows("SELECT id, embedding FROM facts WHERE user_id = ? AND "
                          "(valid_until IS NOT NULL OR superseded_by IS NOT NULL) AND valid_from <= ? AND "
                          "(valid_until IS NULL OR valid_until > ?)", [user_id, as_of, as_of])
        width = 4 * len(vector)
        rows = [r for r in rows if len(r[1]) == width]
        if not rows or k <= 0:
            return []
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), len(vector))
        scores = matrix @ np.asarray(vector, dtype=np.float32)
        finite = np.isfinite(scores)
        order = [i for i in np.argsort(-np.where(finite, scores, -np.inf), kind="stable")[:k] if finite[i]]
        return [(rows[i][0], float(scores[i])) for i in order]

    def lexical_ranking(self, tenant: Tenant, text: str, *, limit: int, as_of: str | None = None,
                        context_weight: float = 1.0) -> list[tuple[int, float]]:
        """The user's best ``limit`` current (or as-of) facts by the words of ``text``: ``(rowid, BM25)``, best first.

        The words are taken literally (:func:`~zep_core.stores.fts.query_terms`: words, never
        syntax), made into terms by FTS5's tokenizer, and looked up under the user's key
        only; the BM25 statistics (rows, tokens per row, rows with the term) are the user's
        own, so another tenant's facts change no score. The scores are FTS5's ``bm25()``
        over a table of the user's facts, computed in SQLite (:func:`~zep_core.stores.fts.ranking_sql`).
        The message before a fact counts ``context_weight`` times the fact's own words (0: not
        looked up). Equal scores go to the older row. A term in more than half of the user's rows
        (and at least :data:`~zep_core.stores.fts.COMMON_MIN_ROWS`) is not looked up: it has
        no BM25 weight.
        """
        user_id = key(tenant)
        context = context_weight > 0
        words = fts.query_terms(text)
        if not words or limit <= 0:
            return []
        at = [as_of] if as_of is not None else []
        with self._lock:
            try:
                stats = self.db.execute("SELECT docs, tokens FROM lexical_stats WHERE user_id = ?",
                                        [user_id]).fetchone()
                if not stats or stats[0] <= 0:
                    return []  # the user has no facts yet
                docs, tokens = stats
                terms = [t for t in self._terms_of(words) if t is not None]
                known = self._hits.setdefault(user_id, {})
                if len(known) > _MAX_STEMS:
                    known.clear()
                for t in dict.fromkeys(terms):
                    if (t, context) not in known:
                        known[(t, context)] = self.db.execute(fts.postings_df(context), [user_id, t]).fetchone()[0]
                hits = {t: known[(t, context)] for t in terms}
                weighed = [(t, fts.idf(docs, hits[t])) for t in terms
                           if hits[t] and not (hits[t] >= fts.COMMON_MIN_ROWS and 2 * hits[t] > docs)]
                if not weighed:
                    return []
                sql = fts.ranking_sql(len(weighed), as_of=as_of is not None, context=context)
                rows = self.db.execute(sql, [user_id, tokens / docs, float(context_weight), limit, *at,
                                             *(v for pair in weighed for v in pair)]).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite read failed in {self.path}: {exc}") from exc
        return [(doc, score) for doc, score in rows]

    def _terms_of(self, words: Sequence[str]) -> list[str | None]:
        """Each word's FTS5 term (its Porter stem), None where the tokenizer makes none or a phrase of several.

        A quoted word of an FTS5 query is tokenized as the text is; a word it splits in
        two would be a phrase, which no fact's word lists can rank as FTS5 did: left out.
        Known words are remembered (call under the lock).
        """
        missing = [w for w in dict.fromkeys(words) if w not in self._stems]
        if missing:
            if len(self._stems) + len(missing) > _MAX_STEMS:
                self._stems.clear()
            conn = self.db.conn
            conn.executemany("INSERT INTO temp.lexical_words(rowid, word) VALUES (?, ?)",
                             list(enumerate(missing, 1)))
            found: dict[int, list[str]] = {}
            for doc, term in conn.execute("SELECT doc, term FROM temp.lexical_word_tokens ORDER BY doc, offset"):
                found.setdefault(doc, []).append(term)
            conn.execute("INSERT INTO temp.lexical_words(lexical_words) VALUES ('delete-all')")
            for n, word in enumerate(missing, 1):
                self._stems[word] = tuple(found.get(n, ()))
        return [self._stems[w][0] if len(self._stems[w]) == 1 else None for w in words]

    def lexical_search(self, tenant: Tenant, text: str, *, limit: int, as_of: str | None = None,
                       context_weight: float = 1.0) -> dict[str, float]:
        """:meth:`lexical_ranking` by fact id: BM25 scores (higher is better), best first."""
        user_id = key(tenant)
        ranked = self.lexical_ranking(user_id, text, limit=limit, as_of=as_of, context_weight=context_weight)
        ids = dict(self._rows_in(_BY_LEXICAL_ROW.format(columns="rowid, id"), [r for r, _ in ranked], [user_id]))
        return {ids[rowid]: score for rowid, score in ranked if rowid in ids}

    def _legacy_lexical_tables(self) -> set[str]:
        """The FTS5 tables, one per user, of folders before schema version 6."""
        return {r[0] for r in self._rows("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE ? "
                                         "AND sql LIKE 'CREATE VIRTUAL TABLE%'", [fts.TABLE_PREFIX + "%"])}

    def rebuild_lexical(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Rebuild the lexical index from the facts (call inside :meth:`transaction`); returns its rows.

        Folders from before schema version 6 lose their per-user FTS5 tables here.
        ``progress(users done, users)`` is called as it goes.
        """
        for table in self._legacy_lexical_tables():
            self._exec(f"DROP TABLE {table}")
        for table in ("lexical_postings", "lexical_docs", "lexical_stats"):
            self._exec(f"DELETE FROM {table}")
        self._forget_hits()
        users = [r[0] for r in self._rows("SELECT DISTINCT user_id FROM facts")]
        for n, user in enumerate(users, 1):
            self._index_lexical(user, None)
            if progress is not None:
                progress(n, len(users))
        return self._rows("SELECT count(*) FROM lexical_docs")[0][0]

    def lexical_problems(self, tenant: Tenant | None = None) -> dict[str, list[str]]:
        """What is wrong with the lexical index.

        Facts missing from it, rows whose validity differs from their fact's, rows with no
        fact, postings that disagree with their row, totals that differ from the rows', and
        rows of no user.
        """
        user_id = None if tenant is None else key(tenant)
        users = [user_id] if user_id is not None else [r[0] for r in self._rows("SELECT DISTINCT user_id FROM facts")]
        live = "(f.valid_until IS NULL AND f.superseded_by IS NULL)"
        found: dict[str, list[str]] = {"lexical_missing": [], "lexical_validity_differs": [], "lexical_orphans": [],
                                       "lexical_postings_differ": [], "lexical_totals_differ": []}
        for user in users:
            found["lexical_missing"] += [r[0] for r in self._rows(
                "SELECT id FROM facts f WHERE user_id = ? AND NOT EXISTS "
                "(SELECT 1 FROM lexical_docs ld WHERE ld.user_id = f.user_id AND ld.doc = f.rowid)", [user])]
            found["lexical_validity_differs"] += [r[0] for r in self._rows(
                f"SELECT f.id FROM facts f JOIN lexical_docs ld ON ld.user_id = f.user_id AND ld.doc = f.rowid "
                f"WHERE f.user_id = ? AND (ld.live IS NOT {live} OR ld.valid_from IS NOT f.valid_from "
                "OR ld.valid_until IS NOT f.valid_until)", [user])]
            found["lexical_orphans"] += [f"{user}: rowid {r[0]}" for r in self._rows(
                "SELECT ld.doc FROM lexical_docs ld WHERE ld.user_id = ? AND NOT EXISTS "
                "(SELECT 1 FROM facts f WHERE f.rowid = ld.doc AND f.user_id = ld.user_id)", [user])]
            found["lexical_postings_differ"] += [f"{user}: rowid {r[0]}" for r in self._rows(
                "SELECT DISTINCT lp.doc FROM lexical_postings lp WHERE lp.user_id = ? AND NOT EXISTS "
                "(SELECT 1 FROM lexical_docs ld WHERE ld.user_id = lp.user_id AND ld.doc = lp.doc "
                "AND ld.live = lp.live AND ld.length = lp.length "
                "AND instr(' ' || ld.terms || ' ', ' ' || lp.term || ' '))", [user])]
            totals = self._rows("SELECT (SELECT count(*) FROM lexical_docs WHERE user_id = ?1), "
                                "(SELECT coalesce(sum(length), 0) FROM lexical_docs WHERE user_id = ?1), "
                                "(SELECT docs FROM lexical_stats WHERE user_id = ?1), "
                                "(SELECT tokens FROM lexical_stats WHERE user_id = ?1)", [user])[0]
            if totals[0] and (totals[0], totals[1]) != (totals[2], totals[3]):
                found["lexical_totals_differ"].append(f"{user}: {totals[0]} rows of {totals[1]} tokens, totals say "
                                                      f"{totals[2]} of {totals[3]}")
        if user_id is None:
            known = set(users)
            found["lexical_index_of_no_user"] = sorted(
                {r[0] for r in self._rows("SELECT DISTINCT user_id FROM lexical_docs")} - known
                | {f"table {t}" for t in self._legacy_lexical_tables()})
        return {k: v for k, v in found.items() if v}

    def entity_history(self, tenant: Tenant, entity_id: str) -> list[Fact]:
        """Every fact with the entity as subject or object, by valid_from ascending."""
        user_id = key(tenant)
        rows = self._rows(
            f"SELECT {FACT_COLUMNS} FROM facts WHERE user_id = ? AND (subject_id = ? OR object_id = ?) "
            "ORDER BY valid_from, created_at, id", [user_id, entity_id, entity_id])
        return [fact_from_row(r) for r in rows]

    def count_facts(self, tenant: Tenant | None = None) -> dict[str, int]:
        """Counts of current and superseded facts."""
        user_id = None if tenant is None else key(tenant)
        where, params = ("WHERE user_id = ?", [user_id]) if user_id else ("", [])
        rows = self._rows(f"SELECT valid_until IS NULL AND superseded_by IS NULL, count(*) FROM facts {where} "
                          "GROUP BY 1", params)
        counts = {bool(k): v for k, v in rows}
        return {"current": counts.get(True, 0), "superseded": counts.get(False, 0)}

    # -- entities ---------------------------------------------------------------

    def entity_ids_for_aliases(self, tenant: Tenant, aliases: Sequence[str]) -> dict[str, str]:
        """Map normalized aliases to entity ids, for the ones that exist."""
        user_id = key(tenant)
        return dict(self._rows_in("SELECT alias, entity_id FROM aliases WHERE user_id = ? AND alias IN ({ids})",
                                  aliases, [user_id]))

    def insert_entities(self, rows: Iterable[tuple[Entity, np.ndarray]], changed_at: str) -> None:
        """Create entities with their vectors (call inside :meth:`transaction`)."""
        self._many(
            "INSERT OR IGNORE INTO entities(id, user_id, name, entity_type, summary, fact_count, "
            "last_updated, changed_at, embedding) VALUES (?, ?, ?, ?, '', 0, NULL, ?, ?)",
            [(e.id, e.user_id, e.name, e.entity_type, changed_at, blob(v)) for e, v in rows])

    def add_aliases(self, rows: Iterable[tuple[str, str, str]]) -> None:
        """Add ``(user_id, alias, entity_id)``; an alias already taken keeps its entity."""
        self._many("INSERT OR IGNORE INTO aliases(user_id, alias, entity_id) VALUES (?, ?, ?)", rows)

    def mark_entities_changed(self, tenant: Tenant, entity_ids: Iterable[str], when: str) -> None:
        """Flag entities for the next summary refresh."""
        user_id = key(tenant)
        self._many("UPDATE entities INDEXED BY entities_key SET changed_at = ? WHERE user_id = ? AND id = ?",
                   [(when, user_id, eid) for eid in set(entity_ids)])

    def get_entities(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, Entity]:
        """Entities by id, with their aliases, for one user only."""
        user_id = key(tenant)
        aliases: dict[str, list[str]] = {}
        for alias, eid in self._rows_in("SELECT alias, entity_id FROM aliases INDEXED BY aliases_key "
                                        "WHERE user_id = ? AND entity_id IN ({ids})", ids, [user_id]):
            aliases.setdefault(eid, []).append(alias)
        rows = self._rows_in("SELECT id, user_id, name, entity_type, summary, fact_count, last_updated FROM entities "
                             "INDEXED BY entities_key WHERE user_id = ? AND id IN ({ids})", ids, [user_id])
        return {row[0]: entity_from_row(row, sorted(aliases.get(row[0], ()))) for row in rows}

    def entity_rows(self, tenant: Tenant, ids: Sequence[str]) -> list[tuple[Entity, np.ndarray]]:
        """Entities of one user with their vectors (what the outbox writes to the indexes, and exports)."""
        rows = self._rows_in("SELECT id, user_id, name, entity_type, summary, fact_count, last_updated, "
                             "embedding FROM entities INDEXED BY entities_key WHERE user_id = ? AND id IN ({ids})",
                             ids, [key(tenant)])
        return [(entity_from_row(row), np.frombuffer(row[7], dtype=np.float32)) for row in rows]

    def iter_entity_ids(self, tenant: Tenant, batch: int = 2000) -> Iterator[list[str]]:
        """Every entity id of one user, in batches."""
        user_id, last = key(tenant), ""
        while True:
            rows = self._rows("SELECT id FROM entities INDEXED BY entities_key WHERE user_id = ? AND id > ? "
                              "ORDER BY id LIMIT ?", [user_id, last, batch])
            if not rows:
                return
            yield [r[0] for r in rows]
            last = rows[-1][0]

    def entity_changed_at(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, str | None]:
        """When each of a user's entities last changed (its refresh mark), as stored (for export)."""
        return dict(self._rows_in("SELECT id, changed_at FROM entities INDEXED BY entities_key WHERE user_id = ? "
                                  "AND id IN ({ids})", ids, [key(tenant)]))

    def stale_entities(self, tenant: Tenant | None, older_than: str, limit: int = 1000) -> list[tuple[str, str]]:
        """``(user_id, entity_id)`` of entities changed since their last refresh and due."""
        user_id = None if tenant is None else key(tenant)
        by = "" if user_id is None else "INDEXED BY entities_user "  # one user's: by their key, not every change
        sql = (f"SELECT user_id, id FROM entities {by}WHERE changed_at IS NOT NULL "
               "AND (last_updated IS NULL OR (changed_at > last_updated AND last_updated <= ?))")
        params: list[Any] = [older_than]
        if user_id is not None:
            sql += " AND user_id = ?"
            params.append(user_id)
        return [(Tenant.stored(r[0]), r[1]) for r in self._rows(sql + " ORDER BY changed_at LIMIT ?", [*params, limit])]

    def set_entity_summaries(self, rows: Iterable[tuple[str, str, str, int, str | None]]) -> None:
        """Write ``(user_id, entity_id, summary, fact_count, last_updated)``; only the user's own entities."""
        self._many("UPDATE entities INDEXED BY entities_key SET summary = ?, fact_count = ?, last_updated = ? "
                   "WHERE user_id = ? AND id = ?", [(s, n, t, user, eid) for user, eid, s, n, t in rows])

    def set_embeddings(self, tenant: Tenant, table: str, rows: Iterable[tuple[str, np.ndarray]]) -> None:
        """Replace stored vectors of one user's facts or entities (re-embedding after an embedder change)."""
        if table not in ("facts", "entities"):
            raise ValueError(table)
        user_id = key(tenant)
        self._many(f"UPDATE {table} INDEXED BY {table}_key SET embedding = ? WHERE user_id = ? AND id = ?",
                   [(blob(v), user_id, i) for i, v in rows])

    def texts(self, tenant: Tenant, table: str, ids: Sequence[str]) -> dict[str, str]:
        """The texts one user's vectors are made from: fact content or entity name."""
        column = {"facts": "content", "entities": "name"}[table]
        return dict(self._rows_in(f"SELECT id, {column} FROM {table} INDEXED BY {table}_key WHERE user_id = ? "
                                  "AND id IN ({ids})", ids, [key(tenant)]))

    # -- outbox -----------------------------------------------------------------

    def add_outbox(self, rows: Iterable[tuple[str, str, str | None, dict | None]]) -> None:
        """Queue index writes ``(op, user_id, ref_id, payload)`` (inside :meth:`transaction`)."""
        self._many("INSERT INTO outbox(op, user_id, ref_id, payload) VALUES (?, ?, ?, ?)",
                   [(op, u, ref, json.dumps(p) if p is not None else None) for op, u, ref, p in rows])

    def pending_outbox(self, limit: int = 5000, *, up_to: int | None = None, users: Collection[str] | None = None,
                       ) -> list[tuple[int, str, str, str | None, dict | None]]:
        """Oldest pending index writes, only those up to seq ``up_to`` and of ``users`` if given."""
        where, params = "seq <= ?", [2**62 if up_to is None else up_to]
        if users is not None:
            where += " AND user_id IN (SELECT value FROM json_each(?))"
            params.append(json.dumps(sorted(users)))
        rows = self._rows(f"SELECT seq, op, user_id, ref_id, payload FROM outbox WHERE {where} ORDER BY seq LIMIT ?",
                          [*params, limit])
        return [(s, op, u, ref, json.loads(p) if p else None) for s, op, u, ref, p in rows]

    def last_outbox_seq(self) -> int:
        """The newest queued index write's seq (0 when none is queued)."""
        return self._rows("SELECT COALESCE(max(seq), 0) FROM outbox")[0][0]

    def clear_outbox(self, up_to_seq: int) -> None:
        """Mark index writes done, up to and including ``up_to_seq``."""
        self._exec("DELETE FROM outbox WHERE seq <= ?", [up_to_seq])

    def clear_outbox_rows(self, seqs: Sequence[int]) -> None:
        """Mark these index writes done (a drain of some users' writes only)."""
        self._exec("DELETE FROM outbox WHERE seq IN (SELECT value FROM json_each(?))", [json.dumps(list(seqs))])

    def outbox_size(self, tenant: Tenant | None = None) -> int:
        """How many index writes are pending (of ``user_id`` only, when given)."""
        user_id = None if tenant is None else key(tenant)
        if user_id is None:
            return self._rows("SELECT count(*) FROM outbox")[0][0]
        return self._rows("SELECT count(*) FROM outbox WHERE user_id = ?", [user_id])[0][0]

    def quarantine_outbox(self, rows: Iterable[tuple[int | None, str, str, str, dict | None, str]]) -> None:
        """Set aside index writes ``(seq, op, user_id, ref_id, payload, error)`` that could not be applied.

        One row per op and ref: quarantining it again replaces the reason (inside :meth:`transaction`).
        """
        self._many(
            "INSERT INTO outbox_quarantine(seq, op, user_id, ref_id, payload, error) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(op, ref_id) DO UPDATE SET seq = excluded.seq, user_id = excluded.user_id, "
            "payload = excluded.payload, error = excluded.error, quarantined_at = excluded.quarantined_at",
            [(seq, op, u, ref, json.dumps(p) if p is not None else None, error) for seq, op, u, ref, p, error in rows])

    def release_quarantined(self, keys: Iterable[tuple[str, str]]) -> None:
        """Take ``(op, ref_id)`` out of the quarantine (they were applied since)."""
        self._many("DELETE FROM outbox_quarantine WHERE op = ? AND ref_id = ?", keys)

    def clear_quarantine(self, tenant: Tenant | None = None) -> None:
        """Empty the quarantine, or one user's part of it."""
        user_id = None if tenant is None else key(tenant)
        if user_id is None:
            self._exec("DELETE FROM outbox_quarantine")
        else:
            self._exec("DELETE FROM outbox_quarantine WHERE user_id = ?", [user_id])

    def quarantine_size(self, tenant: Tenant | None = None) -> int:
        """How many index writes are quarantined (of one user, if given)."""
        user_id = None if tenant is None else key(tenant)
        if user_id is None:
            return self._rows("SELECT count(*) FROM outbox_quarantine")[0][0]
        return self._rows("SELECT count(*) FROM outbox_quarantine WHERE user_id = ?", [user_id])[0][0]

    def quarantined(self, tenant: Tenant | None = None, *, limit: int = 1_000_000) -> list[dict[str, Any]]:
        """The quarantined index writes, oldest first, as dicts of ``op, user_id, ref_id, error, quarantined_at``."""
        user_id = None if tenant is None else key(tenant)
        where, params = ("WHERE user_id = ?", [user_id]) if user_id is not None else ("", [])
        rows = self._rows(f"SELECT op, user_id, ref_id, error, quarantined_at FROM outbox_quarantine {where} "
                          "ORDER BY quarantined_at, rowid LIMIT ?", [*params, limit])
        return [dict(zip(("op", "user_id", "ref_id", "error", "quarantined_at"), r)) for r in rows]

    def known_ids(self, tenant: Tenant, table: str, ids: Sequence[str]) -> set[str]:
        """Which of these fact, entity or episode ids the tenant holds."""
        if table not in ("facts", "entities", "episodes"):
            raise ValueError(table)
        return {r[0] for r in self._rows_in(f"SELECT id FROM {table} INDEXED BY {table}_key WHERE user_id = ? "
                                            "AND id IN ({ids})", ids, [key(tenant)])}

    def record_users(self) -> list[Tenant]:
        """Every user with a stored fact or entity (every user's: rebuilds walk them one by one)."""
        rows = self._rows("SELECT DISTINCT user_id FROM facts UNION SELECT DISTINCT user_id FROM entities")
        return sorted(Tenant.stored(r[0]) for r in rows)

    def record_owners(self, table: str, ids: Sequence[str]) -> dict[str, Tenant]:
        """The user each stored fact, entity or episode id belongs to (ids not stored are absent).

        The id namespace (ids are unique across users): an id from outside (an import file,
        a request, a queued index write) is checked here; only the owner is read.
        """
        if table not in ("facts", "entities", "episodes"):
            raise ValueError(table)
        return {i: Tenant.stored(u) for i, u in self._rows_in(f"SELECT id, user_id FROM {table} WHERE id IN ({{ids}})",
                                                               ids)}

    def indexed_entity_sample(self, scan: int = 50) -> tuple[str, str] | None:
        """``(user_id, entity_id)`` of the oldest entity both indexes must already hold, if any.

        Entities with an index write still queued or quarantined are passed over; None when
        there are no entities, or the oldest ``scan`` ones are all still queued.
        """
        rows = self._rows("SELECT id, user_id FROM entities ORDER BY rowid LIMIT ?", [scan])
        return self._first_applied("entity", rows)

    def indexed_fact_sample(self, scan: int = 50) -> tuple[str, str] | None:
        """``(user_id, fact_id)`` of the oldest current fact the vector index must already hold, if any."""
        rows = self._rows("SELECT id, user_id FROM facts WHERE valid_until IS NULL AND superseded_by IS NULL "
                          "ORDER BY rowid LIMIT ?", [scan])
        return self._first_applied("fact", rows)

    def indexed_edge_sample(self, scan: int = 50) -> tuple[str, str] | None:
        """``(user_id, subject_id)`` of the oldest fact between two entities that the graph must already hold."""
        rows = self._rows("SELECT id, user_id, subject_id FROM facts WHERE object_id IS NOT NULL "
                          "AND object_id <> subject_id ORDER BY rowid LIMIT ?", [scan])
        found = self._first_applied("fact", [(r[0], r[1], r[2]) for r in rows])
        return None if found is None else (found[0], found[2])

    def _first_applied(self, op: str, rows: Sequence[tuple]) -> tuple | None:
        """``(user_id, id, *rest)`` of the first row ``(id, user_id, *rest)`` with no queued or quarantined ``op``."""
        ids = [r[0] for r in rows]
        waiting = {r[0] for table in ("outbox", "outbox_quarantine") for r in self._rows_in(
            f"SELECT ref_id FROM {table} WHERE op = ? AND ref_id IN ({{ids}})", ids, [op])}
        return next(((Tenant.stored(r[1]), r[0], *r[2:]) for r in rows if r[0] not in waiting), None)

    # -- chat sessions (adapters' history) ----------------------------------------

    def add_session_messages(self, tenant: Tenant, session_id: str, messages: Sequence[Message]) -> None:
        """Append chat turns to a session's history at once."""
        user_id = key(tenant)
        with self.transaction():
            self._many(
                "INSERT INTO session_messages(user_id, session_id, role, name, content, message_id, timestamp, "
                "extra) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(user_id, session_id, m.role, m.name, m.content, m.id, iso(m.timestamp), _extra_text(m))
                 for m in messages])

    def session_messages(self, tenant: Tenant, session_id: str, *, unended: bool = False,
                         limit: int | None = None) -> list[tuple[int, Message]]:
        """A session's turns ``(seq, message)`` in order; the last ``limit`` if given."""
        user_id = key(tenant)
        sql = ("SELECT seq, role, name, content, message_id, timestamp, extra FROM session_messages "
               "WHERE user_id = ? AND session_id = ?")
        if unended:
            sql += " AND episode_id IS NULL"
        params: list[Any] = [user_id, session_id]
        if limit is not None:
            sql = f"SELECT * FROM ({sql} ORDER BY seq DESC LIMIT ?)"
            params.append(limit)
        rows = self._rows(sql + " ORDER BY seq", params)
        return [(r[0], _session_message(r[1:])) for r in rows]

    def waiting_sessions(self, tenant: Tenant | None = None) -> list[tuple[str, str, datetime | None]]:
        """``(user_id, session_id, time of its last waiting turn)`` of every session with turns not yet learned from.

        Only turns that would be learned from count (``tool`` rows never are); of
        ``user_id`` only, if given.
        """
        user_id = None if tenant is None else key(tenant)
        sql = ("SELECT user_id, session_id, MAX(timestamp) FROM session_messages "
               "WHERE episode_id IS NULL AND role <> 'tool'")
        params: list[Any] = []
        if user_id is not None:
            sql += " AND user_id = ?"
            params.append(user_id)
        rows = self._rows(sql + " GROUP BY user_id, session_id ORDER BY MIN(seq)", params)
        return [(Tenant.stored(u), s, parse_time(t)) for u, s, t in rows]

    def has_session(self, tenant: Tenant, session_id: str) -> bool:
        """Whether the session has any stored turn."""
        user_id = key(tenant)
        return bool(self._rows("SELECT 1 FROM session_messages WHERE user_id = ? AND session_id = ? LIMIT 1",
                               [user_id, session_id]))

    def mark_session_ended(self, tenant: Tenant, session_id: str, up_to_seq: int, episode_id: str) -> None:
        """Record that turns up to ``up_to_seq`` went into ``episode_id``."""
        user_id = key(tenant)
        self._exec("UPDATE session_messages SET episode_id = ? WHERE user_id = ? AND session_id = ? "
                   "AND seq <= ? AND episode_id IS NULL", [episode_id, user_id, session_id, up_to_seq])

    def clear_session(self, tenant: Tenant, session_id: str) -> None:
        """Forget a session's chat turns (episodes already stored stay)."""
        user_id = key(tenant)
        self._exec("DELETE FROM session_messages WHERE user_id = ? AND session_id = ?", [user_id, session_id])

    def session_rows(self, tenant: Tenant) -> list[tuple[str, Message, str | None]]:
        """Every chat turn of a user ``(session_id, message, episode_id)`` in order (for export)."""
        user_id = key(tenant)
        rows = self._rows("SELECT session_id, role, name, content, message_id, timestamp, extra, episode_id "
                          "FROM session_messages WHERE user_id = ? ORDER BY seq", [user_id])
        return [(r[0], _session_message(r[1:7]), r[7]) for r in rows]

    def insert_session_rows(self, tenant: Tenant, rows: Iterable[tuple[str, Message, str | None]]) -> None:
        """Append chat turns with their episode marks, as :meth:`session_rows` gives them (for import)."""
        user_id = key(tenant)
        self._many(
            "INSERT INTO session_messages(user_id, session_id, role, name, content, message_id, timestamp, "
            "extra, episode_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(user_id, sid, m.role, m.name, m.content, m.id, iso(m.timestamp), _extra_text(m), ep)
             for sid, m, ep in rows])

    # -- stats ------------------------------------------------------------------

    def table_counts(self) -> dict[str, int]:
        """Row counts of the main tables."""
        return {t: self._rows(f"SELECT count(*) FROM {t}")[0][0]
                for t in ("episodes", "messages", "facts", "entities", "outbox", "session_messages")}


def _lacks_column(conn: sqlite3.Connection, table: str, column: str) -> bool:
    """Whether ``table`` exists without ``column`` (a folder an older version made)."""
    columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
    return bool(columns) and column not in columns


def _storage_order(row: Sequence[Any]) -> tuple[str, int]:
    """A fact row (:data:`FACT_COLUMNS` then ``rowid``) ordered by subject id, then as stored."""
    return row[14], row[-1]


def _extra_text(message: Message) -> str | None:
    """A chat turn's ``extra`` as stored: JSON text, or NULL."""
    return None if message.extra is None else json.dumps(message.extra, ensure_ascii=False)


def _session_message(row: Sequence[Any]) -> Message:
    """``(role, name, content, message_id, timestamp, extra)`` of a session row as a Message."""
    role, name, content, message_id, timestamp, extra = row
    return Message(content=content, role=role, name=name, id=message_id, timestamp=parse_time(timestamp),
                   extra=None if extra is None else json.loads(extra))
