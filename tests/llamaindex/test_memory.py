"""ZepMemory keeps LlamaIndex's BaseMemory contract, persists every turn at once, and ends conversations."""

from __future__ import annotations

import asyncio
import json

import pytest
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from pydantic import ValidationError as PydanticValidationError
from zep_core import ValidationError, ZepMemoryError
from zep_core.sessions import EndPolicy

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

    again = make_memory(data)
    reopened = ZepMemory(memory=again, session_id="s1", user_id="ada")

    assert texts(reopened.get_all()) == [("user", "I live in Paris."), ("assistant", "Ok.")]
    assert reopened.end_session() is None  # closing the memory learned from the turns left waiting
    assert "Paris" in again.context_block("Where does ada live?", user_id="ada")


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


def test_no_history_or_nothing_known_means_no_system_message(make_memory):
    core = make_memory()
    core.conversation_end("s0", [{"role": "user", "content": "I live in Berlin."}], user_id="ada")
    chat_memory = ZepMemory(memory=core, session_id="s1", user_id="ada")

    assert chat_memory.get(input="Where do I live?") == []  # no history: nothing added, as ChatMemoryBuffer
    chat_memory.put(user("Hello."))
    assert texts(chat_memory.get(input="What is the capital of Peru?")) == [("user", "Hello.")]  # nothing known
    assert chat_memory.get(input="Where do I live?")[0].role == MessageRole.SYSTEM


def test_a_new_user_gets_history_without_context_not_an_error(make_memory):
    chat_memory = ZepMemory(memory=make_memory(), session_id="s1", user_id="nobody")

    assert chat_memory.get(input="Where do I live?") == []
    chat_memory.put(user("Where do I live?"))
    assert texts(chat_memory.get()) == [("user", "Where do I live?")]


def test_users_never_see_each_others_facts(make_memory):
    core = make_memory()
    core.conversation_end("s0", [{"role": "user", "content": "I live in Berlin."}], user_id="ada")
    core.conversation_end("s0", [{"role": "user", "content": "I live in Rome."}], user_id="bob")

    chat_memory = ZepMemory(memory=core, session_id="s1", user_id="bob")
    chat_memory.put(user("Where do I live?"))
    bob = chat_memory.get()

    assert "Rome" in bob[0].content and "Berlin" not in bob[0].content


def test_history_is_cut_to_the_token_limit_from_the_oldest_turn(make_memory):
    chat_memory = ZepMemory(memory=make_memory(), session_id="s1", user_id="ada", token_limit=12)
    chat_memory.put_messages([user("one two three four five"), assistant("six seven eight nine ten"),
                              user("eleven twelve"), assistant("thirteen")])

    assert texts(chat_memory.get()) == [("user", "eleven twelve"), ("assistant", "thirteen")]
    assert texts(chat_memory.get(initial_token_count=11)) == [("assistant", "thirteen")]  # as ChatMemoryBuffer
    with pytest.raises(ValueError, match="exceeds token limit"):
        chat_memory.get(initial_token_count=13)
    assert len(chat_memory.get_all()) == 4


def test_tool_calls_and_results_are_kept_but_only_the_talk_is_learned_from(make_memory):
    core = make_memory()
    chat_memory = ZepMemory(memory=core, session_id="s1", user_id="ada", user_name="Ada")
    call = ChatMessage(role="assistant", blocks=[
        ToolCallBlock(tool_call_id="c1", tool_name="lookup", tool_kwargs={"who": "Ada"})])
    result = ChatMessage(role="tool", content="Ada lives in Madrid.", additional_kwargs={"tool_call_id": "c1"})

    chat_memory.put_messages([user("I live in Lisbon."), call, result, assistant("Noted.")])

    stored = chat_memory.get_all()
    assert [m.role.value for m in stored] == ["user", "assistant", "tool", "assistant"]
    assert stored[1].blocks == call.blocks and stored[2].additional_kwargs == {"tool_call_id": "c1"}
    learned = chat_memory.end_session()
    assert {f.object for f in learned.added if f.predicate == "lives_in"} == {"Lisbon"}  # not the tool's Madrid
    assert [m.content for m in core.get_episode(learned.episode_id).messages] == ["I live in Lisbon.", "Noted."]


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
    assert ZepMemory.from_defaults(memory=core, user_id="ada").session_id  # a fresh random session


