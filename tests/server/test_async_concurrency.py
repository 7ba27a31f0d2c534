"""The adapters' async paths are concurrent: 24 retrievals at once are 24 in flight, not six.

The query embedder here takes 0.3 s per query, as an embedding API's round trip does,
and counts how many of its calls are under way at once. Through
:func:`asyncio.to_thread` (the loop's default executor: cores + 4 threads, six on a
two-core machine) or any pool of fixed small width, at most that many overlap and
these tests fail; through ``zep_core.aio`` in process, and the native ``aget_context``
of a ``RemoteMemory`` against a real server on 127.0.0.1, all 24 do.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from zep_core import Message
from zep_core.server import RemoteMemory, create_app

from tests.server.conftest import KEYS, keyring, serving

CALLS = 24
#: How many of the 24 must overlap: twice the six a serialized path or a pool of the machine's
#: width allows, with room for a loaded machine (a clean-clone run under load reached 16 of 24).
AT_ONCE = 12
QUESTIONS = [f"Where does Alice live, question {i}?" for i in range(CALLS)]  # distinct: no cached embedding


class SlowQueries:
    """The test session's embedder, whose query embeddings take ``delay`` seconds; counts the calls under way."""

    def __init__(self, inner, delay: float = 0.3) -> None:
        self.inner, self.name, self.dimension, self.delay = inner, inner.name, inner.dimension, delay
        self._lock = threading.Lock()
        self.running = self.most = 0

    def embed(self, texts):
        return self.inner.embed(texts)

    def embed_query(self, text):
        with self._lock:
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            time.sleep(self.delay)
            return self.inner.embed_query(text)
        finally:
            with self._lock:
                self.running -= 1

    def reset(self) -> None:
        self.most = 0


@pytest.fixture
def slow(embedder):
    return SlowQueries(embedder)


@pytest.fixture
def alice(make_memory, slow):
    memory = make_memory(embedder=slow)
    memory.conversation_end("s0", [Message("I live in Oslo and I work at Acme.", name="Alice")], user_id="alice")
    return memory


async def _all(calls):
    return await asyncio.gather(*calls)


def _langchain_retriever(memory):
    from zep_langchain import ZepRetriever

    retriever = ZepRetriever(memory=memory, user_id="alice", user_name="Alice", k=3)
    return lambda q: retriever.ainvoke(q)


def _langchain_tool(memory):
    from zep_langchain import ZepSearchMemoryTool

    tool = ZepSearchMemoryTool(memory=memory, user_id="alice", user_name="Alice")
    return lambda q: tool.ainvoke({"query": q})


def _llamaindex_retriever(memory):
    from zep_llamaindex import ZepRetriever

    retriever = ZepRetriever(memory, "alice", user_name="Alice", top_k=3)
    return lambda q: retriever.aretrieve(q)


def _llamaindex_tool(memory):
    from zep_llamaindex import create_memory_tools

    search = next(t for t in create_memory_tools(memory, user_id="alice", user_name="Alice")
                  if t.metadata.name == "search_memory")
    return lambda q: search.acall(query=q)


ADAPTERS = [_langchain_retriever, _langchain_tool, _llamaindex_retriever, _llamaindex_tool]


def _text(answer) -> str:
    if isinstance(answer, str):
        return answer
    if isinstance(answer, list):
        return " ".join(getattr(x, "page_content", None) or x.node.get_content() for x in answer)
    return str(answer.content)


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda f: f.__name__.strip("_"))
def test_concurrent_async_calls_overlap_in_process(alice, slow, adapter):
    ask = adapter(alice)
    slow.reset()

    answers = asyncio.run(_all([ask(q) for q in QUESTIONS]))

    assert slow.most >= AT_ONCE, f"only {slow.most} of {CALLS} concurrent async calls were under way at once"
    assert all("Oslo" in _text(a) for a in answers)


class NoBlockingSearch(RemoteMemory):
    """A RemoteMemory that fails the test if a search goes through its blocking client from async code."""

    def get_context(self, *args, **kwargs):
        raise AssertionError("an async adapter called the blocking get_context")

    def context_block(self, *args, **kwargs):
        raise AssertionError("an async adapter called the blocking context_block")


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda f: f.__name__.strip("_"))
def test_on_a_remote_memory_the_adapters_await_its_native_calls_and_the_server_overlaps_them(alice, slow, adapter):
    with serving(create_app(alice, keyring())) as url:
        client = NoBlockingSearch(url, api_key=KEYS["alice"])
        try:
            client.config  # read once, as any adapter does on its first call  # noqa: B018
            ask = adapter(client)
            slow.reset()

            answers = asyncio.run(_all([ask(q) for q in QUESTIONS]))
        finally:
            client.close()

    assert slow.most >= AT_ONCE, f"only {slow.most} of {CALLS} concurrent requests were served at once"
    assert all("Oslo" in _text(a) for a in answers)


def test_memory_has_the_async_calls_a_remote_memory_has(alice, clock):
    facts = asyncio.run(alice.aget_context("Where does Alice live?", user_id="alice"))
    block = asyncio.run(alice.acontext_block("Where does Alice live?", user_id="alice"))
    clock.advance(days=1)
    result = asyncio.run(alice.aconversation_end("s1", [Message("I moved to Bergen.", name="Alice")], user_id="alice"))

    assert "Alice lives in Oslo." in [f.content for f in facts]
    assert "Oslo" in block
    assert result.status == "done"
    assert "Alice lives in Bergen." in [f.content for f in alice.get_context("Where does Alice live?",
                                                                             user_id="alice")]
