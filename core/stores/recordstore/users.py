"""Users, their episodes and their chat sessions: what ingest stores first and the adapters' history."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from ...models import Episode, Message
from ...tenant import Tenant, key
from ..schema import (
    iso,
    parse_time,
)
from .connection import (
    Connection,
    _extra_text,
    _session_message,
)


class UserRows(Connection):
    """Users, their episodes and their chat sessions: what ingest stores first and the adapters' history."""

    def has_user(self, tenant: Tenant) -> bool:
        """Whether anything was ever stored for the tenant."""
        user_id = key(tenant)
        return bool(self._rows(
            "SELECT 1 FROM episodes WHERE user_id = ? UNION ALL "
            "SELECT 1 FROM session_messages WHERE user_id = ? LIMIT 1", [user_id, user_id]))

    def has_records(self, tenant: Tenant) -> bool:
        """Whether any row of the tenant is stored: episode, chat turn, fact, entity or alias (imports check it)."""
        return bool(self._rows(" UNION ALL ".join(
            f"SELECT 1 FROM {t} WHERE user_id = ?" for t in ("episodes", "session_messages", "facts", "entities",
                                                             "aliases")) + " LIMIT 1", [key(tenant)] * 5))

    def users(self) -> list[Tenant]:
        """Every user with stored episodes or chat messages (every user's: for maintenance)."""
        rows = self._rows("SELECT user_id FROM episodes UNION SELECT user_id FROM session_messages")
        return sorted(Tenant.stored(r[0]) for r in rows)

    def delete_user(self, tenant: Tenant) -> None:
        """Delete every row of a user, and their lexical index (call inside :meth:`transaction`)."""
        user_id = key(tenant)
        for table in ("messages", "episodes", "facts", "entities", "aliases", "session_messages"):
            self._exec(f"DELETE FROM {table} WHERE user_id = ?", [user_id])
        for table in ("lexical_postings", "lexical_docs", "lexical_stats"):
            self._exec(f"DELETE FROM {table} WHERE user_id = ?", [user_id])
        self._forget_hits(user_id)

    def episode_owner(self, episode_id: str) -> Tenant | None:
        """The user an episode id belongs to, or None if unknown.

        The id namespace (episode ids are unique across users): a client's episode id is
        checked here before it is used, and only the owner is read.
        """
        rows = self._rows("SELECT user_id FROM episodes WHERE id = ?", [episode_id])
        return Tenant.stored(rows[0][0]) if rows else None

    def insert_episode(self, episode: Episode, message_ids: Sequence[str]) -> bool:
        """Store an episode and every message, unless its id is stored already (call inside :meth:`transaction`).

        Returns:
            Whether it was stored: False when the id was taken (by this user or another).

        """
        if not self._exec(
                "INSERT INTO episodes(id, user_id, session_id, summary, created_at, status) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                [episode.id, episode.user_id, episode.session_id, episode.summary,
                 iso(episode.created_at), episode.status]):
            return False
        self._many(
            "INSERT INTO messages(episode_id, seq, user_id, message_id, role, name, content, timestamp) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(episode.id, i, episode.user_id, mid, m.role, m.name, m.content, iso(m.timestamp))
             for i, (m, mid) in enumerate(zip(episode.messages, message_ids))])
        return True

    def set_episode_status(self, tenant: Tenant, episode_id: str, status: str, *, error: str | None = None,
                           summary: str | None = None, usage: dict | None = None) -> None:
        """Record the outcome of an extraction attempt."""
        self._exec(
            "UPDATE episodes INDEXED BY episodes_key SET status = ?, error = ?, summary = COALESCE(?, summary), "
            "usage = COALESCE(?, usage), attempts = attempts + 1 WHERE user_id = ? AND id = ?",
            [status, error, summary, json.dumps(usage) if usage else None, key(tenant), episode_id])

    def get_episode(self, tenant: Tenant, episode_id: str) -> Episode | None:
        """Load one of the tenant's episodes with its messages (caller ids restored), or None."""
        user_id = key(tenant)
        rows = self._rows("SELECT id, user_id, session_id, summary, created_at, status, error "
                          "FROM episodes INDEXED BY episodes_key WHERE user_id = ? AND id = ?", [user_id, episode_id])
        if not rows:
            return None
        r = rows[0]
        msgs = self._rows("SELECT message_id, role, name, content, timestamp FROM messages INDEXED BY messages_key "
                          "WHERE user_id = ? AND episode_id = ? ORDER BY seq", [user_id, episode_id])
        messages = tuple(Message(content=m[3], role=m[1], name=m[2], id=m[0], timestamp=parse_time(m[4]))
                         for m in msgs)
        return Episode(id=r[0], user_id=Tenant.stored(r[1]), session_id=r[2], summary=r[3],
                       created_at=parse_time(r[4]), status=r[5], error=r[6], messages=messages)

    def episode_ids(self, tenant: Tenant | None = None, *, status: str | None = None,
                    limit: int = 1_000_000) -> list[str]:
        """Episode ids, oldest first: of the tenant, or of every user (None); of one status if given."""
        clauses, params = [], []
        if tenant is not None:
            clauses.append("user_id = ?")
            params.append(key(tenant))
        if status is not None:
            clauses.append("status = ?")
            params.append(status)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        by = "INDEXED BY episodes_key " if tenant is not None else ""  # one user's: by their key
        return [r[0] for r in self._rows(
            f"SELECT id FROM episodes {by}{where} ORDER BY created_at, rowid LIMIT ?", [*params, limit])]

    def episodes_with_status(self, status: str, *, limit: int = 1_000_000) -> list[tuple[str, Tenant]]:
        """``(episode_id, user)`` of every user's episodes of one status, oldest first (for maintenance)."""
        return [(r[0], Tenant.stored(r[1])) for r in self._rows(
            "SELECT id, user_id FROM episodes WHERE status = ? ORDER BY created_at, rowid LIMIT ?", [status, limit])]

    def episode_status(self, tenant: Tenant, episode_id: str) -> str | None:
        """The status of one of the tenant's episodes (``pending``, ``done``, ``failed``), or None if it has none."""
        rows = self._rows("SELECT status FROM episodes INDEXED BY episodes_key WHERE user_id = ? AND id = ?",
                          [key(tenant), episode_id])
        return rows[0][0] if rows else None

    def episode_attempts(self, tenant: Tenant, episode_id: str) -> int:
        """How many extraction attempts one of the tenant's episodes has had (0 when unknown)."""
        rows = self._rows("SELECT attempts FROM episodes INDEXED BY episodes_key WHERE user_id = ? AND id = ?",
                          [key(tenant), episode_id])
        return int(rows[0][0]) if rows else 0

    def mark_episode_failed(self, tenant: Tenant, episode_id: str, reason: str) -> None:
        """Give up on a pending episode: status ``failed`` with the reason; its messages stay."""
        self._exec("UPDATE episodes INDEXED BY episodes_key SET status = 'failed', error = ? "
                   "WHERE user_id = ? AND id = ? AND status = 'pending'", [reason, key(tenant), episode_id])

    def failed_episodes(self, tenant: Tenant | None = None, *, limit: int = 1_000_000,
                        ) -> list[tuple[str, Tenant, str | None, int]]:
        """``(episode_id, user, error, attempts)`` of the failed episodes, oldest first (of every user: None)."""
        where, params = ("AND user_id = ?", [key(tenant)]) if tenant is not None else ("", [])
        by = "INDEXED BY episodes_key " if tenant is not None else ""  # one user's: by their key
        rows = self._rows(f"SELECT id, user_id, error, attempts FROM episodes {by}WHERE status = 'failed' {where} "
                          "ORDER BY created_at, rowid LIMIT ?", [*params, limit])
        return [(r[0], Tenant.stored(r[1]), r[2], int(r[3])) for r in rows]

    def add_session_messages(self, tenant: Tenant, session_id: str, messages: Sequence[Message]) -> None:
        """Append chat turns to a session's history at once."""
        user_id = key(tenant)
        with self.transaction():
            self._many(
                "INSERT INTO session_messages(user_id, session_id, role, name, content, message_id, timestamp, "
                "extra) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(user_id, session_id, m.role, m.name, m.content, m.id, iso(m.timestamp), _extra_text(m))
                 for m in messages])

    def session_messages(self, tenant: Tenant, session_id: str, *, unended: bool = False,
                         limit: int | None = None) -> list[tuple[int, Message]]:
        """A session's turns ``(seq, message)`` in order; the last ``limit`` if given."""
        user_id = key(tenant)
        sql = ("SELECT seq, role, name, content, message_id, timestamp, extra FROM session_messages "
               "WHERE user_id = ? AND session_id = ?")
        if unended:
            sql += " AND episode_id IS NULL"
        params: list[Any] = [user_id, session_id]
        if limit is not None:
            sql = f"SELECT * FROM ({sql} ORDER BY seq DESC LIMIT ?)"
            params.append(limit)
        rows = self._rows(sql + " ORDER BY seq", params)
        return [(r[0], _session_message(r[1:])) for r in rows]

    def waiting_sessions(self, tenant: Tenant | None = None) -> list[tuple[str, str, datetime | None]]:
        """``(user_id, session_id, time of its last waiting turn)`` of every session with turns not yet learned from.

        Only turns that would be learned from count (``tool`` rows never are); of
        ``user_id`` only, if given.
        """
        user_id = None if tenant is None else key(tenant)
        sql = ("SELECT user_id, session_id, MAX(timestamp) FROM session_messages "
               "WHERE episode_id IS NULL AND role <> 'tool'")
        params: list[Any] = []
        if user_id is not None:
            sql += " AND user_id = ?"
            params.append(user_id)
        rows = self._rows(sql + " GROUP BY user_id, session_id ORDER BY MIN(seq)", params)
        return [(Tenant.stored(u), s, parse_time(t)) for u, s, t in rows]

    def has_session(self, tenant: Tenant, session_id: str) -> bool:
        """Whether the session has any stored turn."""
        user_id = key(tenant)
        return bool(self._rows("SELECT 1 FROM session_messages WHERE user_id = ? AND session_id = ? LIMIT 1",
                               [user_id, session_id]))

    def mark_session_ended(self, tenant: Tenant, session_id: str, up_to_seq: int, episode_id: str) -> None:
        """Record that turns up to ``up_to_seq`` went into ``episode_id``."""
        user_id = key(tenant)
        self._exec("UPDATE session_messages SET episode_id = ? WHERE user_id = ? AND session_id = ? "
                   "AND seq <= ? AND episode_id IS NULL", [episode_id, user_id, session_id, up_to_seq])

    def clear_session(self, tenant: Tenant, session_id: str) -> None:
        """Forget a session's chat turns (episodes already stored stay)."""
        user_id = key(tenant)
        self._exec("DELETE FROM session_messages WHERE user_id = ? AND session_id = ?", [user_id, session_id])

    def session_rows(self, tenant: Tenant) -> list[tuple[str, Message, str | None]]:
        """Every chat turn of a user ``(session_id, message, episode_id)`` in order (for export)."""
        user_id = key(tenant)
        rows = self._rows("SELECT session_id, role, name, content, message_id, timestamp, extra, episode_id "
                          "FROM session_messages WHERE user_id = ? ORDER BY seq", [user_id])
        return [(r[0], _session_message(r[1:7]), r[7]) for r in rows]

    def insert_session_rows(self, tenant: Tenant, rows: Iterable[tuple[str, Message, str | None]]) -> None:
        """Append chat turns with their episode marks, as :meth:`session_rows` gives them (for import)."""
        user_id = key(tenant)
        self._many(
            "INSERT INTO session_messages(user_id, session_id, role, name, content, message_id, timestamp, "
            "extra, episode_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(user_id, sid, m.role, m.name, m.content, m.id, iso(m.timestamp), _extra_text(m), ep)
             for sid, m, ep in rows])