def test_from_defaults_opens_a_memory_in_data_dir_and_closes_what_it_opened(tmp_path):
    chat_memory = ZepMemory.from_defaults(data_dir=tmp_path / "data", session_id="s1", user_id="ada")
    chat_memory.put(user("Hi."))
    assert (tmp_path / "data" / "zep.db").exists()
    chat_memory.close()

    with pytest.raises(ZepMemoryError, match="closed"):
        chat_memory.get_all()


@pytest.mark.data_folder
def test_two_from_defaults_on_one_folder_share_one_memory(tmp_path, make_memory):
    core = make_memory(tmp_path / "data")  # the app's own memory on the folder
    first = ZepMemory.from_defaults(data_dir=tmp_path / "data", session_id="s1", user_id="ada")
    second = ZepMemory.from_defaults(data_dir=tmp_path / "data", session_id="s1", user_id="ada")
    try:
        first.put_messages([user("I live in Paris."), assistant("Nice.")])
        assert texts(second.get_all()) == [("user", "I live in Paris."), ("assistant", "Nice.")]
        second.end_session()
        assert "Paris" in core.context_block("Where does the user live?", user_id="ada")
    finally:
        first.close()
        second.close()
    assert core.get_messages("s1", user_id="ada")  # the app's memory is still open


def test_a_missing_user_is_refused_not_shared(make_memory, tmp_path):
    with pytest.raises(PydanticValidationError, match="user_id is required.*no shared default user"):
        ZepMemory(memory=make_memory(), session_id="s1")
    with pytest.raises(ValidationError, match="user_id is required"):
        ZepMemory.from_defaults(data_dir=tmp_path / "other")
    assert not (tmp_path / "other").exists()  # refused before anything was opened


def test_end_policy_names_set_the_end_fields(make_memory):
    core = make_memory()

    explicit = ZepMemory(memory=core, user_id="ada", end_policy="explicit")
    every = ZepMemory(memory=core, user_id="ada", end_policy=3)

    assert (explicit.end_on_reset, explicit.end_every, explicit.end_after_idle) == (False, None, None)
    assert (every.end_on_reset, every.end_every) == (True, 3)
    assert ZepMemory(memory=core, user_id="ada").end_policy == EndPolicy()  # learns by default
    with pytest.raises(PydanticValidationError, match="end_policy and end_every were both given"):
        ZepMemory(memory=core, user_id="ada", end_policy=3, end_every=2)


def test_by_default_a_session_learns_after_an_idle_gap(make_memory, clock):
    core = make_memory()
    chat_memory = ZepMemory(memory=core, session_id="s1", user_id="ada", user_name="Ada")
    chat_memory.put_messages([user("I live in Paris."), assistant("Nice.")])
    assert episodes(core) == 0

    clock.advance(hours=2)
    chat_memory.put(user("Hello again."))

    assert episodes(core) == 1
    assert "Ada lives in Paris." in chat_memory.context_for("Where do I live?")


def test_serializes_as_a_reference_without_the_store(make_memory):
    core = make_memory()
    chat_memory = ZepMemory(memory=core, session_id="s1", user_id="ada", end_every=3)

    data = chat_memory.to_dict()

    assert data["session_id"] == "s1" and data["end_every"] == 3 and data["class_name"] == "ZepMemory"
    reference = {"data_dir": str(core.data_dir)}
    if core.config.database_url:  # on PostgreSQL: the database too, without its password
        from zep_core.stores.postgres.connection import url_without_password

        reference["database_url"] = url_without_password(core.config.database_url)
    assert "memory" not in data and data["memory_ref"] == reference
    json.dumps(data)


@pytest.mark.parametrize("bad", [
    {"session_id": ""}, {"user_id": ""}, {"token_limit": 0}, {"end_every": 0}, {"end_after_idle": 0},
    {"context_template": "no slot"}, {"memory": "./data"}, {"end_policy": "never"}])
def test_bad_settings_are_refused_with_a_clear_error(make_memory, bad):
    options = {"memory": make_memory(), "session_id": "s1", "user_id": "ada", **bad}

    with pytest.raises(PydanticValidationError, match=next(iter(bad))):
        ZepMemory(**options)
