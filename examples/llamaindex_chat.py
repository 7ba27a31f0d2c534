"""A LlamaIndex chat engine with zep-memory, across three sessions.

Ada says she lives in Paris, later that she moved to Berlin, and then asks where
she lives. Each turn prints what memory supplied to the LLM; the last part shows
the same facts as retriever nodes.

    python examples/llamaindex_chat.py [--data DIR]

Offline by default (LlamaIndex's MockLLM, zep-memory's embedded defaults). With
``OPENAI_API_KEY`` set and ``llama-index-llms-openai`` installed, a real model
answers (``ZEP_EXAMPLE_MODEL``, default gpt-4o-mini).
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

import os
import tempfile
import textwrap
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from llama_index.core.base.llms.types import CompletionResponse
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import LLM, MockLLM
from llama_index.core.llms.callbacks import llm_completion_callback
from zep_core import Memory, MemoryConfig

from zep_llamaindex import ZepMemory, ZepRetriever

#: (session, when it happens, what Ada says): the memory's clock is set to each date, so the facts are
#: dated as they would be in a real app and the move is weeks after the first session.
SESSIONS = [
    ("session-1", datetime(2024, 1, 10, 9, tzinfo=timezone.utc), ["Hi, I'm Ada. I live in Paris and I work at Acme."]),
    ("session-2", datetime(2024, 2, 14, 18, tzinfo=timezone.utc), ["Big news: I moved to Berlin."]),
    ("session-3", datetime(2024, 3, 20, 8, tzinfo=timezone.utc), ["Where do I live now?"]),
]


class OfflineLLM(MockLLM):
    """LlamaIndex's MockLLM answering from the facts memory gave it (the plain MockLLM echoes its whole prompt).

    It says what a model would: what memory holds, as memory gave it. The memory recognises its own
    words and does not learn them a second time from the reply.
    """

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        facts = [line[2:].split(" (")[0] for line in prompt.splitlines() if line.startswith("- ")]
        return CompletionResponse(text="From what I remember: " + " ".join(facts[:2]) if facts else "Noted.")


def pick_llm() -> LLM:
    """A real OpenAI model when configured, else the offline mock."""
    if os.environ.get("OPENAI_API_KEY"):
        try:
            from llama_index.llms.openai import OpenAI
        except ImportError:
            print("OPENAI_API_KEY is set but llama-index-llms-openai is not installed; using the mock LLM.\n")
        else:
            return OpenAI(model=os.environ.get("ZEP_EXAMPLE_MODEL", "gpt-4o-mini"))
    return OfflineLLM()


def show(label: str, text: str) -> None:
    print(f"  {label}:")
    print(textwrap.indent(text or "(nothing yet)", "    "))


def run(data_dir: str) -> None:
    llm = pick_llm()
    today = [SESSIONS[0][1]]
    with Memory(MemoryConfig(data_dir=data_dir), clock=lambda: today[0]) as memory:
        for session_id, when, lines in SESSIONS:
            today[0] = when
            print(f"== {session_id} ({when.date().isoformat()})")
            chat_memory = ZepMemory(memory=memory, session_id=session_id, user_id="ada", user_name="Ada")
            engine = SimpleChatEngine.from_defaults(llm=llm, memory=chat_memory)
            for text in lines:
                print(f"  Ada: {text}")
                show("memory supplied", chat_memory.context_for(text))
                print(f"  assistant: {engine.chat(text)}")
            if session_id != "session-3":  # the last session stays open: its turns are stored, not yet ingested
                result = chat_memory.end_session()  # conversation_end: facts learned, older ones superseded
                for fact in result.superseded if result else ():
                    print(f"  superseded: {fact.content}")
            print()

        print("== the same memory as a LlamaIndex retriever")
        for hit in ZepRetriever(memory=memory, user_id="ada", user_name="Ada", top_k=3).retrieve("Where do I live?"):
            meta = hit.node.metadata
            print(f"  {hit.score:.3f}  {hit.node.get_content():<28} {meta['subject']} {meta['predicate']} "
                  f"{meta['object']} (valid from {meta['valid_from'][:10]})")


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    if args.data_dir:
        run(args.data_dir)
    else:
        with tempfile.TemporaryDirectory(prefix="zep-llamaindex-") as tmp:
            run(tmp)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
