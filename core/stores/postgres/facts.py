"""Fact rows on PostgreSQL: written and updated with their lexical rows, and the reads of the update rules."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ...models import Fact
from ...names import STATEMENT, normalize_name
from ...tenant import Tenant, key
from ..schema import FACT_COLUMNS, StoredFact, fact_from_row, fact_row, iso, parse_time
from .connection import STORE
from .hnsw import SYNC, lock_key
from .lexical import PgLexicalRows
from .schema import CURRENT as _CURRENT

#: Fact columns, then the rowid: rows sorted by :func:`_storage_order` come in one order whatever the plan.
_ORDERED_FACTS = f"{FACT_COLUMNS}, rowid"


def _storage_order(row: Sequence[Any]) -> tuple[str, int]:
    """A fact row (:data:`FACT_COLUMNS` then ``rowid``) ordered by subject id, then as stored."""
    return fact_row(row).subject_id, row[-1]


def vector_of(value: Any) -> np.ndarray:
    """A stored ``vector`` (pgvector's :class:`~pgvector.Vector`) as the float32 array the SQLite store gives."""
    return np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value, dtype=np.float32)


def by_user(rows: Iterable[Any], user_of: Any) -> dict[Tenant, list[Any]]:
    """Records (or rows) that carry their own user id, grouped by that user as a checked tenant.

    The users come sorted, the order a write takes their locks in (:meth:`PgConnection.lock_tenants`).
    """
    out: dict[Tenant, list[Any]] = {}
    for item in rows:
        out.setdefault(Tenant.of(user_of(item)), []).append(item)
    return dict(sorted(out.items(), key=lambda kv: key(kv[0])))


