"""A record store in dicts, no SQL: a double of the record seam that passes the record contract suite.

As httpx's ``MockTransport`` is to its transports: the proof that the record Protocols
(:mod:`zep_core.stores.record_protocols`) are the whole seam, kept small and plain. It holds
rows as the SQL stores give them (:mod:`zep_core.stores.rows`); its lexical ranking is a
plain BM25 over a fact's words, not FTS5's, so it promises what the contract asserts, not
the SQL stores' exact scores. A transaction is a copy of the state, put back on an error.
As the SQLite store runs each statement and transaction under one lock, every method runs
under one lock here (a memory's indexer and refresh threads share the store).
"""

from __future__ import annotations

import copy
import functools
import itertools
import pickle
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from zep_core.errors import RecordStoreError
from zep_core.models import Episode, Message
from zep_core.stores.rows import iso, parse_time
from zep_core.tenant import Tenant, key

from tests.stores.memory_facts import MemoryFactRows


def _one_at_a_time(cls: type) -> type:
    """Every public method of ``cls`` under the store's lock (a transaction holds it from start to end)."""

    def locked(method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return method(self, *args, **kwargs)
        return call

    for name in dir(cls):
        if not name.startswith("_") and name != "transaction" and callable(getattr(cls, name)):
            setattr(cls, name, locked(getattr(cls, name)))
    return cls


@_one_at_a_time
class MemoryRecordStore(MemoryFactRows):
    """Every record Protocol over dicts and lists; rows keep the order they were written in."""

    needs_check = False

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._order = itertools.count(1)
        self._seq = itertools.count(1)
        self.s: dict[str, Any] = {"meta": {}, "episodes": {}, "messages": {}, "facts": {}, "entities": {},
                                  "aliases": {}, "outbox": [], "quarantine": {}, "sessions": [], "tiers": {}}

    # -- the connection -------------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Everything inside or nothing: the state is copied first and put back on an error."""
        with self._lock:
            saved = pickle.loads(pickle.dumps(self.s, pickle.HIGHEST_PROTOCOL))
            try:
                yield
            except BaseException:
                self.s = saved
                raise

    def close(self) -> None:
        """Nothing to close."""

    def checkpoint_in_background(self) -> None:
        """No log to checkpoint."""

    def checkpoint(self) -> int:
        """No log: no pages left."""
        return 0

    def lock_tenants(self, tenants: Iterable[Tenant]) -> None:
        """One process, one store: nothing to lock."""
        for tenant in tenants:
            key(tenant)

    def claim_episode(self, tenant: Tenant, episode_id: str) -> bool:
        """Always: one process holds the store."""
        key(tenant)
        return True

    def release_episode(self, tenant: Tenant, episode_id: str) -> None:
        """Nothing to give back."""
        key(tenant)

    def get_meta(self, key: str) -> str | None:
        """One metadata value."""
        return self.s["meta"].get(key)

    def set_meta(self, key: str, value: str) -> None:
        """Write one metadata value (NOT NULL, as the tables have it)."""
        if value is None:
            raise RecordStoreError(f"meta value of {key!r} violates NOT NULL")
        self.s["meta"][key] = value

    def table_counts(self) -> dict[str, int]:
        """Row counts of the main tables."""
        s = self.s
        return {"episodes": len(s["episodes"]), "messages": sum(map(len, s["messages"].values())),
                "facts": len(s["facts"]), "entities": len(s["entities"]), "outbox": len(s["outbox"]),
                "session_messages": len(s["sessions"])}

    # -- users, episodes, sessions ----------------------------------------------------------------

    def _of(self, table: str, user: str) -> list[Any]:
        return [r for r in (self.s[table].values() if isinstance(self.s[table], dict) else self.s[table])
                if r["user"] == user]

    def has_user(self, tenant: Tenant) -> bool:
        """Whether anything was ever stored for the tenant."""
        user = key(tenant)
        return bool(self._of("episodes", user) or self._of("sessions", user))

    def has_records(self, tenant: Tenant) -> bool:
        """Whether any row of the tenant is stored."""
        user = key(tenant)
        return self.has_user(user) or any(self._of(t, user) for t in ("facts", "entities")) or any(
            u == user for u, _ in self.s["aliases"])

    def users(self) -> list[Tenant]:
        """Every user with stored episodes or chat messages."""
        return sorted({Tenant.stored(r["user"]) for t in ("episodes", "sessions") for r in self._all(t)})

    def _all(self, table: str) -> list[Any]:
        rows = self.s[table]
        return list(rows.values()) if isinstance(rows, dict) else list(rows)

    def delete_user(self, tenant: Tenant) -> None:
        """Delete every row of a user."""
        user = key(tenant)
        s = self.s
        for table in ("episodes", "facts", "entities", "quarantine"):
            s[table] = {k: r for k, r in s[table].items() if r["user"] != user}
        s["messages"] = {e: m for e, m in s["messages"].items() if e in s["episodes"]}
        s["aliases"] = {(u, a): e for (u, a), e in s["aliases"].items() if u != user}
        s["sessions"] = [r for r in s["sessions"] if r["user"] != user]
        s["outbox"] = [r for r in s["outbox"] if r["user"] != user]
        s["tiers"].pop(user, None)

    def episode_owner(self, episode_id: str) -> Tenant | None:
        """The user an episode id belongs to, or None."""
        row = self.s["episodes"].get(episode_id)
        return None if row is None else Tenant.stored(row["user"])

    def insert_episode(self, episode: Episode, message_ids: Sequence[str]) -> bool:
        """Store an episode and its messages unless the id is taken."""
        if episode.id in self.s["episodes"]:
            return False
        user = key(Tenant.of(episode.user_id))
        self.s["episodes"][episode.id] = {"user": user, "session_id": episode.session_id, "summary": episode.summary,
                                          "created_at": iso(episode.created_at), "status": episode.status,
                                          "error": None, "attempts": 0, "order": next(self._order)}
        self.s["messages"][episode.id] = [(mid, m.role, m.name, m.content, iso(m.timestamp))
                                          for m, mid in zip(episode.messages, message_ids)]
        return True

    def _episode(self, tenant: Tenant, episode_id: str) -> dict | None:
        user, row = key(tenant), self.s["episodes"].get(episode_id)
        return row if row is not None and row["user"] == user else None

    def set_episode_status(self, tenant: Tenant, episode_id: str, status: str, *, error: str | None = None,
                           summary: str | None = None, usage: dict | None = None) -> None:
        """Record the outcome of an extraction attempt."""
        row = self._episode(tenant, episode_id)
        if row is not None:
            row.update(status=status, error=error, summary=row["summary"] if summary is None else summary,
                       attempts=row["attempts"] + 1)

    def get_episode(self, tenant: Tenant, episode_id: str) -> Episode | None:
        """One of the tenant's episodes with its messages, or None."""
        row = self._episode(tenant, episode_id)
        if row is None:
            return None
        messages = tuple(Message(content=c, role=r, name=n, id=i, timestamp=parse_time(t))
                         for i, r, n, c, t in self.s["messages"][episode_id])
        return Episode(id=episode_id, user_id=Tenant.stored(row["user"]), session_id=row["session_id"],
                       summary=row["summary"], created_at=parse_time(row["created_at"]), status=row["status"],
                       error=row["error"], messages=messages)

    def _episodes(self, tenant: Tenant | None, keep: Callable[[dict], bool], limit: int) -> list[tuple[str, dict]]:
        user = None if tenant is None else key(tenant)
        rows = [(i, r) for i, r in self.s["episodes"].items() if (user is None or r["user"] == user) and keep(r)]
        return sorted(rows, key=lambda ir: (ir[1]["created_at"], ir[1]["order"]))[:limit]

    def episode_ids(self, tenant: Tenant | None = None, *, status: str | None = None,
                    limit: int = 1_000_000) -> list[str]:
        """Episode ids, oldest first."""
        return [i for i, _ in self._episodes(tenant, lambda r: status is None or r["status"] == status, limit)]

    def episodes_with_status(self, status: str, *, limit: int = 1_000_000) -> list[tuple[str, Tenant]]:
        """``(episode_id, user)`` of every user's episodes of one status, oldest first."""
        return [(i, Tenant.stored(r["user"])) for i, r in self._episodes(None, lambda r: r["status"] == status, limit)]

    def episode_status(self, tenant: Tenant, episode_id: str) -> str | None:
        """The status of one of the tenant's episodes."""
        row = self._episode(tenant, episode_id)
        return None if row is None else row["status"]

    def episode_attempts(self, tenant: Tenant, episode_id: str) -> int:
        """How many extraction attempts an episode has had."""
        row = self._episode(tenant, episode_id)
        return 0 if row is None else row["attempts"]

    def mark_episode_failed(self, tenant: Tenant, episode_id: str, reason: str) -> None:
        """Give up on a pending episode."""
        row = self._episode(tenant, episode_id)
        if row is not None and row["status"] == "pending":
            row.update(status="failed", error=reason)

    def failed_episodes(self, tenant: Tenant | None = None, *, limit: int = 1_000_000,
                        ) -> list[tuple[str, Tenant, str | None, int]]:
        """``(episode_id, user, error, attempts)`` of the failed episodes, oldest first."""
        return [(i, Tenant.stored(r["user"]), r["error"], r["attempts"])
                for i, r in self._episodes(tenant, lambda r: r["status"] == "failed", limit)]

    def _turn(self, user: str, session_id: str, m: Message, episode_id: str | None) -> dict:
        return {"seq": next(self._seq), "user": user, "session_id": session_id, "role": m.role, "name": m.name,
                "content": m.content, "message_id": m.id, "timestamp": iso(m.timestamp),
                "extra": copy.deepcopy(m.extra), "episode_id": episode_id}

    @staticmethod
    def _message(r: dict) -> Message:
        return Message(content=r["content"], role=r["role"], name=r["name"], id=r["message_id"],
                       timestamp=parse_time(r["timestamp"]), extra=copy.deepcopy(r["extra"]))

    def add_session_messages(self, tenant: Tenant, session_id: str, messages: Sequence[Message]) -> None:
        """Append chat turns to a session's history."""
        user = key(tenant)
        self.s["sessions"] += [self._turn(user, session_id, m, None) for m in messages]

    def _session(self, tenant: Tenant, session_id: str) -> list[dict]:
        user = key(tenant)
        return [r for r in self.s["sessions"] if r["user"] == user and r["session_id"] == session_id]

    def session_messages(self, tenant: Tenant, session_id: str, *, unended: bool = False,
                         limit: int | None = None) -> list[tuple[int, Message]]:
        """A session's turns ``(seq, message)`` in order; the last ``limit`` if given."""
        rows = [r for r in self._session(tenant, session_id) if not unended or r["episode_id"] is None]
        rows = rows[-limit:] if limit else ([] if limit == 0 else rows)
        return [(r["seq"], self._message(r)) for r in rows]

    def waiting_sessions(self, tenant: Tenant | None = None) -> list[tuple[str, str, datetime | None]]:
        """``(user, session_id, time of its last waiting turn)`` of every session with turns not learned from."""
        user = None if tenant is None else key(tenant)
        found: dict[tuple[str, str], list[dict]] = {}
        for r in self.s["sessions"]:
            if r["episode_id"] is None and r["role"] != "tool" and user in (None, r["user"]):
                found.setdefault((r["user"], r["session_id"]), []).append(r)
        times = {k: [r["timestamp"] for r in rows if r["timestamp"]] for k, rows in found.items()}
        return [(Tenant.stored(u), s, parse_time(max(times[(u, s)], default=None)))
                for (u, s), rows in sorted(found.items(), key=lambda kv: kv[1][0]["seq"])]

    def has_session(self, tenant: Tenant, session_id: str) -> bool:
        """Whether the session has any stored turn."""
        return bool(self._session(tenant, session_id))

    def mark_session_ended(self, tenant: Tenant, session_id: str, up_to_seq: int, episode_id: str) -> None:
        """Record that turns up to ``up_to_seq`` went into ``episode_id``."""
        for r in self._session(tenant, session_id):
            if r["seq"] <= up_to_seq and r["episode_id"] is None:
                r["episode_id"] = episode_id

    def clear_session(self, tenant: Tenant, session_id: str) -> None:
        """Forget a session's chat turns."""
        gone = {id(r) for r in self._session(tenant, session_id)}
        self.s["sessions"] = [r for r in self.s["sessions"] if id(r) not in gone]

    def session_rows(self, tenant: Tenant) -> list[tuple[str, Message, str | None]]:
        """Every chat turn of a user ``(session_id, message, episode_id)`` in order."""
        return [(r["session_id"], self._message(r), r["episode_id"]) for r in self._of("sessions", key(tenant))]

    def insert_session_rows(self, tenant: Tenant, rows: Iterable[tuple[str, Message, str | None]]) -> None:
        """Append chat turns with their episode marks."""
        user = key(tenant)
        self.s["sessions"] += [self._turn(user, sid, m, ep) for sid, m, ep in rows]

    # -- the outbox -------------------------------------------------------------------------------------

    def add_outbox(self, rows: Iterable[tuple[str, str, str | None, dict | None]]) -> None:
        """Queue index writes ``(op, user_id, ref_id, payload)``, in their order."""
        for op, user, ref, payload in rows:
            self.s["outbox"].append({"seq": next(self._seq), "op": op, "user": key(Tenant.of(user)), "ref": ref,
                                     "payload": copy.deepcopy(payload)})

    def pending_outbox(self, limit: int = 5000, *, up_to: int | None = None, users: Collection[str] | None = None,
                       ) -> list[tuple[int, str, str, str | None, dict | None]]:
        """Oldest pending index writes, up to seq ``up_to`` and of ``users`` if given."""
        return [(r["seq"], r["op"], Tenant.stored(r["user"]), r["ref"], copy.deepcopy(r["payload"]))
                for r in self.s["outbox"] if (up_to is None or r["seq"] <= up_to)
                and (users is None or r["user"] in users)][:limit]

    def last_outbox_seq(self) -> int:
        """The newest queued index write's seq (0 when none is queued)."""
        return max((r["seq"] for r in self.s["outbox"]), default=0)

    def clear_outbox(self, up_to_seq: int) -> None:
        """Mark index writes done, up to and including ``up_to_seq``."""
        self.s["outbox"] = [r for r in self.s["outbox"] if r["seq"] > up_to_seq]

    def clear_outbox_rows(self, seqs: Sequence[int]) -> None:
        """Mark these index writes done."""
        done = set(seqs)
        self.s["outbox"] = [r for r in self.s["outbox"] if r["seq"] not in done]

    def outbox_size(self, tenant: Tenant | None = None) -> int:
        """How many index writes are pending (of one user, when given)."""
        user = None if tenant is None else key(tenant)
        return sum(user in (None, r["user"]) for r in self.s["outbox"])

    def quarantine_outbox(self, rows: Iterable[tuple[int | None, str, str, str, dict | None, str]]) -> None:
        """Set aside index writes that could not be applied: one row per op and ref."""
        for seq, op, user, ref, payload, error in rows:
            now = iso(datetime.now().astimezone())
            self.s["quarantine"][(op, ref)] = {"seq": seq, "user": key(Tenant.of(user)), "error": error,
                                               "payload": copy.deepcopy(payload), "at": now, "order": next(self._order)}

    def release_quarantined(self, keys: Iterable[tuple[str, str]]) -> None:
        """Take ``(op, ref_id)`` out of the quarantine."""
        for k in keys:
            self.s["quarantine"].pop(tuple(k), None)

    def clear_quarantine(self, tenant: Tenant | None = None) -> None:
        """Empty the quarantine, or one user's part of it."""
        user = None if tenant is None else key(tenant)
        self.s["quarantine"] = {k: r for k, r in self.s["quarantine"].items() if user not in (None, r["user"])}

    def quarantine_size(self, tenant: Tenant | None = None) -> int:
        """How many index writes are quarantined (of one user, if given)."""
        user = None if tenant is None else key(tenant)
        return sum(user in (None, r["user"]) for r in self.s["quarantine"].values())

    def quarantined(self, tenant: Tenant | None = None, *, limit: int = 1_000_000) -> list[dict[str, Any]]:
        """The quarantined index writes, oldest first."""
        user = None if tenant is None else key(tenant)
        rows = sorted(((k, r) for k, r in self.s["quarantine"].items() if user in (None, r["user"])),
                      key=lambda kr: (kr[1]["at"], kr[1]["order"]))
        return [{"op": op, "user_id": r["user"], "ref_id": ref, "error": r["error"], "quarantined_at": r["at"]}
                for (op, ref), r in rows][:limit]

    def record_users(self) -> list[Tenant]:
        """Every user with a stored fact or entity."""
        return sorted({Tenant.stored(r["user"]) for t in ("facts", "entities") for r in self.s[t].values()})

    def _first_applied(self, op: str, rows: list[tuple]) -> tuple | None:
        waiting = {r["ref"] for r in self.s["outbox"] if r["op"] == op} | {
            ref for o, ref in self.s["quarantine"] if o == op}
        return next(((Tenant.stored(r[1]), r[0], *r[2:]) for r in rows if r[0] not in waiting), None)

    def indexed_entity_sample(self, scan: int = 50) -> tuple[str, str] | None:
        """``(user_id, entity_id)`` of the oldest entity both indexes must already hold, if any."""
        rows = sorted(self.s["entities"].values(), key=lambda e: e["order"])[:scan]
        return self._first_applied("entity", [(e["id"], e["user"]) for e in rows])

    def indexed_fact_sample(self, scan: int = 50) -> tuple[str, str] | None:
        """``(user_id, fact_id)`` of the oldest current fact the vector index must already hold, if any."""
        rows = sorted((r for r in self.s["facts"].values() if r["row"].current), key=lambda r: r["order"])[:scan]
        return self._first_applied("fact", [(r["row"].id, r["user"]) for r in rows])

    def indexed_edge_sample(self, scan: int = 50) -> tuple[str, str] | None:
        """``(user_id, subject_id)`` of the oldest fact between two entities that the graph must already hold."""
        rows = sorted((r for r in self.s["facts"].values() if r["row"].object_id is not None
                       and r["row"].object_id != r["row"].subject_id), key=lambda r: r["order"])[:scan]
        found = self._first_applied("fact", [(r["row"].id, r["user"], r["row"].subject_id) for r in rows])
        return None if found is None else (found[0], found[2])
