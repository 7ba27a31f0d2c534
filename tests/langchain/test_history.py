"""Contract of ZepChatMessageHistory: what a LangChain chat history promises, on real stores."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from zep_core import ValidationError

from zep_langchain import ZepChatMessageHistory


@pytest.fixture
def history(memory):
    return ZepChatMessageHistory(memory, "s1", user_id="alice", user_name="Alice")


def test_messages_come_back_in_order_with_their_types(history):
    history.add_messages([SystemMessage("Be brief."), HumanMessage("I live in Paris."), AIMessage("Noted.")])
    history.add_message(HumanMessage("And I like jazz."))
    got = history.messages
    assert [type(m) for m in got] == [SystemMessage, HumanMessage, AIMessage, HumanMessage]
    assert [m.content for m in got] == ["Be brief.", "I live in Paris.", "Noted.", "And I like jazz."]


def test_human_messages_are_stored_with_the_user_name(history, memory):
    history.add_messages([HumanMessage("I live in Paris."), HumanMessage("hi", name="Bob"), AIMessage("Hello")])
    stored = memory.get_messages("s1", user_id="alice")
    assert [(m.role, m.name) for m in stored] == [("user", "Alice"), ("user", "Bob"), ("assistant", None)]
    assert history.messages[0].name == "Alice"


def test_message_ids_round_trip_and_a_repeated_id_is_stored_once(history):
    first = HumanMessage("I live in Paris.", id="m1")
    history.add_messages([first, AIMessage("Noted.", id="m2")])
    history.add_messages([first, first, AIMessage("Again?", id="m3")])
    assert [(m.id, m.content) for m in history.messages] == [
        ("m1", "I live in Paris."), ("m2", "Noted."), ("m3", "Again?")]


def test_tool_traffic_is_not_stored(history):
    history.add_messages([
        HumanMessage("Where do I live?"),
        AIMessage("", tool_calls=[{"name": "search_memory", "args": {"query": "home"}, "id": "c1"}]),
        ToolMessage("Alice lives in Paris.", tool_call_id="c1"),
        AIMessage("In Paris."),
    ])
    assert [m.content for m in history.messages] == ["Where do I live?", "In Paris."]


def test_clear_forgets_the_session_but_keeps_learned_facts(history, memory):
    history.add_messages([HumanMessage("I live in Paris."), AIMessage("Noted.")])
    history.end_conversation()
    history.clear()
    assert history.messages == []
    assert "Alice lives in Paris." in memory.context_block("Where does Alice live?", user_id="alice")


def test_messages_survive_a_restart(make_memory, tmp_path):
    folder = tmp_path / "restart"
    first = make_memory(data_dir=folder)
    ZepChatMessageHistory(first, "s1", user_id="alice").add_messages([HumanMessage("I live in Paris."),
                                                                      AIMessage("Noted.", id="a1")])
    first.close()
    reopened = make_memory(data_dir=folder)
    history = ZepChatMessageHistory(reopened, "s1", user_id="alice")
    assert [(m.type, m.content) for m in history.messages] == [("human", "I live in Paris."), ("ai", "Noted.")]
    assert history.messages[1].id == "a1"
    history.clear()
    assert ZepChatMessageHistory(reopened, "s1", user_id="alice").messages == []


def test_sessions_and_users_are_kept_apart(memory):
    ZepChatMessageHistory(memory, "s1", user_id="alice").add_messages([HumanMessage("alice in s1")])
    ZepChatMessageHistory(memory, "s2", user_id="alice").add_messages([HumanMessage("alice in s2")])
    ZepChatMessageHistory(memory, "s1", user_id="bob").add_messages([HumanMessage("bob in s1")])
    assert [m.content for m in ZepChatMessageHistory(memory, "s1", user_id="alice").messages] == ["alice in s1"]
    assert [m.content for m in ZepChatMessageHistory(memory, "s1", user_id="bob").messages] == ["bob in s1"]
    ZepChatMessageHistory(memory, "s1", user_id="bob").clear()
    assert [m.content for m in ZepChatMessageHistory(memory, "s1", user_id="alice").messages] == ["alice in s1"]


def test_end_conversation_turns_the_stored_turns_into_facts(history, memory):
    assert history.end_conversation() is None
    history.add_messages([HumanMessage("I live in Paris."), AIMessage("Noted.")])
    result = history.end_conversation()
    assert result.status == "done"
    assert [f.content for f in result.added if f.predicate == "lives_in"] == ["Alice lives in Paris."]
    assert history.end_conversation() is None  # nothing new since
    assert len(history.messages) == 2  # ending keeps the turns as history


def test_recent_returns_the_last_messages(history):
    history.add_messages([HumanMessage(f"message {i}") for i in range(5)])
    assert [m.content for m in history.recent(2)] == ["message 3", "message 4"]


def test_bad_session_ids_are_refused(memory):
    with pytest.raises(ValidationError, match="session_id"):
        ZepChatMessageHistory(memory, "", user_id="alice")
    with pytest.raises(ValidationError, match="user_id"):
        ZepChatMessageHistory(memory, "s1", user_id="")


async def test_async_methods_match_the_sync_ones(make_memory, tmp_path):
    folder = tmp_path / "async"
    memory = make_memory(data_dir=folder)
    history = ZepChatMessageHistory(memory, "s1", user_id="alice", user_name="Alice")
    await history.aadd_messages([HumanMessage("I live in Paris."), AIMessage("Noted.")])
    assert [m.content for m in await history.aget_messages()] == ["I live in Paris.", "Noted."]
    result = await history.aend_conversation()
    assert result.status == "done"
    memory.close()
    reopened = ZepChatMessageHistory(make_memory(data_dir=folder), "s1", user_id="alice")
    assert [m.content for m in await reopened.aget_messages()] == ["I live in Paris.", "Noted."]
    await reopened.aclear()
    assert await reopened.aget_messages() == []


def test_a_streamed_reply_is_stored_as_the_assistants_words(history, memory):
    from langchain_core.messages import AIMessageChunk, HumanMessageChunk

    reply = AIMessageChunk("I recommend the ") + AIMessageChunk("Musée d'Orsay on Thursday evenings.")
    history.add_messages([HumanMessageChunk("Any museum tips for Paris?"), reply])
    stored = memory.get_messages("s1", user_id="alice")
    assert [(m.role, m.name) for m in stored] == [("user", "Alice"), ("assistant", None)]
    result = history.end_conversation()
    said = {f.subject: f.content for f in result.added if f.predicate == "statement"}
    assert said["Assistant"] == "Assistant: I recommend the Musée d'Orsay on Thursday evenings."
    assert "Alice" not in said or "Orsay" not in said["Alice"]  # the assistant's words are not the user's
    found = memory.get_context("Which museum did you recommend?", user_id="alice")
    assert found[0].content == said["Assistant"]
