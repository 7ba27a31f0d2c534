"""The spec's update rules, through the façade with real stores."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

import pytest
from zep_core import Message

from tests.core.fakes import ScriptedExtractor, said

UTC = timezone.utc
T1 = datetime(2023, 1, 1, tzinfo=UTC)
T2 = datetime(2024, 6, 1, tzinfo=UTC)


@pytest.fixture
def scripted():
    return ScriptedExtractor()


@pytest.fixture
def mem(make_memory, scripted):
    return make_memory(extractor=scripted)


def ingest(mem, scripted, *facts, user="u1", contradicted=(), text="hello there friend"):
    """One episode whose facts the script gives (its own id: the same words again are not a resend here)."""
    scripted.push(*facts, contradicted=contradicted)
    return mem.conversation_end("s", [Message(text, name="Alice")], user_id=user, episode_id=uuid.uuid4().hex)


def current(mem, user="u1"):
    return {(f.subject, f.predicate, f.object) for f in mem.entity_history("Alice", user_id=user) if f.is_current}


def test_newer_fact_supersedes_older_fact(mem, scripted):
    first = ingest(mem, scripted, said("Alice", "lives_in", "Paris", valid_from=T1))
    second = ingest(mem, scripted, said("Alice", "lives_in", "Berlin", valid_from=T2))
    old = first.added[0]
    assert [f.id for f in second.superseded] == [old.id]
    retired = second.superseded[0]
    assert retired.valid_until == T2 and retired.superseded_by == second.added[0].id
    assert current(mem) == {("Alice", "lives_in", "Berlin")}


def test_older_conflicting_fact_is_discarded_and_reported(mem, scripted):
    ingest(mem, scripted, said("Alice", "lives_in", "Berlin", valid_from=T2))
    result = ingest(mem, scripted, said("Alice", "lives_in", "Paris", valid_from=T1))
    assert result.added == () and result.superseded == ()
    assert len(result.discarded) == 1
    assert result.discarded[0].fact.object == "Paris" and "not older" in result.discarded[0].reason
    assert current(mem) == {("Alice", "lives_in", "Berlin")}


def test_same_valid_from_does_not_supersede(mem, scripted):
    ingest(mem, scripted, said("Alice", "lives_in", "Berlin", valid_from=T1))
    result = ingest(mem, scripted, said("Alice", "lives_in", "Paris", valid_from=T1))
    assert len(result.discarded) == 1


def test_restated_fact_reinforces_instead_of_duplicating(mem, scripted):
    first = ingest(mem, scripted, said("Alice", "lives_in", "Paris", valid_from=T1, confidence=0.5))
    second = ingest(mem, scripted, said("alice", "Lives In", "paris", valid_from=T2, confidence=0.5))
    assert second.added == () and len(second.reinforced) == 1
    fact = second.reinforced[0]
    assert fact.id == first.added[0].id
    assert fact.confidence == pytest.approx(0.75)
    assert len(fact.source_message_ids) == 2
    assert len(mem.entity_history("Alice", user_id="u1")) == 1


def test_multi_valued_predicate_does_not_supersede(mem, scripted):
    ingest(mem, scripted, said("Alice", "likes", "jazz", valid_from=T1))
    result = ingest(mem, scripted, said("Alice", "likes", "hiking", valid_from=T2))
    assert result.superseded == ()
    assert current(mem) == {("Alice", "likes", "jazz"), ("Alice", "likes", "hiking")}


def test_extractor_flagged_contradiction_supersedes_only_that_fact(mem, scripted):
    jazz = ingest(mem, scripted, said("Alice", "likes", "jazz", valid_from=T1)).added[0]
    ingest(mem, scripted, said("Alice", "likes", "opera", valid_from=T1))
    result = ingest(mem, scripted, said("Alice", "dislikes", "jazz", valid_from=T2), contradicted=[jazz.id])
    assert [f.id for f in result.superseded] == [jazz.id]
    assert current(mem) == {("Alice", "likes", "opera"), ("Alice", "dislikes", "jazz")}


def test_quote_of_a_multi_valued_fact_retires_with_it_when_the_extractor_contradicts_it(mem, scripted):
    first = ingest(mem, scripted, said("Alice", "likes", "jazz", valid_from=T1),
                   said("Alice", "statement", "I like jazz.", entity=False, content="Alice: I like jazz.",
                        valid_from=T1), text="I like jazz.")
    jazz = next(f for f in first.added if f.predicate == "likes")
    quote = next(f for f in first.added if f.predicate == "statement")
    result = ingest(mem, scripted, said("Alice", "dislikes", "jazz", valid_from=T2), contradicted=[jazz.id],
                    text="I can't stand jazz any more.")
    assert {f.id for f in result.superseded} == {jazz.id, quote.id}
    assert current(mem) == {("Alice", "dislikes", "jazz")}
    assert "I like jazz" not in mem.context_block("What music does Alice like?", user_id="u1")


def test_contradicted_id_the_extractor_was_not_shown_is_ignored(mem, scripted):
    ingest(mem, scripted, said("Alice", "likes", "jazz", valid_from=T1))
    result = ingest(mem, scripted, said("Alice", "likes", "rock", valid_from=T2), contradicted=["no-such-fact"])
    assert result.superseded == ()


def test_supersession_never_crosses_subjects_or_users(mem, scripted):
    ingest(mem, scripted, said("Alice", "lives_in", "Paris", valid_from=T1))
    ingest(mem, scripted, said("Bob", "lives_in", "Rome", valid_from=T2))
    ingest(mem, scripted, said("Alice", "lives_in", "Oslo", valid_from=T2), user="u2")
    assert current(mem) == {("Alice", "lives_in", "Paris")}


def test_quote_of_a_superseded_fact_leaves_the_context_with_it(make_memory):
    memory = make_memory()  # the offline rule extractor keeps each utterance as a statement fact
    t1, t2 = datetime(2023, 1, 1, tzinfo=UTC), datetime(2024, 1, 1, tzinfo=UTC)
    memory.conversation_end("s1", [Message("I live in Paris.", name="Alice", timestamp=t1)], user_id="a")
    memory.conversation_end("s2", [Message("I moved to Berlin.", name="Alice", timestamp=t2)], user_id="a")
    block = memory.context_block("Where does Alice live?", user_id="a")
    assert "Berlin" in block and "Paris" not in block
    history = " ".join(f.content for f in memory.entity_history("Alice", user_id="a"))
    assert "Paris" in history and "Berlin" in history


def test_invalid_extractor_output_is_dropped_and_reported(mem, scripted):
    result = ingest(mem, scripted,
                    said("Alice", "lives_in", "Paris", valid_from=T2, valid_until=T1),
                    said("Alice", "likes", "tea", confidence=1.5),
                    said("Alice", "likes", "   "),
                    said("Alice", "likes", "coffee"))
    assert [f.object for f in result.added] == ["coffee"]
    assert len(result.invalid) == 3
    assert any("valid_until" in r for r in result.invalid)
    assert any("confidence" in r for r in result.invalid)


@pytest.mark.parametrize("later", ["I moved to Berlin last week.", "I moved to Berlin a few days ago.",
                                   "Since last Monday I live in Berlin."])
def test_a_change_told_later_but_dated_a_little_earlier_still_supersedes(make_memory, later):
    memory = make_memory()
    said_paris = datetime(2026, 3, 4, 9, tzinfo=UTC)  # a Wednesday
    memory.conversation_end("s1", [Message("I live in Paris.", name="Alice", timestamp=said_paris)], user_id="u")
    told = datetime(2026, 3, 9, 9, tzinfo=UTC)
    result = memory.conversation_end("s2", [Message(later, name="Alice", timestamp=told)], user_id="u")
    (paris,) = [f for f in result.superseded if f.object == "Paris"]
    assert paris.valid_until > paris.valid_from  # it held until the move was told, not "taken back"
    now = {f.object for f in memory.entity_history("Alice", user_id="u") if f.is_current and f.predicate == "lives_in"}
    assert now == {"Berlin"}


def test_a_change_dated_long_before_a_present_tense_fact_is_history(make_memory):
    memory = make_memory()
    memory.conversation_end("s1", [Message("I live in Paris.", name="Alice",
                                           timestamp=datetime(2026, 3, 4, 9, tzinfo=UTC))], user_id="u")
    memory.conversation_end("s2", [Message("I moved to Berlin in 2010.", name="Alice",
                                           timestamp=datetime(2026, 3, 9, 9, tzinfo=UTC))], user_id="u")
    now = {f.object for f in memory.entity_history("Alice", user_id="u") if f.is_current and f.predicate == "lives_in"}
    assert now == {"Paris"}
