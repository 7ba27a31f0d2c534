"""The one owner of the write step: the record store first, then the derived indexes from an outbox.

Every change to memory goes the same way. Inside :meth:`IndexSync.transaction` the
caller writes its records and names the index writes they imply as typed
:class:`OutboxOp` values. Where the indexes are copies of the records (a data folder's
Chroma and Kùzu: ``Stores.derived``), both commit in one transaction of the record store,
and the outbox is then applied to the vector and graph indexes — by the background
indexer, at once (``index_writes="sync"``, or ``apply_now=True``), or by the next read
(:meth:`IndexSync.catch_up`: read-your-writes) — and cleared. A process that dies
in between leaves the rows behind, and the next open replays them. Applying is
idempotent: the target state of every fact and entity is read from the record store, so
a row applied twice, or after a crash, ends in the same place. Where the indexes are the
record tables themselves (a database backend), the records' own commit is the index write: no
outbox row is written and nothing is applied afterwards.

No row can lock a memory: what can never be indexed (a vector that is NaN or of another
dimension, an edge to an entity that is not stored) is left out and the rest of the
record indexed; a row the index refuses is found by halving its batch. Such rows move
to a quarantine table with the reason, reported by ``check_consistency()``, ``stats()``
and ``zep-memory doctor``, and a rebuild derives the quarantine again from the records.

Writers are serialised (the update rules read, then write); applying the outbox has
its own lock, so writers never wait for the indexes. The background indexer gathers
before it applies (:data:`QUIET_S`, :data:`GATHER_S`): a pass costs about the same for
one episode as for many, and a pass that runs beside a writer slows both.

The outbox's ops are written in :mod:`~zep_core.outbox`, and applying them to the
indexes in :mod:`~zep_core.indexing` (:class:`IndexSync` is an
:class:`~zep_core.indexing.IndexApplier`); their names are re-exported here.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager

from .errors import StoreUnavailableError, ZepMemoryError
from .indexing import IndexApplier, unusable_vector
from .outbox import FactChange, LeftOut, OpKind, OutboxOp, Row, describe, parse_rows
from .stores import Stores
from .workers import Failures

__all__ = ["FactChange", "IndexSync", "OpKind", "OutboxOp", "unusable_vector"]

log = logging.getLogger("zep_core")

#: The background indexer starts a pass once no episode is being processed and no write
#: has committed for this long (a lone episode is indexed this soon after its commit) ...
QUIET_S = 0.02
#: ... or once it has waited this long, whichever comes first. While episodes keep coming
#: a pass then covers ~0.1 s of them: Kùzu's write transactions and the outbox's
#: bookkeeping are paid once per pass instead of once per episode, and the pass no longer
#: runs beside every writer (Chroma holds the interpreter lock for a whole upsert, so
#: the writer stalls meanwhile). Chroma is still written once per user per pass. At 10k
#: facts the stream went from ~52 to ~65 episodes/s (bench/findings.md). Reads never
#: wait for it: a read first applies its own user's queued writes (:meth:`IndexSync.catch_up`).
GATHER_S = 0.1


class IndexSync(IndexApplier):
    """Commits records with their outbox rows, and applies the outbox to the indexes.

    Args:
        stores: the record store and the two derived indexes.
        apply_at_commit: apply the outbox before a write returns (``index_writes="sync"``);
            otherwise the background indexer or the next read does it.

    """

    def __init__(self, stores: Stores, *, apply_at_commit: bool = False) -> None:
        super().__init__(stores)
        #: Whether the indexes are copies to keep up to date (a data folder's); in a database they
        #: are the record tables themselves, so nothing is queued and no read waits.
        self.derived = stores.derived
        self.apply_at_commit = apply_at_commit
        self._write_lock = threading.RLock()  # writers: the update rules read, then write
        self._index_lock = threading.RLock()  # one outbox drain at a time; writers don't wait for it
        self._wakeup = threading.Event()
        self._depth = 0            # nesting of exclusive() in the thread holding the write lock
        self._pending = False      # ops committed inside the outermost exclusive()
        self._apply_now = False
        self._versions: dict[str, int] = {}  # user -> number of the last committed write naming it
        self._written = 0
        self._deferred = 0         # bulk writes in progress: index writes wait for the end of the last one ...
        self._released: set[str] = set()  # ... except these users' (:meth:`release`)
        self._last_write = 0.0     # time.monotonic() of the last commit, or end of :meth:`writing`
        #: Why the last drain stopped, when an index could not work at all (None once one succeeds).
        self.unavailable: StoreUnavailableError | None = None
        self._writers = 0          # episodes being processed (:meth:`writing`)
        self._state_lock = threading.Lock()

    # -- writing ---------------------------------------------------------------------

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the writers' lock: what is read inside stays true until the block ends.

        Index writes committed inside are applied (or handed to the indexer) once the
        outermost block is left, so the lock is never held while Chroma or Kùzu work.
        """
        with self._write_lock:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                pending = apply_now = False
                if self._depth == 0:
                    pending, apply_now = self._pending, self._apply_now
                    self._pending = self._apply_now = False
                if pending and not self._deferred:  # the indexer (or the next read) applies them, whatever happens
                    self._wakeup.set()
        if pending and (apply_now or (self.apply_at_commit and not self._deferred)):
            self.drain()

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Mark an episode being processed (extracted, embedded, then committed).

        The background indexer does not start a pass while one is (up to :data:`GATHER_S`),
        so a stream of episodes is indexed a batch at a time instead of beside each of them.
        """
        with self._state_lock:
            self._writers += 1
        try:
            yield
        finally:
            with self._state_lock:
                self._writers -= 1
                self._last_write = time.monotonic()

    @contextmanager
    def deferred(self) -> Iterator[None]:
        """Hold back index writes until the block ends: a bulk write reaches the indexes once.

        Inside, commits still go to the record store with their outbox rows, but neither the
        background indexer nor ``index_writes="sync"`` applies them, except those of the
        users the writer has released (:meth:`release`); when the outermost block ends
        the rest are applied (or handed to the indexer) together, so each user's
        collection is written once for the whole call instead of once per batch. A read
        in between still applies what is queued first (:meth:`catch_up`): nothing read
        is ever behind a write.
        """
        with self._state_lock:
            self._deferred += 1
        try:
            yield
        finally:
            with self._state_lock:
                self._deferred -= 1
                last = self._deferred == 0
                if last:
                    self._released.clear()
            if last and self.derived and self.records.outbox_size():
                self._wakeup.set()
                if self.apply_at_commit:
                    self.drain()

    @contextmanager
    def transaction(self, *, apply_now: bool = False) -> Iterator[list[OutboxOp]]:
        """One atomic write: records written inside and the ops appended to the yielded list.

        Args:
            apply_now: apply the outbox before returning, whatever the mode
                (``forget_user`` and imports: the indexes must forget at once).

        """
        with self.exclusive():
            ops: list[OutboxOp] = []
            with self.records.transaction():
                yield ops
                if self.derived:
                    self.records.add_outbox([op.to_row() for op in ops])
            for user in {op.user_id for op in ops}:
                self._written += 1
                self._versions[user] = self._written
            if ops and self.derived:
                self._pending = True
                self._apply_now = self._apply_now or apply_now
                self._last_write = time.monotonic()

    def release(self, users: Collection[str]) -> None:
        """Inside :meth:`deferred`: these users' part of the bulk write is committed, index it now.

        The background indexer applies their queued writes while the writer goes on with
        other users (Chroma works in its own process meanwhile), so only the last users'
        writes are left for the end of the call. Releasing a user who still has writes to
        come costs an extra Chroma call for it, never a wrong index: applying reads the
        target state from the record store. Outside :meth:`deferred`, or with ``index_writes="sync"``
        (no background indexer), it changes nothing.
        """
        with self._state_lock:
            if not self._deferred:
                return
            self._released.update(users)
        self._wakeup.set()

    def version(self, user_id: str) -> int:
        """Changes whenever a write naming ``user_id`` commits (in this process; one process owns a folder)."""
        return self._versions.get(user_id, 0)

    # -- applying --------------------------------------------------------------------

    def drain(self, users: Collection[str] | None = None) -> int:
        """Apply every index write committed so far (of ``users`` only, if given); return how many rows were applied.

        A row that cannot be applied never blocks the rows behind it: it is moved to the
        quarantine (:meth:`RecordStore.quarantined`) with the reason, and reported by
        ``check_consistency()``, ``stats()`` and ``zep-memory doctor``.

        Raises:
            StoreUnavailableError: the vector or graph index itself does not answer; the rows stay
                queued and are retried by the next read, write or open.

        """
        if not self.derived:  # the indexes are the record tables: nothing was queued
            return 0
        done = 0
        with self._index_lock:
            target = self.records.last_outbox_seq()  # rows committed later wait for the next pass
            while True:
                rows = self.records.pending_outbox(up_to=target, users=users)
                if not rows:
                    self.unavailable = None
                    return done
                batch, unreadable = parse_rows(rows)
                try:
                    self._forget_users([op for _, op in batch if op.kind is OpKind.FORGET_USER])
                    left_out = self._apply_isolated([(seq, op) for seq, op in batch
                                                     if op.kind is not OpKind.FORGET_USER])
                except StoreUnavailableError as exc:
                    self.unavailable = exc
                    raise
                with self.records.transaction():
                    self._quarantine(left_out, applied=[op for _, op in batch], unreadable=unreadable)
                    if users is None:
                        self.records.clear_outbox(rows[-1][0])
                    else:  # other users' rows in between stay queued
                        self.records.clear_outbox_rows([row[0] for row in rows])
                done += len(rows)

    def catch_up(self, user_id: str | None = None) -> None:
        """Read-your-writes: apply queued index writes before a read that uses the indexes.

        A read of one user waits only when that user has writes queued: each user's vectors
        and graph are their own, so other users' queued writes cannot change its answer, and
        a read does not queue behind a busy indexer working for them.
        """
        if self.derived and self.records.outbox_size(user_id):
            self.drain()

    def wake(self) -> None:
        """Wake the background indexer (also used to stop it promptly)."""
        self._wakeup.set()

    def run_indexer(self, stopping: threading.Event) -> None:
        """The background indexer: apply committed writes, many episodes per pass, until stopped."""
        failing = Failures("background index write")
        while not stopping.is_set():
            self._wakeup.wait(timeout=1.0)
            self._wakeup.clear()
            if stopping.is_set():
                return
            with self._state_lock:
                deferred, released = self._deferred, set(self._released)
            if deferred and not released:  # a bulk write is in progress: it wakes the indexer when it ends
                continue
            try:
                if deferred:  # only the users the bulk write has finished with
                    self.drain(released)
                else:
                    self._gather(stopping)
                    self.drain()
            except Exception:  # the rows stay in the outbox; the next pass or read retries
                failing.failed()
                stopping.wait(0.5)
            else:
                failing.worked()

    def _gather(self, stopping: threading.Event) -> None:
        """Wait until writers have been quiet for :data:`QUIET_S`, at most :data:`GATHER_S` in all (or a stop)."""
        deadline = time.monotonic() + GATHER_S
        while True:
            now = time.monotonic()
            quiet_at = now + QUIET_S if self._writers else self._last_write + QUIET_S
            wait = min(quiet_at, deadline) - now
            if wait <= 0 or stopping.wait(wait):
                return

    # -- rebuilding ------------------------------------------------------------------

    def rebuild(self, *, batch_size: int = 1000, before: Callable[[], None] | None = None,
                progress: Callable[[str, int, int], None] | None = None) -> dict[str, int]:
        """Recreate the indexes (lexical, vectors, graph) from the records, with every writer and the indexer held off.

        Records that can never be indexed (see :meth:`sync_facts`) are skipped and
        quarantined with the reason, never allowed to stop the rebuild.

        Args:
            batch_size: rows read and indexed per batch.
            before: work to do first under the same locks (re-embedding the stored texts).
            progress: called as ``progress(kind, done, total)`` after each batch
                (``kind`` is ``"entities"`` or ``"facts"``).

        Returns:
            Counts of facts and entities indexed, of the lexical index's rows, and of
            the records left out (``left_out``).

        """
        counts = {"facts": 0, "entities": 0}
        with self.exclusive(), self._index_lock:
            self.records.set_meta("rebuild", "pending")  # a crash before the end resumes it on the next open
            if before is not None:
                before()
            with self.records.transaction():
                counts["lexical"] = self.records.rebuild_lexical()
            self.vectors.reset()
            self.graph.reset()
            totals = self.records.table_counts()
            left_out: list[LeftOut] = []
            users = self.records.record_users()
            for kind, table, op in (("entities", "entities", OutboxOp.entity),
                                    ("facts", "facts", lambda u, i: OutboxOp.fact(u, i, FactChange.ADD))):
                ids_iter = self.records.iter_entity_ids if kind == "entities" else self.records.iter_fact_ids
                rows: list[Row] = []  # each user's ids, read under that user; applied batch_size at a time
                for user in users:
                    for ids in ids_iter(user, batch=batch_size):
                        rows += [(None, op(user, i)) for i in ids]
                        if len(rows) >= batch_size:
                            left_out += self._apply_isolated(rows)
                            counts[kind] += len(rows)
                            rows = []
                            if progress is not None:
                                progress(kind, counts[kind], totals[table])
                if rows:
                    left_out += self._apply_isolated(rows)
                    counts[kind] += len(rows)
                    if progress is not None:
                        progress(kind, counts[kind], totals[table])
            with self.records.transaction():
                self.records.clear_quarantine()  # what is left out now is all that stays quarantined
                self._quarantine(left_out)
                self.records.clear_outbox(2**62)  # everything queued is covered by the full sync
            self.records.set_meta("rebuild", "done")
        counts["left_out"] = len(left_out)
        return counts

    def close(self) -> None:
        """Apply what is left, holding off writers; what fails stays queued for the next open.

        When the last pass found an index unavailable (a full disk, a call past its
        deadline) it is not tried again here: closing would wait for it once more, and the
        next open replays the queue anyway.
        """
        with self.exclusive():
            if self.unavailable is not None:
                log.warning("index writes left pending at close: the last index write failed (%s); the next "
                            "open applies them", describe(self.unavailable))
                return
            try:
                self.drain()
            except ZepMemoryError:  # left in the outbox: replayed on the next open
                log.warning("index writes left pending at close", exc_info=True)
