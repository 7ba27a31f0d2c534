"""conversation_end: the episode is stored first, nothing is lost, retries are no-ops."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from zep_core import Message, NotFoundError, ValidationError

from tests.core.fakes import ScriptedExtractor, said

UTC = timezone.utc


def test_episode_and_messages_are_stored_before_extraction_and_survive_its_failure(make_memory):
    scripted = ScriptedExtractor()
    scripted.fail(RuntimeError("model overloaded"))
    memory = make_memory(extractor=scripted)
    msgs = [Message("I live in Paris", name="Alice", id="m1", timestamp=datetime(2024, 5, 8, tzinfo=UTC)),
            Message("Nice!", role="assistant", id="m2")]
    result = memory.conversation_end("s1", msgs, user_id="alice", episode_id="ep-1")
    assert result.status == "pending" and "model overloaded" in result.error
    episode = memory.get_episode("ep-1")
    assert episode.status == "pending" and "model overloaded" in episode.error
    assert [(m.id, m.role, m.name, m.content) for m in episode.messages] == [
        ("m1", "user", "Alice", "I live in Paris"), ("m2", "assistant", None, "Nice!")]
    assert episode.messages[0].timestamp == datetime(2024, 5, 8, tzinfo=UTC)

    scripted.push(said("Alice", "lives_in", "Paris"))
    report = memory.maintain()
    assert report.retried == 1 and report.completed == 1 and report.still_pending == ()
    assert memory.get_episode("ep-1").status == "done"
    assert [f.object for f in memory.entity_history("Alice", user_id="alice")] == ["Paris"]


def test_sending_the_same_episode_id_twice_is_a_noop(make_memory):
    scripted = ScriptedExtractor()
    scripted.push(said("Alice", "lives_in", "Paris"))
    memory = make_memory(extractor=scripted)
    first = memory.conversation_end("s1", [Message("I live in Paris", name="Alice")], user_id="a", episode_id="e")
    again = memory.conversation_end("s1", [Message("I live in Paris", name="Alice")], user_id="a", episode_id="e")
    assert first.status == "done" and again.status == "duplicate"
    assert len(scripted.calls) == 1
    assert len(memory.entity_history("Alice", user_id="a")) == 1


def test_an_episode_id_of_another_user_is_refused(make_memory):
    memory = make_memory()
    memory.conversation_end("s", [Message("hello there my friend")], user_id="a", episode_id="e")
    with pytest.raises(ValidationError, match="another user"):
        memory.conversation_end("s", [Message("hello there my friend")], user_id="b", episode_id="e")


def test_first_person_resolves_to_the_speaker(make_memory):
    scripted = ScriptedExtractor()
    scripted.push(said("I", "lives_in", "Paris"))
    memory = make_memory(extractor=scripted)
    memory.conversation_end("s", [Message("I live in Paris", name="Alice")], user_id="a")
    assert [f.subject for f in memory.entity_history("Alice", user_id="a")] == ["Alice"]


def test_message_ids_and_times_reach_the_facts(make_memory):
    memory = make_memory()
    when = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    result = memory.conversation_end(
        "s", [Message("I work at Acme since 2019.", name="Bob", id="D1:3", timestamp=when)], user_id="b")
    works = next(f for f in result.added if f.predicate == "works_at")
    assert works.source_message_ids == ("D1:3",)
    assert works.valid_from.year == 2019
    assert works.created_at is not None


def test_generated_message_ids_are_cited_when_the_caller_gives_none(make_memory):
    memory = make_memory()
    result = memory.conversation_end("s", [Message("I live in Lisbon.", name="Eve")], user_id="e", episode_id="ep")
    assert all(f.source_message_ids == ("ep:0",) for f in result.added)


@pytest.mark.parametrize("messages, match", [
    ([], "empty"),
    ("I live in Paris", "list"),
    ([{"role": "user"}], "content"),
    ([{"role": "user", "content": "   "}], "empty"),
    ([{"role": "user", "content": "x\x00y"}], "NUL"),
    ([{"role": "pirate", "content": "arr"}], "role"),
    ([42], "message 0"),
])
def test_malformed_messages_are_clear_errors_and_store_nothing(memory, messages, match):
    with pytest.raises(ValidationError, match=match):
        memory.conversation_end("s", messages, user_id="u")
    assert not memory.has_user("u")


def test_oversized_input_is_refused_with_the_limit_named(make_memory):
    memory = make_memory(max_message_chars=100, max_messages_per_episode=3)
    with pytest.raises(ValidationError, match="max_message_chars"):
        memory.conversation_end("s", [Message("x" * 101)], user_id="u")
    with pytest.raises(ValidationError, match="max_messages_per_episode"):
        memory.conversation_end("s", [Message("hello")] * 4, user_id="u")


def test_context_for_a_user_with_no_memory_is_empty_and_other_queries_say_unknown(memory):
    assert memory.get_context("where?", user_id="nobody") == []
    assert memory.context_block("where?", user_id="nobody") == ""
    with pytest.raises(ValidationError, match="limit"):
        memory.get_context("where?", user_id="nobody", limit=0)  # the arguments are still checked
    assert not memory.has_user("nobody")  # asking stored nothing
    with pytest.raises(NotFoundError, match="unknown user"):
        memory.entity_history("Ann", user_id="nobody")


def test_chat_session_turns_persist_and_end_as_one_episode(make_memory, tmp_path):
    memory = make_memory()
    memory.add_messages("chat", [Message("I live in Madrid.", name="Ana")], user_id="ana")
    memory.add_messages("chat", [Message("Noted!", role="assistant")], user_id="ana")
    assert memory.unended_count("chat", user_id="ana") == 2
    result = memory.end_session("chat", user_id="ana")
    assert result.status == "done" and any(f.object == "Madrid" for f in result.added)
    assert memory.unended_count("chat", user_id="ana") == 0
    assert memory.end_session("chat", user_id="ana") is None
    assert [m.content for m in memory.get_messages("chat", user_id="ana")] == ["I live in Madrid.", "Noted!"]


PARIS = [Message("I live in Paris", name="Alice", id="m1")]


def _left_pending(make_memory):
    """A memory whose first episode, ``ep-1`` (``PARIS``), is pending: its extractor failed."""
    scripted = ScriptedExtractor()
    scripted.fail(RuntimeError("model overloaded"))
    memory = make_memory(extractor=scripted)
    assert memory.conversation_end("s1", PARIS, user_id="alice", episode_id="ep-1").status == "pending"
    return memory, scripted


def test_sending_a_pending_episode_again_extracts_it_once(make_memory):
    """A client that got no reply sends the same episode id again: a pending episode is finished, a done one kept."""
    memory, scripted = _left_pending(make_memory)
    msgs = PARIS

    scripted.push(said("Alice", "lives_in", "Paris"))
    again = memory.conversation_end("s1", msgs, user_id="alice", episode_id="ep-1")
    assert again.status == "done" and [f.content for f in again.added] == ["Alice lives in Paris."]
    assert memory.get_episode("ep-1").status == "done"

    third = memory.conversation_end("s1", msgs, user_id="alice", episode_id="ep-1")
    assert third.status == "duplicate" and third.added == ()
    assert [f.content for f in memory.facts("alice") if f.predicate == "lives_in"] == ["Alice lives in Paris."]
    assert memory.maintain().retried == 0


def test_the_bulk_form_also_finishes_a_pending_episode_sent_again(make_memory):
    """conversation_end_many with an id that is pending extracts it, one that is done is a duplicate."""
    memory, scripted = _left_pending(make_memory)
    paris = PARIS

    scripted.push(said("Alice", "lives_in", "Paris"))  # for ep-1, sent again: it goes first
    scripted.push(said("Alice", "likes", "tea"))  # for ep-2, new
    tea = [Message("I like tea", name="Alice", id="m2")]
    results = memory.conversation_end_many([
        {"session_id": "s2", "messages": tea, "user_id": "alice", "episode_id": "ep-2"},
        {"session_id": "s1", "messages": paris, "user_id": "alice", "episode_id": "ep-1"},
    ])
    assert [(r.episode_id, r.status) for r in results] == [("ep-2", "done"), ("ep-1", "done")]
    assert [f.content for f in results[1].added] == ["Alice lives in Paris."]
    assert [f.content for f in results[0].added] == ["Alice likes tea."]
    assert memory.get_episode("ep-1").status == "done"

    again = memory.conversation_end_many([{"session_id": "s1", "messages": paris, "user_id": "alice",
                                           "episode_id": "ep-1"}])
    assert [(r.status, r.added) for r in again] == [("duplicate", ())]
    assert sorted(f.content for f in memory.facts("alice")) == ["Alice likes tea.", "Alice lives in Paris."]
    assert memory.maintain().retried == 0
