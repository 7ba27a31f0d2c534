"""Entities and their aliases, their summaries' refresh marks, and re-embedding."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from ...models import Entity
from ...tenant import Tenant, key
from ..schema import (
    blob,
    entity_from_row,
)
from .connection import (
    Connection,
)


class EntityRows(Connection):
    """Entities and their aliases, their summaries' refresh marks, and re-embedding."""

    def entity_ids_for_aliases(self, tenant: Tenant, aliases: Sequence[str]) -> dict[str, str]:
        """Map normalized aliases to entity ids, for the ones that exist."""
        user_id = key(tenant)
        return dict(self._rows_in("SELECT alias, entity_id FROM aliases WHERE user_id = ? AND alias IN ({ids})",
                                  aliases, [user_id]))

    def insert_entities(self, rows: Iterable[tuple[Entity, np.ndarray]], changed_at: str) -> None:
        """Create entities with their vectors (call inside :meth:`transaction`)."""
        self._many(
            "INSERT OR IGNORE INTO entities(id, user_id, name, entity_type, summary, fact_count, "
            "last_updated, changed_at, embedding) VALUES (?, ?, ?, ?, '', 0, NULL, ?, ?)",
            [(e.id, e.user_id, e.name, e.entity_type, changed_at, blob(v)) for e, v in rows])

    def add_aliases(self, rows: Iterable[tuple[str, str, str]]) -> None:
        """Add ``(user_id, alias, entity_id)``; an alias already taken keeps its entity."""
        self._many("INSERT OR IGNORE INTO aliases(user_id, alias, entity_id) VALUES (?, ?, ?)", rows)

    def mark_entities_changed(self, tenant: Tenant, entity_ids: Iterable[str], when: str) -> None:
        """Flag entities for the next summary refresh."""
        user_id = key(tenant)
        self._many("UPDATE entities INDEXED BY entities_key SET changed_at = ? WHERE user_id = ? AND id = ?",
                   [(when, user_id, eid) for eid in set(entity_ids)])

    def get_entities(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, Entity]:
        """Entities by id, with their aliases, for one user only."""
        user_id = key(tenant)
        aliases: dict[str, list[str]] = {}
        for alias, eid in self._rows_in("SELECT alias, entity_id FROM aliases INDEXED BY aliases_key "
                                        "WHERE user_id = ? AND entity_id IN ({ids})", ids, [user_id]):
            aliases.setdefault(eid, []).append(alias)
        rows = self._rows_in("SELECT id, user_id, name, entity_type, summary, fact_count, last_updated FROM entities "
                             "INDEXED BY entities_key WHERE user_id = ? AND id IN ({ids})", ids, [user_id])
        return {row[0]: entity_from_row(row, sorted(aliases.get(row[0], ()))) for row in rows}

    def entity_rows(self, tenant: Tenant, ids: Sequence[str]) -> list[tuple[Entity, np.ndarray]]:
        """Entities of one user with their vectors (what the outbox writes to the indexes, and exports)."""
        rows = self._rows_in("SELECT id, user_id, name, entity_type, summary, fact_count, last_updated, "
                             "embedding FROM entities INDEXED BY entities_key WHERE user_id = ? AND id IN ({ids})",
                             ids, [key(tenant)])
        return [(entity_from_row(row), np.frombuffer(row[7], dtype=np.float32)) for row in rows]

    def iter_entity_ids(self, tenant: Tenant, batch: int = 2000) -> Iterator[list[str]]:
        """Every entity id of one user, in batches."""
        return self._ids_by_key("entities", key(tenant), batch)

    def entity_changed_at(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, str | None]:
        """When each of a user's entities last changed (its refresh mark), as stored (for export)."""
        return dict(self._rows_in("SELECT id, changed_at FROM entities INDEXED BY entities_key WHERE user_id = ? "
                                  "AND id IN ({ids})", ids, [key(tenant)]))

    def stale_entities(self, tenant: Tenant | None, older_than: str, limit: int = 1000) -> list[tuple[str, str]]:
        """``(user_id, entity_id)`` of entities changed since their last refresh and due."""
        user_id = None if tenant is None else key(tenant)
        by = "" if user_id is None else "INDEXED BY entities_user "  # one user's: by their key, not every change
        sql = (f"SELECT user_id, id FROM entities {by}WHERE changed_at IS NOT NULL "
               "AND (last_updated IS NULL OR (changed_at > last_updated AND last_updated <= ?))")
        params: list[Any] = [older_than]
        if user_id is not None:
            sql += " AND user_id = ?"
            params.append(user_id)
        return [(Tenant.stored(r[0]), r[1]) for r in self._rows(sql + " ORDER BY changed_at LIMIT ?", [*params, limit])]

    def set_entity_summaries(self, rows: Iterable[tuple[str, str, str, int, str | None]]) -> None:
        """Write ``(user_id, entity_id, summary, fact_count, last_updated)``; only the user's own entities."""
        self._many("UPDATE entities INDEXED BY entities_key SET summary = ?, fact_count = ?, last_updated = ? "
                   "WHERE user_id = ? AND id = ?", [(s, n, t, user, eid) for user, eid, s, n, t in rows])

    def set_embeddings(self, tenant: Tenant, table: str, rows: Iterable[tuple[str, np.ndarray]]) -> None:
        """Replace stored vectors of one user's facts or entities (re-embedding after an embedder change)."""
        if table not in ("facts", "entities"):
            raise ValueError(table)
        user_id = key(tenant)
        self._many(f"UPDATE {table} INDEXED BY {table}_key SET embedding = ? WHERE user_id = ? AND id = ?",
                   [(blob(v), user_id, i) for i, v in rows])

    def texts(self, tenant: Tenant, table: str, ids: Sequence[str]) -> dict[str, str]:
        """The texts one user's vectors are made from: fact content or entity name."""
        column = {"facts": "content", "entities": "name"}[table]
        return dict(self._rows_in(f"SELECT id, {column} FROM {table} INDEXED BY {table}_key WHERE user_id = ? "
                                  "AND id IN ({ids})", ids, [key(tenant)]))
