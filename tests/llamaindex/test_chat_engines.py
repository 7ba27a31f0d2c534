"""Across three sessions, an engine or agent using ZepMemory is told where the user lives now.

Session 1: "I live in Paris." Session 2: "I moved to Berlin." Session 3 asks. The
LLM's input in session 3 must hold Berlin, and Paris nowhere.

ZepMemory adds its context only to a session that has history (as ChatMemoryBuffer
returns nothing for an empty one), so the context engines — which read memory before
storing the first message — get it from their second turn on; on a first turn it is the
retriever's job (``ZepRetriever``, tested in test_retriever.py).
"""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.chat_engine import CondensePlusContextChatEngine, ContextChatEngine, SimpleChatEngine

from zep_llamaindex import ZepMemory

from .mocks import NoteRetriever

# FunctionAgent (workflows) inspects pydantic models with inspect.getmembers, which warns.
pytestmark = pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning")

SESSIONS = ("I live in Paris.", "I moved to Berlin.")
QUESTION = "Where do I live now?"


def make_engine(kind, chat_memory, llm):
    if kind == "simple":
        return SimpleChatEngine.from_defaults(llm=llm, memory=chat_memory)
    if kind == "context":
        return ContextChatEngine.from_defaults(retriever=NoteRetriever(), llm=llm, memory=chat_memory)
    return CondensePlusContextChatEngine.from_defaults(retriever=NoteRetriever(), llm=llm, memory=chat_memory)


def chat(engine, text, mode):
    if mode == "sync":
        return engine.chat(text)
    return asyncio.run(engine.achat(text))


def end(engine, chat_memory, mode):
    if mode == "sync":
        engine.reset()  # the engine resets its memory: the session becomes an episode
    else:
        asyncio.run(chat_memory.areset())


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("kind", ["simple", "context", "condense"])
def test_chat_engine_is_told_the_new_city_not_the_old_one(kind, mode, make_memory, clock, llm):
    core = make_memory()
    for i, text in enumerate(SESSIONS, start=1):
        chat_memory = ZepMemory(memory=core, session_id=f"s{i}", user_id="ada")
        engine = make_engine(kind, chat_memory, llm)
        chat(engine, text, mode)
        end(engine, chat_memory, mode)
        clock.advance(days=30)

    llm.prompts.clear()
    chat_memory = ZepMemory(memory=core, session_id="s3", user_id="ada")
    engine = make_engine(kind, chat_memory, llm)
    chat(engine, "Hello again.", mode)
    response = chat(engine, QUESTION, mode)

    assert str(response) == "Noted."
    assert QUESTION in llm.prompts[-1]
    assert "Berlin" in llm.prompts[-1]
    assert not [p for p in llm.prompts if "Paris" in p]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_condense_engine_makes_no_extra_condense_call_on_the_first_turn(mode, make_memory, llm):
    from llama_index.core.memory import ChatMemoryBuffer

    core = make_memory()
    core.conversation_end("s0", [{"role": "user", "content": "I live in Berlin.", "name": "Ada"}], user_id="ada")

    def calls_per_turn(chat_memory):
        engine = make_engine("condense", chat_memory, llm)
        counts = []
        for text in (QUESTION, "And what should I visit there?"):
            before = len(llm.prompts)
            chat(engine, text, mode)
            counts.append(len(llm.prompts) - before)
        return counts, llm.prompts[-counts[-1]:]

    buffer_counts, _ = calls_per_turn(ChatMemoryBuffer.from_defaults(token_limit=3000))
    first_prompt_at = len(llm.prompts)
    zep_counts, last_turn = calls_per_turn(ZepMemory(memory=core, session_id="s1", user_id="ada", user_name="Ada"))

    assert zep_counts == buffer_counts == [1, 2]  # turn 1: the answer only; turn 2: condense, then answer
    assert QUESTION in llm.prompts[first_prompt_at]  # turn 1 retrieved with the question as asked
    assert "Ada lives in Berlin." in last_turn[0]  # from turn 2 on, memory's context reaches the LLM


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_engines_turns_are_stored_in_the_session(mode, make_memory, llm):
    core = make_memory()
    chat_memory = ZepMemory(memory=core, session_id="s1", user_id="ada")
    engine = make_engine("context", chat_memory, llm)
    chat(engine, "Hello there.", mode)
    chat(engine, "How are you?", mode)

    assert [(m.role.value, m.content) for m in engine.chat_history] == [
        ("user", "Hello there."), ("assistant", "Noted."), ("user", "How are you?"), ("assistant", "Noted.")]
    assert [m.content for m in core.get_messages("s1", user_id="ada")][::2] == ["Hello there.", "How are you?"]


def test_function_agent_is_told_the_new_city_not_the_old_one(make_memory, clock, fc_llm):
    core = make_memory()

    async def session(session_id: str, text: str) -> str:
        chat_memory = ZepMemory(memory=core, session_id=session_id, user_id="ada", end_every=1)
        agent = FunctionAgent(tools=[], llm=fc_llm, system_prompt="You are a helpful assistant.")
        return str(await agent.run(user_msg=text, memory=chat_memory))

    for i, text in enumerate(SESSIONS, start=1):
        asyncio.run(session(f"s{i}", text))
        clock.advance(days=30)
    fc_llm.calls.clear()

    answer = asyncio.run(session("s3", QUESTION))

    assert answer == "Noted."
    seen = fc_llm.seen()
    assert "Berlin" in seen[-1] and QUESTION in seen[-1]
    assert not [s for s in seen if "Paris" in s]
    assert [m.content for m in core.get_messages("s3", user_id="ada")] == [QUESTION, "Noted."]


def test_function_agent_history_keeps_the_tool_calls_as_the_buffer_does(make_memory, fc_llm):
    from llama_index.core.memory import ChatMemoryBuffer
    from llama_index.core.tools import FunctionTool

    def weather(city: str) -> str:
        """Today's weather in a city."""
        return f"Sunny in {city}."

    core = make_memory()
    agent = FunctionAgent(tools=[FunctionTool.from_defaults(weather)], llm=fc_llm)

    def history_after_a_tool_call(chat_memory):
        fc_llm.calls.clear()  # the mock numbers its tool calls by the calls it saw
        fc_llm.script = [("weather", {"city": "Berlin"}), "It is sunny in Berlin."]

        async def run() -> str:
            return str(await agent.run(user_msg="What's the weather?", memory=chat_memory))

        assert asyncio.run(run()) == "It is sunny in Berlin."
        return [m.model_dump(mode="json") for m in chat_memory.get_all()]

    buffer = history_after_a_tool_call(ChatMemoryBuffer.from_defaults(token_limit=3000))
    chat_memory = ZepMemory(memory=core, session_id="s1", user_id="ada")
    zep = history_after_a_tool_call(chat_memory)

    assert zep == buffer and [m["role"] for m in zep] == ["user", "assistant", "tool", "assistant"]
    learned = chat_memory.end_session()  # what becomes an episode is the talk, not the plumbing
    assert [m.content for m in core.get_episode(learned.episode_id).messages] == [
        "What's the weather?", "It is sunny in Berlin."]
