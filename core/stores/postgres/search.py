"""What retrieval reads on PostgreSQL: candidate rows, graph hops, a tenant's graph (the lexical ranking: .lexical)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ...tenant import Tenant
from ..schema import FACT_COLUMNS, RankingRow, fact_row
from .connection import PgConnection
from .schema import CURRENT as _CURRENT

_COLUMNS = f"{FACT_COLUMNS}, rowid, embedding"
_WIDTH = len(FACT_COLUMNS.split(", "))
_AS_OF = "valid_from <= %(at)s AND (valid_until IS NULL OR valid_until > %(at)s)"


class PgSearchRows(PgConnection):
    """What retrieval reads: candidate rows, graph hops and a tenant's graph."""

    def ranking_rows(self, tenant: Tenant, ids: Sequence[str] = (), *,
                     rowids: Sequence[int] = ()) -> list[RankingRow]:
        """Some facts of one user, by id or by rowid, as plain values: what ranking needs, and the fact itself."""
        rows = self._rows_in(tenant, f"SELECT {_COLUMNS} FROM facts WHERE user_id = %s AND id = ANY(%s)",
                             ids, [tenant]) if ids else []
        if rowids:
            seen = {r[_WIDTH] for r in rows}
            rows += self._rows_in(tenant, f"SELECT {_COLUMNS} FROM facts WHERE user_id = %s AND rowid = ANY(%s)",
                                  [r for r in rowids if r not in seen], [tenant])
        return [RankingRow(fact_row(r), r[_WIDTH], self.dialect.vector_of(r[_WIDTH + 1])) for r in rows]

    def neighbours(self, tenant: Tenant, entity_ids: Sequence[str], *, as_of: str | None = None,
                   limit: int = 200) -> set[str]:
        """Entities one hop from ``entity_ids`` over the user's current (or as-of) facts (both ways)."""
        if not entity_ids:
            return set()
        when = f"{_CURRENT} AND object_id IS NOT NULL" if as_of is None else _AS_OF
        sql = (f"(SELECT object_id FROM facts WHERE user_id = %(u)s AND subject_id = ANY(%(e)s) "
               f"AND object_id IS NOT NULL AND NOT object_id = ANY(%(e)s) AND {when}) "
               f"UNION (SELECT subject_id FROM facts WHERE user_id = %(u)s AND object_id = ANY(%(e)s) "
               f"AND NOT subject_id = ANY(%(e)s) AND {when}) LIMIT %(n)s")
        rows = self._rows(tenant, sql, {"u": tenant, "e": list(entity_ids), "at": as_of, "n": limit})
        return {r[0] for r in rows}

    def facts_touching(self, tenant: Tenant, entity_ids: Sequence[str], *, as_of: str | None = None,
                       among: Iterable[str] | None = None, limit: int = 20_000) -> list[str]:
        """Ids of current (or as-of) facts whose subject or object is in ``entity_ids`` (among ``among``, if given)."""
        if not entity_ids:
            return []
        when = _CURRENT if as_of is None else _AS_OF
        params: dict[str, Any] = {"u": tenant, "e": list(entity_ids), "at": as_of, "n": limit}
        if among is not None:
            ids = list(dict.fromkeys(among))
            if not ids:
                return []
            out: list[str] = []
            for i in range(0, len(ids), 500):
                out += [r[0] for r in self._rows(tenant, f"SELECT id FROM facts WHERE user_id = %(u)s AND {when} "
                                                         "AND (subject_id = ANY(%(e)s) OR object_id = ANY(%(e)s)) "
                                                         "AND id = ANY(%(ids)s)", {**params, "ids": ids[i:i + 500]})]
            return out
        sql = (f"(SELECT id FROM facts WHERE user_id = %(u)s AND subject_id = ANY(%(e)s) AND {when}) "
               f"UNION (SELECT id FROM facts WHERE user_id = %(u)s AND object_id = ANY(%(e)s) AND {when}) LIMIT %(n)s")
        return [r[0] for r in self._rows(tenant, sql, params)]

    def graph_rows(self, tenant: Tenant) -> tuple[list[tuple], list[tuple]]:
        """One user's graph: entity rows ``(id, user_id, name, entity_type)`` and relationship rows.

        Relationships are ``(subject_id, object_id, fact_id, user_id, predicate, valid_from,
        valid_until, current)`` for the facts with an object entity, both ends the user's own.
        """
        entities = self._rows(tenant, "SELECT id, user_id, name, entity_type FROM entities WHERE user_id = %s "
                                      "ORDER BY rowid", [tenant])
        facts = self._rows(tenant,
                           "SELECT f.subject_id, f.object_id, f.id, f.user_id, f.predicate, f.valid_from, "
                           "f.valid_until, (f.valid_until IS NULL AND f.superseded_by IS NULL)::int FROM facts f "
                           "JOIN entities s ON s.user_id = f.user_id AND s.id = f.subject_id "
                           "JOIN entities o ON o.user_id = f.user_id AND o.id = f.object_id "
                           "WHERE f.user_id = %s ORDER BY f.rowid", [tenant])
        return entities, facts
