"""GetContext, EntityHistory, RelatedEntities and cypher() on real stores."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

import pytest
from zep_core import SPEC_SCORING, Message, NotFoundError, QueryError

from tests.core.fakes import ScriptedExtractor, said

UTC = timezone.utc
T1, T2, T3 = (datetime(y, 1, 1, tzinfo=UTC) for y in (2021, 2022, 2023))


@pytest.fixture
def scripted():
    return ScriptedExtractor()


@pytest.fixture
def mem(make_memory, scripted):
    return make_memory(extractor=scripted)


def load(mem, scripted, *facts, user="u"):
    """One episode whose facts the script gives (its own id: the same words again are not a resend here)."""
    scripted.push(*facts)
    return mem.conversation_end("s", [Message("some words here", name="Alice")], user_id=user,
                                episode_id=uuid.uuid4().hex)


@pytest.fixture
def spec_mem(make_memory, scripted):
    return make_memory(extractor=scripted, **SPEC_SCORING)


def test_get_context_scores_are_the_spec_formula_with_parts(spec_mem, scripted):
    mem = spec_mem
    load(mem, scripted, said("Alice", "lives_in", "Berlin", content="Alice lives in Berlin."),
         said("Alice", "likes", "jazz", content="Alice likes jazz music."))
    facts = mem.get_context("Where does Alice live?", user_id="u")
    assert facts, "expected Alice's facts"
    for f in facts:
        assert f.score == pytest.approx(0.7 * f.semantic_score + 0.3 * f.graph_score, abs=1e-5)
        assert f.graph_score == 1.0  # Alice is named in the input: one hop
    assert facts[0].content == "Alice lives in Berlin."
    assert [f.score for f in facts] == sorted((f.score for f in facts), reverse=True)


def test_default_scoring_is_reciprocal_rank_fusion_of_the_three_signals(mem, scripted):
    load(mem, scripted, said("Alice", "lives_in", "Berlin", content="Alice lives in Berlin."))
    (fact,) = mem.get_context("Where does Alice live?", user_id="u")
    cfg = mem.config
    assert fact.semantic_score >= cfg.semantic_threshold and fact.lexical_score > 0 and fact.graph_score == 1.0
    # first by meaning, first by words, first through the graph: each list gives weight / (rrf_k + 1)
    expected = (cfg.semantic_weight + cfg.lexical_weight + cfg.graph_weight) / (cfg.rrf_k + 1)
    assert fact.score == pytest.approx(expected, abs=1e-5)


def test_semantic_threshold_keeps_out_unrelated_facts_not_in_the_graph(mem, scripted):
    load(mem, scripted, said("Bob", "likes", "sailing", content="Bob loves sailing boats.", entity=False),
         said("Carol", "works_at", "Bank", content="Carol works at the central bank."))
    facts = mem.get_context("sailing boats", user_id="u", threshold=0.6)
    assert [f.content for f in facts] == ["Bob loves sailing boats."]
    assert facts[0].semantic_score >= 0.6 and facts[0].graph_score == 0
    assert mem.get_context("quantum chromodynamics lecture", user_id="u", threshold=0.3) == []


def test_graph_match_reaches_two_hops_and_scores_them_lower(spec_mem, scripted):
    mem = spec_mem  # graph_mode="candidates": every fact near a named entity is a candidate
    load(mem, scripted, said("Alice", "knows", "Bob", content="Alice knows Bob."),
         said("Bob", "works_at", "Initech", content="Bob works at Initech."),
         said("Initech", "located_in", "Austin", content="Initech is in Austin."))
    facts = {f.content: f for f in mem.get_context("Tell me about Alice", user_id="u", threshold=1.0)}
    assert facts["Alice knows Bob."].graph_score == 1.0
    assert facts["Bob works at Initech."].graph_score == 0.5
    assert "Initech is in Austin." not in facts  # three hops away


def test_limit_caps_the_result(mem, scripted):
    load(mem, scripted, *[said("Alice", "likes", f"thing{i}", content=f"Alice likes thing{i}.") for i in range(8)])
    assert len(mem.get_context("Alice", user_id="u", limit=3)) == 3
    assert len(mem.get_context("Alice", user_id="u")) == 8


def test_require_both_is_the_spec_literal_and(mem, scripted):
    load(mem, scripted, said("Alice", "likes", "jazz", content="Alice likes jazz music.", entity=False),
         said("Dave", "likes", "jazz", content="Dave likes jazz music.", entity=False))
    either = {f.content for f in mem.get_context("Does Alice like jazz music?", user_id="u", threshold=0.5)}
    both = {f.content for f in mem.get_context("Does Alice like jazz music?", user_id="u", threshold=0.5,
                                               require_both=True)}
    assert either == {"Alice likes jazz music.", "Dave likes jazz music."}
    assert both == {"Alice likes jazz music."}


def test_current_facts_only_unless_as_of_asks_for_the_past(mem, scripted):
    load(mem, scripted, said("Alice", "lives_in", "Paris", valid_from=T1, content="Alice lives in Paris."))
    load(mem, scripted, said("Alice", "lives_in", "Berlin", valid_from=T3, content="Alice lives in Berlin."))
    now = [f.content for f in mem.get_context("Where does Alice live?", user_id="u")]
    then = [f.content for f in mem.get_context("Where does Alice live?", user_id="u", as_of=T2)]
    assert now == ["Alice lives in Berlin."]
    assert then == ["Alice lives in Paris."]
    assert "Paris" in mem.context_block("Where does Alice live?", user_id="u", as_of=T2)


def test_entity_history_is_chronological_and_includes_superseded_facts(mem, scripted):
    load(mem, scripted, said("Alice", "lives_in", "Berlin", valid_from=T3))
    load(mem, scripted, said("Alice", "works_at", "Acme", valid_from=T2))
    load(mem, scripted, said("Carol", "visited", "Alice", valid_from=T1))
    load(mem, scripted, said("Alice", "lives_in", "Rome", valid_from=datetime(2024, 1, 1, tzinfo=UTC)))
    history = mem.entity_history("alice", user_id="u")
    assert [(f.subject, f.object) for f in history] == [
        ("Carol", "Alice"), ("Alice", "Acme"), ("Alice", "Berlin"), ("Alice", "Rome")]
    assert not history[2].is_current and history[3].is_current
    with pytest.raises(NotFoundError):
        mem.entity_history("Zed", user_id="u")


def test_related_entities_reach_one_and_two_hops_but_not_three(mem, scripted):
    load(mem, scripted, said("A", "knows", "B"), said("B", "knows", "C"), said("C", "knows", "D"))
    load(mem, scripted, said("A", "knows", "X"), user="other")
    assert {e.name for e in mem.related_entities("A", user_id="u")} == {"B", "C"}
    assert {e.name for e in mem.related_entities("A", user_id="other")} == {"X"}


def test_related_entities_is_limited_to_ten(mem, scripted):
    load(mem, scripted, *[said("Hub", "knows", f"P{i}") for i in range(15)])
    assert len(mem.related_entities("Hub", user_id="u")) == 10


def test_cypher_reads_the_users_graph_with_parameters(mem, scripted):
    load(mem, scripted, said("Alice", "lives_in", "Paris"))
    load(mem, scripted, said("Alice", "lives_in", "Tokyo"), user="v")
    rows = mem.cypher("MATCH (e:Entity {name: $name})-[r:FACT]->(x:Entity) RETURN x.name AS place",
                      {"name": "Alice"}, user_id="u")
    assert rows == [{"place": "Paris"}]
    rows = mem.cypher("MATCH (e:Entity) RETURN e.name AS name ORDER BY name", user_id="v")
    assert [r["name"] for r in rows] == ["Alice", "Tokyo"]


@pytest.mark.parametrize("query", [
    "CREATE (:Entity {id: 'x'})",
    "MATCH (e:Entity) SET e.name = 'pwned'",
    "match (e:Entity) detach delete e",
    "MATCH (e:Entity) RETURN e /* harmless */ ; MATCH (e:Entity) DELETE e",
    "MATCH (e:Entity) /* */ MeRgE (x:Entity {id: 'y'})",
    "MATCH (e:Entity) // comment\nREMOVE e.name",
    "DROP TABLE Entity",
    "COPY Entity FROM 'x.csv'",
    "LOAD FROM 'file.csv' RETURN *",
    "CALL show_tables() RETURN *",
])
def test_cypher_refuses_writes(mem, scripted, query):
    load(mem, scripted, said("Alice", "lives_in", "Paris"))
    with pytest.raises(QueryError):
        mem.cypher(query, user_id="u")
    assert {e.name for e in mem.related_entities("Alice", user_id="u")} == {"Paris"}


def test_cypher_patterns_need_no_scope_and_see_only_the_users_graph(mem, scripted):
    load(mem, scripted, said("Alice", "lives_in", "Paris"))
    load(mem, scripted, said("Bea", "lives_in", "Tokyo"), user="v")
    assert mem.cypher("MATCH (n) RETURN n.name AS name ORDER BY name", user_id="u") == [
        {"name": "Alice"}, {"name": "Paris"}]
    assert mem.cypher("MATCH (a), (b) RETURN count(*) AS n", user_id="u") == [{"n": 4}]


def test_first_person_questions_mean_the_speaker(make_memory):
    memory = make_memory()
    memory.conversation_end("s", [Message("I live in Lisbon.", name="Ana"), Message("I like surfing.", name="Bo")],
                            user_id="u")
    facts = memory.get_context("Where do I live?", user_id="u", speaker="Ana")
    assert facts[0].content == "Ana lives in Lisbon." and facts[0].graph_score == 1.0  # "I" named Ana's entity
    assert all(f.graph_score == 0.0 for f in facts[1:])  # Bo's facts can only match by meaning


def test_first_person_defaults_to_the_unnamed_user(make_memory):
    memory = make_memory()
    memory.conversation_end("s", [Message("I live in Lisbon.")], user_id="u")
    assert any(f.content == "User lives in Lisbon." for f in memory.get_context("Where do I live?", user_id="u"))
