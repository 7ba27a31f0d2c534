"""ZepMemory keeps LlamaIndex's BaseMemory contract, persists every turn at once, and ends conversations."""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from pydantic import ValidationError as PydanticValidationError

from zep_llamaindex import ZepMemory


def user(text):
    return ChatMessage(role=MessageRole.USER, content=text)


def assistant(text):
    return ChatMessage(role=MessageRole.ASSISTANT, content=text)


def texts(messages):
    return [(m.role.value, m.content) for m in messages]


def episodes(core):
    return core.stats()["records"]["episodes"]


def test_put_get_set_reset_get_all(make_memory):
    core = make_memory()
    chat_memory = ZepMemory(memory=core, session_id="s1", user_id="ada")

    chat_memory.put(user("Hi."))
    chat_memory.put_messages([assistant("Hello!"), user("How are you?")])
    assert texts(chat_memory.get()) == texts(chat_memory.get_all()) == [
        ("user", "Hi."), ("assistant", "Hello!"), ("user", "How are you?")]

    chat_memory.set([user("Start over."), assistant("Sure.")])
    assert texts(chat_memory.get_all()) == [("user", "Start over."), ("assistant", "Sure.")]

    chat_memory.reset()
    assert chat_memory.get_all() == [] and chat_memory.get() == []


def test_async_put_get_set_reset_get_all(make_memory):
    chat_memory = ZepMemory(memory=make_memory(), session_id="s1", user_id="ada")

    async def run():
        await chat_memory.aput(user("Hi."))
        await chat_memory.aput_messages([assistant("Hello!")])
        got, everything = await chat_memory.aget(), await chat_memory.aget_all()
        await chat_memory.aset([user("Again.")])
        after_set = await chat_memory.aget_all()
        await chat_memory.areset()
        return got, everything, after_set, await chat_memory.aget_all()

    got, everything, after_set, after_reset = asyncio.run(run())
    assert texts(got) == texts(everything) == [("user", "Hi."), ("assistant", "Hello!")]
    assert texts(after_set) == [("user", "Again.")]
    assert after_reset == []


def test_turns_survive_reopening_the_memory(make_memory, tmp_path):
    data = tmp_path / "data"
    core = make_memory(data)
    ZepMemory(memory=core, session_id="s1", user_id="ada").put_messages([user("I live in Paris."), assistant("Ok.")])
    core.close()

    reopened = ZepMemory(memory=make_memory(data), session_id="s1", user_id="ada")

    assert texts(reopened.get_all()) == [("user", "I live in Paris."), ("assistant", "Ok.")]
    assert reopened.end_session().added  # the turns were never ingested before the restart


def test_get_puts_the_context_for_the_input_in_a_system_message(make_memory):
    core = make_memory()
    core.conversation_end("s0", [{"role": "user", "content": "I live in Berlin.", "name": "Ada"}], user_id="ada")
    chat_memory = ZepMemory(memory=core, session_id="s1", user_id="ada", user_name="Ada")
    chat_memory.put_messages([user("Hi."), assistant("Hello!")])

    messages = chat_memory.get(input="Where do I live?")

    assert messages[0].role == MessageRole.SYSTEM
    assert "Ada lives in Berlin." in messages[0].content
    assert texts(messages[1:]) == [("user", "Hi."), ("assistant", "Hello!")]
    assert "Ada lives in Berlin." in chat_memory.context_for("Where does Ada live?")


def test_without_input_the_last_user_message_is_the_query(make_memory):
    core = make_memory()
    core.conversation_end("s0", [{"role": "user", "content": "I live in Berlin."}], user_id="ada")
    chat_memory = ZepMemory(memory=core, session_id="s1", user_id="ada")
    chat_memory.put(user("Where do I live?"))

    assert "User lives in Berlin." in chat_memory.get()[0].content


def test_a_new_user_gets_history_without_context_not_an_error(make_memory):
    chat_memory = ZepMemory(memory=make_memory(), session_id="s1", user_id="nobody")

    assert chat_memory.get(input="Where do I live?") == []
    chat_memory.put(user("Where do I live?"))
    assert texts(chat_memory.get()) == [("user", "Where do I live?")]


def test_users_never_see_each_others_facts(make_memory):
    core = make_memory()
    core.conversation_end("s0", [{"role": "user", "content": "I live in Berlin."}], user_id="ada")
    core.conversation_end("s0", [{"role": "user", "content": "I live in Rome."}], user_id="bob")

    bob = ZepMemory(memory=core, session_id="s1", user_id="bob").get(input="Where do I live?")

    assert "Rome" in bob[0].content and "Berlin" not in bob[0].content


