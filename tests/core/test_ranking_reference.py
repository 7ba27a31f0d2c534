"""The optimised query path ranks exactly as the plain one did.

``get_context`` gathers ids and scores first and builds records only for the facts that
make the cut; the hop to neighbouring entities reads SQLite's indexes instead of the graph
index. ``reference`` below is the query path before those changes, kept as the oracle: it
builds every candidate fact, checks validity on the records, and walks the hop in Kùzu.
Both run on one fixed synthetic corpus, for every fusion and graph mode and for ``as_of``.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import datetime, timezone

import pytest
from zep_core.providers.cues import says_a_number
from zep_core.resolve import (
    asks_for_advice,
    asks_how_many,
    asks_what_the_assistant_said,
    input_aliases,
    mentions_second_person,
)
from zep_core.retrieval import ContextQuery, newer_first, score_candidates
from zep_core.stores.records import iso
from zep_core.temporal import normalize_name
from zep_core.tenant import Tenant

from bench.synth import episodes, make_users, queries

T = Tenant.of  # a checked user id: what the stores take

UTC = timezone.utc


def reference(memory, query: ContextQuery) -> list[tuple[str, float, str | None]]:
    """The unoptimised ranking: ``(fact id, score, newer id)`` best first."""
    records, vectors, graph = memory._stores.records, memory._stores.vectors, memory._stores.graph
    scoring, user, when = query.scoring, query.user_id, query.as_of
    assistant = memory.config.assistant_speaker
    about_assistant = bool(assistant) and asks_what_the_assistant_said(query.text)
    voice = assistant if about_assistant else query.asker
    vector = memory.embedder.embed_query(f"{voice}: {query.text}" if voice else query.text)
    memory.flush()
    k = max(scoring.semantic_candidates, scoring.context_limit)
    nearer = {}  # a first-person question over a long history: the candidates found by words ranked deeper
    if scoring.graph_fit == "words" or (scoring.graph_fit == "auto" and _long_history(memory, query, vector)):
        nearer = dict(vectors.query(T(user), "current", vector, max(k, scoring.long_history_candidates))[k:])
    semantic = dict(vectors.query(T(user), "current", vector, k))
    if when is not None:  # superseded facts valid then, by brute force over every stored fact of the user
        then = [(fid, float(s.embedding @ vector)) for ids in records.iter_fact_ids(T(user))
                for fid, s in records.stored_facts(T(user), ids).items()
                if not s.fact.is_current and s.fact.valid_at(when)]
        semantic.update(sorted(then, key=lambda x: -x[1])[:k])
    lexical = records.lexical_search(T(user), query.text, limit=scoring.lexical_candidates,
                                     as_of=iso(when) if when else None, context_weight=scoring.lexical_context_weight)
    as_of = iso(when) if when else None
    names = input_aliases(query.text) + ([normalize_name(query.asker)] if query.asker else [])
    if memory.config.assistant_speaker and mentions_second_person(query.text):
        names.append(normalize_name(memory.config.assistant_speaker))
    found = records.entity_ids_for_aliases(T(user), names)
    only = set(semantic) | set(lexical) if scoring.graph_mode == "boost" and not scoring.require_both else None
    askers = [query.asker] if query.asker else []
    if about_assistant:
        askers.append(assistant)
    asker_ids = [found[n] for n in map(normalize_name, askers) if n in found]
    if scoring.asker_weight == scoring.graph_weight:
        asker_ids = []
    scores: dict[str, float] = {}
    frontier = seen = set(found.values())
    seen = set(seen)
    for hop in range(scoring.graph_hops):
        if not frontier or (only is not None and not only):
            break
        for fid in records.facts_touching(T(user), list(frontier), as_of=as_of, among=only):
            scores.setdefault(fid, scoring.hop_scores[hop])
        if hop + 1 < scoring.graph_hops:
            frontier = graph.neighbours(user, list(frontier), as_of=as_of) - seen
            seen |= frontier
    if only is None and len(scores) > scoring.graph_candidates:
        cos = {i: float(v @ vector) for i, v in records.fact_vectors(T(user), list(scores)).items()}
        keep = sorted(scores, key=lambda i: (scores[i], cos.get(i, 0.0)), reverse=True)[: scoring.graph_candidates]
        scores = {i: scores[i] for i in keep}
    asker = (set(records.facts_touching(T(user), asker_ids, as_of=as_of, among=only)) & set(scores)
             if asker_ids else set())
    if scoring.graph_fit == "auto":  # words for an asker with more facts than the meaning ranking fetches
        every = [s for ids in records.iter_fact_ids(T(user)) for s in records.stored_facts(T(user), ids).values()
                 if (s.fact.valid_at(when) if when else s.fact.is_current)]
        askers_here = asker_ids if asker and not asks_for_advice(query.text) else []  # advice: by meaning
        held = [sum(a in (s.subject_id, s.object_id) for s in every) for a in askers_here]
        scoring = replace(scoring, graph_fit="words" if any(n > scoring.semantic_candidates for n in held)
                          else "cosine")
    missing = [f for f in set(scores) | set(lexical) if f not in semantic]
    for fid, vec in records.fact_vectors(T(user), missing).items():
        semantic[fid] = float(vec @ vector)
    facts = records.get_facts(T(user), list(set(semantic) | set(scores)))
    valid = {i: f for i, f in facts.items() if (f.valid_at(when) if when else f.is_current)}
    recency = {i: iso(f.valid_from) for i, f in valid.items()}
    start, end = query.window or ("", "")
    in_window = {i for i, f in valid.items() if start <= iso(f.valid_from) < end}
    counted = ({i for i in asker if i in valid and says_a_number(valid[i].content)}
               if scoring.count_weight and asks_how_many(query.text) else set())
    ranked = score_candidates({i: s for i, s in semantic.items() if i in valid},
                              {i: g for i, g in scores.items() if i in valid}, scoring,
                              lexical={i: s for i, s in lexical.items() if i in valid}, asker=asker, recency=recency,
                              in_window=in_window, counted=counted, nearer=nearer)
    ranked = ranked[: 2 * scoring.context_limit]
    top = [s.fact_id for s in ranked]
    ranked, older = newer_first(ranked, records.fact_vectors(T(user), top),
                                {i: valid[i].subject.casefold() for i in top}, recency, scoring.newer_first_similarity)
    return [(s.fact_id, round(s.score, 6), older.get(s.fact_id)) for s in ranked[: scoring.context_limit]]


def _long_history(memory, query: ContextQuery, vector) -> bool:
    """Whether an asker of the question (not a request for advice) holds more facts than meaning fetches."""
    records, scoring, when = memory._stores.records, query.scoring, query.as_of
    assistant = memory.config.assistant_speaker
    askers = [query.asker] if query.asker else []
    if assistant and asks_what_the_assistant_said(query.text):
        askers.append(assistant)
    names = [normalize_name(a) for a in askers]
    found = records.entity_ids_for_aliases(T(query.user_id), names)
    ids = [found[n] for n in names if n in found]
    if not ids or asks_for_advice(query.text) or scoring.asker_weight == scoring.graph_weight:
        return False
    every = [s for fids in records.iter_fact_ids(T(query.user_id))
             for s in records.stored_facts(T(query.user_id), fids).values()
             if (s.fact.valid_at(when) if when else s.fact.is_current)]
    return any(sum(a in (s.subject_id, s.object_id) for s in every) > scoring.semantic_candidates for a in ids)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, embedder):
    """Six synthetic users, 240 short episodes over a year: moves, job changes, likes, people."""
    from zep_core import Memory, MemoryConfig

    users = make_users(6, seed=3)
    memory = Memory(MemoryConfig(data_dir=tmp_path_factory.mktemp("ranking") / "data", embedder=embedder))
    for user, session, msgs in itertools.islice(episodes(users, seed=3), 240):
        assert memory.conversation_end(session, msgs, user_id=user.id).status == "done"
    memory.flush()
    yield memory, users
    memory.close()


SETTINGS = {
    "default": {},
    "weighted": {"fusion": "weighted"},
    "candidates, capped": {"graph_mode": "candidates", "graph_candidates": 15},
    "require_both": {"require_both": True},
    "three hops": {"graph_hops": 3, "hop_scores": (1.0, 0.5, 0.25)},
    "asker weighs more": {"asker_weight": 2.0},
    "meaning orders a hop": {"graph_fit": "cosine"},
    "meaning and words order a hop": {"graph_fit": "words"},
    "a short reach": {"semantic_candidates": 12},
}


@pytest.mark.parametrize("name", list(SETTINGS))
def test_top_k_equals_the_unoptimised_ranking(corpus, name):
    memory, users = corpus
    compared = 0
    for user, text in queries(users, 40, seed=11):
        query = ContextQuery.parse(memory.config, text, user_id=user.id, speaker=user.name)
        query = replace(query, scoring=replace(query.scoring, **SETTINGS[name]))
        got = [(f.id, f.score, f.newer_fact_id) for f in memory._retrieval.get_context(query)]
        assert got == reference(memory, query), text
        compared += len(got)
    assert compared > 100  # the queries find facts: the comparison is not of empty lists


def test_as_of_ranking_equals_the_unoptimised_one(corpus):
    memory, users = corpus
    found = 0
    for n, (user, text) in enumerate(queries(users, 30, seed=12)):
        when = datetime(2024, 1, 1, tzinfo=UTC).replace(hour=(n * 5) % 24, day=1 + n % 28)
        query = ContextQuery.parse(memory.config, text, user_id=user.id, speaker=user.name, as_of=when)
        got = [(f.id, f.score, f.newer_fact_id) for f in memory._retrieval.get_context(query)]
        assert got == reference(memory, query), (text, when)
        found += len(got)
    assert found > 30


#: A time named in a question, and a "now" that puts the corpus (its first days of 2024) inside it.
NAMED_TIMES = {"last month": datetime(2024, 2, 10, tzinfo=UTC), "two months ago": datetime(2024, 3, 2, tzinfo=UTC),
               "in January": datetime(2024, 2, 15, tzinfo=UTC), "last Monday": datetime(2024, 1, 3, tzinfo=UTC)}


@pytest.mark.parametrize("when", list(NAMED_TIMES))
def test_a_question_naming_a_time_ranks_as_the_unoptimised_one(corpus, when):
    memory, users = corpus
    in_window = 0
    for user, text in queries(users, 20, seed=13):
        query = ContextQuery.parse(memory.config, f"{text.rstrip('?')} {when}?", user_id=user.id,
                                   speaker=user.name, now=NAMED_TIMES[when])
        got = memory._retrieval.get_context(query)
        assert [(f.id, f.score, f.newer_fact_id) for f in got] == reference(memory, query), query.text
        in_window += sum(query.window[0] <= iso(f.valid_from) < query.window[1] for f in got)
    assert in_window > 20  # the time signal took part


def test_context_block_names_the_entities_of_its_facts(corpus):
    memory, users = corpus
    user = users[0]
    facts = memory.get_context(f"Where does {user.name} live now?", user_id=user.id)
    block = memory.context_block(f"Where does {user.name} live now?", user_id=user.id)
    assert facts and all(f.content in block for f in facts)
    assert f"- {user.name} (person)" in block or "ENTITIES:" not in block
