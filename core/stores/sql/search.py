"""What retrieval reads, written once for both SQL stores: candidate rows, graph hops, a tenant's graph, ranking.

A store ranks its own lexical rows (``lexical_ranking``: ``(fact id, BM25)`` best first, the
BM25 statement its own); which fact row each lexical row is stays inside the store.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ...tenant import Tenant, key
from ..rows import FACT_COLUMNS, RankingRow, fact_row
from .dialect import SqlBase
from .facts import CURRENT

_WIDTH = len(FACT_COLUMNS.split(", "))
_AS_OF = "valid_from <= ? AND (valid_until IS NULL OR valid_until > ?)"
class SqlSearchRows(SqlBase):
    """What retrieval reads: the lexical ranking, candidate rows, graph hops and a tenant's graph."""

    def lexical_search(self, tenant: Tenant, text: str, *, limit: int, as_of: str | None = None,
                       context_weight: float = 1.0) -> dict[str, float]:
        """:meth:`lexical_ranking` as a dict: BM25 scores (higher is better) by fact id, best first."""
        return dict(self.lexical_ranking(key(tenant), text, limit=limit, as_of=as_of, context_weight=context_weight))

    def ranking_rows(self, tenant: Tenant, ids: Sequence[str]) -> list[RankingRow]:
        """Some facts of one user by id, as plain values: what ranking needs, and the fact itself.

        Rows are the :data:`~zep_core.stores.rows.FACT_COLUMNS`, then the vector (a float32
        array); times are the stored ISO strings (their order is time order), so validity is
        compared without building a record, and :func:`~zep_core.stores.rows.fact_from_row`
        builds only the facts that make the cut. Each fact is found by its key ``(user_id, id)``.
        """
        if not ids:
            return []
        rows = self._select_in(tenant, f"SELECT {FACT_COLUMNS}, embedding FROM facts INDEXED BY facts_key "
                                       "WHERE user_id = ? AND id IN ({ids})", ids, [key(tenant)])
        return [RankingRow(fact_row(r), self.dialect.vector_of(r[_WIDTH])) for r in rows]

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
        if not entity_ids:
            return set()
        user_id, ids = key(tenant), list(entity_ids)
        if as_of is None:  # the current edges, both ways, from the partial indexes alone
            when, times = f"{CURRENT} AND object_id IS NOT NULL", []
            out, back = "INDEXED BY facts_out", "INDEXED BY facts_in"
        else:
            when, times = _AS_OF, [as_of, as_of]
            out = back = ""
        any_of, none_of = self.dialect.any_of, self.dialect.none_of
        (subjects, s), (not_objects, no) = any_of("subject_id", ids), none_of("object_id", ids)
        (objects, o), (not_subjects, ns) = any_of("object_id", ids), none_of("subject_id", ids)
        sql = (f"SELECT object_id FROM facts {out} WHERE user_id = ? AND {subjects} "
               f"AND object_id IS NOT NULL AND {not_objects} AND {when} "
               f"UNION SELECT subject_id FROM facts {back} WHERE user_id = ? AND {objects} "
               f"AND {not_subjects} AND {when} LIMIT ?")
        rows = self._select(tenant, sql, [user_id, *s, *no, *times, user_id, *o, *ns, *times, limit])
        return {r[0] for r in rows}

    def facts_touching(self, tenant: Tenant, entity_ids: Sequence[str], *, as_of: str | None = None,
                       among: Iterable[str] | None = None, limit: int = 20_000) -> list[str]:
        """Ids of current (or as-of) facts whose subject or object is in ``entity_ids``.

        ``among`` restricts the answer to those fact ids (the graph then only ranks facts
        found otherwise). ``limit`` bounds the scan; the order is not by age.
        """
        if not entity_ids:
            return []
        user_id = key(tenant)
        when, times = (CURRENT, []) if as_of is None else (_AS_OF, [as_of, as_of])
        (subjects, s), (objects, o) = self.dialect.any_of("subject_id", entity_ids), \
            self.dialect.any_of("object_id", entity_ids)
        if among is not None:
            ids = list(dict.fromkeys(among))
            if not ids:
                return []
            rows = self._select_in(tenant, f"SELECT id FROM facts INDEXED BY facts_key WHERE user_id = ? AND {when} "
                                           f"AND ({subjects} OR {objects}) AND id IN ({{ids}})",
                                   ids, [user_id, *times, *s, *o])
            return [r[0] for r in rows]
        sql = (f"SELECT id FROM facts WHERE user_id = ? AND {subjects} AND {when} "
               f"UNION SELECT id FROM facts WHERE user_id = ? AND {objects} AND {when} LIMIT ?")
        return [r[0] for r in self._select(tenant, sql, [user_id, *s, *times, user_id, *o, *times, limit])]

    def count_facts_touching(self, tenant: Tenant, entity_ids: Sequence[str], *, upto: int,
                             as_of: str | None = None) -> int:
        """How many current (or as-of) facts :meth:`facts_touching` would find, counted up to about ``upto``.

        Each side stops at ``upto`` rows, so the count is exact below ``upto`` and at least
        ``upto`` otherwise. The current facts are counted in the partial indexes alone
        (``facts_sources`` by subject, ``facts_in`` by object, a fact about the entity and of
        it counted once), no fact row read: the asker of a first-person question may have
        thousands.
        """
        if not entity_ids or upto <= 0:
            return 0
        if as_of is not None:
            return len(self.facts_touching(tenant, entity_ids, as_of=as_of, limit=upto))
        user_id = key(tenant)
        (subjects, s), (objects, o) = self.dialect.any_of("subject_id", entity_ids), \
            self.dialect.any_of("object_id", entity_ids)
        not_subjects, ns = self.dialect.none_of("subject_id", entity_ids)
        sql = (f"SELECT (SELECT count(*) FROM (SELECT 1 FROM facts INDEXED BY facts_sources WHERE user_id = ? "
               f"AND {subjects} AND {CURRENT} LIMIT ?) AS a) + (SELECT count(*) FROM (SELECT 1 FROM facts "
               f"INDEXED BY facts_in WHERE user_id = ? AND {objects} AND {not_subjects} AND object_id IS NOT NULL "
               f"AND {CURRENT} LIMIT ?) AS b)")
        return int(self._select(tenant, sql, [user_id, *s, upto, user_id, *o, *ns, upto])[0][0])

    def graph_rows(self, tenant: Tenant) -> tuple[list[tuple], list[tuple]]:
        """One user's graph as the record store holds it: entity rows and relationship rows, nothing of anyone else.

        Entities are ``(id, user_id, name, entity_type)``; relationships are
        ``(subject_id, object_id, fact_id, user_id, predicate, valid_from, valid_until, current)``
        for the facts with an object entity, both ends the user's own — what
        :class:`~zep_core.sync.IndexSync` writes to the graph index. Both come in the order stored.
        """
        user_id = key(tenant)
        entities = self._select(tenant, "SELECT id, user_id, name, entity_type, rowid FROM entities "
                                        "WHERE user_id = ?", [user_id])
        current = self.dialect.flag("f.valid_until IS NULL AND f.superseded_by IS NULL")
        facts = self._select(tenant, "SELECT f.subject_id, f.object_id, f.id, f.user_id, f.predicate, f.valid_from, "
                                     f"f.valid_until, {current}, f.rowid FROM facts f "
                                     "JOIN entities s INDEXED BY entities_key ON s.user_id = f.user_id "
                                     "AND s.id = f.subject_id JOIN entities o INDEXED BY entities_key "
                                     "ON o.user_id = f.user_id AND o.id = f.object_id WHERE f.user_id = ?", [user_id])
        return [r[:-1] for r in sorted(entities, key=_stored)], [r[:-1] for r in sorted(facts, key=_stored)]


def _stored(row: tuple) -> int:
    return row[-1]

