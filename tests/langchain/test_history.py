"""Contract of ZepChatMessageHistory: what a LangChain chat history promises, on real stores."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from zep_core import Message, ValidationError

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
    assert [m.name for m in history.messages] == [None, "Bob", None]  # as given: the speaker stays in the row


def test_replayed_history_carries_no_name_a_provider_refuses(memory):
    history = ZepChatMessageHistory(memory, "s9", user_id="ada", user_name="Ada Lovelace")
    history.add_messages([HumanMessage("I live in London."), AIMessage("Noted.")])
    memory.add_messages("s9", [Message("I work on engines.", name="Ada Lovelace")], user_id="ada")  # another API
    replay = history.messages
    assert [m.name for m in replay] == [None, None, None]
    assert [m.name for m in memory.get_messages("s9", user_id="ada")] == ["Ada Lovelace", None, "Ada Lovelace"]
    learned = [f.content for f in history.end_conversation().added]
    assert "Ada Lovelace lives in London." in learned


def test_message_ids_round_trip_and_a_repeated_id_is_stored_once(history):
    first = HumanMessage("I live in Paris.", id="m1")
    history.add_messages([first, AIMessage("Noted.", id="m2")])
    history.add_messages([first, first, AIMessage("Again?", id="m3")])
    assert [(m.id, m.content) for m in history.messages] == [
        ("m1", "I live in Paris."), ("m2", "Noted."), ("m3", "Again?")]


def test_tool_traffic_is_kept_but_not_learned_from(history, memory):
    history.add_messages([
        HumanMessage("Where do I live?"),
        AIMessage("", tool_calls=[{"name": "search_memory", "args": {"query": "home"}, "id": "c1"}]),
        ToolMessage("Alice lives in Paris.", tool_call_id="c1"),
        AIMessage("In Paris."),
    ])
    assert [type(m) for m in history.messages] == [HumanMessage, AIMessage, ToolMessage, AIMessage]
    assert [m.role for m in memory.get_messages("s1", user_id="alice")] == ["user", "tool", "tool", "assistant"]
    assert not any("Paris" in f.content for f in history.end_conversation().added if f.subject == "Alice")


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


def streaming_chain(memory, reply: str):
    """A prompt and LangChain's own streaming fake model, with the history kept in zep."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
    from langchain_core.runnables.history import RunnableWithMessageHistory

    model = GenericFakeChatModel(messages=iter([AIMessage(reply)]))
    prompt = ChatPromptTemplate.from_messages([MessagesPlaceholder("history"), ("human", "{input}")])
    return RunnableWithMessageHistory(
        prompt | model, lambda session_id: ZepChatMessageHistory(memory, session_id, user_id="alice",
                                                                 user_name="Alice"),
        input_messages_key="input", history_messages_key="history")


@pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")
@pytest.mark.parametrize("mode", ["stream", "astream"])
def test_a_reply_streamed_through_runnable_with_message_history_is_the_assistants(memory, mode):
    import asyncio

    from langchain_core.messages import AIMessageChunk

    reply = "I recommend the Musée d'Orsay on Thursday evenings."
    chain = streaming_chain(memory, reply)
    inputs, config = {"input": "Any museum tips for Paris?"}, {"configurable": {"session_id": "s1"}}
    if mode == "stream":
        chunks = list(chain.stream(inputs, config=config))
    else:
        async def collect():
            return [chunk async for chunk in chain.astream(inputs, config=config)]
        chunks = asyncio.run(collect())
    assert len(chunks) > 1 and all(isinstance(c, AIMessageChunk) for c in chunks)  # it really streamed
    stored = memory.get_messages("s1", user_id="alice")
    assert [(m.role, m.name, m.content) for m in stored] == [
        ("user", "Alice", "Any museum tips for Paris?"), ("assistant", None, reply)]
    result = memory.end_session("s1", user_id="alice")
    assert not any("Orsay" in f.content for f in result.added if f.subject == "Alice")
    assert any("Orsay" in f.content for f in result.added if f.subject == "Assistant")


@pytest.mark.parametrize(("message", "role"), [
    ("HumanMessageChunk", "user"), ("AIMessageChunk", "assistant"), ("SystemMessageChunk", "system")])
def test_chunks_keep_the_role_of_their_class(history, memory, message, role):
    import langchain_core.messages as lc

    history.add_messages([getattr(lc, message)(content="Some words.")])
    assert [m.role for m in memory.get_messages("s1", user_id="alice")] == [role]


def test_a_message_class_without_a_role_is_refused(history, memory):
    from langchain_core.messages import ChatMessage, RemoveMessage

    with pytest.raises(ValidationError, match="RemoveMessage"):
        history.add_messages([RemoveMessage(id="m1")])
    with pytest.raises(ValidationError, match="'critic'"):
        history.add_messages([ChatMessage(role="critic", content="Too long.")])
    history.add_messages([ChatMessage(role="ai", content="Hello.")])
    assert [m.role for m in memory.get_messages("s1", user_id="alice")] == ["assistant"]


def test_a_user_and_a_memory_are_required(memory):
    with pytest.raises(TypeError):
        ZepChatMessageHistory(memory, "s1")  # no user_id: no shared default user
    with pytest.raises(ValidationError, match="Memory.open"):
        ZepChatMessageHistory("./data", "s1", user_id="alice")


def test_a_short_thread_the_user_leaves_is_learned_when_they_open_another(memory):
    first = ZepChatMessageHistory(memory, "thread-1", user_id="alice", user_name="Alice")
    first.add_messages([HumanMessage("I adopted a cat called Miso."), AIMessage("Lovely!")])
    assert "Miso" not in memory.context_block("What pet does Alice have?", user_id="alice")  # two turns: waiting
    second = ZepChatMessageHistory(memory, "thread-2", user_id="alice", user_name="Alice")
    second.add_messages([HumanMessage("Can you suggest a book?")])
    assert "Miso" in memory.context_block("What pet does Alice have?", user_id="alice")
    assert [m.content for m in first.messages] == ["I adopted a cat called Miso.", "Lovely!"]  # the thread stays
