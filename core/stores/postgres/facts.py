"""PostgreSQL's own part of the fact rows: their copy for a tenant's HNSW index, and the history's exact search.

The fact rows themselves are written and read once for both SQL stores (:mod:`..sql.facts`);
the lexical index is :mod:`.lexical`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np

from ...tenant import Tenant, key
from ..sql.facts import SqlFactRows
from .hnsw import SYNC, lock_key
from .lexical import PgLexicalRows


class PgFactRows(SqlFactRows, PgLexicalRows):
    """Fact rows on PostgreSQL: each change copied for the tenant's HNSW index, if it has one."""

    #: Told ``(tenant, facts written)`` once each write committed: the HNSW indexes' size check.
    on_facts_written: Callable[[Tenant, int], None] | None = None

    def _facts_changed(self, tenant: Tenant, ids: Sequence[str], *, written: bool) -> None:
        """Bring a tenant's copy of current vectors (``ann_vectors``, kept for an HNSW index) up to these facts.

        Nothing is copied for a tenant without an index (:mod:`.hnsw`); the shared lock keeps
        this write from falling between an index build's mark and its copy (call inside
        :meth:`transaction`). Once a write commits, :attr:`on_facts_written` is told.
        """
        self._exec(tenant, "SELECT pg_advisory_xact_lock_shared(%s)", [lock_key(tenant)])
        self._exec(tenant, SYNC, {"u": tenant, "ids": list(ids)})
        if written and self.on_facts_written is not None:
            self.after_commit(functools.partial(self.on_facts_written, tenant, len(ids)))

    def history_search(self, tenant: Tenant, vector: np.ndarray, k: int, as_of: str) -> list[tuple[str, float]]:
        """The ``k`` superseded facts of a user valid at ``as_of`` nearest to ``vector``: ``(id, cosine)``, best first.

        Exact, in the database (pgvector's inner product over the stored unit vectors of the
        facts valid then); vectors of another dimension are skipped.
        """
        if k <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32)
        rows = self._rows(tenant, "SELECT id, -(embedding <#> %s) AS score FROM facts WHERE user_id = %s "
                                  "AND NOT (valid_until IS NULL AND superseded_by IS NULL) AND valid_from <= %s "
                                  "AND (valid_until IS NULL OR valid_until > %s) AND vector_dims(embedding) = %s "
                                  "ORDER BY score DESC, rowid LIMIT %s",
                          [query, key(tenant), as_of, as_of, len(query), k])
        return [(fid, float(score)) for fid, score in rows if np.isfinite(score)]
