"""The outbox of index writes and its quarantine on PostgreSQL, and the health check's samples."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from itertools import groupby
from typing import Any

from ...tenant import Tenant
from .connection import STORE, PgConnection


def _json(payload: dict | None) -> str | None:
    return json.dumps(payload) if payload is not None else None


class PgOutboxRows(PgConnection):
    """The outbox of index writes and its quarantine, and the health check's samples.

    Draining the outbox is store-wide work (every user's writes, oldest first); each write
    is queued under its own user, and the queue's reads and deletes run as the store role.
    """

    def add_outbox(self, rows: Iterable[tuple[str, str, str | None, dict | None]]) -> None:
        """Queue index writes ``(op, user_id, ref_id, payload)`` (inside :meth:`transaction`), in their order.

        Each run of one user's writes goes in under that user (row-level security checks each row).
        """
        for user, run in groupby(rows, key=lambda row: row[1]):
            tenant = Tenant.of(user)
            self._many(tenant, "INSERT INTO outbox(op, user_id, ref_id, payload) VALUES (%s, %s, %s, %s)",
                       [(op, tenant, ref, _json(p)) for op, _, ref, p in run])

    def pending_outbox(self, limit: int = 5000, *, up_to: int | None = None, users: Collection[str] | None = None,
                       ) -> list[tuple[int, str, str, str | None, dict | None]]:
        """Oldest pending index writes, only those up to seq ``up_to`` and of ``users`` if given."""
        where, params = "seq <= %s", [2**62 if up_to is None else up_to]
        if users is not None:
            where += " AND user_id = ANY(%s)"
            params.append(sorted(users))
        rows = self._rows(STORE, f"SELECT seq, op, user_id, ref_id, payload FROM outbox WHERE {where} "
                                 "ORDER BY seq LIMIT %s", [*params, limit])
        return [(s, op, Tenant.stored(u), ref, json.loads(p) if p else None) for s, op, u, ref, p in rows]

    def last_outbox_seq(self) -> int:
        """The newest queued index write's seq (0 when none is queued)."""
        return int(self._rows(STORE, "SELECT COALESCE(max(seq), 0) FROM outbox")[0][0])

    def clear_outbox(self, up_to_seq: int) -> None:
        """Mark index writes done, up to and including ``up_to_seq``."""
        self._exec(STORE, "DELETE FROM outbox WHERE seq <= %s", [up_to_seq])

    def clear_outbox_rows(self, seqs: Sequence[int]) -> None:
        """Mark these index writes done (a drain of some users' writes only)."""
        self._exec(STORE, "DELETE FROM outbox WHERE seq = ANY(%s)", [list(seqs)])

    def _count(self, table: str, tenant: Tenant | None) -> int:
        if tenant is None:
            return int(self._rows(STORE, f"SELECT count(*) FROM {table}")[0][0])
        return int(self._rows(tenant, f"SELECT count(*) FROM {table} WHERE user_id = %s", [tenant])[0][0])

    def outbox_size(self, tenant: Tenant | None = None) -> int:
        """How many index writes are pending (of one user, when given)."""
        return self._count("outbox", tenant)

    def quarantine_outbox(self, rows: Iterable[tuple[int | None, str, str, str, dict | None, str]]) -> None:
        """Set aside index writes ``(seq, op, user_id, ref_id, payload, error)`` that could not be applied.

        One row per op and ref: quarantining it again replaces the reason (inside :meth:`transaction`).
        """
        for user, run in groupby(sorted(rows, key=lambda row: row[2]), key=lambda row: row[2]):
            tenant = Tenant.of(user)
            self._many(tenant,
                       "INSERT INTO outbox_quarantine(seq, op, user_id, ref_id, payload, error) "
                       "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (op, ref_id) DO UPDATE SET seq = excluded.seq, "
                       "user_id = excluded.user_id, payload = excluded.payload, error = excluded.error, "
                       "quarantined_at = excluded.quarantined_at",
                       [(seq, op, tenant, ref, _json(p), error) for seq, op, _, ref, p, error in run])

    def release_quarantined(self, keys: Iterable[tuple[str, str]]) -> None:
        """Take ``(op, ref_id)`` out of the quarantine (they were applied since)."""
        self._many(STORE, "DELETE FROM outbox_quarantine WHERE op = %s AND ref_id = %s", keys)

    def clear_quarantine(self, tenant: Tenant | None = None) -> None:
        """Empty the quarantine, or one user's part of it."""
        if tenant is None:
            self._exec(STORE, "DELETE FROM outbox_quarantine")
        else:
            self._exec(tenant, "DELETE FROM outbox_quarantine WHERE user_id = %s", [tenant])

    def quarantine_size(self, tenant: Tenant | None = None) -> int:
        """How many index writes are quarantined (of one user, if given)."""
        return self._count("outbox_quarantine", tenant)

    def quarantined(self, tenant: Tenant | None = None, *, limit: int = 1_000_000) -> list[dict[str, Any]]:
        """The quarantined index writes, oldest first, as dicts of ``op, user_id, ref_id, error, quarantined_at``."""
        where, params = ("WHERE user_id = %s", [tenant]) if tenant is not None else ("", [])
        rows = self._rows(STORE if tenant is None else tenant,
                          f"SELECT op, user_id, ref_id, error, quarantined_at FROM outbox_quarantine {where} "
                          "ORDER BY quarantined_at, rowid LIMIT %s", [*params, limit])
        return [dict(zip(("op", "user_id", "ref_id", "error", "quarantined_at"), r)) for r in rows]

    def record_users(self) -> list[Tenant]:
        """Every user with a stored fact or entity (every user's: rebuilds walk them one by one)."""
        rows = self._rows(STORE, "SELECT DISTINCT user_id FROM facts UNION SELECT DISTINCT user_id FROM entities")
        return sorted(Tenant.stored(r[0]) for r in rows)

    def indexed_entity_sample(self, scan: int = 50) -> tuple[str, str] | None:
        """``(user_id, entity_id)`` of the oldest entity both indexes must already hold, if any."""
        rows = self._rows(STORE, "SELECT id, user_id FROM entities ORDER BY rowid LIMIT %s", [scan])
        return self._first_applied("entity", rows)

    def indexed_fact_sample(self, scan: int = 50) -> tuple[str, str] | None:
        """``(user_id, fact_id)`` of the oldest current fact the vector index must already hold, if any."""
        rows = self._rows(STORE, "SELECT id, user_id FROM facts WHERE valid_until IS NULL AND superseded_by IS NULL "
                                 "ORDER BY rowid LIMIT %s", [scan])
        return self._first_applied("fact", rows)

    def indexed_edge_sample(self, scan: int = 50) -> tuple[str, str] | None:
        """``(user_id, subject_id)`` of the oldest fact between two entities that the graph must already hold."""
        rows = self._rows(STORE, "SELECT id, user_id, subject_id FROM facts WHERE object_id IS NOT NULL "
                                 "AND object_id <> subject_id ORDER BY rowid LIMIT %s", [scan])
        found = self._first_applied("fact", rows)
        return None if found is None else (found[0], found[2])

    def _first_applied(self, op: str, rows: Sequence[tuple]) -> tuple | None:
        """``(user_id, id, *rest)`` of the first row ``(id, user_id, *rest)`` with no queued or quarantined ``op``."""
        ids = [r[0] for r in rows]
        waiting = {r[0] for table in ("outbox", "outbox_quarantine") for r in self._rows_in(
            STORE, f"SELECT ref_id FROM {table} WHERE op = %s AND ref_id = ANY(%s)", ids, [op])}
        return next(((Tenant.stored(r[1]), r[0], *r[2:]) for r in rows if r[0] not in waiting), None)
