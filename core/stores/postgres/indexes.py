"""The vector and graph indexes on PostgreSQL: the record tables themselves, read through the two Protocols.

With SQLite the vectors and the graph are derived stores (Chroma, Kùzu), written after the
records by the outbox and rebuilt from them. On PostgreSQL they need no copy: a fact row
holds its vector (pgvector) and its two entity ids, so the facts table *is* the edge table
and the current facts' vectors *are* the vector index, committed in the same transaction as
the records, never behind them. :class:`PgVectorIndex` and :class:`PgGraphIndex` answer
:class:`~zep_core.stores.base.VectorIndex` and :class:`~zep_core.stores.base.GraphIndex`
from those rows, under the tenant's row-level security; their writes (what the outbox
applies) have nothing left to do.

- Vectors: an exact search over the tenant's current facts (pgvector's inner product over
  unit vectors: the cosine), in the database; for a tenant with an HNSW index of their own
  (:mod:`.hnsw`: the large ones), an approximate search by that index.
- Graph: ``related`` walks the tenant's facts between two entities, both ways and of any
  validity, with a recursive CTE, nearest first, then by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from ...tenant import Tenant
from ..base import EntityNode, FactEdge
from .connection import STORE
from .hnsw import EF_SEARCH, HnswIndexes, approximate_query
from .schema import CURRENT as _CURRENT

#: What a tenant's search reads: their copy when they have an HNSW index (any state), else their current facts.
_SEARCHED = f"""
SELECT {{what}} FROM ann_vectors WHERE user_id = %(u)s AND EXISTS (SELECT 1 FROM vector_tiers WHERE user_id = %(u)s)
UNION ALL
SELECT {{what}} FROM facts WHERE user_id = %(u)s AND {_CURRENT}
    AND NOT EXISTS (SELECT 1 FROM vector_tiers WHERE user_id = %(u)s)"""


class PgVectorIndex:
    """:class:`~zep_core.stores.base.VectorIndex` over the current facts' stored vectors (exact, or HNSW when large).

    Args:
        records: the :class:`~zep_core.stores.postgres.PgRecordStore` (its connection and tenant scoping).
        hnsw: the large tenants' HNSW indexes; None searches every tenant exactly.

    """

    def __init__(self, records: object, hnsw: HnswIndexes | None = None) -> None:
        self.records = records
        self.hnsw = hnsw

    def upsert(self, user_id: str, kind: str, ids: Sequence[str], vectors: np.ndarray) -> None:
        """Nothing to do: a fact's vector is written with its row."""
        if len(ids) != len(vectors):
            raise ValueError(f"{len(ids)} ids for {len(vectors)} vectors")

    def delete(self, user_id: str, kind: str, ids: Sequence[str]) -> None:
        """Nothing to do: a fact leaves the search when it stops being current."""

    def query(self, user_id: str, kind: str, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        """Up to ``k`` ``(fact id, cosine similarity)`` of the tenant's current facts, best first."""
        if k <= 0:
            return []
        tenant = Tenant.of(user_id)
        query = np.asarray(vector, dtype=np.float32)
        if self.hnsw is not None and self.hnsw.ready(tenant):
            rows = self.records._rows_tuned(
                tenant, {"hnsw.ef_search": str(min(max(EF_SEARCH, k), 1000)), "hnsw.iterative_scan": "strict_order"},
                approximate_query(self.records._psycopg, tenant, len(query)), [query, query, k])
            return [(fid, float(score)) for fid, score in rows]
        if self.hnsw is not None:
            self.hnsw.searched(tenant)
        rows = self.records._rows(tenant, "SELECT id, -(embedding <#> %s) AS score FROM facts WHERE user_id = %s "
                                          f"AND {_CURRENT} AND vector_dims(embedding) = %s "
                                          "ORDER BY embedding <#> %s, rowid LIMIT %s",
                                  [query, tenant, len(query), query, k])
        return [(fid, float(score)) for fid, score in rows]

    def ids(self, user_id: str, kind: str) -> set[str]:
        """The ids the search reads: a tenant's current facts, or the copy kept for their HNSW index (:mod:`.hnsw`).

        The copy is what ``check_consistency`` compares with the current facts: a write that
        skipped it, or a build a crash cut off, shows as ids missing or stale.
        """
        tenant = Tenant.of(user_id)
        return {r[0] for r in self.records._rows(tenant, _SEARCHED.format(what="id"), {"u": tenant})}

    def count(self, user_id: str, kind: str) -> int:
        """How many ids the search reads (see :meth:`ids`)."""
        tenant = Tenant.of(user_id)
        return sum(r[0] for r in self.records._rows(tenant, _SEARCHED.format(what="count(*)"), {"u": tenant}))

    def drop_user(self, user_id: str) -> None:
        """Nothing to do: the tenant's rows go with :meth:`PgRecordStore.delete_user`."""

    def reset(self) -> None:
        """Drop the large tenants' HNSW indexes (a rebuild: the vectors may have changed); they are built again."""
        if self.hnsw is not None:
            self.hnsw.drop_all()

    def close(self) -> None:
        """Stop the HNSW builds (the record store owns the connection)."""
        if self.hnsw is not None:
            self.hnsw.close()


class PgGraphIndex:
    """:class:`~zep_core.stores.base.GraphIndex` over the entities and the facts between two of them."""

    def __init__(self, records: object) -> None:
        self.records = records

    def upsert_entities(self, nodes: Iterable[EntityNode]) -> None:
        """Nothing to do: an entity's row is its node."""

    def upsert_facts(self, edges: Iterable[FactEdge]) -> None:
        """Nothing to do: a fact's row is its edge."""

    def delete_facts(self, edges: Iterable[tuple[str, str, str]]) -> None:
        """Nothing to do: a fact's edge goes with its row."""

    def related(self, user_id: str, entity_id: str, *, hops: int = 2, limit: int = 10) -> list[str]:
        """Distinct entity ids within ``1..hops`` hops over the tenant's facts (any validity, either way).

        Nearest first, then by name; the start never comes back. Only edges between two of
        the tenant's entities count, as in the graph the SQLite store derives.
        """
        if hops < 1 or limit <= 0 or not entity_id:
            return []
        tenant = Tenant.of(user_id)
        rows = self.records._rows(tenant, """
WITH RECURSIVE edges(a, b) AS (
    SELECT f.subject_id, f.object_id FROM facts f
    JOIN entities s ON s.user_id = f.user_id AND s.id = f.subject_id
    JOIN entities o ON o.user_id = f.user_id AND o.id = f.object_id
    WHERE f.user_id = %(u)s AND f.subject_id <> f.object_id),
walk(id, depth) AS (
    SELECT %(e)s::text, 0 WHERE EXISTS (SELECT 1 FROM entities WHERE user_id = %(u)s AND id = %(e)s)
    UNION
    SELECT CASE WHEN e.a = w.id THEN e.b ELSE e.a END, w.depth + 1
    FROM walk w JOIN edges e ON w.id IN (e.a, e.b) WHERE w.depth < %(hops)s)
SELECT w.id FROM (SELECT id, min(depth) AS depth FROM walk WHERE id <> %(e)s GROUP BY id) w
JOIN entities n ON n.user_id = %(u)s AND n.id = w.id
ORDER BY w.depth, n.name, w.id LIMIT %(n)s""", {"u": tenant, "e": entity_id, "hops": hops, "n": limit})
        return [r[0] for r in rows]

    def snapshot(self, user_id: str | None = None) -> tuple[set[str], dict[str, bool]]:
        """Entity ids and ``{fact_id: current}`` of the facts between two entities (of every user: None)."""
        scope = STORE if user_id is None else Tenant.of(user_id)
        where, params = ("", {}) if user_id is None else ("WHERE user_id = %(u)s", {"u": scope})
        nodes = {r[0] for r in self.records._rows(scope, f"SELECT id FROM entities {where}", params)}
        edges = {r[0]: bool(r[1]) for r in self.records._rows(scope, f"""
SELECT f.id, f.valid_until IS NULL AND f.superseded_by IS NULL FROM facts f
JOIN entities s ON s.user_id = f.user_id AND s.id = f.subject_id
JOIN entities o ON o.user_id = f.user_id AND o.id = f.object_id {where.replace('user_id', 'f.user_id')}""", params)}
        return nodes, edges

    def drop_user(self, user_id: str) -> None:
        """Nothing to do: the tenant's rows go with :meth:`PgRecordStore.delete_user`."""

    def reset(self) -> None:
        """Nothing to do: the graph is the records."""

    def close(self) -> None:
        """Nothing to release: the record store owns the connection."""
