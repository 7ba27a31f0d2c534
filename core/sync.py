"""The one owner of the write step: SQLite first, then Chroma and Kùzu from an outbox.

Every change to memory goes the same way. Inside :meth:`IndexSync.transaction` the
caller writes its records and names the index writes they imply as typed
:class:`OutboxOp` values; both commit in one SQLite transaction. The outbox is then
applied to the vector and graph indexes — by the background indexer, at once
(``index_writes="sync"``, or ``apply_now=True``), or by the next read
(:meth:`IndexSync.catch_up`: read-your-writes) — and cleared. A process that dies
in between leaves the rows behind, and the next open replays them. Applying is
idempotent: the target state of every fact and entity is read from SQLite, so a row
applied twice, or after a crash, ends in the same place.

No row can lock a memory: what can never be indexed (a vector that is NaN or of another
dimension, an edge to an entity that is not stored) is left out and the rest of the
record indexed; a row the index refuses is found by halving its batch. Such rows move
to a quarantine table with the reason, reported by ``check_consistency()``, ``stats()``
and ``zep-memory doctor``, and a rebuild derives the quarantine again from SQLite.

Writers are serialised (the update rules read, then write); applying the outbox has
its own lock, so writers never wait for Chroma or Kùzu. The background indexer gathers
before it applies (:data:`QUIET_S`, :data:`GATHER_S`): a pass costs about the same for
one episode as for many, and a pass that runs beside a writer slows both.
"""

from __future__ import annotations

import enum
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import StoreUnavailableError, ZepMemoryError
from .stores import Stores
from .stores.base import EntityNode, FactEdge
from .stores.record_protocols import SyncRecords
from .stores.records import StoredFact, iso
from .tenant import Tenant
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


class OpKind(str, enum.Enum):
    """What an outbox row asks the indexes to do."""

    ENTITY = "entity"            # index an entity (its graph node)
    FACT = "fact"                # bring one fact's vector and edge in line with SQLite
    FORGET_USER = "forget_user"  # drop everything of a user


class FactChange(str, enum.Enum):
    """What happened to a fact, so that applying it can skip work that cannot be needed."""

    ADD = "add"        # new
    TOUCH = "touch"    # reinforced: same vector, only the edge may change
    RETIRE = "retire"  # superseded: its vector leaves the current facts' collection
    SYNC = "sync"      # unknown (import, old rows): do everything


@dataclass(frozen=True)
class OutboxOp:
    """One pending index write."""

    kind: OpKind
    user_id: str
    ref_id: str | None = None
    change: FactChange | None = None

    def __post_init__(self) -> None:  # the user of a record written (or of a queued row): checked when written
        object.__setattr__(self, "user_id", Tenant.stored(self.user_id))

    @classmethod
    def entity(cls, user_id: str, entity_id: str) -> OutboxOp:
        """Index a new entity."""
        return cls(OpKind.ENTITY, user_id, entity_id)

    @classmethod
    def fact(cls, user_id: str, fact_id: str, change: FactChange = FactChange.SYNC) -> OutboxOp:
        """Bring one fact's vector and edge in line with its row."""
        return cls(OpKind.FACT, user_id, fact_id, change)

    @classmethod
    def forget_user(cls, user_id: str) -> OutboxOp:
        """Drop every vector and node of a user."""
        return cls(OpKind.FORGET_USER, user_id)

    def to_row(self) -> tuple[str, str, str | None, dict | None]:
        """The ``(op, user_id, ref_id, payload)`` the record store keeps."""
        return self.kind.value, self.user_id, self.ref_id, {"change": self.change.value} if self.change else None

    @classmethod
    def from_row(cls, op: str, user_id: str, ref_id: str | None, payload: Mapping[str, Any] | None) -> OutboxOp:
        """Read a stored row back (rows without a change, from older versions, are ``SYNC``)."""
        kind = OpKind(op)
        change = FactChange((payload or {}).get("change", FactChange.SYNC.value)) if kind is OpKind.FACT else None
        return cls(kind, user_id, ref_id, change)


