"""A LangChain agent with zep-memory: Alice moves from Paris to Berlin, and the agent keeps up.

Three conversations with an agent built by ``langchain.agents.create_agent``. The
``ZepMemoryMiddleware`` puts what memory knows about Alice into the system message
before every model call and saves each turn; the memory tools let the agent look up
her history. For each conversation the script prints what the model was given from
memory.

Run it::

    python examples/langchain_agent.py              # offline: a scripted chat model
    OPENAI_API_KEY=... python examples/langchain_agent.py   # a real model, if langchain-openai is installed

Options: ``--data DIR`` keeps the memory in DIR (default: a temporary folder),
``--offline`` uses the scripted model even when a key is set, ``OPENAI_MODEL`` picks
the model (default gpt-4o-mini).
"""

from __future__ import annotations

import argparse
import sys


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, parsed before the imports below: ``--help`` answers at once, not after seconds."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", "--data-dir", dest="data_dir", metavar="DIR",
                        help="keep the memory here (default: a temporary folder)")
    parser.add_argument("--offline", action="store_true", help="use the scripted model even if a key is set")
    return parser.parse_args(argv)


if __name__ == "__main__":
    arguments()  # --help, or a bad option, answers here: LangChain and zep-memory take seconds to import

import os
import tempfile
from datetime import datetime, timezone

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from zep_core import Memory, MemoryConfig

from zep_langchain import ZepMemoryMiddleware, create_memory_tools
from zep_langchain.testing import ScriptedChatModel

USER_ID, USER_NAME = "alice", "Alice"
#: (session, when it happens, what Alice says) — the memory's clock is set to each date.
CONVERSATIONS = [
    ("s1", datetime(2024, 1, 10, 9, tzinfo=timezone.utc), "Hi! I live in Paris and I work at Acme."),
    ("s2", datetime(2024, 3, 1, 18, tzinfo=timezone.utc), "Big news: I moved to Berlin."),
    ("s3", datetime(2024, 3, 20, 8, tzinfo=timezone.utc), "Where do I live now, and where did I live before?"),
]


def real_model() -> BaseChatModel | None:
    """A real chat model when one is configured (OPENAI_API_KEY and langchain-openai), else None."""
    if not os.environ.get("OPENAI_API_KEY"):
        return None
    try:
        from langchain_openai import ChatOpenAI
    except ImportError:
        print("OPENAI_API_KEY is set but langchain-openai is not installed; using the scripted model.\n")
        return None
    return ChatOpenAI(model=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"), temperature=0)


def answer_from_history(messages: list[BaseMessage]) -> AIMessage:
    """The scripted model's last reply: read back what the entity_history tool returned."""
    history = next(m.text for m in reversed(messages) if isinstance(m, ToolMessage))
    lines = [line[2:] for line in history.splitlines() if line.startswith("- ") and "lives in" in line]
    return AIMessage("From my memory:\n" + "\n".join(f"  {line}" for line in lines))


def scripted_model() -> ScriptedChatModel:
    """Plays the agent's side offline: two acknowledgements, then a tool call and an answer."""
    return ScriptedChatModel(replies=[
        AIMessage("Nice to meet you! I'll remember that."),
        AIMessage("Congratulations on the move!"),
        AIMessage("", tool_calls=[{"name": "entity_history", "args": {"entity_name": "me"}, "id": "call-1"}]),
        answer_from_history,
    ])


def converse(memory: Memory, model: BaseChatModel, session_id: str, text: str) -> None:
    """One conversation: a user message, the agent's turn, then the conversation ends."""
    zep = ZepMemoryMiddleware(memory=memory, session_id=session_id, user_id=USER_ID, user_name=USER_NAME)
    agent = create_agent(model, tools=create_memory_tools(memory, user_id=USER_ID, user_name=USER_NAME),
                         system_prompt="You are a friendly assistant with a long-term memory.",
                         middleware=[zep])
    result = agent.invoke({"messages": [{"role": "user", "content": text}]})
    print(f"=== {session_id} ===\nAlice: {text}")
    print("Memory given to the model:")
    print(_indent(zep.last_context or "(nothing yet)"))
    for message in result["messages"]:
        if isinstance(message, ToolMessage):
            print(f"Tool {message.name} returned:\n{_indent(message.text)}")
    print(f"Agent: {result['messages'][-1].text}\n")
    zep.end_conversation()  # learn from it now (the default policy would also learn on zep.clear())


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    model = None if args.offline else real_model()
    print(f"Model: {'scripted (offline)' if model is None else model.__class__.__name__}\n")
    model = model or scripted_model()
    today = [CONVERSATIONS[0][1]]
    with tempfile.TemporaryDirectory() as scratch, \
            Memory(MemoryConfig(data_dir=args.data_dir or scratch), clock=lambda: today[0]) as memory:
        for session_id, when, text in CONVERSATIONS:
            today[0] = when  # pretend the conversations happen weeks apart
            print(f"--- {when.date().isoformat()} ---")
            converse(memory, model, session_id, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
