"""Applying the outbox: the indexes brought in line with the record store, a failing row set apart from the rest.

:class:`IndexApplier` is the half of :class:`~zep_core.sync.IndexSync` that writes the
indexes. Applying is idempotent: the target state of every fact and entity is read
from the record store (:meth:`IndexApplier.sync_facts`, :meth:`IndexApplier.sync_entities`), so a
row applied twice, or after a crash, ends in the same place.

No row can lock a memory: what can never be indexed (a vector that is NaN or of another
dimension, :func:`unusable_vector`; an edge to an entity that is not stored) is left out
and the rest of the record indexed; a row the index refuses is found by halving its
batch (:meth:`IndexApplier._apply_isolated`). Such rows move to a quarantine table with
the reason. A failure of the record store, or of an index that does not answer at all, is
never a row's: it is raised, and the rows stay queued.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import numpy as np

from .errors import RecordStoreError, StoreUnavailableError
from .outbox import FactChange, LeftOut, OpKind, OutboxOp, Quarantined, Row, describe
from .stores import Stores
from .stores.base import EntityNode, FactEdge
from .stores.record_protocols import SyncRecords
from .stores.rows import StoredFact, iso
from .tenant import Tenant

__all__ = ["IndexApplier", "unusable_vector"]

log = logging.getLogger("zep_core")


class IndexApplier:
    """Applies outbox rows to the vector and graph indexes of ``stores``, reading what to write from the records."""

    def __init__(self, stores: Stores) -> None:
        self.records: SyncRecords = stores.records
        self.vectors, self.graph = stores.vectors, stores.graph

    def _forget_users(self, ops: Sequence[OutboxOp]) -> None:
        """Drop forgotten users from both indexes (a failure here is the index's, never the row's)."""
        for user in dict.fromkeys(op.user_id for op in ops):
            self.vectors.drop_user(user)
            self.graph.drop_user(user)
            self.records.clear_quarantine(user)

    def _apply_isolated(self, rows: Sequence[Row]) -> list[LeftOut]:
        """Apply entity and fact rows; return those that could not be applied, each with why.

        A batch that fails is split in halves until the failing rows stand alone. A
        failure only counts against the rows while the indexes still answer a read;
        otherwise the index itself is down and nothing is quarantined. A failure of
        the record store, the system of record (a :class:`~zep_core.errors.RecordStoreError`,
        whatever its backend), is never a row's fault: it is raised, and so is a
        :class:`~zep_core.StoreUnavailableError` (a full disk, an index that did not answer
        in time), at once, without trying the halves.
        """
        if not rows:
            return []
        try:
            return self._apply(rows)
        except Exception as exc:
            if isinstance(exc, (RecordStoreError, StoreUnavailableError)):
                raise  # the store's (the record store, a full disk, a call that never returned), never the rows'
            if not self._indexes_answer(rows[0][1].user_id):
                raise StoreUnavailableError(
                    f"the vector or graph index does not answer ({describe(exc)}); the index writes stay queued "
                    "and are retried on the next read or open") from exc
            if len(rows) == 1:
                return [(rows[0], f"the index refused it: {describe(exc)}; `zep-memory rebuild` retries it")]
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

    def _apply(self, rows: Sequence[Row]) -> list[LeftOut]:
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
        out: list[LeftOut] = []
        for row in rows:
            why = (left_entities if row[1].kind is OpKind.ENTITY else left_facts).get(row[1].ref_id or "")
            if why:
                out.append((row, why))
        return out

    def _quarantine(self, left_out: Sequence[LeftOut], *, applied: Sequence[OutboxOp] = (),
                    unreadable: Sequence[Quarantined] = ()) -> None:
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
        """Make the graph index hold these entities (by user) as the record store has them.

        An entity is a node of the graph and nothing in the vector index: nothing read
        entity-name vectors there, so they are no longer written (the record store keeps each
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
        """Make the vector and graph indexes hold each fact (by user) as the record store has it now.

        The vector index holds the vectors of current facts only: a retired fact's vector leaves it
        (``as_of`` finds superseded facts in the record store). The change only says which work can
        be skipped (a reinforced fact keeps its vector). Facts of a forgotten
        user are gone from the record store: skipped. What cannot be indexed — a vector that is
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
