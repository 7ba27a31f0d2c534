"""Fact rows: written and updated with their lexical rows, and the reads of the update rules."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ...models import Fact
from ...names import STATEMENT, normalize_name
from ...tenant import Tenant, key
from .. import fts
from ..schema import (
    FACT_COLUMNS,
    StoredFact,
    blob,
    fact_from_row,
    fact_row,
    iso,
    parse_time,
)
from .connection import (
    _CHUNK,
    _ORDERED_FACTS,
    Connection,
    _storage_order,
)


class FactRows(Connection):
    """Fact rows: written and updated with their lexical rows, and the reads of the update rules."""

    def write_facts(self, facts: Iterable[StoredFact]) -> None:
        """Insert or replace fact rows and index them lexically (call inside :meth:`transaction`).

        A fact's episode (with its messages) is written first: the lexical index reads the
        message before the fact's source turn.
        """
        facts = list(facts)
        if not facts:
            return
        by_user: dict[Tenant, list[str]] = {}
        for s in facts:
            by_user.setdefault(Tenant.stored(s.fact.user_id), []).append(s.fact.id)
        for user, ids in by_user.items():
            self._unindex(user, ids)
        self._many(
            f"INSERT OR REPLACE INTO facts({FACT_COLUMNS}, embedding, object_key) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(f.id, f.user_id, f.episode_id, f.subject, f.predicate, f.object, f.content,
              f.confidence, iso(f.valid_from), iso(f.valid_until), f.superseded_by,
              iso(f.created_at), iso(f.expired_at), json.dumps(list(f.source_message_ids)),
              s.subject_id, s.object_id, f.attribute, blob(s.embedding), normalize_name(f.object))
             for s in facts for f in [s.fact]])
        for user, ids in by_user.items():
            self._index_lexical(user, ids)

    def _forget_hits(self, user: str | None = None) -> None:
        """Drop the counted rows per term of a user (None: of everyone): their rows changed."""
        if user is None:
            self._hits.clear()
        else:
            self._hits.pop(user, None)

    def _index_lexical(self, user: str, ids: Sequence[str] | None) -> None:
        """Add the user's facts with these ids (None: all of them) to the lexical tables (inside a transaction).

        Their texts go through the connection's scratch FTS5 table, which tokenizes them as
        the index always has; their terms, counts and lengths are written under the user's
        key, and the user's totals (rows, tokens) grow by theirs.
        """
        self._clear_scratch()  # a write cut short inside a savepoint may have left rows
        self._forget_hits(user)
        unique = [None] if ids is None else list(dict.fromkeys(ids))
        chunks = [None] if ids is None else [unique[i:i + _CHUNK] for i in range(0, len(unique), _CHUNK)]
        for chunk in chunks:  # a write: a full disk marks the folder, as any write does
            self._exec(fts.scratch_sql(chunk and ",".join("?" * len(chunk))), [user, *(chunk or ())])
        self._exec(fts.COUNT_SQL)
        for chunk in chunks:
            self._exec(fts.docs_sql(chunk and ",".join("?" * len(chunk))), [user, *(chunk or ())])
        self._exec(fts.POSTINGS_SQL, [user])
        self._exec("INSERT INTO lexical_stats(user_id, docs, tokens) SELECT ?1, count(*), coalesce(sum(ld.length), 0) "
                   "FROM lexical_docs ld WHERE ld.user_id = ?1 AND ld.doc IN (SELECT rowid FROM temp.lexical_scratch) "
                   "ON CONFLICT(user_id) DO UPDATE SET docs = docs + excluded.docs, tokens = tokens + excluded.tokens",
                   [user])
        self._clear_scratch()

    def _clear_scratch(self) -> None:
        for statement in fts.CLEAR_SQL:
            self._exec(statement)

    def _unindex(self, user: Tenant, ids: Sequence[str]) -> None:
        """Take stored facts of a user out of their lexical index (before they are replaced)."""
        rowids = [r[0] for r in self._rows_in("SELECT rowid FROM facts INDEXED BY facts_key WHERE user_id = ? "
                                              "AND id IN ({ids})", ids, [user])]
        docs = self._lexical_docs(user, rowids) if rowids else {}
        if docs:
            self._forget_hits(user)
            self._many("DELETE FROM lexical_postings WHERE user_id = ? AND term = ? AND live = ? AND doc = ?",
                       [(user, term, live, doc) for doc, (live, _, _, terms, _) in docs.items() for term in terms])
            self._many("DELETE FROM lexical_docs WHERE user_id = ? AND doc = ?", [(user, doc) for doc in docs])
            self._exec("UPDATE lexical_stats SET docs = docs - ?, tokens = tokens - ? WHERE user_id = ?",
                       [len(docs), sum(d[4] for d in docs.values()), user])

    def _lexical_docs(self, user: str, rowids: Sequence[int]) -> dict[int, tuple[int, str | None, str | None,
                                                                             list[str], int]]:
        """The lexical rows of a user's facts: ``{doc: (live, valid_from, valid_until, terms, length)}``."""
        rows = self._rows_in("SELECT doc, live, valid_from, valid_until, terms, length FROM lexical_docs "
                             "WHERE user_id = ? AND doc IN ({ids})", rowids, [user])
        return {r[0]: (r[1], r[2], r[3], r[4].split(" ") if r[4] else [], r[5]) for r in rows}

    def update_facts(self, facts: Iterable[Fact]) -> None:
        """Rewrite the mutable columns of stored facts (supersession, reinforcement).

        The validity their lexical rows keep follows in the same transaction.
        """
        facts = list(facts)
        if not facts:
            return
        self._many(
            "UPDATE facts INDEXED BY facts_key SET confidence = ?, valid_from = ?, valid_until = ?, "
            "superseded_by = ?, expired_at = ?, source_message_ids = ? WHERE user_id = ? AND id = ?",
            [(f.confidence, iso(f.valid_from), iso(f.valid_until), f.superseded_by,
              iso(f.expired_at), json.dumps(list(f.source_message_ids)), f.user_id, f.id)
             for f in facts])
        by_user: dict[str, dict[int, tuple[int, str | None, str | None]]] = {}
        per_user: dict[str, list[Fact]] = {}
        for f in facts:
            per_user.setdefault(f.user_id, []).append(f)
        for user, mine in per_user.items():
            rowids = dict(self._rows_in("SELECT id, rowid FROM facts INDEXED BY facts_key WHERE user_id = ? "
                                        "AND id IN ({ids})", [f.id for f in mine], [user]))
            for f in mine:
                if f.id in rowids:
                    by_user.setdefault(user, {})[rowids[f.id]] = (int(f.is_current), iso(f.valid_from),
                                                                  iso(f.valid_until))
        for user, wanted in by_user.items():  # only rows whose validity changed (a reinforced fact's did not)
            changed = {doc: (old, wanted[doc]) for doc, old in self._lexical_docs(user, list(wanted)).items()
                       if old[:3] != wanted[doc]}
            self._many("UPDATE lexical_docs SET live = ?, valid_from = ?, valid_until = ? "
                       "WHERE user_id = ? AND doc = ?",
                       [(*new, user, doc) for doc, (_, new) in changed.items()])
            self._many("UPDATE lexical_postings SET live = ? "
                       "WHERE user_id = ? AND term = ? AND live = ? AND doc = ?",
                       [(new[0], user, term, old[0], doc) for doc, (old, new) in changed.items() if old[0] != new[0]
                        for term in old[3]])

    def get_facts(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, Fact]:
        """Facts by id, for one user only."""
        rows = self._rows_in(f"SELECT {FACT_COLUMNS} FROM facts INDEXED BY facts_key WHERE user_id = ? "
                             "AND id IN ({ids})", ids, [key(tenant)])
        return {row[0]: fact_from_row(row) for row in rows}

    def stored_facts(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, StoredFact]:
        """Facts of one user by id, with entity ids and vectors (what the outbox writes to the indexes)."""
        rows = self._rows_in(f"SELECT {FACT_COLUMNS}, embedding FROM facts INDEXED BY facts_key WHERE user_id = ? "
                             "AND id IN ({ids})", ids, [key(tenant)])
        return {f.id: StoredFact(fact_from_row(f), f.subject_id, f.object_id, np.frombuffer(row[-1], dtype=np.float32))
                for row in rows for f in [fact_row(row)]}

    def iter_fact_ids(self, tenant: Tenant, batch: int = 2000) -> Iterator[list[str]]:
        """Every fact id of one user, in batches (for rebuilds, checks and exports)."""
        return self._ids_by_key("facts", key(tenant), batch)

    def fact_vectors(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors of some facts of one user."""
        rows = self._rows_in("SELECT id, embedding FROM facts INDEXED BY facts_key WHERE user_id = ? "
                             "AND id IN ({ids})", ids, [key(tenant)])
        return {fid: np.frombuffer(blob, dtype=np.float32) for fid, blob in rows}

    def current_facts_about(self, tenant: Tenant, entity_ids: Sequence[str], *, limit: int = 10_000) -> list[Fact]:
        """Current facts whose subject is one of ``entity_ids``."""
        user_id = key(tenant)
        if not entity_ids:
            return []
        marks = ",".join("?" * len(entity_ids))
        rows = self._rows(
            f"SELECT {FACT_COLUMNS} FROM facts WHERE user_id = ? AND subject_id IN ({marks}) "
            "AND valid_until IS NULL AND superseded_by IS NULL LIMIT ?", [user_id, *entity_ids, limit])
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
        attributes of the proposals: "we're in Leeds now" retires "I live in Manchester"), and ``ids`` (facts
        an extractor flagged as
        contradicted, whatever their subjects). Nothing else can be touched: a fact of a predicate that holds many
        values conflicts with no other value. So a speaker's hundreds of other facts stay
        unread, and ingestion does not slow down as a user's memory grows: the read seeks
        ``facts_rule_keys`` (subject, predicate and object key of the current facts) and the
        flagged ids, nothing else. The quotes that retire with a retired fact come from
        :meth:`facts_from_messages`.
        """
        user_id = key(tenant)
        if not subject_ids and not ids:
            return []
        subject_ids = subject_ids or [""]  # (no subject: only the flagged ids are read)
        wanted = sorted({p.casefold() for p in rivals} - {STATEMENT})  # compared as the rules compare them
        keys: dict[str, set[str]] = {}
        for predicate, obj in restated:
            if predicate.casefold() not in wanted:
                keys.setdefault(predicate.casefold(), set()).add(normalize_name(obj))
        marks = ",".join("?" * len(subject_ids))
        where = f"user_id = ? AND subject_id IN ({marks}) AND valid_until IS NULL AND superseded_by IS NULL"
        head = f"SELECT {_ORDERED_FACTS} FROM facts INDEXED BY facts_rule_keys WHERE {where}"
        parts: list[tuple[str, list[Any]]] = []
        if wanted:
            parts.append((f"{head} AND lower(predicate) IN ({','.join('?' * len(wanted))})",
                          [user_id, *subject_ids, *wanted]))
        for predicate, objects in sorted(keys.items()):
            # lower() as the index has it; for statements the rules' own test is the exact predicate.
            # The unary + keeps SQLite from propagating the constant into lower(predicate) = ?, which
            # then no longer matches the index: it walked every current fact of the speaker.
            exact = " AND +predicate = 'statement'" if predicate == STATEMENT else ""
            parts.append((f"{head} AND lower(predicate) = ?{exact} AND object_key IN ({','.join('?' * len(objects))})",
                          [user_id, *subject_ids, predicate, *sorted(objects)]))
        if attributes:  # the subjects' current claims on a one-value attribute (``facts_attribute``)
            parts.append((f"SELECT {_ORDERED_FACTS} FROM facts INDEXED BY facts_attribute WHERE user_id = ? "
                          f"AND subject_id IN ({marks}) AND attribute IN ({','.join('?' * len(attributes))}) "
                          "AND valid_until IS NULL AND superseded_by IS NULL",
                          [user_id, *subject_ids, *attributes]))
        if ids:
            parts.append((f"SELECT {_ORDERED_FACTS} FROM facts INDEXED BY facts_key WHERE user_id = ? "
                          f"AND id IN ({','.join('?' * len(ids))}) "
                          "AND valid_until IS NULL AND superseded_by IS NULL", [user_id, *ids]))
        if not parts:
            return []
        rows = self._rows(" UNION ALL ".join(q for q, _ in parts), [p for _, ps in parts for p in ps])
        return [fact_from_row(r) for r in sorted({r[0]: r for r in rows}.values(), key=_storage_order)]

    def told_at(self, tenant: Tenant, facts: Iterable[Fact]) -> dict[str, datetime]:
        """When each fact's first source message was said: its timestamp, else its episode's time.

        The update rules compare it with a fact's ``valid_from``: a present-tense
        statement ("I live in Paris") is dated when it was told.
        """
        user_id = key(tenant)
        wanted = {(f.episode_id, f.source_message_ids[0]): f.id for f in facts
                  if f.episode_id and f.source_message_ids}
        if not wanted:
            return {}
        episodes = sorted({e for e, _ in wanted})
        rows = self._rows(  # by episode under the user (its key), not all the user's messages
            "SELECT m.episode_id, m.message_id, coalesce(m.timestamp, e.created_at) FROM messages m "
            "INDEXED BY messages_key JOIN episodes e INDEXED BY episodes_key ON e.user_id = m.user_id "
            f"AND e.id = m.episode_id WHERE m.user_id = ? AND m.episode_id IN ({','.join('?' * len(episodes))})",
            [user_id, *episodes])
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
        user_id = key(tenant)
        if not subject_ids or not message_ids:
            return []
        needles = [json.dumps(m) for m in sorted(message_ids)]
        wanted = set(message_ids)
        rows = self._rows(
            f"SELECT {_ORDERED_FACTS} FROM facts INDEXED BY facts_sources WHERE user_id = ? AND subject_id IN "
            f"({','.join('?' * len(subject_ids))}) AND valid_until IS NULL AND superseded_by IS NULL AND ("
            + " OR ".join(["instr(source_message_ids, ?) > 0"] * len(needles)) + ")", [user_id, *subject_ids, *needles])
        return [fact_from_row(r) for r in sorted(rows, key=_storage_order)
                if r[0] not in exclude and wanted & set(json.loads(fact_row(r).source_message_ids))]

    def entity_history(self, tenant: Tenant, entity_id: str) -> list[Fact]:
        """Every fact with the entity as subject or object, by valid_from ascending.

        Facts of the same instant come by what they say (then by id): the same facts in the
        same order on every run and on both backends, whatever ids they drew.
        """
        user_id = key(tenant)
        rows = self._rows(
            f"SELECT {FACT_COLUMNS} FROM facts WHERE user_id = ? AND (subject_id = ? OR object_id = ?) "
            "ORDER BY valid_from, created_at, content, id", [user_id, entity_id, entity_id])
        return [fact_from_row(r) for r in rows]

    def count_facts(self, tenant: Tenant | None = None) -> dict[str, int]:
        """Counts of current and superseded facts."""
        user_id = None if tenant is None else key(tenant)
        where, params = ("WHERE user_id = ?", [user_id]) if user_id else ("", [])
        rows = self._rows(f"SELECT valid_until IS NULL AND superseded_by IS NULL, count(*) FROM facts {where} "
                          "GROUP BY 1", params)
        counts = {bool(k): v for k, v in rows}
        return {"current": counts.get(True, 0), "superseded": counts.get(False, 0)}

    def current_fact_keys(self, tenant: Tenant) -> list[tuple[str, str, str, str, str]]:
        """``(id, subject_id, predicate, object, valid_from)`` of every current fact of one user (for checks)."""
        return self._rows("SELECT id, subject_id, predicate, object, valid_from FROM facts INDEXED BY facts_current "
                          "WHERE user_id = ? AND valid_until IS NULL AND superseded_by IS NULL", [key(tenant)])

    def current_vectors(self, tenant: Tenant) -> list[tuple[str, bytes]]:
        """``(id, float32 blob)`` of every current fact of one user, in id order (one read by ``facts_current``)."""
        user_id = key(tenant)
        return self._rows("SELECT f.id, f.embedding FROM facts f INDEXED BY facts_current WHERE f.user_id = ? "
                          "AND f.valid_until IS NULL AND f.superseded_by IS NULL ORDER BY f.id", [user_id])

    def current_fact_count(self, tenant: Tenant) -> int:
        """How many current facts one user has (counted in ``facts_current``, no fact row read)."""
        return int(self._rows("SELECT count(*) FROM facts INDEXED BY facts_current WHERE user_id = ? "
                              "AND valid_until IS NULL AND superseded_by IS NULL", [key(tenant)])[0][0])

    def vector_tiers(self) -> dict[Tenant, str]:
        """Every user whose vectors have (or are getting) a Chroma collection: ``{user: 'building' | 'ready'}``."""
        return {Tenant.stored(u): state for u, state in self._rows("SELECT user_id, state FROM vector_tiers")}

    def set_vector_tier(self, tenant: Tenant, state: str) -> None:
        """Record that a user's collection is being built (``building``) or complete (``ready``)."""
        self._exec("INSERT INTO vector_tiers(user_id, state) VALUES (?, ?) "
                   "ON CONFLICT(user_id) DO UPDATE SET state = excluded.state", [key(tenant), state])

    def clear_vector_tier(self, tenant: Tenant | None = None) -> None:
        """Forget one user's collection mark, or every user's (None)."""
        if tenant is None:
            self._exec("DELETE FROM vector_tiers")
        else:
            self._exec("DELETE FROM vector_tiers WHERE user_id = ?", [key(tenant)])
