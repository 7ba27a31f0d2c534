"""Users, their episodes and their chat sessions, written once for both SQL stores."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from ...models import Episode, Message
from ...tenant import Tenant, key
from ..rows import iso, parse_time
from .dialect import STORE, SqlBase, extra_text, session_message

#: A tenant's tables, in the order :meth:`SqlUserRows.delete_user` empties them (a store adds its own).
USER_TABLES = ("messages", "episodes", "facts", "entities", "aliases", "session_messages",
               "lexical_postings", "lexical_docs", "lexical_stats")


class SqlUserRows(SqlBase):
    """Users, their episodes and their chat sessions: what ingest stores first and the adapters' history."""

    #: The tables :meth:`delete_user` empties of a user's rows.
    user_tables: tuple[str, ...] = USER_TABLES

    def has_user(self, tenant: Tenant) -> bool:
        """Whether anything was ever stored for the tenant."""
        user_id = key(tenant)
        return bool(self._select(tenant, "SELECT 1 FROM episodes WHERE user_id = ? UNION ALL "
                                         "SELECT 1 FROM session_messages WHERE user_id = ? LIMIT 1",
                                 [user_id, user_id]))

    def has_records(self, tenant: Tenant) -> bool:
        """Whether any row of the tenant is stored: episode, chat turn, fact, entity or alias (imports check it)."""
        tables = ("episodes", "session_messages", "facts", "entities", "aliases")
        return bool(self._select(tenant, " UNION ALL ".join(f"SELECT 1 FROM {t} WHERE user_id = ?" for t in tables)
                                 + " LIMIT 1", [key(tenant)] * len(tables)))

    def users(self) -> list[Tenant]:
        """Every user with stored episodes or chat messages (every user's: for maintenance)."""
        rows = self._select(STORE, "SELECT user_id FROM episodes UNION SELECT user_id FROM session_messages")
        return sorted(Tenant.stored(r[0]) for r in rows)

    def delete_user(self, tenant: Tenant) -> None:
        """Delete every row of a user, and their lexical index (call inside :meth:`transaction`)."""
        user_id = key(tenant)
        for table in self.user_tables:
            self._change(tenant, f"DELETE FROM {table} WHERE user_id = ?", [user_id])
        self._user_deleted(user_id)

    def _user_deleted(self, tenant: Tenant) -> None:
        """What a store does once a user's rows are deleted (forget caches, drop an index)."""

    def episode_owner(self, episode_id: str) -> Tenant | None:
        """The user an episode id belongs to, or None if unknown.

        The id namespace (episode ids are unique across users): a client's episode id is
        checked here before it is used, and only the owner is read.
        """
        rows = self._select(STORE, "SELECT user_id FROM episodes WHERE id = ?", [episode_id])
        return Tenant.stored(rows[0][0]) if rows else None

    def insert_episode(self, episode: Episode, message_ids: Sequence[str]) -> bool:
        """Store an episode and every message, unless its id is stored already (call inside :meth:`transaction`).

        Two writers storing one id at once: the second stores nothing.

        Returns:
            Whether it was stored: False when the id was taken (by this user or another).

        """
        tenant = Tenant.of(episode.user_id)
        if not self._change(tenant, "INSERT INTO episodes(id, user_id, session_id, summary, created_at, status) "
                                    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                            [episode.id, tenant, episode.session_id, episode.summary, iso(episode.created_at),
                             episode.status]):
            return False
        self._change_many(tenant, "INSERT INTO messages(episode_id, seq, user_id, message_id, role, name, content, "
                                  "timestamp) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                          [(episode.id, i, tenant, mid, m.role, m.name, m.content, iso(m.timestamp))
                           for i, (m, mid) in enumerate(zip(episode.messages, message_ids))])
        return True

    def set_episode_status(self, tenant: Tenant, episode_id: str, status: str, *, error: str | None = None,
                           summary: str | None = None, usage: dict | None = None) -> None:
        """Record the outcome of an extraction attempt."""
        self._change(tenant, "UPDATE episodes INDEXED BY episodes_key SET status = ?, error = ?, "
                             "summary = COALESCE(?, summary), usage = COALESCE(?, usage), attempts = attempts + 1 "
                             "WHERE user_id = ? AND id = ?",
                     [status, error, summary, json.dumps(usage) if usage else None, key(tenant), episode_id])

    def get_episode(self, tenant: Tenant, episode_id: str) -> Episode | None:
        """Load one of the tenant's episodes with its messages (caller ids restored), or None."""
        user_id = key(tenant)
        rows = self._select(tenant, "SELECT id, user_id, session_id, summary, created_at, status, error "
                                    "FROM episodes INDEXED BY episodes_key WHERE user_id = ? AND id = ?",
                            [user_id, episode_id])
        if not rows:
            return None
        r = rows[0]
        msgs = self._select(tenant, "SELECT message_id, role, name, content, timestamp FROM messages "
                                    "INDEXED BY messages_key WHERE user_id = ? AND episode_id = ? ORDER BY seq",
                            [user_id, episode_id])
        messages = tuple(Message(content=m[3], role=m[1], name=m[2], id=m[0], timestamp=parse_time(m[4]))
                         for m in msgs)
        return Episode(id=r[0], user_id=Tenant.stored(r[1]), session_id=r[2], summary=r[3],
                       created_at=parse_time(r[4]), status=r[5], error=r[6], messages=messages)

    def _episodes(self, tenant: Tenant | None, columns: str, where: str, params: list[Any], limit: int) -> list[tuple]:
        """Episodes of the tenant (by their key), or of every user (None), matching ``where``, oldest first."""
        by = ""
        if tenant is not None:
            where, params, by = f"user_id = ? AND {where}", [key(tenant), *params], "INDEXED BY episodes_key "
        return self._select(STORE if tenant is None else tenant,
                            f"SELECT {columns} FROM episodes {by}WHERE {where} ORDER BY created_at, rowid LIMIT ?",
                            [*params, limit])

    def episode_ids(self, tenant: Tenant | None = None, *, status: str | None = None,
                    limit: int = 1_000_000) -> list[str]:
        """Episode ids, oldest first: of the tenant, or of every user (None); of one status if given."""
        where, params = ("status = ?", [status]) if status is not None else ("1 = 1", [])
        return [r[0] for r in self._episodes(tenant and key(tenant), "id", where, params, limit)]

    def episodes_with_status(self, status: str, *, limit: int = 1_000_000) -> list[tuple[str, Tenant]]:
        """``(episode_id, user)`` of every user's episodes of one status, oldest first (for maintenance)."""
        return [(r[0], Tenant.stored(r[1])) for r in self._episodes(None, "id, user_id", "status = ?", [status], limit)]

    def episode_status(self, tenant: Tenant, episode_id: str) -> str | None:
        """The status of one of the tenant's episodes (``pending``, ``done``, ``failed``), or None if it has none."""
        rows = self._select(tenant, "SELECT status FROM episodes INDEXED BY episodes_key WHERE user_id = ? AND id = ?",
                            [key(tenant), episode_id])
        return rows[0][0] if rows else None

    def episode_attempts(self, tenant: Tenant, episode_id: str) -> int:
        """How many extraction attempts one of the tenant's episodes has had (0 when unknown)."""
        rows = self._select(tenant, "SELECT attempts FROM episodes INDEXED BY episodes_key WHERE user_id = ? "
                                    "AND id = ?", [key(tenant), episode_id])
        return int(rows[0][0]) if rows else 0

    def mark_episode_failed(self, tenant: Tenant, episode_id: str, reason: str) -> None:
        """Give up on a pending episode: status ``failed`` with the reason; its messages stay."""
        self._change(tenant, "UPDATE episodes INDEXED BY episodes_key SET status = 'failed', error = ? "
                             "WHERE user_id = ? AND id = ? AND status = 'pending'", [reason, key(tenant), episode_id])

    def failed_episodes(self, tenant: Tenant | None = None, *, limit: int = 1_000_000,
                        ) -> list[tuple[str, Tenant, str | None, int]]:
        """``(episode_id, user, error, attempts)`` of the failed episodes, oldest first (of every user: None)."""
        rows = self._episodes(tenant and key(tenant), "id, user_id, error, attempts", "status = 'failed'", [], limit)
        return [(r[0], Tenant.stored(r[1]), r[2], int(r[3])) for r in rows]

    def add_session_messages(self, tenant: Tenant, session_id: str, messages: Sequence[Message]) -> None:
        """Append chat turns to a session's history at once."""
        user_id = key(tenant)
        with self.transaction():
            self._change_many(tenant, "INSERT INTO session_messages(user_id, session_id, role, name, content, "
                                      "message_id, timestamp, extra) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                              [(user_id, session_id, m.role, m.name, m.content, m.id, iso(m.timestamp),
                                extra_text(m)) for m in messages])

    def session_messages(self, tenant: Tenant, session_id: str, *, unended: bool = False,
                         limit: int | None = None) -> list[tuple[int, Message]]:
        """A session's turns ``(seq, message)`` in order; the last ``limit`` if given."""
        sql = ("SELECT seq, role, name, content, message_id, timestamp, extra FROM session_messages "
               "WHERE user_id = ? AND session_id = ?")
        if unended:
            sql += " AND episode_id IS NULL"
        params: list[Any] = [key(tenant), session_id]
        if limit is not None:
            sql = f"SELECT * FROM ({sql} ORDER BY seq DESC LIMIT ?) last"
            params.append(limit)
        rows = self._select(tenant, sql + " ORDER BY seq", params)
        return [(r[0], session_message(r[1:])) for r in rows]

    def waiting_sessions(self, tenant: Tenant | None = None) -> list[tuple[str, str, datetime | None]]:
        """``(user_id, session_id, time of its last waiting turn)`` of every session with turns not yet learned from.

        Only turns that would be learned from count (``tool`` rows never are); of the
        tenant only, if given (of every user: store-wide).
        """
        sql = ("SELECT user_id, session_id, MAX(timestamp) FROM session_messages "
               "WHERE episode_id IS NULL AND role <> 'tool'")
        params: list[Any] = []
        if tenant is not None:
            sql += " AND user_id = ?"
            params.append(key(tenant))
        rows = self._select(STORE if tenant is None else tenant,
                            sql + " GROUP BY user_id, session_id ORDER BY MIN(seq)", params)
        return [(Tenant.stored(u), s, parse_time(t)) for u, s, t in rows]

    def has_session(self, tenant: Tenant, session_id: str) -> bool:
        """Whether the session has any stored turn."""
        return bool(self._select(tenant, "SELECT 1 FROM session_messages WHERE user_id = ? AND session_id = ? LIMIT 1",
                                 [key(tenant), session_id]))

    def mark_session_ended(self, tenant: Tenant, session_id: str, up_to_seq: int, episode_id: str) -> None:
        """Record that turns up to ``up_to_seq`` went into ``episode_id``."""
        self._change(tenant, "UPDATE session_messages SET episode_id = ? WHERE user_id = ? AND session_id = ? "
                             "AND seq <= ? AND episode_id IS NULL", [episode_id, key(tenant), session_id, up_to_seq])

    def clear_session(self, tenant: Tenant, session_id: str) -> None:
        """Forget a session's chat turns (episodes already stored stay)."""
        self._change(tenant, "DELETE FROM session_messages WHERE user_id = ? AND session_id = ?",
                     [key(tenant), session_id])

    def session_rows(self, tenant: Tenant) -> list[tuple[str, Message, str | None]]:
        """Every chat turn of a user ``(session_id, message, episode_id)`` in order (for export)."""
        rows = self._select(tenant, "SELECT session_id, role, name, content, message_id, timestamp, extra, episode_id "
                                    "FROM session_messages WHERE user_id = ? ORDER BY seq", [key(tenant)])
        return [(r[0], session_message(r[1:7]), r[7]) for r in rows]

    def insert_session_rows(self, tenant: Tenant, rows: Iterable[tuple[str, Message, str | None]]) -> None:
        """Append chat turns with their episode marks, as :meth:`session_rows` gives them (for import)."""
        user_id = key(tenant)
        self._change_many(tenant, "INSERT INTO session_messages(user_id, session_id, role, name, content, message_id, "
                                  "timestamp, extra, episode_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                          [(user_id, sid, m.role, m.name, m.content, m.id, iso(m.timestamp), extra_text(m), ep)
                           for sid, m, ep in rows])
