"""The in-memory record store's facts, entities and what retrieval reads (:mod:`tests.stores.memory_records`)."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

import numpy as np
from zep_core.errors import RecordStoreError
from zep_core.models import Entity, Fact
from zep_core.names import STATEMENT, normalize_name
from zep_core.stores.rows import FactRow, RankingRow, StoredFact, entity_from_row, fact_from_row, iso, parse_time
from zep_core.tenant import Tenant, key

from tests.stores.memory_words import doc_terms, question_terms

_IDS = ("facts", "entities", "episodes")


class MemoryFactRows:
    """Facts, entities and retrieval's reads over a :class:`~tests.stores.memory_records.MemoryRecordStore`'s state."""

    s: dict[str, Any]
    _order: itertools.count

    # -- facts --------------------------------------------------------------------------------------

    def _facts(self, tenant: Tenant, keep: Callable[[FactRow], bool] = lambda r: True) -> list[dict]:
        user = key(tenant)
        return sorted((r for r in self.s["facts"].values() if r["user"] == user and keep(r["row"])),
                      key=lambda r: r["order"])

    def write_facts(self, facts: Iterable[StoredFact]) -> None:
        """Insert or replace fact rows; an id held by another tenant is refused."""
        for s in facts:
            f, user = s.fact, key(Tenant.of(s.fact.user_id))
            held = self.s["facts"].get(f.id)
            if held is not None and held["user"] != user:
                raise RecordStoreError(f"fact id {f.id} is another tenant's")
            row = FactRow(f.id, user, f.episode_id, f.subject, f.predicate, f.object, f.content, f.confidence,
                          iso(f.valid_from), iso(f.valid_until), f.superseded_by, iso(f.created_at),
                          iso(f.expired_at), json.dumps(list(f.source_message_ids)), s.subject_id, s.object_id,
                          f.attribute)
            self.s["facts"][f.id] = {"user": user, "row": row, "order": next(self._order),
                                     "vector": np.asarray(s.embedding, dtype=np.float32).copy()}

    def update_facts(self, facts: Iterable[Fact]) -> None:
        """Rewrite the mutable columns of stored facts."""
        for f in facts:
            held = self.s["facts"].get(f.id)
            if held is not None and held["user"] == key(Tenant.of(f.user_id)):
                held["row"] = held["row"]._replace(
                    confidence=f.confidence, valid_from=iso(f.valid_from), valid_until=iso(f.valid_until),
                    superseded_by=f.superseded_by, expired_at=iso(f.expired_at),
                    source_message_ids=json.dumps(list(f.source_message_ids)))

    def _by_id(self, tenant: Tenant, ids: Iterable[str]) -> list[dict]:
        wanted = set(ids)
        return self._facts(tenant, lambda r: r.id in wanted)

    def get_facts(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, Fact]:
        """Facts by id, for one user only."""
        return {r["row"].id: fact_from_row(r["row"]) for r in self._by_id(tenant, ids)}

    def stored_facts(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, StoredFact]:
        """Facts of one user by id, with entity ids and vectors."""
        return {r["row"].id: StoredFact(fact_from_row(r["row"]), r["row"].subject_id, r["row"].object_id, r["vector"])
                for r in self._by_id(tenant, ids)}

    def iter_fact_ids(self, tenant: Tenant, batch: int = 2000) -> Iterator[list[str]]:
        """Every fact id of one user, in batches."""
        ids = sorted(r["row"].id for r in self._facts(tenant))
        return iter([ids[i:i + batch] for i in range(0, len(ids), batch)])

    def known_ids(self, tenant: Tenant, table: str, ids: Sequence[str]) -> set[str]:
        """Which of these fact, entity or episode ids the tenant holds."""
        if table not in _IDS:
            raise ValueError(table)
        user = key(tenant)
        return {i for i in ids if i in self.s[table] and self.s[table][i]["user"] == user}

    def record_owners(self, table: str, ids: Sequence[str]) -> dict[str, Tenant]:
        """The user each stored id belongs to."""
        if table not in _IDS:
            raise ValueError(table)
        return {i: Tenant.stored(self.s[table][i]["user"]) for i in ids if i in self.s[table]}

    def fact_vectors(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors of some facts of one user."""
        return {r["row"].id: r["vector"] for r in self._by_id(tenant, ids)}

    def current_facts_about(self, tenant: Tenant, entity_ids: Sequence[str], *, limit: int = 10_000) -> list[Fact]:
        """Current facts whose subject is one of ``entity_ids``."""
        wanted = set(entity_ids)
        return [fact_from_row(r["row"]) for r in self._facts(tenant, lambda r: r.current and r.subject_id in wanted)
                ][:limit]

    def rule_candidates(self, tenant: Tenant, subject_ids: Sequence[str], *, rivals: Sequence[str],
                        restated: Sequence[tuple[str, str]], ids: Sequence[str] = (),
                        attributes: Sequence[str] = ()) -> list[Fact]:
        """The current facts a proposed fact can reinforce, end or supersede (as the SQL stores choose them)."""
        wanted = {p.casefold() for p in rivals} - {STATEMENT}
        again = {(p.casefold(), normalize_name(o)) for p, o in restated if p.casefold() not in wanted}
        subjects, flagged, about = set(subject_ids), set(ids), set(attributes)

        def touched(r: FactRow) -> bool:
            if r.id in flagged:
                return True
            predicate = r.predicate.casefold()
            return r.subject_id in subjects and (predicate in wanted or r.attribute in about or (
                (predicate, normalize_name(r.object)) in again
                and (predicate != STATEMENT or r.predicate == STATEMENT)))

        rows = self._facts(tenant, lambda r: r.current and touched(r))
        return [fact_from_row(r["row"]) for r in sorted(rows, key=lambda r: (r["row"].subject_id, r["order"]))]

    def told_at(self, tenant: Tenant, facts: Iterable[Fact]) -> dict[str, datetime]:
        """When each fact's first source message was said: its timestamp, else its episode's time."""
        out: dict[str, datetime] = {}
        for f in facts:
            episode = self._episode(tenant, f.episode_id) if f.episode_id and f.source_message_ids else None
            if episode is None:
                continue
            for mid, _, _, _, when in self.s["messages"][f.episode_id]:
                if mid == f.source_message_ids[0] and (when or episode["created_at"]):
                    out[f.id] = parse_time(when or episode["created_at"])
                    break
        return out

    def facts_from_messages(self, tenant: Tenant, subject_ids: Sequence[str], message_ids: Collection[str], *,
                            exclude: Collection[str] = ()) -> list[Fact]:
        """The current facts of these subjects drawn from any of ``message_ids`` (``exclude`` left out)."""
        subjects, wanted = set(subject_ids), set(message_ids)
        rows = self._facts(tenant, lambda r: r.current and r.subject_id in subjects and r.id not in exclude
                           and bool(wanted & set(json.loads(r.source_message_ids))))
        return [fact_from_row(r["row"]) for r in sorted(rows, key=lambda r: (r["row"].subject_id, r["order"]))]

    def entity_history(self, tenant: Tenant, entity_id: str) -> list[Fact]:
        """Every fact with the entity as subject or object, by valid_from (ties: created_at, content, id)."""
        rows = [r["row"] for r in self._facts(tenant, lambda r: entity_id in (r.subject_id, r.object_id))]
        return [fact_from_row(r) for r in sorted(rows, key=lambda r: (r.valid_from, r.created_at or "", r.content,
                                                                      r.id))]

    def count_facts(self, tenant: Tenant | None = None) -> dict[str, int]:
        """Counts of current and superseded facts."""
        rows = [r["row"] for r in self.s["facts"].values() if tenant is None or r["user"] == key(tenant)]
        current = sum(r.current for r in rows)
        return {"current": current, "superseded": len(rows) - current}

    def current_fact_keys(self, tenant: Tenant) -> list[tuple[str, str, str, str, str]]:
        """``(id, subject_id, predicate, object, valid_from)`` of every current fact of one user."""
        return [(r.id, r.subject_id, r.predicate, r.object, r.valid_from)
                for r in (x["row"] for x in self._facts(tenant, lambda r: r.current))]

    def current_vectors(self, tenant: Tenant) -> list[tuple[str, bytes]]:
        """``(id, float32 bytes)`` of every current fact of one user, in id order."""
        return sorted((r["row"].id, r["vector"].tobytes()) for r in self._facts(tenant, lambda r: r.current))

    def current_fact_count(self, tenant: Tenant) -> int:
        """How many current facts one user has."""
        return len(self._facts(tenant, lambda r: r.current))

    def history_search(self, tenant: Tenant, vector: np.ndarray, k: int, as_of: str) -> list[tuple[str, float]]:
        """The ``k`` superseded facts valid at ``as_of`` nearest to ``vector``: ``(id, cosine)``, best first."""
        rows = self._facts(tenant, lambda r: not r.current and r.holds(as_of))
        scored = [(r["row"].id, float(r["vector"] @ vector)) for r in rows if len(r["vector"]) == len(vector)]
        return sorted((s for s in scored if math.isfinite(s[1])), key=lambda s: -s[1])[:max(k, 0)]

    def vector_tiers(self) -> dict[Tenant, str]:
        """Every user whose vectors have (or are getting) an index of their own."""
        return {Tenant.stored(u): state for u, state in self.s["tiers"].items()}

    def set_vector_tier(self, tenant: Tenant, state: str) -> None:
        """Record a user's index as ``building`` or ``ready``."""
        self.s["tiers"][key(tenant)] = state

    def clear_vector_tier(self, tenant: Tenant | None = None) -> None:
        """Forget one user's index mark, or every user's."""
        if tenant is None:
            self.s["tiers"].clear()
        else:
            self.s["tiers"].pop(key(tenant), None)

    # -- what retrieval reads -------------------------------------------------------------------------

    def lexical_ranking(self, tenant: Tenant, text: str, *, limit: int, as_of: str | None = None,
                        context_weight: float = 1.0) -> list[tuple[str, float]]:
        """The user's best ``limit`` current (or as-of) facts by the words of ``text``: ``(fact id, BM25)``.

        BM25 over each fact's words (content, subject, predicate, object; stemmed, and the
        question's without stopwords: :mod:`tests.stores.memory_words`) and the tenant's own
        counts; equal scores go to the older row.
        """
        rows = self._facts(tenant)
        docs = {r["row"].id: doc_terms(" ".join((r["row"].content, r["row"].subject,
                                                 r["row"].predicate.replace("_", " "), r["row"].object))) for r in rows}
        if not docs or limit <= 0:
            return []
        average = sum(map(len, docs.values())) / len(docs)
        terms = question_terms(text)
        hits = {t: sum(t in words for words in docs.values()) for t in terms}
        scores = []
        for r in rows:
            if not r["row"].holds(as_of):
                continue
            words = docs[r["row"].id]
            score = sum(math.log(1 + (len(docs) - hits[t] + .5) / (hits[t] + .5)) * words.count(t) * 2.2
                        / (words.count(t) + 1.2 * (.25 + .75 * len(words) / average)) for t in terms if t in words)
            if score > 0:
                scores.append((r["row"].id, score, r["order"]))
        return [(fid, score) for fid, score, _ in sorted(scores, key=lambda s: (-s[1], s[2]))[:limit]]

    def lexical_search(self, tenant: Tenant, text: str, *, limit: int, as_of: str | None = None,
                       context_weight: float = 1.0) -> dict[str, float]:
        """:meth:`lexical_ranking` as a dict."""
        return dict(self.lexical_ranking(tenant, text, limit=limit, as_of=as_of, context_weight=context_weight))

    def rebuild_lexical(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Nothing is kept apart from the facts: the index's rows are the facts."""
        return len(self.s["facts"])

    def lexical_problems(self, tenant: Tenant | None = None) -> dict[str, list[str]]:
        """Nothing can be wrong with an index that is the facts themselves."""
        if tenant is not None:
            key(tenant)
        return {}

    def ranking_rows(self, tenant: Tenant, ids: Sequence[str]) -> list[RankingRow]:
        """Some facts of one user by id, with their vectors."""
        return [RankingRow(r["row"], r["vector"]) for r in self._by_id(tenant, ids)]

    def _edges(self, tenant: Tenant, as_of: str | None) -> list[FactRow]:
        return [r["row"] for r in self._facts(tenant, lambda r: r.object_id is not None and r.holds(as_of))]

    def neighbours(self, tenant: Tenant, entity_ids: Sequence[str], *, as_of: str | None = None,
                   limit: int = 200) -> set[str]:
        """Entities one hop from ``entity_ids`` over the user's current (or as-of) facts."""
        ids, out = set(entity_ids), set()
        for r in self._edges(tenant, as_of):
            if r.subject_id in ids and r.object_id not in ids:
                out.add(r.object_id)
            if r.object_id in ids and r.subject_id not in ids:
                out.add(r.subject_id)
        return set(sorted(out)[:limit])

    def facts_touching(self, tenant: Tenant, entity_ids: Sequence[str], *, as_of: str | None = None,
                       among: Iterable[str] | None = None, limit: int = 20_000) -> list[str]:
        """Ids of current (or as-of) facts whose subject or object is in ``entity_ids``."""
        ids, allowed = set(entity_ids), None if among is None else set(among)
        return [r["row"].id for r in self._facts(tenant, lambda r: r.holds(as_of) and (
            r.subject_id in ids or r.object_id in ids) and (allowed is None or r.id in allowed))][:limit]

    def count_facts_touching(self, tenant: Tenant, entity_ids: Sequence[str], *, upto: int,
                             as_of: str | None = None) -> int:
        """How many facts :meth:`facts_touching` finds, up to ``upto``."""
        return min(len(self.facts_touching(tenant, entity_ids, as_of=as_of)), max(upto, 0))

    def graph_rows(self, tenant: Tenant) -> tuple[list[tuple], list[tuple]]:
        """One user's graph: entity rows and the relationship rows between two of its entities, as stored."""
        mine = self._entities(tenant)
        known = {e["id"] for e in mine}
        edges = [(r.subject_id, r.object_id, r.id, r.user_id, r.predicate, r.valid_from, r.valid_until, int(r.current))
                 for r in (x["row"] for x in self._facts(tenant))
                 if r.subject_id in known and r.object_id in known]
        return [(e["id"], e["user"], e["name"], e["type"]) for e in mine], edges

    # -- entities ---------------------------------------------------------------------------------------

    def _entities(self, tenant: Tenant, ids: Iterable[str] | None = None) -> list[dict]:
        user, wanted = key(tenant), None if ids is None else set(ids)
        return sorted((e for e in self.s["entities"].values() if e["user"] == user and (
            wanted is None or e["id"] in wanted)), key=lambda e: e["order"])

    def entity_ids_for_aliases(self, tenant: Tenant, aliases: Sequence[str]) -> dict[str, str]:
        """Map normalized aliases to entity ids, for the ones that exist."""
        user = key(tenant)
        return {a: self.s["aliases"][(user, a)] for a in aliases if (user, a) in self.s["aliases"]}

    def insert_entities(self, rows: Iterable[tuple[Entity, np.ndarray]], changed_at: str) -> None:
        """Create entities with their vectors; an id already stored keeps its row."""
        for e, v in rows:
            user = key(Tenant.of(e.user_id))
            self.s["entities"].setdefault(e.id, {
                "id": e.id, "user": user, "name": e.name, "type": e.entity_type, "summary": "", "fact_count": 0,
                "last_updated": None, "changed_at": changed_at, "vector": np.asarray(v, dtype=np.float32).copy(),
                "order": next(self._order)})

    def add_aliases(self, rows: Iterable[tuple[str, str, str]]) -> None:
        """Add ``(user_id, alias, entity_id)``; an alias already taken keeps its entity."""
        for user, alias, entity_id in rows:
            self.s["aliases"].setdefault((key(Tenant.of(user)), alias), entity_id)

    def mark_entities_changed(self, tenant: Tenant, entity_ids: Iterable[str], when: str) -> None:
        """Flag entities for the next summary refresh."""
        for e in self._entities(tenant, entity_ids):
            e["changed_at"] = when

    def _entity(self, e: dict) -> Entity:
        aliases = sorted(a for (u, a), i in self.s["aliases"].items() if u == e["user"] and i == e["id"])
        return entity_from_row((e["id"], e["user"], e["name"], e["type"], e["summary"], e["fact_count"],
                                e["last_updated"]), aliases)

    def get_entities(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, Entity]:
        """Entities by id, with their aliases, for one user only."""
        return {e["id"]: self._entity(e) for e in self._entities(tenant, ids)}

    def entity_rows(self, tenant: Tenant, ids: Sequence[str]) -> list[tuple[Entity, np.ndarray]]:
        """Entities of one user with their vectors."""
        return [(self._entity(e), e["vector"]) for e in self._entities(tenant, ids)]

    def iter_entity_ids(self, tenant: Tenant, batch: int = 2000) -> Iterator[list[str]]:
        """Every entity id of one user, in batches."""
        ids = sorted(e["id"] for e in self._entities(tenant))
        return iter([ids[i:i + batch] for i in range(0, len(ids), batch)])

    def entity_changed_at(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, str | None]:
        """When each of a user's entities last changed."""
        return {e["id"]: e["changed_at"] for e in self._entities(tenant, ids)}

    def stale_entities(self, tenant: Tenant | None, older_than: str, limit: int = 1000) -> list[tuple[str, str]]:
        """``(user_id, entity_id)`` of entities changed since their last refresh and due."""
        user = None if tenant is None else key(tenant)
        due = [e for e in self.s["entities"].values() if user in (None, e["user"]) and e["changed_at"] is not None
               and (e["last_updated"] is None or (e["changed_at"] > e["last_updated"]
                                                   and e["last_updated"] <= older_than))]
        return [(Tenant.stored(e["user"]), e["id"]) for e in sorted(due, key=lambda e: e["changed_at"])[:limit]]

    def set_entity_summaries(self, rows: Iterable[tuple[str, str, str, int, str | None]]) -> None:
        """Write ``(user_id, entity_id, summary, fact_count, last_updated)``; only the user's own entities."""
        for user, entity_id, summary, count, when in rows:
            for e in self._entities(Tenant.of(user), [entity_id]):
                e.update(summary=summary, fact_count=count, last_updated=when)

    def set_embeddings(self, tenant: Tenant, table: str, rows: Iterable[tuple[str, np.ndarray]]) -> None:
        """Replace stored vectors of one user's facts or entities."""
        if table not in ("facts", "entities"):
            raise ValueError(table)
        user = key(tenant)
        for i, v in rows:
            held = self.s[table].get(i)
            if held is not None and held["user"] == user:
                held["vector"] = np.asarray(v, dtype=np.float32).copy()

    def texts(self, tenant: Tenant, table: str, ids: Sequence[str]) -> dict[str, str]:
        """The texts one user's vectors are made from: fact content or entity name."""
        if table == "facts":
            return {r["row"].id: r["row"].content for r in self._by_id(tenant, ids)}
        return {e["id"]: e["name"] for e in self._entities(tenant, ids)}
