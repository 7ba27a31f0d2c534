"""Fact rows, written once for both SQL stores: written and updated with their lexical rows, the update rules' reads.

The lexical rows go and change with them (:mod:`.lexical`); a store adds a fact's own
(``_index_lexical``) and says what follows a change of facts (:meth:`SqlFactRows._facts_changed`).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ...models import Fact
from ...names import STATEMENT, normalize_name
from ...tenant import Tenant, key
from ..rows import FACT_COLUMNS, StoredFact, fact_from_row, fact_row, iso, parse_time
from .dialect import STORE, by_user, chunks, storage_order
from .lexical import SqlLexicalRows

#: Fact columns, then the rowid: rows sorted by :func:`~.dialect.storage_order` come in one order whatever the plan.
ORDERED_FACTS = f"{FACT_COLUMNS}, rowid"
#: A fact that holds now: no end, no successor.
CURRENT = "valid_until IS NULL AND superseded_by IS NULL"
#: Ids per statement, where a list of them is a statement's parameters.
CHUNK = 500


class SqlFactRows(SqlLexicalRows):
    """Fact rows: written and updated with their lexical rows, and the reads of the update rules."""

    def _facts_changed(self, tenant: Tenant, ids: Sequence[str], *, written: bool) -> None:
        """What follows a write (``written``) or an update of the tenant's facts, inside its transaction."""

    def write_facts(self, facts: Iterable[StoredFact]) -> None:
        """Insert or replace fact rows and index them lexically (call inside :meth:`transaction`).

        A replaced row is deleted and written anew (a new ``rowid``). An id held by another
        tenant's fact is not replaced: the insert fails (the primary key). A fact's episode
        (with its messages) is written first: the lexical index reads the message before the
        fact's source turn.
        """
        for tenant, mine in by_user(facts, lambda s: s.fact.user_id).items():
            ids = [s.fact.id for s in mine]
            self._unindex(tenant, ids)
            for chunk in chunks(ids, CHUNK):
                where, values = self.dialect.any_of("id", chunk)
                self._change(tenant, f"DELETE FROM facts INDEXED BY facts_key WHERE user_id = ? AND {where}",
                             [key(tenant), *values])
            self._change_many(tenant, f"INSERT INTO facts({FACT_COLUMNS}, embedding, object_key) "
                                      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                              [(f.id, key(tenant), f.episode_id, f.subject, f.predicate, f.object, f.content,
                                f.confidence, iso(f.valid_from), iso(f.valid_until), f.superseded_by,
                                iso(f.created_at), iso(f.expired_at), json.dumps(list(f.source_message_ids)),
                                s.subject_id, s.object_id, f.attribute, self.dialect.vector(s.embedding),
                                normalize_name(f.object))
                               for s in mine for f in [s.fact]])
            self._index_lexical(tenant, ids)
            self._facts_changed(tenant, ids, written=True)

    def update_facts(self, facts: Iterable[Fact]) -> None:
        """Rewrite the mutable columns of stored facts (supersession, reinforcement).

        The validity their lexical rows keep follows in the same transaction.
        """
        for tenant, mine in by_user(facts, lambda f: f.user_id).items():
            self._change_many(tenant, "UPDATE facts INDEXED BY facts_key SET confidence = ?, valid_from = ?, "
                                      "valid_until = ?, superseded_by = ?, expired_at = ?, source_message_ids = ? "
                                      "WHERE user_id = ? AND id = ?",
                              [(f.confidence, iso(f.valid_from), iso(f.valid_until), f.superseded_by,
                                iso(f.expired_at), json.dumps(list(f.source_message_ids)), key(tenant), f.id)
                               for f in mine])
            rowids = dict(self._select_in(tenant, "SELECT id, rowid FROM facts INDEXED BY facts_key WHERE user_id = ? "
                                                  "AND id IN ({ids})", [f.id for f in mine], [key(tenant)]))
            wanted = {rowids[f.id]: (int(f.is_current), iso(f.valid_from), iso(f.valid_until))
                      for f in mine if f.id in rowids}
            if wanted:
                self._revalidate(tenant, wanted)
            self._facts_changed(tenant, [f.id for f in mine], written=False)

    def get_facts(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, Fact]:
        """Facts by id, for one user only."""
        rows = self._select_in(tenant, f"SELECT {FACT_COLUMNS} FROM facts INDEXED BY facts_key WHERE user_id = ? "
                                       "AND id IN ({ids})", ids, [key(tenant)])
        return {row[0]: fact_from_row(row) for row in rows}

    def stored_facts(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, StoredFact]:
        """Facts of one user by id, with entity ids and vectors (what the outbox writes to the indexes)."""
        rows = self._select_in(tenant, f"SELECT {FACT_COLUMNS}, embedding FROM facts INDEXED BY facts_key "
                                       "WHERE user_id = ? AND id IN ({ids})", ids, [key(tenant)])
        return {f.id: StoredFact(fact_from_row(f), f.subject_id, f.object_id, self.dialect.vector_of(row[-1]))
                for row in rows for f in [fact_row(row)]}

    def _ids_by_key(self, table: str, tenant: Tenant, batch: int) -> Iterator[list[str]]:
        """Every id of one user's rows of ``table`` (``facts``, ``entities``), in batches, by ``{table}_key``."""
        last = ""
        while True:
            rows = self._select(tenant, f"SELECT id FROM {table} INDEXED BY {table}_key WHERE user_id = ? AND id > ? "
                                        "ORDER BY id LIMIT ?", [key(tenant), last, batch])
            if not rows:
                return
            yield [r[0] for r in rows]
            last = rows[-1][0]

    def iter_fact_ids(self, tenant: Tenant, batch: int = 2000) -> Iterator[list[str]]:
        """Every fact id of one user, in batches (for rebuilds, checks and exports)."""
        return self._ids_by_key("facts", key(tenant), batch)

    def fact_vectors(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors of some facts of one user."""
        rows = self._select_in(tenant, "SELECT id, embedding FROM facts INDEXED BY facts_key WHERE user_id = ? "
                                       "AND id IN ({ids})", ids, [key(tenant)])
        return {fid: self.dialect.vector_of(v) for fid, v in rows}

    def current_facts_about(self, tenant: Tenant, entity_ids: Sequence[str], *, limit: int = 10_000) -> list[Fact]:
        """Current facts whose subject is one of ``entity_ids``."""
        if not entity_ids:
            return []
        subjects, values = self.dialect.any_of("subject_id", entity_ids)
        rows = self._select(tenant, f"SELECT {FACT_COLUMNS} FROM facts WHERE user_id = ? AND {subjects} "
                                    f"AND {CURRENT} LIMIT ?", [key(tenant), *values, limit])
        return [fact_from_row(r) for r in rows]

    def rule_candidates(self, tenant: Tenant, subject_ids: Sequence[str], *, rivals: Sequence[str],
                        restated: Sequence[tuple[str, str]], ids: Sequence[str] = (),
                        attributes: Sequence[str] = ()) -> list[Fact]:
        """The current facts of these subjects a proposed fact can reinforce, end or supersede.

        That is every current fact with one of the ``rivals`` predicates (the proposals'
        single-valued ones: a new value supersedes any old one), the facts said again
        (``restated``: ``(predicate, object)`` pairs, matched by predicate and ``object_key``
        as the rules compare them: "I live in London!" is "i live in london" said again, and
        "I no longer like jazz" ends "likes jazz"), the claims on one of the ``attributes`` (one-value
        attributes of the proposals: "we're in Leeds now" retires "I live in Manchester"), and
        ``ids`` (facts an extractor flagged as contradicted, whatever their subjects). Nothing else
        can be touched: a fact of a predicate that holds many values conflicts with no other value.
        So a speaker's hundreds of other facts stay unread, and ingestion does not slow down as a
        user's memory grows: the read seeks ``facts_rule_keys`` (subject, predicate and object key
        of the current facts) and the flagged ids, nothing else. The quotes that retire with a
        retired fact come from :meth:`facts_from_messages`.
        """
        if not subject_ids and not ids:
            return []
        user_id, any_of = key(tenant), self.dialect.any_of
        wanted = sorted({p.casefold() for p in rivals} - {STATEMENT})  # compared as the rules compare them
        keys: dict[str, set[str]] = {}
        for predicate, obj in restated:
            if predicate.casefold() not in wanted:
                keys.setdefault(predicate.casefold(), set()).add(normalize_name(obj))
        subjects, by_subject = any_of("subject_id", subject_ids or [""])  # (no subject: only the flagged ids)
        head = f"SELECT {ORDERED_FACTS} FROM facts INDEXED BY facts_rule_keys WHERE user_id = ? AND {subjects} " \
               f"AND {CURRENT}"
        parts: list[tuple[str, list[Any]]] = []
        if wanted:
            among, values = any_of("lower(predicate)", wanted)
            parts.append((f"{head} AND {among}", [user_id, *by_subject, *values]))
        for predicate, objects in sorted(keys.items()):
            # lower() as the index has it; for statements the rules' own test is the exact predicate.
            # The unary + keeps SQLite from propagating the constant into lower(predicate) = ?, which
            # then no longer matches the index: it walked every current fact of the speaker.
            exact = " AND +predicate = 'statement'" if predicate == STATEMENT else ""
            among, values = any_of("object_key", sorted(objects))
            parts.append((f"{head} AND lower(predicate) = ?{exact} AND {among}",
                          [user_id, *by_subject, predicate, *values]))
        if attributes and subject_ids:  # the subjects' current claims on a one-value attribute (``facts_attribute``)
            among, values = any_of("attribute", list(attributes))
            parts.append((f"SELECT {ORDERED_FACTS} FROM facts INDEXED BY facts_attribute WHERE user_id = ? "
                          f"AND {subjects} AND {among} AND {CURRENT}", [user_id, *by_subject, *values]))
        if ids:
            among, values = any_of("id", list(ids))
            parts.append((f"SELECT {ORDERED_FACTS} FROM facts INDEXED BY facts_key WHERE user_id = ? AND {among} "
                          f"AND {CURRENT}", [user_id, *values]))
        if not parts:
            return []
        rows = self._select(tenant, " UNION ALL ".join(q for q, _ in parts),
                            [p for _, ps in parts for p in ps])
        return [fact_from_row(r) for r in sorted({r[0]: r for r in rows}.values(), key=storage_order)]

    def told_at(self, tenant: Tenant, facts: Iterable[Fact]) -> dict[str, datetime]:
        """When each fact's first source message was said: its timestamp, else its episode's time.

        The update rules compare it with a fact's ``valid_from``: a present-tense
        statement ("I live in Paris") is dated when it was told.
        """
        wanted = {(f.episode_id, f.source_message_ids[0]): f.id for f in facts
                  if f.episode_id and f.source_message_ids}
        if not wanted:
            return {}
        episodes, values = self.dialect.any_of("m.episode_id", sorted({e for e, _ in wanted}))
        rows = self._select(tenant,  # by episode under the user (its key), not all the user's messages
                            "SELECT m.episode_id, m.message_id, coalesce(m.timestamp, e.created_at) FROM messages m "
                            "INDEXED BY messages_key JOIN episodes e INDEXED BY episodes_key ON e.user_id = m.user_id "
                            f"AND e.id = m.episode_id WHERE m.user_id = ? AND {episodes} ORDER BY m.episode_id, m.seq",
                            [key(tenant), *values])
        out: dict[str, datetime] = {}
        for episode_id, message_id, when in rows:
            fid = wanted.get((episode_id, message_id))
            if fid is not None and fid not in out and when:
                out[fid] = parse_time(when)
        return out

    def facts_from_messages(self, tenant: Tenant, subject_ids: Sequence[str], message_ids: Collection[str], *,
                            exclude: Collection[str] = ()) -> list[Fact]:
        """The current facts of these subjects drawn from any of ``message_ids`` (``exclude`` left out).

        When the update rules retire a fact, the quote of its message retires with it
        unless another fact of that message stays (:func:`zep_core.temporal.plan_updates`):
        these are the quotes and their sibling facts. The subjects' entries of
        ``facts_sources`` (their source message lists, no fact row) are scanned for the
        quoted message ids, checked exactly here; only the rows that answer are read.
        """
        if not subject_ids or not message_ids:
            return []
        wanted = set(message_ids)
        subjects, values = self.dialect.any_of("subject_id", subject_ids)
        quoting, needles = self.dialect.quoting("source_message_ids", sorted(wanted))
        rows = self._select(tenant, f"SELECT {ORDERED_FACTS} FROM facts INDEXED BY facts_sources WHERE user_id = ? "
                                    f"AND {subjects} AND {CURRENT} AND {quoting}", [key(tenant), *values, *needles])
        return [fact_from_row(r) for r in sorted(rows, key=storage_order)
                if r[0] not in exclude and wanted & set(json.loads(fact_row(r).source_message_ids))]

    def entity_history(self, tenant: Tenant, entity_id: str) -> list[Fact]:
        """Every fact with the entity as subject or object, by valid_from ascending.

        Facts of the same instant come by what they say (then by id): the same facts in the
        same order on every run and on both backends, whatever ids they drew.
        """
        order = f"valid_from, created_at, content{self.dialect.binary}, id"
        rows = self._select(tenant, f"SELECT {FACT_COLUMNS} FROM facts WHERE user_id = ? AND (subject_id = ? "
                                    f"OR object_id = ?) ORDER BY {order}", [key(tenant), entity_id, entity_id])
        return [fact_from_row(r) for r in rows]

    def count_facts(self, tenant: Tenant | None = None) -> dict[str, int]:
        """Counts of current and superseded facts (of every user: None)."""
        where, params = ("WHERE user_id = ?", [key(tenant)]) if tenant is not None else ("", [])
        rows = self._select(STORE if tenant is None else tenant,
                            f"SELECT {CURRENT}, count(*) FROM facts {where} GROUP BY 1", params)
        counts = {bool(k): v for k, v in rows}
        return {"current": counts.get(True, 0), "superseded": counts.get(False, 0)}

    def current_fact_keys(self, tenant: Tenant) -> list[tuple[str, str, str, str, str]]:
        """``(id, subject_id, predicate, object, valid_from)`` of every current fact of one user (for checks)."""
        return self._select(tenant, "SELECT id, subject_id, predicate, object, valid_from FROM facts "
                                    f"INDEXED BY facts_current WHERE user_id = ? AND {CURRENT}", [key(tenant)])

    def current_vectors(self, tenant: Tenant) -> list[tuple[str, bytes]]:
        """``(id, float32 bytes)`` of every current fact of one user, in id order (one read by ``facts_current``)."""
        rows = self._select(tenant, "SELECT f.id, f.embedding FROM facts f INDEXED BY facts_current "
                                    "WHERE f.user_id = ? AND f.valid_until IS NULL AND f.superseded_by IS NULL "
                                    "ORDER BY f.id", [key(tenant)])
        return [(fid, self.dialect.vector_bytes(v)) for fid, v in rows]

    def current_fact_count(self, tenant: Tenant) -> int:
        """How many current facts one user has (counted in ``facts_current``, no fact row read)."""
        return int(self._select(tenant, f"SELECT count(*) FROM facts INDEXED BY facts_current WHERE user_id = ? "
                                        f"AND {CURRENT}", [key(tenant)])[0][0])

    def vector_tiers(self) -> dict[Tenant, str]:
        """Every user whose vectors have (or are getting) an index of their own: ``{user: 'building' | 'ready'}``."""
        return {Tenant.stored(u): state for u, state in self._select(STORE, "SELECT user_id, state FROM vector_tiers")}

    def set_vector_tier(self, tenant: Tenant, state: str) -> None:
        """Record that a user's own index is being built (``building``) or complete (``ready``)."""
        self._change(tenant, "INSERT INTO vector_tiers(user_id, state) VALUES (?, ?) "
                             "ON CONFLICT (user_id) DO UPDATE SET state = excluded.state", [key(tenant), state])

    def clear_vector_tier(self, tenant: Tenant | None = None) -> None:
        """Forget one user's index mark, or every user's (None)."""
        if tenant is None:
            self._change(STORE, "DELETE FROM vector_tiers")
        else:
            self._change(tenant, "DELETE FROM vector_tiers WHERE user_id = ?", [key(tenant)])
