"""The ranking as a pure function: reciprocal rank fusion, the spec's weighted sum, the graph, newer-first."""

from __future__ import annotations

import numpy as np
import pytest
from zep_core import SPEC_SCORING, ScoringSettings
from zep_core.retrieval import Scored, newer_first, score_candidates

RRF = ScoringSettings()


def ids(ranked):
    return [s.fact_id for s in ranked]


def test_rrf_sums_weight_over_rank_in_each_list():
    scoring = ScoringSettings(semantic_weight=1.0, lexical_weight=1.0, graph_weight=0.0, rrf_k=10,
                              semantic_threshold=0.0)
    ranked = score_candidates({"a": 0.9, "b": 0.5, "c": 0.4}, {}, scoring, lexical={"c": 7.0, "b": 1.0})
    score = {s.fact_id: s.score for s in ranked}
    assert score["a"] == pytest.approx(1 / 11)  # first by meaning, no word match
    assert score["b"] == pytest.approx(1 / 12 + 1 / 12)  # second in both
    assert score["c"] == pytest.approx(1 / 13 + 1 / 11)  # third by meaning, first by words
    assert ids(ranked) == ["c", "b", "a"]
    assert {s.fact_id: s.lexical for s in ranked} == {"a": 0.0, "b": 1.0, "c": 7.0}


def test_a_word_only_match_is_a_candidate_below_the_threshold():
    ranked = score_candidates({"a": 0.05, "b": 0.6}, {}, RRF, lexical={"a": 3.0})
    assert set(ids(ranked)) == {"a", "b"}
    assert score_candidates({"a": 0.05}, {}, RRF) == []  # neither meaning nor words: not a candidate


def test_the_graph_boosts_only_facts_that_match_otherwise():
    graph = {"a": 1.0, "far": 1.0}  # "far" touches the named person but matches nothing
    ranked = score_candidates({"a": 0.3, "b": 0.31, "far": 0.01}, graph, RRF)
    assert ids(ranked) == ["a", "b"]
    assert ranked[0].graph == 1.0 and ranked[1].graph == 0.0
    flood = score_candidates({"a": 0.3, "b": 0.31, "far": 0.01}, graph, ScoringSettings(graph_mode="candidates"))
    assert "far" in ids(flood)


def test_the_graph_ranks_its_facts_by_hop_then_by_meaning():
    graph = {"near": 1.0, "two_hops": 0.5, "weak": 1.0}
    scoring = ScoringSettings(semantic_weight=0.0, lexical_weight=0.0, graph_weight=1.0, semantic_threshold=0.0)
    ranked = score_candidates({"near": 0.5, "two_hops": 0.9, "weak": 0.2}, graph, scoring)
    assert ids(ranked) == ["near", "weak", "two_hops"]


def test_the_graph_orders_a_persons_facts_by_meaning_and_words():
    """The asker's fact that says the question's words outranks a closer one by meaning that does not."""
    scoring = ScoringSettings(semantic_weight=0.7, lexical_weight=1.0, graph_weight=0.3, asker_weight=3.0)
    semantic = {"topical": 0.6, "says_it": 0.4, **{f"near{n}": 0.5 + n / 100 for n in range(4)}}
    graph = dict.fromkeys(semantic, 1.0)  # all the asker's: one hop
    by_words = score_candidates(semantic, graph, ScoringSettings(**{**scoring, "graph_fit": "words"}),
                                lexical={"says_it": 9.0}, asker=set(graph))
    by_meaning = score_candidates(semantic, graph, scoring, lexical={"says_it": 9.0}, asker=set(graph))
    assert ids(by_words)[0] == "says_it"
    assert ids(by_meaning)[0] == "topical"  # the asker's ranking by cosine alone outweighs the words


def test_the_askers_facts_weigh_asker_weight():
    scoring = ScoringSettings(semantic_weight=1.0, lexical_weight=0.0, graph_weight=0.3, asker_weight=3.0)
    graph = {"mine": 1.0, "theirs": 1.0}
    ranked = score_candidates({"mine": 0.3, "theirs": 0.6}, graph, scoring, asker={"mine"})
    assert ids(ranked) == ["mine", "theirs"]


def test_spec_scoring_is_the_spec_formula_literally():
    ranked = score_candidates({"a": 0.8, "b": 0.65, "c": 0.3}, {"b": 1.0, "c": 0.5}, SPEC_SCORING,
                              lexical={"c": 9.0})
    score = {s.fact_id: s.score for s in ranked}
    assert score == pytest.approx({"a": 0.7 * 0.8, "b": 0.7 * 0.65 + 0.3, "c": 0.7 * 0.3 + 0.3 * 0.5})
    both = score_candidates({"a": 0.8, "b": 0.65, "c": 0.3}, {"b": 1.0, "c": 0.5},
                            ScoringSettings(**{**SPEC_SCORING, "require_both": True}))
    assert ids(both) == ["b"]  # the literal AND: above 0.6 and near a named entity


def test_weighted_fusion_normalises_bm25_by_the_best():
    scoring = ScoringSettings(fusion="weighted", semantic_weight=0.5, lexical_weight=0.5, graph_weight=0.0)
    ranked = score_candidates({"a": 0.4, "b": 0.4}, {}, scoring, lexical={"a": 8.0, "b": 2.0})
    assert {s.fact_id: s.score for s in ranked} == pytest.approx({"a": 0.2 + 0.5, "b": 0.2 + 0.125})


def test_ties_go_to_the_newer_fact():
    scoring = ScoringSettings(lexical_weight=0.0, graph_weight=0.0)
    ranked = score_candidates({"old": 0.5, "new": 0.5}, {}, scoring,
                              recency={"old": "2020-01-01", "new": "2024-01-01"})
    assert ids(ranked) == ["new", "old"]


def _unit(v):
    v = np.asarray(v, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_newer_first_puts_the_newer_near_duplicate_in_the_older_ones_place_and_marks_the_older():
    ranked = [Scored("old", 0.3, 0.8, 1.0), Scored("other", 0.25, 0.5, 0.0), Scored("new", 0.2, 0.7, 1.0)]
    vectors = {"old": _unit([1, 0.1, 0]), "new": _unit([1, 0.12, 0]), "other": _unit([0, 0, 1])}
    subjects = {"old": "dana", "new": "dana", "other": "bo"}
    recency = {"old": "2024-01-01", "new": "2024-03-01", "other": "2024-02-01"}
    out, earlier = newer_first(ranked, vectors, subjects, recency, similarity=0.9)
    assert ids(out) == ["new", "old", "other"] and earlier == {"old": "new"}
    assert [s.score for s in out] == [0.3, 0.3, 0.25]  # the newer took the older's place and score
    assert newer_first(ranked, vectors, {**subjects, "new": "bo"}, recency, 0.9) == (ranked, {})  # other subject
    assert newer_first(ranked, vectors, subjects, recency, 1.0) == (ranked, {})  # switched off
