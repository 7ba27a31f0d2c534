"""ZepMemoryBlock inside LlamaIndex's Memory: flushed turns become facts, and the block supplies them."""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.memory import Memory as ChatMemory
from pydantic import ValidationError as PydanticValidationError

from zep_llamaindex import ZepMemoryBlock

# FunctionAgent (workflows) inspects pydantic models with inspect.getmembers, which warns.
pytestmark = pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning")

SESSIONS = ("I live in Paris.", "I moved to Berlin.")
QUESTION = "Where do I live now?"


def chat_memory(block, session_id):
    # A small short-term window: the first turn is flushed to the block when the second arrives.
    return ChatMemory.from_defaults(session_id=session_id, token_limit=20, chat_history_token_ratio=0.5,
                                    memory_blocks=[block])


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_memory_with_zep_block_is_told_the_new_city_not_the_old_one(mode, make_memory, clock, llm):
    core = make_memory()
    block = ZepMemoryBlock(memory=core, user_id="ada", name="zep")

    loop = asyncio.new_event_loop()  # async: one loop for the app's life (LlamaIndex's Memory keeps its loop's engine)

    def chat(engine, text):
        return engine.chat(text) if mode == "sync" else loop.run_until_complete(engine.achat(text))

    try:
        for i, text in enumerate(SESSIONS, start=1):
            engine = SimpleChatEngine.from_defaults(llm=llm, memory=chat_memory(block, f"s{i}"))
            chat(engine, text)
            chat(engine, "Thanks, that is all for today.")
            clock.advance(days=30)

        assert [f.object for f in core.get_context("User lives in", user_id="ada") if f.predicate == "lives_in"] == [
            "Berlin"]
        llm.prompts.clear()
        engine = SimpleChatEngine.from_defaults(llm=llm, memory=chat_memory(block, "s3"))
        chat(engine, QUESTION)
    finally:
        loop.close()

    assert "<zep>" in llm.prompts[-1] and "Berlin" in llm.prompts[-1]
    assert QUESTION in llm.prompts[-1]
    assert not [p for p in llm.prompts if "Paris" in p]


def test_function_agent_with_zep_block_is_told_the_new_city(make_memory, clock, fc_llm):
    core = make_memory()
    block = ZepMemoryBlock(memory=core, user_id="ada")

    async def session(session_id, *texts):
        memory = chat_memory(block, session_id)
        agent = FunctionAgent(tools=[], llm=fc_llm)
        for text in texts:
            await agent.run(user_msg=text, memory=memory)

    for i, text in enumerate(SESSIONS, start=1):
        asyncio.run(session(f"s{i}", text, "Thanks, that is all for today."))
        clock.advance(days=30)
    fc_llm.calls.clear()
    asyncio.run(session("s3", QUESTION))

    seen = fc_llm.seen()
    assert "<zep_memory>" in seen[-1] and "Berlin" in seen[-1]
    assert not [s for s in seen if "Paris" in s]


def test_aget_renders_the_context_for_the_latest_user_message(make_memory):
    core = make_memory()
    core.conversation_end("s0", [{"role": "user", "content": "I live in Berlin.", "name": "Ada"}], user_id="ada")
    block = ZepMemoryBlock(memory=core, user_id="ada", user_name="Ada")

    text = asyncio.run(block.aget([ChatMessage(role="user", content="Hi."),
                                   ChatMessage(role="assistant", content="Hello!"),
                                   ChatMessage(role="user", content="Where do I live?")]))

    assert "Ada lives in Berlin." in text
    assert asyncio.run(block.aget([ChatMessage(role="assistant", content="Hello!")])) == ""
    assert asyncio.run(block.aget(None)) == ""


def test_aput_ingests_flushed_turns_per_session(make_memory):
    core = make_memory()
    block = ZepMemoryBlock(memory=core, user_id="ada", user_name="Ada")
    flushed = [ChatMessage(role="user", content="I work at Acme."), ChatMessage(role="assistant", content="Cool."),
               ChatMessage(role="tool", content="{}")]

    asyncio.run(block.aput(flushed, from_short_term_memory=True, session_id="chat-7"))

    assert [m.content for m in core.get_messages("chat-7", user_id="ada")] == ["I work at Acme.", "Cool."]
    assert core.unended_count("chat-7", user_id="ada") == 0
    assert [f.content for f in core.entity_history("Ada", user_id="ada") if f.predicate == "works_at"] == [
        "Ada works at Acme."]


def test_a_new_user_gets_an_empty_block_not_an_error(make_memory):
    block = ZepMemoryBlock(memory=make_memory(), user_id="nobody")

    assert asyncio.run(block.aget([ChatMessage(role="user", content="Where do I live?")])) == ""


def test_block_refuses_what_is_not_a_memory_or_no_user(make_memory):
    with pytest.raises(PydanticValidationError, match="zep_core.Memory"):
        ZepMemoryBlock(memory="./data", user_id="ada")
    with pytest.raises(PydanticValidationError, match="user_id"):
        ZepMemoryBlock(memory=make_memory())
