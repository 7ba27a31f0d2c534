"""The MCP server through the SDK's own client: tools listed, the Paris→Berlin story, scoping, errors."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("mcp", reason="the MCP server needs the [mcp] extra")
from mcp import Client  # noqa: E402
from zep_core.demo import SESSION_1, SESSION_2  # noqa: E402
from zep_core.mcp_server import create_mcp_server  # noqa: E402


def turns(messages):
    return [{"role": m.role, "content": m.content, "name": m.name, "timestamp": m.timestamp.isoformat()}
            for m in messages]


def call(server, *calls):
    """Run tool calls in order on one client session; the text of each result and whether it is an error."""
    async def run():
        out = []
        async with Client(server) as client:
            for name, args in calls:
                result = await client.call_tool(name, args)
                out.append((result.is_error, "".join(c.text for c in result.content if c.type == "text")))
        return out
    return asyncio.run(run())


def tool_names(server):
    async def run():
        async with Client(server) as client:
            return sorted(t.name for t in (await client.list_tools()).tools)
    return asyncio.run(run())


def test_tools_are_listed_and_forget_only_when_allowed(memory):
    assert tool_names(create_mcp_server(memory, user_id="alice")) == [
        "add_conversation", "entity_history", "related_entities", "search_memory"]
    assert "forget" in tool_names(create_mcp_server(memory, user_id="alice", allow_forget=True))


def test_paris_to_berlin_through_mcp(memory):
    server = create_mcp_server(memory, user_id="alice", user_name="Alice")
    (e1, stored1), (e2, stored2), (e3, search), (e4, past), (e5, history), (e6, related) = call(
        server,
        ("add_conversation", {"messages": turns(SESSION_1), "session_id": "s1"}),
        ("add_conversation", {"messages": turns(SESSION_2), "session_id": "s2"}),
        ("search_memory", {"query": "Where do I live?"}),
        ("search_memory", {"query": "Where do I live?", "as_of": "2023-06-01"}),
        ("entity_history", {"entity_name": "me"}),
        ("related_entities", {"entity_name": "Alice"}))
    assert not any((e1, e2, e3, e4, e5, e6))
    assert "learned: Alice lives in Paris." in stored1
    assert "no longer true: Alice lives in Paris." in stored2
    assert "Alice lives in Berlin." in search and "Paris" not in search
    assert "Alice lives in Paris." in past and "Berlin" not in past
    assert "Alice lives in Paris. (valid 2023-05-08 to" in history and "superseded" in history
    assert "Berlin (place)" in related
    assert memory.users() == ["alice"]


def test_every_tool_is_scoped_to_the_configured_user(memory):
    memory.conversation_end("b1", [{"role": "user", "name": "Bob", "content": "I live in Lisbon."}], user_id="bob")
    server = create_mcp_server(memory, user_id="alice", user_name="Alice", allow_forget=True)
    results = call(server,
                   ("search_memory", {"query": "Lisbon"}),
                   ("add_conversation", {"messages": [{"role": "user", "content": "I live in Oslo."}]}),
                   ("search_memory", {"query": "Who lives in Lisbon?"}),
                   ("entity_history", {"entity_name": "Bob"}),
                   ("related_entities", {"entity_name": "Lisbon"}),
                   ("forget", {"confirm_user_id": "bob"}),
                   ("forget", {"confirm_user_id": "alice"}))
    texts = [t for _, t in results]
    assert texts[0] == "Nothing is stored in memory for this user yet."
    assert "Alice lives in Oslo." in texts[2] and "Lisbon" not in texts[2].split("\n", 1)[1]
    assert "No entity named 'Bob'" in texts[3] and "No entity named 'Lisbon'" in texts[4]
    assert texts[5].startswith("Not deleted") and texts[6].startswith("Deleted every fact")
    assert memory.users() == ["bob"]
    assert [f.content for f in memory.facts("bob") if f.predicate == "lives_in"] == ["Bob lives in Lisbon."]


def test_bad_arguments_come_back_as_sentences_not_tracebacks(memory):
    server = create_mcp_server(memory, user_id="alice")
    call(server, ("add_conversation", {"messages": [{"role": "user", "content": "I live in Rome."}]}))
    results = call(server,
                   ("search_memory", {"query": "home", "limit": 0}),
                   ("search_memory", {"query": "home", "as_of": "not a date"}),
                   ("add_conversation", {"messages": []}),
                   ("add_conversation", {"messages": [{"role": "wizard", "content": "hi"}]}),
                   ("entity_history", {"entity_name": "   "}))
    for is_error, text in results:
        assert not is_error and "Traceback" not in text and "/" not in text.replace("1-50", "")
    assert results[0][1] == "limit must be between 1 and 50."
    assert results[1][1].startswith("Could not search memory:")
    assert results[2][1].startswith("Nothing was stored:") and results[3][1].startswith("Nothing was stored:")


def test_a_bad_user_id_is_refused_at_start(memory):
    from zep_core import ValidationError

    with pytest.raises(ValidationError):
        create_mcp_server(memory, user_id="")


def test_zep_memory_mcp_over_stdio_with_the_sdk_client(tmp_path):
    """The real command, started by the SDK's stdio client as an MCP host would start it."""
    import sys
    from pathlib import Path

    from mcp import StdioServerParameters

    exe = Path(sys.executable).with_name("zep-memory")
    params = StdioServerParameters(command=str(exe), args=["mcp", "--data", str(tmp_path / "data"), "--user", "alice",
                                                           "--user-name", "Alice"], cwd=str(tmp_path))

    async def run():
        async with Client(params) as client:
            names = sorted(t.name for t in (await client.list_tools()).tools)
            await client.call_tool("add_conversation", {"messages": turns(SESSION_1), "session_id": "s1"})
            await client.call_tool("add_conversation", {"messages": turns(SESSION_2), "session_id": "s2"})
            found = await client.call_tool("search_memory", {"query": "Where do I live?"})
            return names, found.content[0].text

    names, text = asyncio.run(run())
    assert names == ["add_conversation", "entity_history", "related_entities", "search_memory"]
    assert "Alice lives in Berlin." in text and "Paris" not in text
    from zep_core import Memory

    with Memory.open(tmp_path / "data") as memory:  # the server closed the folder on exit
        assert memory.users() == ["alice"]


