"""The adapters take a RemoteMemory (``zep-memory serve``) as they take a Memory: same calls, same answers."""

from __future__ import annotations

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from zep_core import PermissionDeniedError
from zep_core.server import RemoteMemory, create_app

from tests.server.conftest import KEYS, keyring, serving
from zep_langchain import ZepContext, ZepMemoryMiddleware, ZepRetriever, ZepStore, create_memory_tools
from zep_langchain.testing import ScriptedChatModel


@pytest.fixture
def alice_remote(memory):
    with serving(create_app(memory, keyring())) as url, RemoteMemory(url, api_key=KEYS["alice"]) as client:
        yield client


def test_an_agent_a_retriever_and_a_store_run_on_a_remote_memory(alice_remote, memory):
    model = ScriptedChatModel(replies=[AIMessage("Noted.")])
    agent = create_agent(model, tools=create_memory_tools(alice_remote),
                         middleware=[ZepMemoryMiddleware(memory=alice_remote, end_policy=1)],
                         context_schema=ZepContext, checkpointer=InMemorySaver())
    agent.invoke({"messages": [{"role": "user", "content": "I live in Paris."}]},
                 config={"configurable": {"thread_id": "t1"}}, context=ZepContext(user_id="alice", user_name="Alice"))
    assert [m.content for m in memory.get_messages("t1", user_id="alice")] == ["I live in Paris.", "Noted."]
    docs = ZepRetriever(memory=alice_remote, user_id="alice").invoke("Where does Alice live?")
    assert "Alice lives in Paris." in [d.page_content for d in docs]
    store = ZepStore(alice_remote)
    store.put(("memories", "alice"), "sport", {"content": "I play tennis on Sundays."})
    store.put(("memories", "alice"), "food", {"content": "I love ramen."})
    assert store.get(("memories", "alice"), "food").value == {"content": "I love ramen."}
    found = store.search(("memories", "alice"), query="What food do I love?")
    assert found[0].key == "food" and 0 < found[0].score <= 1  # found through its facts, scored by their cosine


def test_a_run_for_a_user_the_key_may_not_use_is_refused(alice_remote, memory):
    model = ScriptedChatModel(replies=[AIMessage("Noted.")])
    agent = create_agent(model, middleware=[ZepMemoryMiddleware(memory=alice_remote)],
                         context_schema=ZepContext, checkpointer=InMemorySaver())
    with pytest.raises(PermissionDeniedError):
        agent.invoke({"messages": [{"role": "user", "content": "I live in Rome."}]},
                     config={"configurable": {"thread_id": "t2"}}, context=ZepContext(user_id="bob"))
    assert memory.users() == []
