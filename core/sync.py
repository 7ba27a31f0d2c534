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

Writers are serialised (the update rules read, then write); applying the outbox has
its own lock, so writers never wait for Chroma or Kùzu.
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import ZepMemoryError
from .stores import Stores
from .stores.base import EntityNode, FactEdge
from .stores.records import iso

__all__ = ["FactChange", "IndexSync", "OpKind", "OutboxOp"]

log = logging.getLogger("zep_core")


class OpKind(str, enum.Enum):
    """What an outbox row asks the indexes to do."""

    ENTITY = "entity"            # index an entity (node + name vector)
    FACT = "fact"                # bring one fact's vector and edge in line with SQLite
    FORGET_USER = "forget_user"  # drop everything of a user


class FactChange(str, enum.Enum):
    """What happened to a fact, so that applying it can skip work that cannot be needed."""

    ADD = "add"        # new: never in the history collection
    TOUCH = "touch"    # reinforced: same vector, only the edge may change
    RETIRE = "retire"  # superseded: moves from the current collection to the history one
    SYNC = "sync"      # unknown (import, old rows): do everything


@dataclass(frozen=True)
class OutboxOp:
    """One pending index write."""

    kind: OpKind
    user_id: str
    ref_id: str | None = None
    change: FactChange | None = None

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
        self.records, self.vectors, self.graph = stores.records, stores.vectors, stores.graph
        self.apply_at_commit = apply_at_commit
        self._write_lock = threading.RLock()  # writers: the update rules read, then write
        self._index_lock = threading.RLock()  # one outbox drain at a time; writers don't wait for it
        self._wakeup = threading.Event()
        self._depth = 0            # nesting of exclusive() in the thread holding the write lock
        self._pending = False      # ops committed inside the outermost exclusive()
        self._apply_now = False
        self._versions: dict[str, int] = {}  # user -> number of the last committed write naming it
        self._written = 0

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
                if pending:  # the indexer (or the next read) applies them, whatever happens next
                    self._wakeup.set()
        if pending and (apply_now or self.apply_at_commit):
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
                self.records.add_outbox([op.to_row() for op in ops])
            for user in {op.user_id for op in ops}:
                self._written += 1
                self._versions[user] = self._written
            if ops:
                self._pending = True
                self._apply_now = self._apply_now or apply_now

    def version(self, user_id: str) -> int:
        """Changes whenever a write naming ``user_id`` commits (in this process; one process owns a folder)."""
        return self._versions.get(user_id, 0)

    # -- applying --------------------------------------------------------------------

    def drain(self) -> int:
        """Apply every index write committed so far; return how many rows were applied."""
        done = 0
        with self._index_lock:
            target = self.records.last_outbox_seq()  # rows committed later wait for the next pass
            while True:
                rows = self.records.pending_outbox(up_to=target)
                if not rows:
                    return done
                self._apply([OutboxOp.from_row(*row[1:]) for row in rows])
                self.records.clear_outbox(rows[-1][0])
                done += len(rows)

    def catch_up(self) -> None:
        """Read-your-writes: apply queued index writes before a read that uses the indexes."""
        if self.records.outbox_size():
            self.drain()

    def wake(self) -> None:
        """Wake the background indexer (also used to stop it promptly)."""
        self._wakeup.set()

    def run_indexer(self, stopping: threading.Event) -> None:
        """The background indexer: apply committed writes, many episodes per batch, until stopped."""
        while not stopping.is_set():
            self._wakeup.wait(timeout=1.0)
            self._wakeup.clear()
            if stopping.is_set():
                return
            try:
                self.drain()
            except Exception:  # the rows stay in the outbox; the next pass or read retries
                log.exception("background index write failed; will retry")
                stopping.wait(0.5)

    def _apply(self, ops: Sequence[OutboxOp]) -> None:
        for user in {op.user_id for op in ops if op.kind is OpKind.FORGET_USER}:
            self.vectors.drop_user(user)
            self.graph.drop_user(user)
        self.sync_entities([op.ref_id for op in ops if op.kind is OpKind.ENTITY and op.ref_id])
        changes: dict[str, set[FactChange]] = {}
        for op in ops:
            if op.kind is OpKind.FACT and op.ref_id:
                changes.setdefault(op.ref_id, set()).add(op.change or FactChange.SYNC)
        self.sync_facts(changes)

    def sync_entities(self, ids: Sequence[str]) -> None:
        """Make both indexes hold these entities as SQLite has them."""
        rows = self.records.entity_rows(list(dict.fromkeys(ids)))
        if not rows:
            return
        self.graph.upsert_entities(EntityNode(e.id, e.user_id, e.name, e.entity_type) for e, _ in rows)
        by_user: dict[str, list[tuple[str, np.ndarray]]] = {}
        for e, v in rows:
            by_user.setdefault(e.user_id, []).append((e.id, v))
        for user, items in by_user.items():
            self.vectors.upsert(user, "entity", [i for i, _ in items], np.stack([v for _, v in items]))

    def sync_facts(self, changes: Mapping[str, set[FactChange]]) -> None:
        """Make Chroma and Kùzu hold each fact as SQLite has it now.

        The change only says which work can be skipped (a new fact was never in the
        history collection, a reinforced fact keeps its vector). Facts of a forgotten
        user are gone from SQLite: skipped.
        """
        if not changes:
            return
        stored = self.records.stored_facts(list(changes))
        upserts: dict[tuple[str, str], list[tuple[str, np.ndarray]]] = {}
        deletes: dict[tuple[str, str], list[str]] = {}
        edges: list[FactEdge] = []
        for fid, kinds in changes.items():
            s = stored.get(fid)
            if s is None:
                continue
            f = s.fact
            keep, drop = ("current", "history") if f.is_current else ("history", "current")
            if kinds != {FactChange.TOUCH}:
                upserts.setdefault((f.user_id, keep), []).append((fid, s.embedding))
            if kinds & {FactChange.RETIRE, FactChange.SYNC}:
                deletes.setdefault((f.user_id, drop), []).append(fid)
            if s.object_id:
                edges.append(FactEdge(fid, f.user_id, s.subject_id, s.object_id, f.predicate,
                                      iso(f.valid_from), iso(f.valid_until), f.is_current))
        for (user, kind), ids in deletes.items():
            self.vectors.delete(user, kind, ids)
        for (user, kind), items in upserts.items():
            self.vectors.upsert(user, kind, [i for i, _ in items], np.stack([v for _, v in items]))
        if edges:
            self.graph.upsert_facts(edges)

    # -- rebuilding ------------------------------------------------------------------

    def rebuild(self, *, batch_size: int = 1000, before: Callable[[], None] | None = None) -> dict[str, int]:
        """Recreate the indexes (lexical, vectors, graph) from SQLite, with every writer and the indexer held off.

        Args:
            batch_size: rows read and indexed per batch.
            before: work to do first under the same locks (re-embedding the stored texts).

        Returns:
            Counts of facts and entities indexed, and of the lexical index's rows.

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
            for ids in self.records.iter_entity_ids(batch=batch_size):
                self.sync_entities(ids)
                counts["entities"] += len(ids)
            for ids in self.records.iter_fact_ids(batch=batch_size):
                self.sync_facts({i: {FactChange.ADD} for i in ids})
                counts["facts"] += len(ids)
            self.records.clear_outbox(2**62)  # everything queued is covered by the full sync
            self.records.set_meta("rebuild", "done")
        return counts

    def close(self) -> None:
        """Apply what is left, holding off writers; what fails stays queued for the next open."""
        with self.exclusive():
            try:
                self.drain()
            except ZepMemoryError:  # left in the outbox: replayed on the next open
                log.warning("index writes left pending at close", exc_info=True)
