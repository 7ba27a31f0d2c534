"""The outbox of index writes and its quarantine, the id namespace, and the health check's samples, written once.

Draining the outbox is store-wide work (every user's writes, oldest first); each write is
queued under its own user.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from itertools import groupby
from typing import Any

from ...tenant import Tenant, key
from .dialect import STORE, SqlBase

#: The tables whose ids are a namespace across users.
_ID_TABLES = ("facts", "entities", "episodes")


def _json(payload: dict | None) -> str | None:
    return json.dumps(payload) if payload is not None else None


class SqlOutboxRows(SqlBase):
    """The outbox of index writes and its quarantine, the id namespace, and the health check's samples."""

    def add_outbox(self, rows: Iterable[tuple[str, str, str | None, dict | None]]) -> None:
        """Queue index writes ``(op, user_id, ref_id, payload)`` (inside :meth:`transaction`), in their order.

        Each run of one user's writes goes in under that user.
        """
        for user, run in groupby(rows, key=lambda row: row[1]):
            tenant = Tenant.of(user)
            self._change_many(tenant, "INSERT INTO outbox(op, user_id, ref_id, payload) VALUES (?, ?, ?, ?)",
                              [(op, tenant, ref, _json(p)) for op, _, ref, p in run])

    def pending_outbox(self, limit: int = 5000, *, up_to: int | None = None, users: Collection[str] | None = None,
                       ) -> list[tuple[int, str, str, str | None, dict | None]]:
        """Oldest pending index writes, only those up to seq ``up_to`` and of ``users`` if given."""
        where, params = "seq <= ?", [2**62 if up_to is None else up_to]
        if users is not None:
            among, values = self.dialect.among("user_id", sorted(users))
            where, params = f"{where} AND {among}", [*params, *values]
        rows = self._select(STORE, f"SELECT seq, op, user_id, ref_id, payload FROM outbox WHERE {where} "
                                   "ORDER BY seq LIMIT ?", [*params, limit])
        return [(s, op, Tenant.stored(u), ref, json.loads(p) if p else None) for s, op, u, ref, p in rows]

    def last_outbox_seq(self) -> int:
        """The newest queued index write's seq (0 when none is queued)."""
        return int(self._select(STORE, "SELECT COALESCE(max(seq), 0) FROM outbox")[0][0])

    def clear_outbox(self, up_to_seq: int) -> None:
        """Mark index writes done, up to and including ``up_to_seq``."""
        self._change(STORE, "DELETE FROM outbox WHERE seq <= ?", [up_to_seq])

    def clear_outbox_rows(self, seqs: Sequence[int]) -> None:
        """Mark these index writes done (a drain of some users' writes only)."""
        among, values = self.dialect.among("seq", list(seqs))
        self._change(STORE, f"DELETE FROM outbox WHERE {among}", values)

    def _count(self, table: str, tenant: Tenant | None) -> int:
        if tenant is None:
            return int(self._select(STORE, f"SELECT count(*) FROM {table}")[0][0])
        return int(self._select(tenant, f"SELECT count(*) FROM {table} WHERE user_id = ?", [key(tenant)])[0][0])

    def outbox_size(self, tenant: Tenant | None = None) -> int:
        """How many index writes are pending (of one user, when given)."""
        return self._count("outbox", tenant and key(tenant))

    def quarantine_outbox(self, rows: Iterable[tuple[int | None, str, str, str, dict | None, str]]) -> None:
        """Set aside index writes ``(seq, op, user_id, ref_id, payload, error)`` that could not be applied.

        One row per op and ref: quarantining it again replaces the reason (inside :meth:`transaction`).
        """
        for user, run in groupby(sorted(rows, key=lambda row: row[2]), key=lambda row: row[2]):
            tenant = Tenant.of(user)
            self._change_many(tenant, "INSERT INTO outbox_quarantine(seq, op, user_id, ref_id, payload, error) "
                                      "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (op, ref_id) DO UPDATE SET "
                                      "seq = excluded.seq, user_id = excluded.user_id, payload = excluded.payload, "
                                      "error = excluded.error, quarantined_at = excluded.quarantined_at",
                              [(seq, op, tenant, ref, _json(p), error) for seq, op, _, ref, p, error in run])

    def release_quarantined(self, keys: Iterable[tuple[str, str]]) -> None:
        """Take ``(op, ref_id)`` out of the quarantine (they were applied since)."""
        self._change_many(STORE, "DELETE FROM outbox_quarantine WHERE op = ? AND ref_id = ?", list(keys))

    def clear_quarantine(self, tenant: Tenant | None = None) -> None:
        """Empty the quarantine, or one user's part of it."""
        if tenant is None:
            self._change(STORE, "DELETE FROM outbox_quarantine")
        else:
            self._change(tenant, "DELETE FROM outbox_quarantine WHERE user_id = ?", [key(tenant)])

    def quarantine_size(self, tenant: Tenant | None = None) -> int:
        """How many index writes are quarantined (of one user, if given)."""
        return self._count("outbox_quarantine", tenant and key(tenant))

    def quarantined(self, tenant: Tenant | None = None, *, limit: int = 1_000_000) -> list[dict[str, Any]]:
        """The quarantined index writes, oldest first, as dicts of ``op, user_id, ref_id, error, quarantined_at``."""
        where, params = ("WHERE user_id = ?", [key(tenant)]) if tenant is not None else ("", [])
        rows = self._select(STORE if tenant is None else tenant,
                            f"SELECT op, user_id, ref_id, error, quarantined_at FROM outbox_quarantine {where} "
                            "ORDER BY quarantined_at, rowid LIMIT ?", [*params, limit])
        return [dict(zip(("op", "user_id", "ref_id", "error", "quarantined_at"), r)) for r in rows]

    def known_ids(self, tenant: Tenant, table: str, ids: Sequence[str]) -> set[str]:
        """Which of these fact, entity or episode ids the tenant holds."""
        if table not in _ID_TABLES:
            raise ValueError(f"known_ids reads facts, entities or episodes, not {table!r}")
        return {r[0] for r in self._select_in(tenant, f"SELECT id FROM {table} INDEXED BY {table}_key "
                                                      "WHERE user_id = ? AND id IN ({ids})", ids, [key(tenant)])}

    def record_users(self) -> list[Tenant]:
        """Every user with a stored fact or entity (every user's: rebuilds walk them one by one)."""
        rows = self._select(STORE, "SELECT DISTINCT user_id FROM facts UNION SELECT DISTINCT user_id FROM entities")
        return sorted(Tenant.stored(r[0]) for r in rows)

    def record_owners(self, table: str, ids: Sequence[str]) -> dict[str, Tenant]:
        """The user each stored fact, entity or episode id belongs to (ids not stored are absent).

        The id namespace (ids are unique across users): an id from outside (an import file,
        a request, a queued index write) is checked here; only the owner is read.
        """
        if table not in _ID_TABLES:
            raise ValueError(f"record_owners reads facts, entities or episodes, not {table!r}")
        return {i: Tenant.stored(u) for i, u in self._select_in(STORE, f"SELECT id, user_id FROM {table} "
                                                                       "WHERE id IN ({ids})", ids)}

    def indexed_entity_sample(self, scan: int = 50) -> tuple[str, str] | None:
        """``(user_id, entity_id)`` of the oldest entity both indexes must already hold, if any.

        Entities with an index write still queued or quarantined are passed over; None when
        there are no entities, or the oldest ``scan`` ones are all still queued.
        """
        rows = self._select(STORE, "SELECT id, user_id FROM entities ORDER BY rowid LIMIT ?", [scan])
        return self._first_applied("entity", rows)

    def indexed_fact_sample(self, scan: int = 50) -> tuple[str, str] | None:
        """``(user_id, fact_id)`` of the oldest current fact the vector index must already hold, if any."""
        rows = self._select(STORE, "SELECT id, user_id FROM facts WHERE valid_until IS NULL AND superseded_by IS NULL "
                                   "ORDER BY rowid LIMIT ?", [scan])
        return self._first_applied("fact", rows)

    def indexed_edge_sample(self, scan: int = 50) -> tuple[str, str] | None:
        """``(user_id, subject_id)`` of the oldest fact between two entities that the graph must already hold."""
        rows = self._select(STORE, "SELECT id, user_id, subject_id FROM facts WHERE object_id IS NOT NULL "
                                   "AND object_id <> subject_id ORDER BY rowid LIMIT ?", [scan])
        found = self._first_applied("fact", rows)
        return None if found is None else (found[0], found[2])

    def _first_applied(self, op: str, rows: Sequence[tuple]) -> tuple | None:
        """``(user_id, id, *rest)`` of the first row ``(id, user_id, *rest)`` with no queued or quarantined ``op``."""
        ids = [r[0] for r in rows]
        waiting = {r[0] for table in ("outbox", "outbox_quarantine") for r in self._select_in(
            STORE, f"SELECT ref_id FROM {table} WHERE op = ? AND ref_id IN ({{ids}})", ids, [op])}
        return next(((Tenant.stored(r[1]), r[0], *r[2:]) for r in rows if r[0] not in waiting), None)