def test_history_is_cut_to_the_token_limit_from_the_oldest_turn(make_memory):
    chat_memory = ZepMemory(memory=make_memory(), session_id="s1", user_id="ada", token_limit=12)
    chat_memory.put_messages([user("one two three four five"), assistant("six seven eight nine ten"),
                              user("eleven twelve"), assistant("thirteen")])

    assert texts(chat_memory.get()) == [("user", "eleven twelve"), ("assistant", "thirteen")]
    assert chat_memory.get(initial_token_count=11) == []  # a lone trailing answer is not a conversation
    assert len(chat_memory.get_all()) == 4


def test_tool_calls_and_results_are_not_stored(make_memory):
    chat_memory = ZepMemory(memory=make_memory(), session_id="s1", user_id="ada")
    call = ChatMessage(role="assistant", blocks=[ToolCallBlock(tool_call_id="c1", tool_name="f", tool_kwargs={})])

    chat_memory.put_messages([user("Weather?"), call, ChatMessage(role="tool", content="sunny"), assistant("Sunny.")])

    assert texts(chat_memory.get_all()) == [("user", "Weather?"), ("assistant", "Sunny.")]


def test_end_session_runs_conversation_end_and_keeps_the_turns(make_memory):
    core = make_memory()
    chat_memory = ZepMemory(memory=core, session_id="s1", user_id="ada", user_name="Ada")
    chat_memory.put_messages([user("I live in Paris."), assistant("Nice.")])

    result = chat_memory.end_session()

    assert [f.content for f in result.added if f.predicate == "lives_in"] == ["Ada lives in Paris."]
    assert len(chat_memory.get_all()) == 2
    assert chat_memory.end_session() is None  # nothing new to ingest
    assert asyncio.run(chat_memory.aend_session()) is None


def test_reset_ends_the_conversation_unless_told_not_to(make_memory):
    core = make_memory()
    ending = ZepMemory(memory=core, session_id="s1", user_id="ada")
    ending.put_messages([user("I live in Paris."), assistant("Nice.")])
    ending.reset()
    assert episodes(core) == 1

    keeping = ZepMemory(memory=core, session_id="s2", user_id="ada", end_on_reset=False)
    keeping.put_messages([user("I live in Rome."), assistant("Nice.")])
    keeping.reset()
    assert episodes(core) == 1 and keeping.get_all() == []


def test_end_every_n_turns_ingests_after_the_nth_answer(make_memory):
    core = make_memory()
    chat_memory = ZepMemory(memory=core, session_id="s1", user_id="ada", end_every=2)

    chat_memory.put_messages([user("I live in Paris."), assistant("Nice.")])
    chat_memory.put(user("I work at Acme."))
    assert episodes(core) == 0
    chat_memory.put(assistant("Great."))
    assert episodes(core) == 1 and core.unended_count("s1", user_id="ada") == 0

    chat_memory.put_messages([user("I like jazz."), assistant("Me too.")])
    assert episodes(core) == 1


def test_from_defaults_takes_a_memory_and_a_chat_history(make_memory):
    core = make_memory()

    chat_memory = ZepMemory.from_defaults(memory=core, session_id="s9", user_id="ada",
                                          chat_history=[user("Hi."), assistant("Hello!")], token_limit=500)

    assert (chat_memory.session_id, chat_memory.user_id, chat_memory.token_limit) == ("s9", "ada", 500)
    assert [m.content for m in core.get_messages("s9", user_id="ada")] == ["Hi.", "Hello!"]
    assert ZepMemory.from_defaults(memory=core).session_id  # a fresh random session


def test_from_defaults_opens_a_memory_in_data_dir(tmp_path):
    chat_memory = ZepMemory.from_defaults(data_dir=tmp_path / "data", session_id="s1")
    try:
        chat_memory.put(user("Hi."))
        assert (tmp_path / "data" / "zep.db").exists()
    finally:
        chat_memory.memory.close()


def test_serializes_without_the_store(make_memory):
    chat_memory = ZepMemory(memory=make_memory(), session_id="s1", user_id="ada", end_every=3)

    data = chat_memory.to_dict()

    assert data["session_id"] == "s1" and data["end_every"] == 3 and data["class_name"] == "ZepMemory"
    assert "memory" not in data


@pytest.mark.parametrize("bad", [
    {"session_id": ""}, {"user_id": ""}, {"token_limit": 0}, {"end_every": 0},
    {"context_template": "no slot"}, {"memory": "./data"}])
def test_bad_settings_are_refused_with_a_clear_error(make_memory, bad):
    options = {"memory": make_memory(), "session_id": "s1", **bad}

    with pytest.raises(PydanticValidationError, match=next(iter(bad))):
        ZepMemory(**options)
