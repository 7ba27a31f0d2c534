"""A LlamaIndex FunctionAgent with zep-memory: chat memory plus memory tools.

Over three sessions Ada tells the agent she lives in Paris, then that she moved
to Berlin, then asks where she lives now and where she lived before. Memory puts
what is true now in front of the agent; the ``entity_history`` tool shows the past.
Each turn prints what memory supplied and every tool call.

    python examples/llamaindex_agent.py [--data DIR]

Offline by default (LlamaIndex's MockFunctionCallingLLM playing a short script).
With ``OPENAI_API_KEY`` set and ``llama-index-llms-openai`` installed, a real model
drives the agent (``ZEP_EXAMPLE_MODEL``, default gpt-4o-mini).
"""

from __future__ import annotations

import argparse


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, parsed before the imports below: ``--help`` answers at once, not after seconds."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", "--data-dir", dest="data_dir", metavar="DIR",
                        help="keep the memory here (default: a temporary folder)")
    return parser.parse_args(argv)


if __name__ == "__main__":
    arguments()  # --help, or a bad option, answers here: LlamaIndex and zep-memory take seconds to import

import asyncio
import os
import tempfile
import textwrap
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from llama_index.core.agent.workflow import FunctionAgent, ToolCallResult
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms import LLM
from llama_index.core.llms.mock import MockFunctionCallingLLM
from zep_core import Memory, MemoryConfig

from zep_llamaindex import ZepMemory, create_memory_tools

#: (session, when it happens, what Ada says): the memory's clock is set to each date.
SESSIONS = [
    ("session-1", datetime(2024, 1, 10, 9, tzinfo=timezone.utc), "Hi, I'm Ada. I live in Paris."),
    ("session-2", datetime(2024, 2, 14, 18, tzinfo=timezone.utc), "Big news: I moved to Berlin."),
    ("session-3", datetime(2024, 3, 20, 8, tzinfo=timezone.utc), "Where do I live now, and where did I live before?"),
]
SYSTEM_PROMPT = "You are Ada's assistant. Use the memory you are given; call entity_history for the past."


def scripted_reply(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
    """The offline stand-in for a model: ask entity_history about questions, then read out its answer."""
    last = messages[-1]
    if last.role == MessageRole.TOOL:
        return ChatMessage(role="assistant", content=f"Memory's timeline for Ada:\n{last.content}")
    if kwargs.get("tools") and (last.content or "").rstrip().endswith("?"):
        call = ToolCallBlock(tool_call_id="call-1", tool_name="entity_history", tool_kwargs={"entity_name": "Ada"})
        return ChatMessage(role="assistant", blocks=[call])
    return ChatMessage(role="assistant", content="Noted.")


def pick_llm() -> LLM:
    """A real OpenAI model when configured, else the scripted mock."""
    if os.environ.get("OPENAI_API_KEY"):
        try:
            from llama_index.llms.openai import OpenAI
        except ImportError:
            print("OPENAI_API_KEY is set but llama-index-llms-openai is not installed; using the mock LLM.\n")
        else:
            return OpenAI(model=os.environ.get("ZEP_EXAMPLE_MODEL", "gpt-4o-mini"))
    return MockFunctionCallingLLM(response_generator=scripted_reply)


def show(label: str, text: str) -> None:
    print(f"  {label}:")
    print(textwrap.indent(text or "(nothing yet)", "    "))


async def session(memory: Memory, llm: LLM, session_id: str, text: str) -> None:
    # end_every=1: each exchange becomes an episode as soon as the agent has answered.
    chat_memory = ZepMemory(memory=memory, session_id=session_id, user_id="ada", user_name="Ada", end_every=1)
    agent = FunctionAgent(tools=create_memory_tools(memory, user_id="ada", user_name="Ada"), llm=llm,
                          system_prompt=SYSTEM_PROMPT)
    print(f"== {session_id} ({memory.now().date().isoformat()})\n  Ada: {text}")
    show("memory supplied", chat_memory.context_for(text))
    handler = agent.run(user_msg=text, memory=chat_memory)
    async for event in handler.stream_events():
        if isinstance(event, ToolCallResult):
            show(f"tool {event.tool_name}({event.tool_kwargs})", str(event.tool_output.content))
    show("agent", str(await handler))
    print()


def run(data_dir: str) -> None:
    llm = pick_llm()
    today = [SESSIONS[0][1]]
    with Memory(MemoryConfig(data_dir=data_dir), clock=lambda: today[0]) as memory:
        for session_id, when, text in SESSIONS:
            today[0] = when
            asyncio.run(session(memory, llm, session_id, text))


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    if args.data_dir:
        run(args.data_dir)
    else:
        with tempfile.TemporaryDirectory(prefix="zep-llamaindex-agent-") as tmp:
            run(tmp)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