def test_zep_memory_mcp_refuses_to_start_without_a_user(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    exe = Path(sys.executable).with_name("zep-memory")
    proc = subprocess.run([str(exe), "mcp", "--data", str(tmp_path / "data")], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and "give --user ID" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "data").exists()


def test_zep_memory_mcp_over_streamable_http_without_keys_on_loopback(tmp_path):
    """The real command on a loopback port with no keys (as `serve` allows there), reached by the SDK's client."""
    from tests.mcp.conftest import McpServing, ask, environment

    with McpServing("--data", str(tmp_path / "data"), "--user", "alice", "--user-name", "Alice",
                    env=environment()) as server:
        *_, text = ask(server.url, None, ("add_conversation", {"messages": turns(SESSION_1), "session_id": "s1"}),
                       ("add_conversation", {"messages": turns(SESSION_2), "session_id": "s2"}),
                       ("search_memory", {"query": "Where do I live?"}))
        assert "no API keys: any local client may use it (loopback only)" in "".join(server.err)
    assert "Alice lives in Berlin." in text and "Paris" not in text


@pytest.mark.parametrize(("key", "says"), [("not-a-key-0123456789abcdef", "API key"), (None, "API key"),
                                           ("bob-key-0123456789abcdef", "alice")])
def test_over_the_service_a_refused_key_reaches_the_mcp_client_as_what_is_wrong(memory, key, says):
    """Not as "Connection closed": the server starts, lists its tools, and each call says why it cannot serve."""
    import os
    import sys
    from pathlib import Path

    from mcp import StdioServerParameters
    from zep_core.server import create_app

    from tests.server.conftest import keyring, serving

    exe = Path(sys.executable).with_name("zep-memory")
    env = {k: v for k, v in os.environ.items() if k != "ZEP_MEMORY_API_KEY"}
    if key is not None:
        env["ZEP_MEMORY_API_KEY"] = key
    with serving(create_app(memory, keyring())) as url:
        params = StdioServerParameters(command=str(exe), args=["mcp", "--url", url, "--user", "alice"], env=env)

        async def run():
            async with Client(params) as client:
                names = sorted(t.name for t in (await client.list_tools()).tools)
                result = await client.call_tool("search_memory", {"query": "Where do I live?"})
                return names, result.is_error, result.content[0].text

        names, is_error, text = asyncio.run(run())

    assert "search_memory" in names
    assert is_error and says in text and "ZEP_MEMORY_API_KEY" in text, text
