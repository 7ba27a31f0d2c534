"""GetContext: candidates (semantic, lexical, graph, ``as_of`` history) → one fusion → facts → context block.

The spec's query::

    where semantic_match(input, threshold: 0.6) as sm
      and graph_match(input, hops: 2) as gm
      and valid_until == null
    order by (sm * 0.7 + gm * 0.3) desc
    limit 10

``sm`` is the cosine similarity of the fact to the input; a fact *matches*
semantically when ``sm >= threshold``. ``gm`` is the graph score of a fact within
``hops`` of an entity named in the input (1.0 at one hop, 0.5 at two by default),
0 otherwise. To these the core adds a third signal, the fact's *words*: BM25 over the
user's own FTS5 index (:mod:`zep_core.stores.fts`), where a reply is also indexed by
the question before it.

By default the three rankings are fused by reciprocal rank (the benchmark's winner:
LoCoMo and LongMemEval, docs/benchmarks.md); the graph then only ranks facts that
also match by meaning or words, and the asker's own facts weigh ``asker_weight`` in a
first-person question. ``SPEC_SCORING`` is the spec literally: the weighted sum above,
every fact near a named entity a candidate, no lexical signal.

The ranking (:func:`score_candidates`), the newer-first ordering of near-duplicates
(:func:`newer_first`) and the block (:func:`~zep_core.render.render_context_block`) are pure
functions over ids, floats and records; :class:`Retriever` gathers the candidates from
the stores. Every number comes from ``MemoryConfig.scoring``
(:class:`~zep_core.config.ScoringSettings`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from .aio import SharedPool
from .config import MemoryConfig, ScoringSettings
from .errors import NotFoundError, ValidationError
from .models import Entity, Fact, to_utc
from .providers.base import Embedder
from .providers.cues import says_a_number
from .providers.timeparse import asked_window
from .render import render_context_block
from .resolve import (
    asks_for_advice,
    asks_how_many,
    asks_what_the_assistant_said,
    input_aliases,
    mentions_first_person,
    mentions_second_person,
)
from .stores.base import GraphIndex, VectorIndex
from .stores.record_protocols import RetrievalRecords
from .stores.rows import RankingRow, fact_from_row, iso
from .temporal import normalize_name
from .tenant import Tenant
from .validation import check_limit, check_text

__all__ = ["ContextQuery", "Retriever", "Scored", "newer_first", "render_context_block", "score_candidates"]


@dataclass(frozen=True)
class ContextQuery:
    """One GetContext call, checked: the text, the tenant, the numbers and the time.

    Attributes:
        text: the question or input.
        user_id: the tenant searched (a :class:`~zep_core.tenant.Tenant`: the id, checked).
        scoring: the config's scoring settings with this call's overrides.
        as_of: answer what was true then; None for now.
        asker: who "I" is when the text speaks in the first person, else None.
        window: the stretch of time the text asks about ("two months ago", read against
            ``as_of`` or the memory's now), as stored ISO strings; None when it names none.

    """

    text: str
    user_id: str
    scoring: ScoringSettings
    as_of: datetime | None = None
    asker: str | None = None
    window: tuple[str, str] | None = None

    @classmethod
    def parse(cls, config: MemoryConfig, text: Any, *, user_id: str, limit: Any = None, as_of: Any = None,
              require_both: Any = None, threshold: Any = None, speaker: Any = None,
              now: datetime | None = None) -> ContextQuery:
        """Check the arguments of ``get_context`` against the config.

        Raises:
            ValidationError: what is wrong with which argument.

        """
        user_id = Tenant.of(user_id)
        check_text(text, "input", allow_empty=True)  # the same check as conversation_end's messages
        if len(text) > config.max_message_chars:
            raise ValidationError(f"input has {len(text)} characters, over max_message_chars")
        if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, (int, float))
                                      or not 0 <= threshold <= 1):
            raise ValidationError(f"threshold must be a number in [0, 1], got {threshold!r}")
        if require_both is not None and not isinstance(require_both, bool):
            raise ValidationError(f"require_both must be True or False, got {require_both!r}")
        if speaker is not None:  # checked whether or not the input says "I": a bad value is never ignored
            speaker = check_text(speaker, "speaker")
        changes: dict[str, Any] = {}
        if threshold is not None:
            changes["semantic_threshold"] = float(threshold)
        if limit is not None:
            changes["context_limit"] = check_limit(limit)
        if require_both is not None:
            changes["require_both"] = require_both
        when = to_utc(as_of, "as_of", strict=config.strict_timezones) if as_of is not None else None
        if not text.strip():
            return cls(text, user_id, config.scoring)  # nothing to look for: no facts
        asker = (speaker or check_text(config.default_speaker, "speaker")) if mentions_first_person(text) else None
        scoring = replace(config.scoring, **changes) if changes else config.scoring
        asked = when or now
        window = asked_window(text, asked) if asked is not None and scoring.time_weight else None
        return cls(text, user_id, scoring, when, asker, (iso(window[0]), iso(window[1])) if window else None)


@dataclass(frozen=True)
class Scored:
    """A candidate's id, total score and the parts it came from."""

    fact_id: str
    score: float
    semantic: float
    graph: float
    lexical: float = 0.0


def _ranks(scores: Mapping[str, float], order: Mapping[str, str]) -> dict[str, int]:
    """1-based rank of each id by score, ties to the newer (``order``: sortable valid_from), then by id.

    The last key makes the order a function of the scores alone, not of the order the
    candidates were gathered in.
    """
    ids = sorted(scores, key=lambda i: (scores[i], order.get(i, ""), i), reverse=True)
    return {fid: n for n, fid in enumerate(ids, 1)}


def score_candidates(semantic: Mapping[str, float], graph: Mapping[str, float], scoring: ScoringSettings,
                     *, lexical: Mapping[str, float] | None = None, asker: Collection[str] = (),
                     recency: Mapping[str, str] | None = None, in_window: Collection[str] = (),
                     counted: Collection[str] = (), nearer: Mapping[str, float] | None = None,
                     limit: int | None = None) -> list[Scored]:
    """Rank the candidates of one query; ties go to the fact with more of the question's words, then the newer.

    A fact *matches* by meaning when its cosine ``sm >= semantic_threshold``, by words
    when the lexical index found it (BM25 > 0), and through the graph when it lies
    within ``graph_hops`` of an entity the input names (``gm`` = its hop score). It is a
    candidate when it matches by meaning or words, or — with ``graph_mode="candidates"``
    — through the graph; ``require_both`` asks for meaning *and* graph (the spec's AND).

    ``fusion="rrf"`` sums ``weight / (rrf_k + rank)`` over the three rankings: by
    cosine, by BM25, and the graph's — the candidates it matches, ranked by hop and then
    by how well they fit the question (``graph_fit``: ``words``, the fusion of the first
    two rankings; otherwise meaning alone: :class:`Retriever` reads ``auto`` per query), so
    the graph orders a named person's facts instead of lifting all of them. ``fusion="weighted"`` is the spec's sum,
    ``w_s * sm + w_g * gm + w_l * bm25 / max(bm25)``.

    Args:
        semantic: cosine similarity of every candidate (graph- and word-only ones included).
        graph: hop score of the facts near an entity the input names.
        scoring: the numbers (all from ``MemoryConfig.scoring``).
        lexical: BM25 score of the facts the lexical index found.
        asker: the graph candidates that touch the asker of a first-person input.
        recency: sortable ``valid_from`` per id, used to break ties.
        in_window: the candidates that became true in the time the input names; with
            ``fusion="rrf"`` they form a fourth ranking, by cosine, of weight ``time_weight``.
        counted: the asker's facts that say a number, for a how-many input: a ranking by cosine (``count_weight``).
        nearer: cosine of facts fetched past the candidates: not candidates, they push the candidates' meaning ranks.
        limit: only the best ``limit`` are returned (None: all).

    """
    lexical, recency = lexical or {}, recency or {}
    if not scoring.lexical_weight:
        lexical = {}
    sem = {i: max(0.0, float(v)) for i, v in semantic.items()}
    matched = {i for i, v in sem.items() if v >= scoring.semantic_threshold} | {i for i, v in lexical.items() if v > 0}
    if scoring.require_both:
        keep = {i for i in graph if sem.get(i, 0.0) >= scoring.semantic_threshold}
    elif scoring.graph_mode == "candidates":
        keep = matched | set(graph)
    else:
        keep = matched
    graph_hits = {i: g for i, g in graph.items() if i in keep and g > 0}
    out: list[tuple[str, float, float, float, float]] = []  # Scored's fields, built for the ones returned
    if scoring.fusion == "weighted":
        top = max(lexical.values(), default=0.0) or 1.0
        for fid in keep:
            sm, gm, lm = sem.get(fid, 0.0), graph_hits.get(fid, 0.0), lexical.get(fid, 0.0) / top
            w_g = scoring.asker_weight if fid in asker else scoring.graph_weight
            total = scoring.semantic_weight * sm + w_g * gm + scoring.lexical_weight * lm
            out.append((fid, total, sm, gm, lexical.get(fid, 0.0)))
    else:
        c = scoring.rrf_k
        by_sem = _ranks({**{i: float(v) for i, v in (nearer or {}).items() if i not in keep},
                         **{i: sem[i] for i in keep if sem.get(i, 0.0) >= scoring.semantic_threshold}}, recency)
        by_sem = {i: r for i, r in by_sem.items() if i in keep}  # ranked among the nearer facts, not candidates
        by_lex = _ranks({i: lexical[i] for i in keep if lexical.get(i, 0.0) > 0}, recency)
        best = (scoring.semantic_weight + scoring.lexical_weight) / (c + 1)  # first by meaning and by words
        if scoring.graph_fit == "words" and best > 0:  # hop, then the fusion of meaning and words, in [0, 1/2]
            fit = {i: sum(w / (c + r[i]) for w, r in ((scoring.semantic_weight, by_sem),
                                                        (scoring.lexical_weight, by_lex)) if i in r) / best / 2
                   for i in graph_hits}
        else:  # hop, then cosine
            fit = {i: sem.get(i, 0.0) / 2 for i in graph_hits}
        by_graph = _ranks({i: g + fit[i] for i, g in graph_hits.items()}, recency)
        by_time = _ranks({i: sem.get(i, 0.0) for i in keep if i in in_window}, recency) if scoring.time_weight else {}
        by_count = _ranks({i: sem.get(i, 0.0) for i in keep if i in counted}, recency) if scoring.count_weight else {}
        # each fact's terms are added in the order of the rankings (meaning, words, graph, time, count)
        total: dict[str, float] = dict.fromkeys(keep, 0)
        for w, ranks in ((scoring.semantic_weight, by_sem), (scoring.lexical_weight, by_lex)):
            for fid, r in ranks.items():
                total[fid] += w / (c + r)
        for fid, r in by_graph.items():
            total[fid] += (scoring.asker_weight if fid in asker else scoring.graph_weight) / (c + r)
        for fid, r in by_time.items():
            total[fid] += scoring.time_weight / (c + r)
        for fid, r in by_count.items():
            total[fid] += scoring.count_weight / (c + r)
        out.extend((fid, t, sem.get(fid, 0.0), graph.get(fid, 0.0), lexical.get(fid, 0.0)) for fid, t in total.items())
    # a tie is a tie however the sum was ordered (1/61 + 1/62 against 1/62 + 1/61): 9 digits
    out.sort(key=lambda s: (round(s[1], 9), s[4], recency.get(s[0], ""), s[0]), reverse=True)
    return [Scored(*s) for s in (out if limit is None else out[:limit])]


def newer_first(ranked: Sequence[Scored], vectors: Mapping[str, Any], subjects: Mapping[str, str],
                recency: Mapping[str, str], similarity: float) -> tuple[list[Scored], dict[str, str]]:
    """Put the newer of two near-duplicate facts first: "I lead 3 engineers" → "I now lead 5".

    Two facts of the same subject whose vectors are at least ``similarity`` alike say
    nearly the same thing. Every older one is marked as earlier than the newest; where
    an older one ranked above the newest, the newest takes its place (and its score) and
    the older follows right below, so the newer value is shown wherever the older would
    have been. Nothing is retired: "I like jazz" and "I like rock" both stay current.
    An older one that the query's words match, where the newer's do not ("thing42"
    against "thing429"), keeps its place: the query asked for it by name.

    Returns:
        the new order, and ``{older id: newer id}`` for the facts marked earlier.

    """
    ids = [s.fact_id for s in ranked if s.fact_id in vectors]
    if similarity >= 1.0 or len(ids) < 2:
        return list(ranked), {}
    import numpy as np

    mat = np.stack([np.asarray(vectors[i], dtype=np.float32) for i in ids])
    sims = mat @ mat.T
    newest: dict[str, str] = {}  # fact -> the newest near-duplicate of the same subject
    for a, x in enumerate(ids):
        for b, y in enumerate(ids):
            if (a != b and sims[a, b] >= similarity and subjects.get(x) == subjects.get(y)
                    and recency.get(y, "") > recency.get(newest.get(x, x), "")):
                newest[x] = y
    if not newest:
        return list(ranked), {}
    out = list(ranked)
    for old, new in newest.items():
        at_old = next(n for n, s in enumerate(out) if s.fact_id == old)
        at_new = next(n for n, s in enumerate(out) if s.fact_id == new)
        if at_old < at_new and not (out[at_old].lexical > 0 and out[at_new].lexical <= 0):
            newer = out.pop(at_new)
            place = out[at_old].score
            out[at_old:at_old + 1] = [replace(newer, score=place), out[at_old]]
    return out, newest


#: At most this many facts are read to find the graph candidates (then ranked by match).
_GRAPH_SCAN = 20_000


#: The threads queries are embedded in while their words are looked up (created on demand): as many as
#: concurrent queries may wait on an embedding API at once, so that none waits for another's thread.
#: A pool of its own, not zep_core.aio's: an async call waiting in that pool for its embedding must
#: not wait for a thread of the same pool.
QUERY_EMBED_THREADS = 64
_QUERY_POOL = SharedPool(QUERY_EMBED_THREADS, "zep-query-embed")


def _query_thread() -> ThreadPoolExecutor:
    """The process's query-embedding threads, shared by every memory."""
    return _QUERY_POOL.get()


class Retriever:
    """GetContext over the stores: candidates (semantic, lexical, graph, as_of) → scores → facts.

    The query path handles ids and numbers first and records last: the candidates of
    every signal are gathered as ids with their scores, the rows they need for ranking
    are read as plain values (:meth:`RecordStore.ranking_rows`: validity as stored ISO
    strings, entity ids, the vector), and only the facts that make the cut are built.

    Args:
        records, vectors, graph: the stores.
        embedder: embeds the query.
        catch_up: applies a user's queued index writes before the indexes are read for that user.
        assistant: the name unnamed assistant turns are stored under ("you" in a question).

    """

    def __init__(self, records: RetrievalRecords, vectors: VectorIndex, graph: GraphIndex, embedder: Embedder,
                 catch_up: Callable[[str], None], assistant: str | None = None) -> None:
        self.records, self.vectors, self.graph = records, vectors, graph
        self.embedder, self._catch_up, self._assistant = embedder, catch_up, assistant

    def get_context(self, query: ContextQuery) -> list[Fact]:
        """The most relevant facts current at ``query.as_of`` (now by default), best first."""
        return self._search(query)[0]

    def _search(self, query: ContextQuery) -> tuple[list[Fact], list[str]]:
        """The GetContext facts, and the ids of the entities they name (subject, then object), in order."""
        if not query.text.strip():
            return [], []
        scoring, user, when = query.scoring, query.user_id, query.as_of
        as_of = iso(when) if when else None
        # The query is embedded and looked up in the vector index in another thread while this one
        # reads what needs only the words: the lexical ranking and the entities the text names
        # (the record store's driver, like onnxruntime, an embedding API or the vector process's socket, leaves the
        # interpreter lock free while it works). Queued index writes of the user go first.
        about_assistant = bool(self._assistant) and asks_what_the_assistant_said(query.text)
        voice = self._assistant if about_assistant else query.asker  # whose words the answer is in
        self._catch_up(user)
        k = max(scoring.semantic_candidates, scoring.context_limit)
        deep = k if scoring.graph_fit == "cosine" else max(k, scoring.long_history_candidates)
        prepare = getattr(self.vectors, "prepare", None)  # an index that can read the user's vectors ahead
        nearest = _query_thread().submit(self._nearest, user, f"{voice}: {query.text}" if voice else query.text,
                                         None if prepare else deep)
        words = (self.records.lexical_ranking(user, query.text, limit=scoring.lexical_candidates, as_of=as_of,
                                              context_weight=scoring.lexical_context_weight)
                 if scoring.lexical_weight else [])  # (fact id, BM25) of valid facts
        whole_graph = scoring.graph_mode == "candidates" or scoring.require_both  # else the graph only ranks
        frontiers: list[set[str]] = []
        asker_ids: set[str] = set()
        if scoring.graph_hops and (scoring.graph_weight or scoring.require_both):
            frontiers, asker_ids = self._frontiers(query, as_of, about_assistant)
        fit = scoring.graph_fit
        if fit == "auto":  # decided from the askers alone (applied below only if a candidate is theirs)
            fit = self._fit(user, asker_ids if not asks_for_advice(query.text) else set(), as_of, scoring)
        # the rows of what the words and the graph found are read while the query is still being embedded
        ids = {fid for fid, _ in words}
        if whole_graph and frontiers:
            ids.update(self.records.facts_touching(user, list(set().union(*frontiers)), as_of=as_of,
                                                   limit=_GRAPH_SCAN))
        rows = self.records.ranking_rows(user, list(ids))
        search = prepare(user, "current") if prepare else None  # the vectors are read while the query is embedded
        vector, found = nearest.result()
        hits = sorted(search(vector, deep) if search else found, key=lambda hit: -hit[1])[:deep]  # best first
        semantic = dict(hits[:k])
        # a long first-person history: facts past the nearest k only rank the word matches (no rows read)
        nearer = dict(hits[k:]) if fit == "words" else {}
        if as_of is not None:  # what was true then and is no longer: in the record store, not the index
            semantic.update(self.records.history_search(user, vector, k, as_of))
        rows += self.records.ranking_rows(user, list(set(semantic) - ids))
        found = {r.fact.id for r in rows}
        lexical = {fid: score for fid, score in words if fid in found}
        valid = {r.fact.id: r for r in rows if r.fact.holds(as_of)}  # re-checked: the vectors may lag the records
        graph = self._graph_scores(valid, frontiers, scoring, vector, capped=whole_graph)
        for fid in (set(graph) | set(lexical)) - set(semantic):
            if fid in valid:
                semantic[fid] = float(valid[fid].vector @ vector)
        recency = {i: r.fact.valid_from for i, r in valid.items()}
        asker = {i for i in graph if {valid[i].fact.subject_id, valid[i].fact.object_id} & asker_ids}
        if scoring.graph_fit == "auto":
            scoring = replace(scoring, graph_fit=fit if asker else "cosine")
        start, end = query.window or ("", "")
        in_window = {i for i, r in valid.items() if start <= r.fact.valid_from < end}
        # "how many fish are in my aquariums?": what the asker said in numbers ("10 neon tetras") is the count
        counted = ({i for i in asker if says_a_number(valid[i].fact.content)}
                   if scoring.count_weight and asker and asks_how_many(query.text) else set())
        ranked = score_candidates({i: s for i, s in semantic.items() if i in valid}, graph, scoring,
                                  lexical={i: s for i, s in lexical.items() if i in valid}, asker=asker,
                                  recency=recency, in_window=in_window, counted=counted, nearer=nearer,
                                  limit=2 * scoring.context_limit)  # a newer near-duplicate may come from below the cut
        older: dict[str, str] = {}
        if scoring.newer_first_similarity < 1.0 and len(ranked) > 1:
            top = [s.fact_id for s in ranked]
            ranked, older = newer_first(ranked, {i: valid[i].vector for i in top},
                                        {i: valid[i].fact.subject.casefold() for i in top}, recency,
                                        scoring.newer_first_similarity)
        # the facts are built from the rows they were ranked by: one read, nothing to check again
        out = [fact_from_row(valid[s.fact_id].fact, score=round(s.score, 6), semantic_score=round(s.semantic, 6),
                             graph_score=s.graph, lexical_score=round(s.lexical, 6), newer_fact_id=older.get(s.fact_id))
               for s in ranked[: scoring.context_limit]]
        entity_ids = [e for f in out for e in (valid[f.id].fact.subject_id, valid[f.id].fact.object_id) if e]
        return out, list(dict.fromkeys(entity_ids))

    def _fit(self, user: str, asker_ids: set[str], as_of: str | None, scoring: ScoringSettings) -> str:
        """``graph_fit="auto"`` for one query: ``words`` when an asker holds more facts than meaning fetches.

        Then the meaning ranking reached only the asker's nearest facts, and the others came
        by their words: ordered by cosine, each of them would fall below every fact found by
        meaning. With fewer, the meaning ranking reached all of them, and their cosine order
        stands. A question that does not speak in the first person keeps ``cosine``, and so
        does a request for advice ("any tips?": its words are what it wants, not what was said;
        the caller passes no askers then).
        """
        reach = scoring.semantic_candidates
        for asker in sorted(asker_ids):
            if self.records.count_facts_touching(user, [asker], as_of=as_of, upto=reach + 1) > reach:
                return "words"
        return "cosine"

    def _nearest(self, user: str, text: str, k: int | None) -> tuple[Any, list[tuple[str, float]]]:
        """The query's vector and the user's ``k`` current facts nearest to it (the vector index; None: not asked)."""
        vector = self.embedder.embed_query(text)
        return vector, self.vectors.query(user, "current", vector, k) if k is not None else []

    def _frontiers(self, query: ContextQuery, as_of: str | None,
                   about_assistant: bool = False) -> tuple[list[set[str]], set[str]]:
        """The entities the text names, then those one hop further, … up to ``graph_hops``; and the askers' ids.

        ``frontiers[h]`` holds the entities exactly ``h`` hops from a named one over
        current (or as-of) facts. The askers are who "I" is in a first-person text and,
        for a question about what the assistant said ("What did you recommend?"), the
        assistant: their facts weigh ``asker_weight``.
        """
        scoring, user = query.scoring, query.user_id
        names = input_aliases(query.text) + ([normalize_name(query.asker)] if query.asker else [])
        if self._assistant and mentions_second_person(query.text):
            names.append(normalize_name(self._assistant))
        found = self.records.entity_ids_for_aliases(user, names)
        askers = [query.asker] if query.asker else []
        if about_assistant and self._assistant:
            askers.append(self._assistant)
        asker_ids = {found[n] for n in map(normalize_name, askers) if n in found}
        if scoring.asker_weight == scoring.graph_weight:
            asker_ids = set()  # the asker's facts weigh what any named entity's do
        frontiers: list[set[str]] = []
        frontier = set(found.values())
        seen = set(frontier)
        for hop in range(scoring.graph_hops):
            if not frontier:
                break
            frontiers.append(frontier)
            if hop + 1 < scoring.graph_hops:  # else the next hop adds nothing
                frontier = self.records.neighbours(user, list(frontier), as_of=as_of) - seen
                seen |= frontier
        return frontiers, asker_ids

    @staticmethod
    def _graph_scores(valid: Mapping[str, RankingRow], frontiers: Sequence[set[str]], scoring: ScoringSettings,
                      vector: Any, *, capped: bool) -> dict[str, float]:
        """Hop score of each candidate that touches an entity of a frontier (the nearest one counts).

        With the whole graph as candidates (``capped``), at most ``graph_candidates`` are
        kept, ranked by hop and then by cosine, so the cap drops the worst matches, not
        the oldest facts.
        """
        if not frontiers:
            return {}
        scores: dict[str, float] = {}
        for fid, row in valid.items():
            for hop, frontier in enumerate(frontiers):
                if row.fact.subject_id in frontier or row.fact.object_id in frontier:
                    scores[fid] = scoring.hop_scores[hop]
                    break
        if capped and len(scores) > scoring.graph_candidates:
            cos = {i: float(valid[i].vector @ vector) for i in scores}
            keep = sorted(scores, key=lambda i: (scores[i], cos[i]), reverse=True)[: scoring.graph_candidates]
            scores = {i: scores[i] for i in keep}
        return scores

    def entity_id(self, name: Any, user_id: str) -> str:
        """The id of the user's entity called ``name`` (or one of its aliases).

        Raises:
            ValidationError: ``name`` is not a non-empty string.
            NotFoundError: the user has no such entity.

        """
        if not isinstance(name, str) or not name.strip():
            raise ValidationError("entity name must be a non-empty string")
        check_text(name, "entity name")
        found = self.records.entity_ids_for_aliases(user_id, [normalize_name(name)])
        if not found:
            raise NotFoundError(f"no entity named {name!r} for user {user_id!r}")
        return next(iter(found.values()))

    def related_entities(self, name: str, user_id: str, *, limit: int) -> list[Entity]:
        """The spec's RelatedEntities: distinct entities 1..2 hops from ``name``, nearest first."""
        eid = self.entity_id(name, user_id)
        self._catch_up(user_id)
        ids = self.graph.related(user_id, eid, hops=2, limit=limit)
        found = self.records.get_entities(user_id, ids)
        return [found[i] for i in ids if i in found]

    def context_block(self, query: ContextQuery, *, max_entities: int = 5) -> str:
        """The GetContext facts with their dates, and the summaries of the entities they name."""
        facts, ids = self._search(query)  # the entity ids come with the facts: no second lookup
        entities = self.records.get_entities(query.user_id, ids)
        ordered = [entities[i] for i in ids if i in entities][:max_entities]
        return render_context_block(facts, ordered, as_of=query.as_of)

