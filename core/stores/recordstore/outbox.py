"""The outbox of index writes and its quarantine, the id namespace, and the health check's samples."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from ...tenant import Tenant, key
from .connection import (
    Connection,
)


class OutboxRows(Connection):
    """The outbox of index writes and its quarantine, the id namespace, and the health check's samples."""

    def add_outbox(self, rows: Iterable[tuple[str, str, str | None, dict | None]]) -> None:
        """Queue index writes ``(op, user_id, ref_id, payload)`` (inside :meth:`transaction`)."""
        self._many("INSERT INTO outbox(op, user_id, ref_id, payload) VALUES (?, ?, ?, ?)",
                   [(op, u, ref, json.dumps(p) if p is not None else None) for op, u, ref, p in rows])

    def pending_outbox(self, limit: int = 5000, *, up_to: int | None = None, users: Collection[str] | None = None,
                       ) -> list[tuple[int, str, str, str | None, dict | None]]:
        """Oldest pending index writes, only those up to seq ``up_to`` and of ``users`` if given."""
        where, params = "seq <= ?", [2**62 if up_to is None else up_to]
        if users is not None:
            where += " AND user_id IN (SELECT value FROM json_each(?))"
            params.append(json.dumps(sorted(users)))
        rows = self._rows(f"SELECT seq, op, user_id, ref_id, payload FROM outbox WHERE {where} ORDER BY seq LIMIT ?",
                          [*params, limit])
        return [(s, op, u, ref, json.loads(p) if p else None) for s, op, u, ref, p in rows]

    def last_outbox_seq(self) -> int:
        """The newest queued index write's seq (0 when none is queued)."""
        return self._rows("SELECT COALESCE(max(seq), 0) FROM outbox")[0][0]

    def clear_outbox(self, up_to_seq: int) -> None:
        """Mark index writes done, up to and including ``up_to_seq``."""
        self._exec("DELETE FROM outbox WHERE seq <= ?", [up_to_seq])

    def clear_outbox_rows(self, seqs: Sequence[int]) -> None:
        """Mark these index writes done (a drain of some users' writes only)."""
        self._exec("DELETE FROM outbox WHERE seq IN (SELECT value FROM json_each(?))", [json.dumps(list(seqs))])

    def outbox_size(self, tenant: Tenant | None = None) -> int:
        """How many index writes are pending (of ``user_id`` only, when given)."""
        user_id = None if tenant is None else key(tenant)
        if user_id is None:
            return self._rows("SELECT count(*) FROM outbox")[0][0]
        return self._rows("SELECT count(*) FROM outbox WHERE user_id = ?", [user_id])[0][0]

    def quarantine_outbox(self, rows: Iterable[tuple[int | None, str, str, str, dict | None, str]]) -> None:
        """Set aside index writes ``(seq, op, user_id, ref_id, payload, error)`` that could not be applied.

        One row per op and ref: quarantining it again replaces the reason (inside :meth:`transaction`).
        """
        self._many(
            "INSERT INTO outbox_quarantine(seq, op, user_id, ref_id, payload, error) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(op, ref_id) DO UPDATE SET seq = excluded.seq, user_id = excluded.user_id, "
            "payload = excluded.payload, error = excluded.error, quarantined_at = excluded.quarantined_at",
            [(seq, op, u, ref, json.dumps(p) if p is not None else None, error) for seq, op, u, ref, p, error in rows])

    def release_quarantined(self, keys: Iterable[tuple[str, str]]) -> None:
        """Take ``(op, ref_id)`` out of the quarantine (they were applied since)."""
        self._many("DELETE FROM outbox_quarantine WHERE op = ? AND ref_id = ?", keys)

    def clear_quarantine(self, tenant: Tenant | None = None) -> None:
        """Empty the quarantine, or one user's part of it."""
        user_id = None if tenant is None else key(tenant)
        if user_id is None:
            self._exec("DELETE FROM outbox_quarantine")
        else:
            self._exec("DELETE FROM outbox_quarantine WHERE user_id = ?", [user_id])

    def quarantine_size(self, tenant: Tenant | None = None) -> int:
        """How many index writes are quarantined (of one user, if given)."""
        user_id = None if tenant is None else key(tenant)
        if user_id is None:
            return self._rows("SELECT count(*) FROM outbox_quarantine")[0][0]
        return self._rows("SELECT count(*) FROM outbox_quarantine WHERE user_id = ?", [user_id])[0][0]

    def quarantined(self, tenant: Tenant | None = None, *, limit: int = 1_000_000) -> list[dict[str, Any]]:
        """The quarantined index writes, oldest first, as dicts of ``op, user_id, ref_id, error, quarantined_at``."""
        user_id = None if tenant is None else key(tenant)
        where, params = ("WHERE user_id = ?", [user_id]) if user_id is not None else ("", [])
        rows = self._rows(f"SELECT op, user_id, ref_id, error, quarantined_at FROM outbox_quarantine {where} "
                          "ORDER BY quarantined_at, rowid LIMIT ?", [*params, limit])
        return [dict(zip(("op", "user_id", "ref_id", "error", "quarantined_at"), r)) for r in rows]

    def known_ids(self, tenant: Tenant, table: str, ids: Sequence[str]) -> set[str]:
        """Which of these fact, entity or episode ids the tenant holds."""
        if table not in ("facts", "entities", "episodes"):
            raise ValueError(table)
        return {r[0] for r in self._rows_in(f"SELECT id FROM {table} INDEXED BY {table}_key WHERE user_id = ? "
                                            "AND id IN ({ids})", ids, [key(tenant)])}

    def record_users(self) -> list[Tenant]:
        """Every user with a stored fact or entity (every user's: rebuilds walk them one by one)."""
        rows = self._rows("SELECT DISTINCT user_id FROM facts UNION SELECT DISTINCT user_id FROM entities")
        return sorted(Tenant.stored(r[0]) for r in rows)

    def record_owners(self, table: str, ids: Sequence[str]) -> dict[str, Tenant]:
        """The user each stored fact, entity or episode id belongs to (ids not stored are absent).

        The id namespace (ids are unique across users): an id from outside (an import file,
        a request, a queued index write) is checked here; only the owner is read.
        """
        if table not in ("facts", "entities", "episodes"):
            raise ValueError(table)
        return {i: Tenant.stored(u) for i, u in self._rows_in(f"SELECT id, user_id FROM {table} WHERE id IN ({{ids}})",
                                                               ids)}

    def indexed_entity_sample(self, scan: int = 50) -> tuple[str, str] | None:
        """``(user_id, entity_id)`` of the oldest entity both indexes must already hold, if any.

        Entities with an index write still queued or quarantined are passed over; None when
        there are no entities, or the oldest ``scan`` ones are all still queued.
        """
        rows = self._rows("SELECT id, user_id FROM entities ORDER BY rowid LIMIT ?", [scan])
        return self._first_applied("entity", rows)

    def indexed_fact_sample(self, scan: int = 50) -> tuple[str, str] | None:
        """``(user_id, fact_id)`` of the oldest current fact the vector index must already hold, if any."""
        rows = self._rows("SELECT id, user_id FROM facts WHERE valid_until IS NULL AND superseded_by IS NULL "
                          "ORDER BY rowid LIMIT ?", [scan])
        return self._first_applied("fact", rows)

    def indexed_edge_sample(self, scan: int = 50) -> tuple[str, str] | None:
        """``(user_id, subject_id)`` of the oldest fact between two entities that the graph must already hold."""
        rows = self._rows("SELECT id, user_id, subject_id FROM facts WHERE object_id IS NOT NULL "
                          "AND object_id <> subject_id ORDER BY rowid LIMIT ?", [scan])
        found = self._first_applied("fact", [(r[0], r[1], r[2]) for r in rows])
        return None if found is None else (found[0], found[2])

    def _first_applied(self, op: str, rows: Sequence[tuple]) -> tuple | None:
        """``(user_id, id, *rest)`` of the first row ``(id, user_id, *rest)`` with no queued or quarantined ``op``."""
        ids = [r[0] for r in rows]
        waiting = {r[0] for table in ("outbox", "outbox_quarantine") for r in self._rows_in(
            f"SELECT ref_id FROM {table} WHERE op = ? AND ref_id IN ({{ids}})", ids, [op])}
        return next(((Tenant.stored(r[1]), r[0], *r[2:]) for r in rows if r[0] not in waiting), None)
