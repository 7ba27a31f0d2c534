"""The seams between the domain code and the derived indexes.

SQLite is the system of record (``records.py``); the vector index and the graph
index are derived from it and can be rebuilt. Each index plugs in through a small
protocol, so Chroma can be swapped for a Chroma server and Kùzu for its fork or a
server graph without the domain code asking which backend it has. What each consumer
needs of the record store is a Protocol of its own (:mod:`zep_core.stores.record_protocols`,
re-exported here).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from .record_protocols import (
    FacadeRecords,
    GraphRecords,
    IngestRecords,
    MaintenanceRecords,
    RetrievalRecords,
    SessionRecords,
    SyncRecords,
    TransferRecords,
    VectorTierRecords,
)

__all__ = ["EntityNode", "FactEdge", "GraphIndex", "VectorIndex", "VECTOR_KINDS", "RETIRED_VECTOR_KINDS",
           "FacadeRecords", "GraphRecords", "IngestRecords", "MaintenanceRecords", "RetrievalRecords", "SessionRecords",
           "SyncRecords", "TransferRecords", "VectorTierRecords"]

#: Collections kept per user: current facts, the hot path. Superseded facts are searched for
#: ``as_of`` in SQLite, where their vectors are kept anyway (``RecordStore.history_search``).
VECTOR_KINDS = ("current",)
#: Kinds older versions kept and nothing reads any more: entity-name vectors, and the
#: per-user collection of superseded facts (an HNSW index held in memory for each user, for
#: the rare ``as_of`` query). Dropped with a user, by a reset, and once from a folder that
#: still has them.
RETIRED_VECTOR_KINDS = ("entity", "history")


@runtime_checkable
class VectorIndex(Protocol):
    """Nearest-neighbour search over unit vectors, partitioned by user and kind.

    An index may also offer ``prepare(user_id, kind)``: :meth:`query` in two steps, the
    reads that need no query vector done at once and a function of ``(vector, k)`` returned
    (:meth:`~zep_core.stores.tiered.TieredVectorIndex.prepare`). Retrieval then reads while
    the question is embedded; without it, it queries once the vector is there.
    """

    def upsert(self, user_id: str, kind: str, ids: Sequence[str], vectors: np.ndarray) -> None:
        """Insert or replace vectors; idempotent."""
        ...

    def delete(self, user_id: str, kind: str, ids: Sequence[str]) -> None:
        """Remove ids; missing ids are ignored."""
        ...

    def query(self, user_id: str, kind: str, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        """Return up to ``k`` ``(id, cosine similarity)`` pairs, best first."""
        ...

    def ids(self, user_id: str, kind: str) -> set[str]:
        """Every id stored for a user and kind (for consistency checks)."""
        ...

    def count(self, user_id: str, kind: str) -> int:
        """How many vectors are stored for a user and kind (without reading them)."""
        ...

    def drop_user(self, user_id: str) -> None:
        """Remove everything stored for a user."""
        ...

    def reset(self) -> None:
        """Remove everything (before a rebuild)."""
        ...

    def close(self) -> None:
        """Release the index (the data stays)."""
        ...


@dataclass(frozen=True)
class EntityNode:
    """An Entity node as the graph keeps it."""

    id: str
    user_id: str
    name: str
    entity_type: str


@dataclass(frozen=True)
class FactEdge:
    """A FACT relationship: one fact whose object is an entity."""

    fact_id: str
    user_id: str
    subject_id: str
    object_id: str
    predicate: str
    valid_from: str
    valid_until: str | None
    current: bool


@runtime_checkable
class GraphIndex(Protocol):
    """Entity nodes and FACT relationships, for hops and read-only Cypher."""

    def upsert_entities(self, nodes: Iterable[EntityNode]) -> None:
        """Insert or update nodes; idempotent."""
        ...

    def upsert_facts(self, edges: Iterable[FactEdge]) -> None:
        """Insert or update relationships keyed by fact id; idempotent."""
        ...

    def delete_facts(self, edges: Iterable[tuple[str, str, str]]) -> None:
        """Delete relationships given ``(fact_id, subject_id, object_id)``."""
        ...

    def related(self, user_id: str, entity_id: str, *, hops: int = 2, limit: int = 10) -> list[str]:
        """Distinct entity ids within ``1..hops`` hops, excluding the start."""
        ...

    def snapshot(self, user_id: str | None = None) -> tuple[set[str], dict[str, bool]]:
        """Entity ids and ``{fact_id: current}`` stored (for consistency checks)."""
        ...

    def drop_user(self, user_id: str) -> None:
        """Remove a user's nodes and relationships."""
        ...

    def reset(self) -> None:
        """Remove everything (before a rebuild)."""
        ...

    def close(self) -> None:
        """Release the database."""
        ...
