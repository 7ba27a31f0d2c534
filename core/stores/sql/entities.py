"""Entities and their aliases, their summaries' refresh marks, and re-embedding, written once for both SQL stores."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from ...models import Entity
from ...tenant import Tenant, key
from ..rows import entity_from_row
from .dialect import STORE, by_user
from .facts import SqlFactRows

#: A table's vectors, and the text they are made from.
VECTOR_TABLES = {"facts": "content", "entities": "name"}


class SqlEntityRows(SqlFactRows):
    """Entities and their aliases, their summaries' refresh marks, and re-embedding (of entities and of facts)."""

    def entity_ids_for_aliases(self, tenant: Tenant, aliases: Sequence[str]) -> dict[str, str]:
        """Map normalized aliases to entity ids, for the ones that exist."""
        return dict(self._select_in(tenant, "SELECT alias, entity_id FROM aliases WHERE user_id = ? "
                                            "AND alias IN ({ids})", aliases, [key(tenant)]))

    def insert_entities(self, rows: Iterable[tuple[Entity, np.ndarray]], changed_at: str) -> None:
        """Create entities with their vectors; an id already stored keeps its row (call inside :meth:`transaction`)."""
        for tenant, mine in by_user(rows, lambda row: row[0].user_id).items():
            self._change_many(tenant, "INSERT INTO entities(id, user_id, name, entity_type, summary, fact_count, "
                                      "last_updated, changed_at, embedding) VALUES (?, ?, ?, ?, '', 0, NULL, ?, ?) "
                                      "ON CONFLICT DO NOTHING",
                              [(e.id, key(tenant), e.name, e.entity_type, changed_at, self.dialect.vector(v))
                               for e, v in mine])

    def add_aliases(self, rows: Iterable[tuple[str, str, str]]) -> None:
        """Add ``(user_id, alias, entity_id)``; an alias already taken keeps its entity."""
        for tenant, mine in by_user(rows, lambda row: row[0]).items():
            self._change_many(tenant, "INSERT INTO aliases(user_id, alias, entity_id) VALUES (?, ?, ?) "
                                      "ON CONFLICT DO NOTHING", [(key(tenant), a, e) for _, a, e in mine])

    def mark_entities_changed(self, tenant: Tenant, entity_ids: Iterable[str], when: str) -> None:
        """Flag entities for the next summary refresh."""
        self._change_many(tenant, "UPDATE entities INDEXED BY entities_key SET changed_at = ? WHERE user_id = ? "
                                  "AND id = ?", [(when, key(tenant), i) for i in sorted(set(entity_ids))])

    def get_entities(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, Entity]:
        """Entities by id, with their aliases, for one user only."""
        aliases: dict[str, list[str]] = {}
        for alias, eid in self._select_in(tenant, "SELECT alias, entity_id FROM aliases INDEXED BY aliases_key "
                                                  "WHERE user_id = ? AND entity_id IN ({ids})", ids, [key(tenant)]):
            aliases.setdefault(eid, []).append(alias)
        rows = self._select_in(tenant, "SELECT id, user_id, name, entity_type, summary, fact_count, last_updated "
                                       "FROM entities INDEXED BY entities_key WHERE user_id = ? AND id IN ({ids})",
                               ids, [key(tenant)])
        return {row[0]: entity_from_row(row, sorted(aliases.get(row[0], ()))) for row in rows}

    def entity_rows(self, tenant: Tenant, ids: Sequence[str]) -> list[tuple[Entity, np.ndarray]]:
        """Entities of one user with their vectors (what the outbox writes to the indexes, and exports)."""
        rows = self._select_in(tenant, "SELECT id, user_id, name, entity_type, summary, fact_count, last_updated, "
                                       "embedding FROM entities INDEXED BY entities_key WHERE user_id = ? "
                                       "AND id IN ({ids})", ids, [key(tenant)])
        return [(entity_from_row(row), self.dialect.vector_of(row[7])) for row in rows]

    def iter_entity_ids(self, tenant: Tenant, batch: int = 2000) -> Iterator[list[str]]:
        """Every entity id of one user, in batches."""
        return self._ids_by_key("entities", key(tenant), batch)

    def entity_changed_at(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, str | None]:
        """When each of a user's entities last changed (its refresh mark), as stored (for export)."""
        return dict(self._select_in(tenant, "SELECT id, changed_at FROM entities INDEXED BY entities_key "
                                            "WHERE user_id = ? AND id IN ({ids})", ids, [key(tenant)]))

    def stale_entities(self, tenant: Tenant | None, older_than: str, limit: int = 1000) -> list[tuple[str, str]]:
        """``(user_id, entity_id)`` of entities changed since their last refresh and due (of every user: None)."""
        by = "" if tenant is None else "INDEXED BY entities_user "  # one user's: by their key, not every change
        sql = (f"SELECT user_id, id FROM entities {by}WHERE changed_at IS NOT NULL "
               "AND (last_updated IS NULL OR (changed_at > last_updated AND last_updated <= ?))")
        params: list[Any] = [older_than]
        if tenant is not None:
            sql += " AND user_id = ?"
            params.append(key(tenant))
        rows = self._select(STORE if tenant is None else tenant, sql + " ORDER BY changed_at LIMIT ?",
                            [*params, limit])
        return [(Tenant.stored(r[0]), r[1]) for r in rows]

    def set_entity_summaries(self, rows: Iterable[tuple[str, str, str, int, str | None]]) -> None:
        """Write ``(user_id, entity_id, summary, fact_count, last_updated)``; only the user's own entities."""
        for tenant, mine in by_user(rows, lambda row: row[0]).items():
            self._change_many(tenant, "UPDATE entities INDEXED BY entities_key SET summary = ?, fact_count = ?, "
                                      "last_updated = ? WHERE user_id = ? AND id = ?",
                              [(s, n, t, key(tenant), eid) for _, eid, s, n, t in mine])

    def set_embeddings(self, tenant: Tenant, table: str, rows: Iterable[tuple[str, np.ndarray]]) -> None:
        """Replace stored vectors of one user's facts or entities (re-embedding after an embedder change).

        Call inside :meth:`transaction`.
        """
        if table not in VECTOR_TABLES:
            raise ValueError(table)
        rows = list(rows)
        self._change_many(tenant, f"UPDATE {table} INDEXED BY {table}_key SET embedding = ? WHERE user_id = ? "
                                  "AND id = ?", [(self.dialect.vector(v), key(tenant), i) for i, v in rows])
        if table == "facts":
            self._facts_changed(tenant, [i for i, _ in rows], written=False)

    def texts(self, tenant: Tenant, table: str, ids: Sequence[str]) -> dict[str, str]:
        """The texts one user's vectors are made from: fact content or entity name."""
        column = VECTOR_TABLES[table]
        return dict(self._select_in(tenant, f"SELECT id, {column} FROM {table} INDEXED BY {table}_key "
                                            "WHERE user_id = ? AND id IN ({ids})", ids, [key(tenant)]))