class PgFactRows(PgLexicalRows):
    """Fact rows: written and updated with their lexical rows, and the reads of the update rules."""

    #: Told ``(tenant, facts written)`` once each write committed: the HNSW indexes' size check.
    on_facts_written: Callable[[Tenant, int], None] | None = None

    def write_facts(self, facts: Iterable[StoredFact]) -> None:
        """Insert or replace fact rows and index them lexically (call inside :meth:`transaction`).

        A replaced row is deleted and written anew (a new ``rowid``), as SQLite's
        ``INSERT OR REPLACE`` does. An id held by another tenant's fact is not replaced: the
        insert fails (the primary key), and row-level security would refuse the delete.
        """
        for tenant, mine in by_user(facts, lambda s: s.fact.user_id).items():
            ids = [s.fact.id for s in mine]
            self._unindex(tenant, ids)
            self._exec(tenant, "DELETE FROM facts WHERE user_id = %s AND id = ANY(%s)", [tenant, ids])
            self._many(tenant,
                       f"INSERT INTO facts({FACT_COLUMNS}, embedding, object_key) "
                       "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                       [(f.id, tenant, f.episode_id, f.subject, f.predicate, f.object, f.content,
                         f.confidence, iso(f.valid_from), iso(f.valid_until), f.superseded_by,
                         iso(f.created_at), iso(f.expired_at), json.dumps(list(f.source_message_ids)),
                         s.subject_id, s.object_id, f.attribute, np.asarray(s.embedding, dtype=np.float32),
                         normalize_name(f.object))
                        for s in mine for f in [s.fact]])
            self._index_lexical(tenant, ids)
            self._sync_ann(tenant, ids)
            if self.on_facts_written is not None:
                self.after_commit(functools.partial(self.on_facts_written, tenant, len(ids)))

    def update_facts(self, facts: Iterable[Fact]) -> None:
        """Rewrite the mutable columns of stored facts (supersession, reinforcement), and their lexical validity."""
        for tenant, mine in by_user(facts, lambda f: f.user_id).items():
            self._many(tenant,
                       "UPDATE facts SET confidence = %s, valid_from = %s, valid_until = %s, superseded_by = %s, "
                       "expired_at = %s, source_message_ids = %s WHERE user_id = %s AND id = %s",
                       [(f.confidence, iso(f.valid_from), iso(f.valid_until), f.superseded_by, iso(f.expired_at),
                         json.dumps(list(f.source_message_ids)), tenant, f.id) for f in mine])
            rowids = dict(self._rows_in(tenant, "SELECT id, rowid FROM facts WHERE user_id = %s AND id = ANY(%s)",
                                        [f.id for f in mine], [tenant]))
            wanted = {rowids[f.id]: (int(f.is_current), iso(f.valid_from), iso(f.valid_until))
                      for f in mine if f.id in rowids}
            if wanted:
                self._revalidate(tenant, wanted)
            self._sync_ann(tenant, [f.id for f in mine])

    def _sync_ann(self, tenant: Tenant, ids: Sequence[str]) -> None:
        """Bring a tenant's copy of current vectors (``ann_vectors``, kept for an HNSW index) up to these facts.

        Nothing is copied for a tenant without an index (:mod:`.hnsw`); the shared lock keeps
        this write from falling between an index build's mark and its copy (call inside
        :meth:`transaction`).
        """
        self._exec(tenant, "SELECT pg_advisory_xact_lock_shared(%s)", [lock_key(tenant)])
        self._exec(tenant, SYNC, {"u": tenant, "ids": list(ids)})

    def get_facts(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, Fact]:
        """Facts by id, for one user only."""
        rows = self._rows_in(tenant, f"SELECT {FACT_COLUMNS} FROM facts WHERE user_id = %s AND id = ANY(%s)",
                             ids, [tenant])
        return {row[0]: fact_from_row(row) for row in rows}

    def stored_facts(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, StoredFact]:
        """Facts of one user by id, with entity ids and vectors (what the outbox writes to the indexes)."""
        rows = self._rows_in(tenant, f"SELECT {FACT_COLUMNS}, embedding FROM facts WHERE user_id = %s "
                                     "AND id = ANY(%s)", ids, [tenant])
        return {f.id: StoredFact(fact_from_row(f), f.subject_id, f.object_id, vector_of(row[-1]))
                for row in rows for f in [fact_row(row)]}

    def _ids_by_key(self, table: str, tenant: Tenant, batch: int) -> Iterator[list[str]]:
        """Every id of one tenant's rows of ``table`` (``facts``, ``entities``), in batches, in id order."""
        last = ""
        while True:
            rows = self._rows(tenant, f"SELECT id FROM {table} WHERE user_id = %s AND id > %s ORDER BY id LIMIT %s",
                              [tenant, last, batch])
            if not rows:
                return
            yield [r[0] for r in rows]
            last = rows[-1][0]

    def iter_fact_ids(self, tenant: Tenant, batch: int = 2000) -> Iterator[list[str]]:
        """Every fact id of one user, in batches (for rebuilds, checks and exports)."""
        return self._ids_by_key("facts", tenant, batch)

    def known_ids(self, tenant: Tenant, table: str, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` the tenant has in ``table`` (``facts``, ``entities``, ``episodes``)."""
        if table not in ("facts", "entities", "episodes"):
            raise ValueError(f"known_ids reads facts, entities or episodes, not {table!r}")
        return {r[0] for r in self._rows_in(tenant, f"SELECT id FROM {table} WHERE user_id = %s AND id = ANY(%s)",
                                            ids, [tenant])}

    def record_owners(self, table: str, ids: Sequence[str]) -> dict[str, Tenant]:
        """Which user holds each of ``ids`` in ``table`` (the id namespace: only the owner is read)."""
        if table not in ("facts", "entities", "episodes"):
            raise ValueError(f"record_owners reads facts, entities or episodes, not {table!r}")
        return {i: Tenant.stored(u) for i, u in self._rows_in(STORE, f"SELECT id, user_id FROM {table} "
                                                                     "WHERE id = ANY(%s)", ids)}

    def fact_vectors(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors of some facts of one user."""
        rows = self._rows_in(tenant, "SELECT id, embedding FROM facts WHERE user_id = %s AND id = ANY(%s)",
                             ids, [tenant])
        return {fid: vector_of(v) for fid, v in rows}

    def current_facts_about(self, tenant: Tenant, entity_ids: Sequence[str], *, limit: int = 10_000) -> list[Fact]:
        """Current facts whose subject is one of ``entity_ids``."""
        if not entity_ids:
            return []
        rows = self._rows(tenant, f"SELECT {FACT_COLUMNS} FROM facts WHERE user_id = %s AND subject_id = ANY(%s) "
                                  f"AND {_CURRENT} LIMIT %s", [tenant, list(entity_ids), limit])
        return [fact_from_row(r) for r in rows]

    def rule_candidates(self, tenant: Tenant, subject_ids: Sequence[str], *, rivals: Sequence[str],
                        restated: Sequence[tuple[str, str]], ids: Sequence[str] = (),
                        attributes: Sequence[str] = ()) -> list[Fact]:
        """The current facts of these subjects a proposed fact can reinforce, end or supersede (as the SQLite store's).

        Every current fact with one of the ``rivals`` predicates, the facts said again
        (``restated``, by predicate and ``object_key``), the claims on one of the ``attributes`` and the
        flagged ``ids``: each a seek of
        ``facts_rule_keys`` or ``facts_key``.
        """
        if not subject_ids and not ids:
            return []
        wanted = sorted({p.casefold() for p in rivals} - {STATEMENT})
        keys: dict[str, set[str]] = {}
        for predicate, obj in restated:
            if predicate.casefold() not in wanted:
                keys.setdefault(predicate.casefold(), set()).add(normalize_name(obj))
        subjects = list(subject_ids)
        head = f"SELECT {_ORDERED_FACTS} FROM facts WHERE user_id = %s AND subject_id = ANY(%s) AND {_CURRENT}"
        parts: list[tuple[str, list[Any]]] = []
        if wanted:
            parts.append((f"{head} AND lower(predicate) = ANY(%s)", [tenant, subjects, wanted]))
        for predicate, objects in sorted(keys.items()):
            exact = " AND predicate = 'statement'" if predicate == STATEMENT else ""
            parts.append((f"{head} AND lower(predicate) = %s{exact} AND object_key = ANY(%s)",
                          [tenant, subjects, predicate, sorted(objects)]))
        if attributes and subjects:
            parts.append((f"{head} AND attribute = ANY(%s) AND attribute IS NOT NULL",
                          [tenant, subjects, list(attributes)]))
        if ids:
            parts.append((f"SELECT {_ORDERED_FACTS} FROM facts WHERE user_id = %s AND id = ANY(%s) AND {_CURRENT}",
                          [tenant, list(ids)]))  # flagged by the extractor: whatever their subjects
        if not parts:
            return []
        rows = self._rows(tenant, " UNION ALL ".join(f"({q})" for q, _ in parts), [p for _, ps in parts for p in ps])
        return [fact_from_row(r) for r in sorted({r[0]: r for r in rows}.values(), key=_storage_order)]

    def told_at(self, tenant: Tenant, facts: Iterable[Fact]) -> dict[str, datetime]:
        """When each fact's first source message was said: its timestamp, else its episode's time."""
        wanted = {(f.episode_id, f.source_message_ids[0]): f.id for f in facts
                  if f.episode_id and f.source_message_ids}
        if not wanted:
            return {}
        rows = self._rows(tenant, "SELECT m.episode_id, m.message_id, coalesce(m.timestamp, e.created_at) "
                                  "FROM messages m JOIN episodes e ON e.user_id = m.user_id AND e.id = m.episode_id "
                                  "WHERE m.user_id = %s AND m.episode_id = ANY(%s) ORDER BY m.episode_id, m.seq",
                          [tenant, sorted({e for e, _ in wanted})])
        out: dict[str, datetime] = {}
        for episode_id, message_id, when in rows:
            fid = wanted.get((episode_id, message_id))
            if fid is not None and fid not in out and when:
                out[fid] = parse_time(when)
        return out

    def facts_from_messages(self, tenant: Tenant, subject_ids: Sequence[str], message_ids: Collection[str], *,
                            exclude: Collection[str] = ()) -> list[Fact]:
        """The current facts of these subjects drawn from any of ``message_ids`` (``exclude`` left out)."""
        if not subject_ids or not message_ids:
            return []
        wanted = set(message_ids)
        rows = self._rows(tenant, f"SELECT {_ORDERED_FACTS} FROM facts WHERE user_id = %s AND subject_id = ANY(%s) "
                                  f"AND {_CURRENT} AND source_message_ids::jsonb ?| %s",
                          [tenant, list(subject_ids), sorted(wanted)])
        return [fact_from_row(r) for r in sorted(rows, key=_storage_order)
                if r[0] not in exclude and wanted & set(json.loads(fact_row(r).source_message_ids))]

    def entity_history(self, tenant: Tenant, entity_id: str) -> list[Fact]:
        """Every fact with the entity as subject or object, by valid_from ascending (ties: as on SQLite)."""
        rows = self._rows(tenant, f"SELECT {FACT_COLUMNS} FROM facts WHERE user_id = %(u)s AND (subject_id = %(e)s "
                                  'OR object_id = %(e)s) ORDER BY valid_from, created_at, content COLLATE "C", id',
                          {"u": tenant, "e": entity_id})
        return [fact_from_row(r) for r in rows]

    def count_facts(self, tenant: Tenant | None = None) -> dict[str, int]:
        """Counts of current and superseded facts (of every user: None)."""
        where, params = ("WHERE user_id = %s", [tenant]) if tenant is not None else ("", [])
        rows = self._rows(STORE if tenant is None else tenant,
                          f"SELECT {_CURRENT}, count(*) FROM facts {where} GROUP BY 1", params)
        counts = {bool(k): v for k, v in rows}
        return {"current": counts.get(True, 0), "superseded": counts.get(False, 0)}

    def current_fact_keys(self, tenant: Tenant) -> list[tuple[str, str, str, str, str]]:
        """``(id, subject_id, predicate, object, valid_from)`` of every current fact of one user (for checks)."""
        return self._rows(tenant, "SELECT id, subject_id, predicate, object, valid_from FROM facts "
                                  f"WHERE user_id = %s AND {_CURRENT}", [tenant])

    def current_vectors(self, tenant: Tenant) -> list[tuple[str, bytes]]:
        """``(id, float32 bytes)`` of every current fact of one user, in id order."""
        rows = self._rows(tenant, f"SELECT id, embedding FROM facts WHERE user_id = %s AND {_CURRENT} ORDER BY id",
                          [tenant])
        return [(fid, vector_of(v).tobytes()) for fid, v in rows]

    def current_fact_count(self, tenant: Tenant) -> int:
        """How many current facts one user has."""
        return int(self._rows(tenant, f"SELECT count(*) FROM facts WHERE user_id = %s AND {_CURRENT}", [tenant])[0][0])

    def history_search(self, tenant: Tenant, vector: np.ndarray, k: int, as_of: str) -> list[tuple[str, float]]:
        """The ``k`` superseded facts of a user valid at ``as_of`` nearest to ``vector``: ``(id, cosine)``, best first.

        Exact, in the database (pgvector's inner product over the stored unit vectors of the
        facts valid then); vectors of another dimension are skipped.
        """
        if k <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32)
        rows = self._rows(tenant, "SELECT id, -(embedding <#> %s) AS score FROM facts WHERE user_id = %s "
                                  "AND NOT (valid_until IS NULL AND superseded_by IS NULL) AND valid_from <= %s "
                                  "AND (valid_until IS NULL OR valid_until > %s) AND vector_dims(embedding) = %s "
                                  "ORDER BY score DESC, rowid LIMIT %s",
                          [query, tenant, as_of, as_of, len(query), k])
        return [(fid, float(score)) for fid, score in rows if np.isfinite(score)]

    def vector_tiers(self) -> dict[Tenant, str]:
        """Every user whose vectors have (or are getting) an index of their own: ``{user: 'building' | 'ready'}``."""
        return {Tenant.stored(u): state for u, state in self._rows(STORE, "SELECT user_id, state FROM vector_tiers")}

    def set_vector_tier(self, tenant: Tenant, state: str) -> None:
        """Record that a user's own index is being built (``building``) or complete (``ready``)."""
        self._exec(tenant, "INSERT INTO vector_tiers(user_id, state) VALUES (%s, %s) "
                           "ON CONFLICT (user_id) DO UPDATE SET state = excluded.state", [tenant, state])

    def clear_vector_tier(self, tenant: Tenant | None = None) -> None:
        """Forget one user's index mark, or every user's (None)."""
        if tenant is None:
            self._exec(STORE, "DELETE FROM vector_tiers")
        else:
            self._exec(tenant, "DELETE FROM vector_tiers WHERE user_id = %s", [tenant])
