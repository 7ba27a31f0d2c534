"""A vector index and a graph index in dicts: doubles of the index seams, as :mod:`.memory_records` is of the records.

:class:`MemoryVectorIndex` searches by brute-force cosine; :class:`MemoryGraphIndex` walks its
edges breadth first. Each answers its Protocol of :mod:`zep_core.stores.base` and nothing
more (no Cypher: ``Memory.cypher`` builds its own graph from the records). Each keeps its data
in a ``shelf``, a dict it is given: an index opened again on the same shelf finds what the
closed one held, as a reopened folder does.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from zep_core.errors import StoreError
from zep_core.stores.base import EntityNode, FactEdge


class MemoryVectorIndex:
    """:class:`~zep_core.stores.base.VectorIndex` over ``{(user, kind): {id: unit vector}}``, searched exactly."""

    def __init__(self, shelf: dict[str, Any] | None = None) -> None:
        self.shelf = {} if shelf is None else shelf
        self.vectors: dict[tuple[str, str], dict[str, np.ndarray]] = self.shelf.setdefault("vectors", {})

    def upsert(self, user_id: str, kind: str, ids: Sequence[str], vectors: np.ndarray) -> None:
        """Insert or replace vectors (normalised, so a dot product is the cosine)."""
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or len(ids) != len(vectors):
            raise StoreError(f"vector upsert needs one vector per id: {len(ids)} ids, vectors of shape {vectors.shape}")
        stored = self.vectors.setdefault((user_id, kind), {})
        for i, v in zip(ids, vectors):
            norm = float(np.linalg.norm(v))
            stored[i] = v / norm if norm else v

    def delete(self, user_id: str, kind: str, ids: Sequence[str]) -> None:
        """Remove ids; missing ones are ignored."""
        stored = self.vectors.get((user_id, kind), {})
        for i in ids:
            stored.pop(i, None)

    def query(self, user_id: str, kind: str, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        """Up to ``k`` ``(id, cosine)``, best first; ties keep the order the ids were first stored in."""
        stored = self.vectors.get((user_id, kind), {})
        if k <= 0 or not stored:
            return []
        query = np.asarray(vector, dtype=np.float32)
        query = query / (float(np.linalg.norm(query)) or 1.0)
        scores = np.stack(list(stored.values())) @ query
        best = sorted(range(len(scores)), key=lambda n: -scores[n])[:k]
        ids = list(stored)
        return [(ids[n], float(scores[n])) for n in best]

    def ids(self, user_id: str, kind: str) -> set[str]:
        """Every id stored for a user and kind."""
        return set(self.vectors.get((user_id, kind), {}))

    def count(self, user_id: str, kind: str) -> int:
        """How many vectors a user and kind hold."""
        return len(self.vectors.get((user_id, kind), {}))

    def drop_user(self, user_id: str) -> None:
        """Remove every kind of a user."""
        for k in [k for k in self.vectors if k[0] == user_id]:
            del self.vectors[k]

    def reset(self) -> None:
        """Remove everything."""
        self.vectors.clear()

    def close(self) -> None:
        """Nothing to release: the shelf keeps the data."""


class MemoryGraphIndex:
    """:class:`~zep_core.stores.base.GraphIndex` over entity nodes by id and FACT edges by ``(fact, subject, object)``.

    As Kùzu keeps them: a node id is stored once (the first upsert wins); an edge whose
    subject or object is not stored is left out.
    """

    def __init__(self, shelf: dict[str, Any] | None = None) -> None:
        self.shelf = {} if shelf is None else shelf
        self.nodes: dict[str, EntityNode] = self.shelf.setdefault("nodes", {})
        self.edges: dict[tuple[str, str, str], FactEdge] = self.shelf.setdefault("edges", {})

    def upsert_entities(self, nodes: Iterable[EntityNode]) -> None:
        """Insert the nodes that are missing."""
        for n in nodes:
            self.nodes.setdefault(n.id, n)

    def upsert_facts(self, edges: Iterable[FactEdge]) -> None:
        """Insert or replace edges between two stored nodes."""
        for e in edges:
            if e.subject_id in self.nodes and e.object_id in self.nodes:
                self.edges[(e.fact_id, e.subject_id, e.object_id)] = e

    def delete_facts(self, edges: Iterable[tuple[str, str, str]]) -> None:
        """Delete edges by ``(fact_id, subject_id, object_id)``; missing ones are ignored."""
        for k in edges:
            self.edges.pop(tuple(k), None)

    def neighbours(
        self, user_id: str, entity_ids: Sequence[str], *, as_of: str | None = None, limit: int = 200
    ) -> set[str]:
        """Entities one hop from the user's ``entity_ids`` over current (or as-of) edges (as Kùzu's; no Protocol's)."""
        start, found = set(entity_ids), {}
        for e in self.edges.values():
            if _holds(e, as_of):
                for a, b in ((e.subject_id, e.object_id), (e.object_id, e.subject_id)):
                    if a in start and self.nodes[a].user_id == user_id and b not in start:
                        found[b] = None
        return set(list(found)[:limit])

    def related(self, user_id: str, entity_id: str, *, hops: int = 2, limit: int = 10) -> list[str]:
        """Distinct entities of the user ``1..hops`` away over edges of any validity: nearest first, then by name."""
        start = self.nodes.get(entity_id)
        if start is None or start.user_id != user_id or hops < 1 or limit <= 0:
            return []
        around: dict[str, set[str]] = {}
        for e in self.edges.values():
            around.setdefault(e.subject_id, set()).add(e.object_id)
            around.setdefault(e.object_id, set()).add(e.subject_id)
        depth, frontier = {entity_id: 0}, {entity_id}
        for step in range(1, hops + 1):
            frontier = {n for f in frontier for n in around.get(f, ()) if n in self.nodes} - depth.keys()
            depth.update(dict.fromkeys(frontier, step))
        found = [self.nodes[n] for n in depth if n != entity_id and self.nodes[n].user_id == user_id]
        return [n.id for n in sorted(found, key=lambda n: (depth[n.id], n.name, n.id))][:limit]

    def snapshot(self, user_id: str | None = None) -> tuple[set[str], dict[str, bool]]:
        """Entity ids and ``{fact_id: current}`` of one user, or of all (None)."""
        nodes = {i for i, n in self.nodes.items() if user_id in (None, n.user_id)}
        edges = {
            e.fact_id: e.current
            for e in self.edges.values()
            if user_id is None or getattr(self.nodes.get(e.subject_id), "user_id", None) == user_id
        }
        return nodes, edges

    def drop_user(self, user_id: str) -> None:
        """Remove a user's edges, then their nodes."""
        for k in [k for k, e in self.edges.items() if e.user_id == user_id]:
            del self.edges[k]
        for i in [i for i, n in self.nodes.items() if n.user_id == user_id]:
            del self.nodes[i]

    def reset(self) -> None:
        """Remove every node and edge."""
        self.edges.clear()
        self.nodes.clear()

    def close(self) -> None:
        """Nothing to release: the shelf keeps the data."""


def _holds(edge: FactEdge, as_of: str | None) -> bool:
    """Whether the edge's fact is current (``as_of`` None) or held at ``as_of`` (ISO times: string order is time)."""
    if as_of is None:
        return edge.current
    return edge.valid_from <= as_of and (edge.valid_until is None or edge.valid_until > as_of)
