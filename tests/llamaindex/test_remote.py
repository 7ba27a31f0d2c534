"""The LlamaIndex adapters take a RemoteMemory as they take a Memory: the same answers, over HTTP.

A real ``zep-memory serve`` app (uvicorn on 127.0.0.1) over a Memory in tmp_path, and a
RemoteMemory with Alice's key: chat memory, retriever, tools and memory block all work
on it, and a user the key may not use is refused, not served.
"""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core.base.llms.types import ChatMessage
from zep_core import Message, PermissionDeniedError

from zep_llamaindex import ZepMemory, ZepMemoryBlock, ZepRetriever, create_memory_tools


@pytest.fixture
def remote(memory):
    from zep_core.server import RemoteMemory, create_app

    from tests.server.conftest import KEYS, keyring, serving

    memory.conversation_end("s0", [Message("I live in Oslo.", name="Alice")], user_id="alice")
    memory.conversation_end("s0", [Message("I live in Rome.", name="Bob")], user_id="bob")
    with serving(create_app(memory, keyring())) as url:
        client = RemoteMemory(url, api_key=KEYS["alice"])
        yield client
        client.close()


def test_the_adapters_work_on_a_remote_memory(remote, memory):
    chat_memory = ZepMemory(memory=remote, session_id="s1", user_id="alice", user_name="Alice")
    chat_memory.put_messages([ChatMessage(role="user", content="Where do I live?")])

    assert "Alice lives in Oslo." in chat_memory.get()[0].content
    assert [m.content for m in memory.get_messages("s1", user_id="alice")] == ["Where do I live?"]
    found = [n.text for n in ZepRetriever(remote, "alice", user_name="Alice").retrieve("Where do I live?")]
    assert found == [f.content for f in memory.get_context("Where do I live?", user_id="alice", speaker="Alice")]
    assert "Alice lives in Oslo." in found
    tools = {t.metadata.name: t for t in create_memory_tools(remote, user_id="alice", user_name="Alice")}
    assert "Alice lives in Oslo." in tools["search_memory"](query="Where do I live?").content
    block = ZepMemoryBlock(memory=remote, user_id="alice", user_name="Alice")
    assert "Oslo" in asyncio.run(block.aget([ChatMessage(role="user", content="Where do I live?")]))


def test_a_user_the_key_may_not_use_is_refused(remote):
    chat_memory = ZepMemory(memory=remote, session_id="s1", user_id="bob")

    with pytest.raises(PermissionDeniedError):
        chat_memory.put(ChatMessage(role="user", content="Where do I live?"))
    with pytest.raises(PermissionDeniedError):
        ZepRetriever(remote, "bob").retrieve("Where does Bob live?")