class IndexSync:
    """Commits records with their outbox rows, and applies the outbox to the indexes.

    Args:
        stores: the record store and the two derived indexes.
        apply_at_commit: apply the outbox before a write returns (``index_writes="sync"``);
            otherwise the background indexer or the next read does it.

    """

    def __init__(self, stores: Stores, *, apply_at_commit: bool = False) -> None:
        self.records: SyncRecords = stores.records
        self.vectors, self.graph = stores.vectors, stores.graph
        #: Whether the indexes are copies to keep up to date (Chroma, Kùzu); on PostgreSQL they
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
        """Hold back index writes until the block ends: a bulk write reaches Chroma and Kùzu once.

        Inside, commits still go to SQLite with their outbox rows, but neither the
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
        target state from SQLite. Outside :meth:`deferred`, or with ``index_writes="sync"``
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
        done = 0
        with self._index_lock:
            target = self.records.last_outbox_seq()  # rows committed later wait for the next pass
            while True:
                rows = self.records.pending_outbox(up_to=target, users=users)
                if not rows:
                    self.unavailable = None
                    return done
                batch, unreadable = _parse_rows(rows)
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

    def _forget_users(self, ops: Sequence[OutboxOp]) -> None:
        """Drop forgotten users from both indexes (a failure here is the index's, never the row's)."""
        for user in dict.fromkeys(op.user_id for op in ops):
            self.vectors.drop_user(user)
            self.graph.drop_user(user)
            self.records.clear_quarantine(user)

    def _apply_isolated(self, rows: Sequence[_Row]) -> list[_LeftOut]:
        """Apply entity and fact rows; return those that could not be applied, each with why.

        A batch that fails is split in halves until the failing rows stand alone. A
        failure only counts against the rows while the indexes still answer a read;
        otherwise the index itself is down and nothing is quarantined. A failure of
        SQLite, the system of record, is never a row's fault: it is raised, and so is a
        :class:`~zep_core.StoreUnavailableError` (a full disk, an index that did not answer
        in time), at once, without trying the halves.
        """
        if not rows:
            return []
        try:
            return self._apply(rows)
        except Exception as exc:
            if isinstance(exc, (sqlite3.Error, StoreUnavailableError)) or isinstance(exc.__cause__, sqlite3.Error):
                raise  # the store's failure (SQLite, a full disk, a call that never returned), never the rows'
            if not self._indexes_answer(rows[0][1].user_id):
                raise StoreUnavailableError(
                    f"the vector or graph index does not answer ({_describe(exc)}); the index writes stay queued "
                    "and are retried on the next read or open") from exc
            if len(rows) == 1:
                return [(rows[0], f"the index refused it: {_describe(exc)}; `zep-memory rebuild` retries it")]
        middle = len(rows) // 2
        return self._apply_isolated(rows[:middle]) + self._apply_isolated(rows[middle:])

    def _indexes_answer(self, user_id: str) -> bool:
        """Whether both indexes answer a cheap read (else a failure is theirs, not a row's)."""
        try:
            self.vectors.count(user_id, "current")
            self.graph.related(user_id, "", hops=1, limit=1)
        except Exception:
            return False
        return True

    def _apply(self, rows: Sequence[_Row]) -> list[_LeftOut]:
        by_user: dict[Tenant, list[OutboxOp]] = {}
        for _, op in rows:
            by_user.setdefault(op.user_id, []).append(op)
        entities = {user: [op.ref_id for op in ops if op.kind is OpKind.ENTITY and op.ref_id]
                    for user, ops in by_user.items()}
        changes: dict[Tenant, dict[str, set[FactChange]]] = {}
        for user, ops in by_user.items():
            for op in ops:
                if op.kind is OpKind.FACT and op.ref_id:
                    changes.setdefault(user, {}).setdefault(op.ref_id, set()).add(op.change or FactChange.SYNC)
        left_entities = self.sync_entities(entities)  # every entity first: an edge needs its ends
        left_facts = self.sync_facts(changes) if changes else {}
        out: list[_LeftOut] = []
        for row in rows:
            why = (left_entities if row[1].kind is OpKind.ENTITY else left_facts).get(row[1].ref_id or "")
            if why:
                out.append((row, why))
        return out

    def _quarantine(self, left_out: Sequence[_LeftOut], *, applied: Sequence[OutboxOp] = (),
                    unreadable: Sequence[_Quarantined] = ()) -> None:
        """Record rows that could not be applied (inside a transaction); rows applied fine leave the quarantine."""
        if self.records.quarantine_size():
            bad = {(op.kind.value, op.ref_id) for (_, op), _ in left_out}
            self.records.release_quarantined(
                [key for op in applied if op.ref_id and (key := (op.kind.value, op.ref_id)) not in bad])
        rows = [*unreadable, *((seq, op.kind.value, op.user_id, op.ref_id or "", op.to_row()[3], why)
                               for (seq, op), why in left_out)]
        for _, op_name, user, ref, _, why in rows:
            log.warning("index write %s %s of user %r quarantined: %s", op_name, ref, user, why)
        if rows:
            self.records.quarantine_outbox(rows)

    def _dimension(self) -> int | None:
        """The dimension of the embedder the stored vectors were made with (None: not recorded)."""
        identity = self.records.get_meta("embedder") or ""
        dim = identity.rpartition("|")[2]
        return int(dim) if dim.isdigit() else None

    def sync_entities(self, ids: Mapping[Tenant, Sequence[str]]) -> dict[str, str]:
        """Make the graph index hold these entities (by user) as SQLite has them.

        An entity is a node of the graph and nothing in the vector index: nothing read
        entity-name vectors there, so they are no longer written (SQLite keeps each
        name's vector, exported with the user).

        Returns:
            Entities that could not be indexed, each with why (none: a node always can be).

        """
        rows = [row for user, mine in ids.items() if mine
                for row in self.records.entity_rows(user, list(dict.fromkeys(mine)))]  # each user's, under them
        if rows:  # one graph write for every user's: a write costs the graph milliseconds, whatever its size
            self.graph.upsert_entities(EntityNode(e.id, e.user_id, e.name, e.entity_type) for e, _ in rows)
        return {}

    def sync_facts(self, changes: Mapping[Tenant, Mapping[str, set[FactChange]]]) -> dict[str, str]:
        """Make Chroma and Kùzu hold each fact (by user) as SQLite has it now.

        Chroma holds the vectors of current facts only: a retired fact's vector leaves it
        (``as_of`` finds superseded facts in SQLite). The change only says which work can
        be skipped (a reinforced fact keeps its vector). Facts of a forgotten
        user are gone from SQLite: skipped. What cannot be indexed — a vector that is
        not finite or not of the embedder's dimension, an edge to an entity that is not
        stored — is left out, and the rest of the fact indexed.

        Each user's facts and entities are read under that user; the graph is written once
        for all of them.

        Returns:
            Facts left out (wholly or in part), each with why.

        """
        dimension = self._dimension()
        upserts: dict[tuple[str, str], list[tuple[str, np.ndarray]]] = {}
        deletes: dict[tuple[str, str], list[str]] = {}
        edges: list[FactEdge] = []
        left_out: dict[str, str] = {}
        for user, mine in changes.items():
            stored = self.records.stored_facts(user, list(mine))
            known = self.records.known_ids(user, "entities",
                                           [i for s in stored.values() for i in (s.subject_id, s.object_id) if i])
            for fid, kinds in mine.items():
                s = stored.get(fid)
                if s is not None:
                    self._fact_writes(s, kinds, known, dimension, upserts, deletes, edges, left_out)
        for (user, kind), ids in deletes.items():
            self.vectors.delete(user, kind, ids)
        for (user, kind), items in upserts.items():
            self.vectors.upsert(user, kind, [i for i, _ in items], np.stack([v for _, v in items]))
        if edges:
            self.graph.upsert_facts(edges)
        return left_out

    @staticmethod
    def _fact_writes(s: StoredFact, kinds: set[FactChange], known: set[str], dimension: int | None,
                     upserts: dict[tuple[str, str], list[tuple[str, np.ndarray]]],
                     deletes: dict[tuple[str, str], list[str]], edges: list[FactEdge],
                     left_out: dict[str, str]) -> None:
        """What one stored fact needs of the indexes, added to the writes (or to what is left out, with why)."""
        f, fid = s.fact, s.fact.id
        if f.is_current and kinds != {FactChange.TOUCH}:
            why = unusable_vector(s.embedding, dimension)
            if why:
                left_out[fid] = _vector_left_out(why)
            else:
                upserts.setdefault((f.user_id, "current"), []).append((fid, s.embedding))
        if not f.is_current and kinds & {FactChange.RETIRE, FactChange.SYNC}:
            deletes.setdefault((f.user_id, "current"), []).append(fid)
        gone = [f"{role} entity {eid!r}" for role, eid in (("subject", s.subject_id), ("object", s.object_id))
                if eid and eid not in known]
        if gone:
            left_out[fid] = "; ".join(filter(None, [left_out.get(fid), (
                f"its {' and '.join(gone)} is not stored for user {f.user_id!r}, so its graph edge is left "
                "out; import the user again from a corrected export, or forget it")]))
        elif s.object_id:
            edges.append(FactEdge(fid, f.user_id, s.subject_id, s.object_id, f.predicate,
                                  iso(f.valid_from), iso(f.valid_until), f.is_current))

    # -- rebuilding ------------------------------------------------------------------

    def rebuild(self, *, batch_size: int = 1000, before: Callable[[], None] | None = None,
                progress: Callable[[str, int, int], None] | None = None) -> dict[str, int]:
        """Recreate the indexes (lexical, vectors, graph) from SQLite, with every writer and the indexer held off.

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
            left_out: list[_LeftOut] = []
            users = self.records.record_users()
            for kind, table, op in (("entities", "entities", OutboxOp.entity),
                                    ("facts", "facts", lambda u, i: OutboxOp.fact(u, i, FactChange.ADD))):
                ids_iter = self.records.iter_entity_ids if kind == "entities" else self.records.iter_fact_ids
                rows: list[_Row] = []  # each user's ids, read under that user; applied batch_size at a time
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
                            "open applies them", _describe(self.unavailable))
                return
            try:
                self.drain()
            except ZepMemoryError:  # left in the outbox: replayed on the next open
                log.warning("index writes left pending at close", exc_info=True)


_Row = tuple[int | None, OutboxOp]        # (outbox seq, or None in a rebuild; the op)
_LeftOut = tuple[_Row, str]               # a row that could not be applied, and why
_Quarantined = tuple[int | None, str, str, str, dict[str, Any] | None, str]  # seq, op, user, ref, payload, why


def unusable_vector(vector: np.ndarray, dimension: int | None) -> str | None:
    """Why a stored vector cannot go into the vector index, or None when it can."""
    if vector.ndim != 1 or (dimension is not None and vector.shape[0] != dimension):
        return f"has {vector.size} dimensions, not the {dimension} of this memory's embedder"
    if not np.isfinite(vector).all():
        return "holds NaN or infinite values"
    return None


def _vector_left_out(why: str) -> str:
    return (f"its stored vector {why}, so it is left out of the vector index; "
            "`zep-memory rebuild --reembed` embeds the stored texts again")


def _describe(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:500]


def _parse_rows(rows: Sequence[tuple[int, str, str, str | None, dict | None]],
                ) -> tuple[list[_Row], list[_Quarantined]]:
    """Outbox rows as ops; a row this version cannot read is set aside at once, as it was stored."""
    parsed: list[_Row] = []
    unreadable: list[_Quarantined] = []
    for seq, op, user, ref, payload in rows:
        try:
            parsed.append((seq, OutboxOp.from_row(op, user, ref, payload)))
        except (ValueError, TypeError, AttributeError) as exc:
            unreadable.append((seq, str(op), str(user), ref or f"outbox row {seq}", payload,
                               f"this version of zep-memory cannot read the index write ({_describe(exc)})"))
    return parsed, unreadable
