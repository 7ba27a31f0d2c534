"""Retrieval-augmented answers from zep-memory with ZepRetriever and an LCEL chain.

Two past conversations are stored (Alice lived in Paris, then moved to Berlin). A
``ZepRetriever`` hands the chain the facts that are true now — each with its dates
and score — and a second retriever with ``as_of`` answers what was true back then.
The script prints what the model was given from memory, then its answer.

Run it::

    python examples/langchain_rag.py              # offline: a scripted chat model
    OPENAI_API_KEY=... python examples/langchain_rag.py   # a real model, if langchain-openai is installed

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

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from zep_core import Memory, Message

from zep_langchain import ZepRetriever
from zep_langchain.testing import ScriptedChatModel

UTC = timezone.utc
PAST_CONVERSATIONS = [
    ("s1", datetime(2023, 5, 8, 10, tzinfo=UTC), ["I live in Paris.", "I work at Acme as an engineer."]),
    ("s2", datetime(2024, 2, 1, 19, tzinfo=UTC), ["I moved to Berlin.", "I like jazz."]),
]
QUESTIONS = [
    ("Where does Alice live, and where does she work?", None),
    ("Where did Alice live?", "2023-09-01T00:00:00+00:00"),
]
PROMPT = ChatPromptTemplate.from_messages([
    ("system", "Answer from these facts about the user. Each says since when it holds.\n\n{context}"),
    ("human", "{question}"),
])


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


def answer_from_context(messages: list[BaseMessage]) -> AIMessage:
    """The scripted model: answer with the facts in the system message that name a place or employer."""
    facts = [line[2:] for line in messages[0].text.splitlines()
             if line.startswith("- ") and (" lives in " in line or " works at " in line)]
    return AIMessage("According to memory: " + " ".join(facts) if facts else "Memory has nothing on that.")


def format_docs(docs: list[Document]) -> str:
    """The retrieved facts as prompt lines, each with its validity."""
    lines = []
    for d in docs:
        span = d.metadata["valid_from"][:10] + (f" to {d.metadata['valid_until'][:10]}"
                                                if d.metadata["valid_until"] else " to now")
        lines.append(f"- {d.page_content} (valid {span})")
    return "\n".join(lines)


def remember_past_conversations(memory: Memory) -> None:
    """Store Alice's two earlier conversations, each at the time it happened."""
    for session_id, when, texts in PAST_CONVERSATIONS:
        memory.conversation_end(session_id, [Message(t, name="Alice", timestamp=when) for t in texts],
                                user_id="alice")


def show_and_format(docs: list[Document]) -> str:
    """Print what the model is given from memory (with validity and score parts), then format it."""
    print("Given to the model from memory:")
    for d in docs:
        m = d.metadata
        print(f"    {d.page_content:<45} valid {m['valid_from'][:10]}..{(m['valid_until'] or 'now')[:10]}  "
              f"score {m['score']:.3f} (semantic {m['semantic_score']:.2f}, words {m['lexical_score']:.2f}, "
              f"graph {m['graph_score']:.1f})")
    return format_docs(docs)


def ask(memory: Memory, model: BaseChatModel, question: str, as_of: str | None) -> None:
    """Retrieve, show what the model is given, and answer."""
    retriever = ZepRetriever(memory=memory, user_id="alice", k=4, as_of=as_of)
    chain = ({"context": retriever | RunnableLambda(show_and_format), "question": RunnablePassthrough()}
             | PROMPT | model | StrOutputParser())
    print(f"Q: {question}" + (f"   (as of {as_of[:10]})" if as_of else ""))
    print(f"A: {chain.invoke(question)}\n")


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    model = None if args.offline else real_model()
    print(f"Model: {'scripted (offline)' if model is None else model.__class__.__name__}\n")
    model = model or ScriptedChatModel(replies=[answer_from_context] * len(QUESTIONS))
    with tempfile.TemporaryDirectory() as scratch, Memory.open(args.data_dir or scratch) as memory:
        remember_past_conversations(memory)
        for question, as_of in QUESTIONS:
            ask(memory, model, question, as_of)
    return 0


if __name__ == "__main__":
    sys.exit(main())
