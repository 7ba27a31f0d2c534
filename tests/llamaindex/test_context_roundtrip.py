"""A workflow Context holding a ZepMemory is saved and restored: the memory travels as a reference.

``ctx.to_dict()`` writes the ZepMemory as its settings plus ``memory_ref`` (the data
folder, or the service URL — never an API key); ``Context.from_dict`` opens the memory
again from it: in this process by sharing the open folder, in another by opening it,
and for a service with the key from ``ZEP_MEMORY_API_KEY``.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.workflow import Context

from zep_llamaindex import ZepMemory

pytestmark = pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning")

ROOT = Path(__file__).resolve().parents[2]


def first_run(agent, chat_memory) -> dict:
    """One turn with ``chat_memory`` in a fresh Context; the Context as JSON-ready data."""
    async def run() -> dict:
        ctx = Context(agent)
        await agent.run(user_msg="I live in Lisbon.", memory=chat_memory, ctx=ctx)
        return json.loads(json.dumps(ctx.to_dict()))

    return asyncio.run(run())


def saved_memories(data: dict) -> list[dict]:
    """The ZepMemory entries of a saved Context (wherever the serializer put them)."""
    found = []

    def walk(value):
        if isinstance(value, dict):
            if value.get("class_name") == "ZepMemory":
                found.append(value)
            for item in value.values():
                walk(json.loads(item) if isinstance(item, str) and item.startswith("{") else item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(data)
    return found


def test_a_context_with_a_zep_memory_round_trips_in_this_process(make_memory, fc_llm):
    core = make_memory()
    agent = FunctionAgent(tools=[], llm=fc_llm)
    data = first_run(agent, ZepMemory(memory=core, session_id="s1", user_id="ada", user_name="Ada",
                                      end_policy="explicit"))
    [saved] = saved_memories(data)
    if core.config.database_url is None:
        assert saved["memory_ref"] == {"data_dir": str(core.data_dir)}
    else:  # on PostgreSQL: the database without its password, and the scratch folder
        from zep_core.stores.postgres.connection import url_without_password

        assert saved["memory_ref"] == {"database_url": url_without_password(core.config.database_url),
                                       "data_dir": str(core.data_dir)}
    assert "api_key" not in json.dumps(data) and "password" not in json.dumps(data)

    async def resume():
        ctx = Context.from_dict(agent, data)
        restored = await ctx.store.get("memory")
        try:
            fc_llm.calls.clear()
            await agent.run(user_msg="Where do I live?", ctx=ctx)
            return restored, await restored.aget_all()
        finally:
            restored.close()

    restored, history = asyncio.run(resume())

    assert isinstance(restored, ZepMemory) and restored.memory is not core  # a handle of its own ...
    assert (restored.user_id, restored.session_id, restored.user_name) == ("ada", "s1", "Ada")
    assert restored.end_policy == ZepMemory(memory=core, user_id="ada", end_policy="explicit").end_policy
    assert "I live in Lisbon." in fc_llm.seen()[-1]  # the resumed run saw the first turn
    assert [m.content for m in history] == ["I live in Lisbon.", "Noted.", "Where do I live?", "Noted."]
    assert [m.content for m in core.get_messages("s1", user_id="ada")][-2] == "Where do I live?"  # ... same store


RESTORE = textwrap.dedent("""
    import asyncio, json, sys
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.llms.mock import MockFunctionCallingLLM
    from llama_index.core.workflow import Context

    async def main():
        agent = FunctionAgent(tools=[], llm=MockFunctionCallingLLM())
        ctx = Context.from_dict(agent, json.loads(sys.stdin.read()))
        memory = await ctx.store.get("memory")
        print(type(memory).__name__, memory.user_id, memory.session_id,
              [m.content for m in await memory.aget_all()], sep="|")
        memory.end_session()
        print(memory.context_for("Where do I live?").replace("\\n", " "))
        memory.close()

    asyncio.run(main())
""")


def test_a_saved_context_is_restored_in_another_process(make_memory, fc_llm):
    core = make_memory()
    data = first_run(FunctionAgent(tools=[], llm=fc_llm),
                     ZepMemory(memory=core, session_id="s1", user_id="ada", user_name="Ada", end_policy="explicit"))
    core.close()  # this process lets go of the folder; the saved Context is all that is left

    env = dict(os.environ, PYTHONPATH=str(ROOT), ORT_DISABLE_TELEMETRY="1")
    out = subprocess.run([sys.executable, "-c", RESTORE], input=json.dumps(data), cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)

    assert out.returncode == 0, out.stderr
    kind, user, session, history = out.stdout.splitlines()[0].split("|")
    assert (kind, user, session) == ("ZepMemory", "ada", "s1")
    assert history == "['I live in Lisbon.', 'Noted.']"
    assert "Ada lives in Lisbon." in out.stdout.splitlines()[1]


def test_a_service_reference_reopens_the_service_with_the_key_from_the_environment(memory, monkeypatch):
    from zep_core.server import RemoteMemory, create_app

    from tests.server.conftest import KEYS, keyring, serving

    with serving(create_app(memory, keyring())) as url:
        remote = RemoteMemory(url, api_key=KEYS["alice"])
        try:
            chat_memory = ZepMemory(memory=remote, session_id="s1", user_id="alice", end_policy="explicit")
            chat_memory.put_messages([ChatMessage(role="user", content="I live in Oslo."),
                                      ChatMessage(role="assistant", content="Nice.")])
            data = json.loads(json.dumps(chat_memory.to_dict()))
        finally:
            remote.close()
        assert data["memory_ref"] == {"url": url} and KEYS["alice"] not in json.dumps(data)

        monkeypatch.setenv("ZEP_MEMORY_API_KEY", KEYS["alice"])
        restored = ZepMemory.from_dict(data)
        try:
            assert isinstance(restored.memory, RemoteMemory)
            assert [m.content for m in restored.get_all()] == ["I live in Oslo.", "Nice."]
        finally:
            restored.close()
        assert [m.content for m in memory.get_messages("s1", user_id="alice")] == ["I live in Oslo.", "Nice."]


def test_data_without_a_reference_or_a_memory_is_a_clear_error(make_memory):
    core = make_memory()
    data = ZepMemory(memory=core, session_id="s1", user_id="ada").to_dict()
    del data["memory_ref"]

    with pytest.raises(ValueError, match="no 'memory_ref'.*no memory= was given"):
        ZepMemory.from_dict(data)
    assert ZepMemory.from_dict(data, memory=core).memory is core  # an open memory instead of the reference


def test_a_memory_that_is_not_a_folder_or_a_service_cannot_be_saved(make_memory):
    from tests.core.test_sessions import LikeMemory

    chat_memory = ZepMemory(memory=LikeMemory(), session_id="s1", user_id="ada")

    with pytest.raises(ValueError, match="saved as a reference to a data folder"):
        chat_memory.to_dict()
