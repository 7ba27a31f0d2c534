"""One agent, many users: the memory tools read the user each run's Context names, and nothing crosses.

One ``FunctionAgent`` with ``create_memory_tools(memory)`` (no fixed user) serves Alice
and Bob, each run with its own workflow Context and ZepMemory, one after the other and
at the same time. Each hears only their own facts, and each session holds only their
own turns. A run whose Context names no user gets a tool error that says what to set.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.workflow import Context
from zep_core import Message

from zep_llamaindex import ZepMemory, create_memory_tools

from .mocks import RecordingFunctionLLM

pytestmark = pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning")


class SearchThenAnswerLLM(RecordingFunctionLLM):
    """Calls ``search_memory`` for each user message, then answers with what the tool said.

    It decides from the messages alone, so runs can interleave.
    """

    def _respond(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        self.calls.append(list(messages))
        last = messages[-1]
        if last.role == MessageRole.TOOL:
            return ChatMessage(role="assistant", content=f"Memory says: {last.content}")
        return ChatMessage(role="assistant", blocks=[ToolCallBlock(
            tool_call_id=f"call-{len(self.calls)}", tool_name="search_memory",
            tool_kwargs={"query": "Where does the user live?"})])


@pytest.fixture
def core(make_memory):
    memory = make_memory()
    memory.conversation_end("s0", [Message("I live in Paris.", name="Alice")], user_id="alice")
    memory.conversation_end("s0", [Message("I live in Rome.", name="Bob")], user_id="bob")
    return memory


@pytest.fixture
def agent(core):
    return FunctionAgent(tools=create_memory_tools(core), llm=SearchThenAnswerLLM())


async def turn(agent, ctx, text, memory=None):
    return str(await agent.run(user_msg=text, ctx=ctx, **({"memory": memory} if memory is not None else {})))


def test_two_users_through_one_agent_with_two_contexts_see_only_their_own(agent, core):
    async def scenario():
        alice_ctx, bob_ctx = Context(agent), Context(agent)
        await alice_ctx.store.set("user_id", "alice")  # Alice is named in her Context's store ...
        alice = ZepMemory(memory=core, session_id="thread-a", user_id="alice", user_name="Alice")
        bob = ZepMemory(memory=core, session_id="thread-b", user_id="bob", user_name="Bob")  # ... Bob by his memory
        first = [await turn(agent, alice_ctx, "Where do I live?", alice),
                 await turn(agent, bob_ctx, "Where do I live?", bob)]
        together = await asyncio.gather(turn(agent, alice_ctx, "And now?"), turn(agent, bob_ctx, "And now?"))
        return first + list(together)

    alice_1, bob_1, alice_2, bob_2 = asyncio.run(scenario())

    for answer in (alice_1, alice_2):
        assert "Alice lives in Paris." in answer and "Rome" not in answer and "Bob" not in answer
    for answer in (bob_1, bob_2):
        assert "Bob lives in Rome." in answer and "Paris" not in answer and "Alice" not in answer
    assert [m.content for m in core.get_messages("thread-a", user_id="alice") if m.role == "user"] == [
        "Where do I live?", "And now?"]
    assert [m.content for m in core.get_messages("thread-b", user_id="bob") if m.role == "user"] == [
        "Where do I live?", "And now?"]
    assert core.get_messages("thread-a", user_id="bob") == core.get_messages("thread-b", user_id="alice") == []


def test_the_user_can_come_from_the_agent_state(agent, core):
    async def scenario():
        ctx = Context(agent)
        await ctx.store.set("state", {"user_id": "bob"})
        return await turn(agent, ctx, "Where do I live?", ChatMemoryBuffer.from_defaults())

    assert "Bob lives in Rome." in asyncio.run(scenario())


def test_a_context_that_names_no_user_gets_a_clear_tool_error_not_a_shared_memory(agent, core):
    async def scenario():
        return await turn(agent, Context(agent), "Where do I live?", ChatMemoryBuffer.from_defaults())

    answer = asyncio.run(scenario())

    assert "do not know whose memory to read" in answer and "ctx.store.set('user_id'" in answer
    assert "Paris" not in answer and "Rome" not in answer


def test_a_fixed_user_stays_an_option_and_wins_over_the_context(core):
    agent = FunctionAgent(tools=create_memory_tools(core, user_id="alice"), llm=SearchThenAnswerLLM())

    async def scenario():
        ctx = Context(agent)
        await ctx.store.set("user_id", "bob")
        return await turn(agent, ctx, "Where do I live?")

    answer = asyncio.run(scenario())

    assert "Alice lives in Paris." in answer and "Rome" not in answer


def test_context_tools_need_a_context(core):
    tool = {t.metadata.name: t for t in create_memory_tools(core)}["search_memory"]

    assert tool.requires_context and "ctx" not in tool.metadata.get_parameters_dict()["properties"]
    with pytest.raises(ValueError, match="Context is required"):
        tool(query="Where do I live?")
