"""MCP over streamable HTTP takes the service's API keys: the real command, the SDK's real client, real stores."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest

pytest.importorskip("mcp", reason="the MCP server needs the [mcp] extra")
from zep_core import Memory  # noqa: E402
from zep_core.demo import SESSION_1, SESSION_2  # noqa: E402
from zep_core.server import create_app  # noqa: E402

from tests.mcp.conftest import ZEP_MEMORY, McpServing, Refused, ask, environment  # noqa: E402
from tests.server.conftest import KEYS, keyring, serving  # noqa: E402

#: alice's, bob's, carol's (bound to carol and alice) and an admin key, in the file format of `serve`.
KEYS_JSON = json.dumps({"keys": [
    {"key": KEYS["alice"], "users": ["alice"], "name": "alice"},
    {"key": KEYS["bob"], "users": ["bob"], "name": "bob"},
    {"key": KEYS["carol"], "users": ["carol", "alice"], "name": "carol and alice"},
    {"key": KEYS["admin"], "admin": True, "name": "admin"},
]})
WRONG = "not-a-key-0123456789abcdef"
HACK = ("add_conversation", {"messages": [{"role": "user", "content": "I live in Hacktown."}]})
SEARCH = ("search_memory", {"query": "Where do I live?"})
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}


def turns(messages):
    return [{"role": m.role, "content": m.content, "name": m.name, "timestamp": m.timestamp.isoformat()}
            for m in messages]


def raw_post(url, key):
    """One bare HTTP request, as any local process could send it: the status, the challenge, the JSON-RPC error."""
    headers = {"Accept": "application/json, text/event-stream"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    response = httpx.post(url, json=INITIALIZE, headers=headers, timeout=30)
    error = response.json().get("error", {}) if response.status_code >= 400 else {}
    return response.status_code, response.headers.get("www-authenticate"), error.get("message")


def refusal(url, key):
    """What the SDK's client says when it tries to read and write through ``key``; fails if it was served."""
    with pytest.raises(Refused) as refused:
        ask(url, key, HACK, SEARCH)
    return str(refused.value)


def test_over_http_only_a_key_that_may_use_the_user_reaches_her_memory(tmp_path):
    data = tmp_path / "data"
    with McpServing("--data", str(data), "--user", "alice", "--user-name", "Alice",
                    env=environment(ZEP_MEMORY_API_KEYS=KEYS_JSON)) as server:
        stored = ask(server.url, KEYS["alice"], ("add_conversation", {"messages": turns(SESSION_1)}),
                     ("add_conversation", {"messages": turns(SESSION_2)}), SEARCH)

        assert "this MCP server needs an API key: send 'Authorization: Bearer <key>'" in refusal(server.url, None)
        assert refusal(server.url, WRONG) == "unknown API key: the server does not accept it; check the key"
        assert refusal(server.url, KEYS["bob"]) == ("this API key may not read or write user 'alice'; "
                                                    "use a key bound to that user")
        assert raw_post(server.url, None)[:2] == (401, 'Bearer realm="zep-memory"')
        assert raw_post(server.url, WRONG)[:2] == (401, 'Bearer realm="zep-memory", error="invalid_token"')
        assert raw_post(server.url, KEYS["bob"])[:2] == (403, 'Bearer realm="zep-memory", error="insufficient_scope"')

        by_carol, by_admin = (ask(server.url, KEYS[who], SEARCH)[0] for who in ("carol", "admin"))
        assert "(4 API keys)" in "".join(server.err)
        assert server.stop() == 0  # SIGTERM: the data folder is closed on the way out

    assert "Alice lives in Berlin." in stored[2] and "Paris" not in stored[2]
    assert "Alice lives in Berlin." in by_carol and "Alice lives in Berlin." in by_admin
    with Memory.open(data) as memory:
        contents = [f.content for f in memory.facts("alice")]
    assert "Alice lives in Berlin." in contents and not any("Hacktown" in c for c in contents)


@pytest.mark.parametrize(("args", "env", "says"), [
    (["--data", "{data}", "--host", "0.0.0.0"], {},
     "error: refusing to listen on 0.0.0.0 without API keys: anyone who can reach it could read and write the "
     "memory of user 'alice'; give --keys FILE (or set ZEP_MEMORY_API_KEYS or ZEP_MEMORY_KEYS_FILE), or listen "
     "on 127.0.0.1"),
    (["--url", "http://127.0.0.1:9"], {"ZEP_MEMORY_API_KEY": KEYS["alice"]},
     "error: refusing to listen on 127.0.0.1 without API keys: any process on this machine that reaches it could "
     "read and write the memory of user 'alice' with the service key this server holds"),
    (["--data", "{data}"], {"ZEP_MEMORY_API_KEYS": json.dumps({"keys": [{"key": KEYS["bob"], "users": ["bob"]}]})},
     "error: none of the 1 API keys may use user 'alice', so this MCP server would refuse every request; bind a "
     'key to it ("users": ["alice"]) or add an admin key'),
], ids=["public-host-without-keys", "url-mode-without-keys-on-loopback", "no-key-for-the-user"])
def test_an_unsafe_http_start_is_refused_before_anything_is_opened(tmp_path, args, env, says):
    data = tmp_path / "data"
    done = subprocess.run([ZEP_MEMORY, "mcp", *[a.format(data=data) for a in args], "--user", "alice",
                           "--transport", "streamable-http", "--port", "0"], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL, env=environment(**env))
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(says) and done.stderr.count("\n") == 1, done.stderr
    assert not data.exists()


def test_stdio_takes_no_keys_file(tmp_path):
    done = subprocess.run([ZEP_MEMORY, "mcp", "--data", str(tmp_path / "data"), "--user", "alice", "--keys",
                           str(tmp_path / "keys.json")], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, env=environment())
    assert done.returncode == 2 and done.stderr.startswith("error: --keys is for --transport streamable-http")


def test_in_front_of_the_service_a_local_client_without_the_listeners_key_cannot_read_or_write(memory):
    """--url: the MCP server holds alice's service key; the port it opens wants a key of its own."""
    memory.conversation_end("s1", [{"role": "user", "name": "Alice", "content": "I live in Berlin."}], user_id="alice")
    listener = "mcp-listener-key-0123456789"
    listener_keys = json.dumps({"keys": [{"key": listener, "users": ["alice"], "name": "alice's host"}]})
    with serving(create_app(memory, keyring())) as url, \
            McpServing("--url", url, "--user", "alice", "--user-name", "Alice",
                       env=environment(ZEP_MEMORY_API_KEY=KEYS["alice"], ZEP_MEMORY_API_KEYS=listener_keys)) as mcp:
        no_key, service_key = refusal(mcp.url, None), refusal(mcp.url, KEYS["alice"])
        raw = raw_post(mcp.url, None)
        found = ask(mcp.url, listener, SEARCH)[0]

    assert "needs an API key" in no_key and raw[0] == 401 and raw[1].startswith("Bearer")
    assert service_key.startswith("unknown API key")  # the service's keys are not the listener's
    assert "Alice lives in Berlin." in found
    assert not any("Hacktown" in f.content for f in memory.facts("alice"))


def test_the_key_gate_needs_no_fastapi():
    """The [mcp] extra has no FastAPI: what the gate reuses of the server must import without it."""
    code = ("import sys; sys.modules['fastapi'] = None\n"
            "import zep_core.mcp_http, zep_core.mcp_server\n"
            "from zep_core.server.keys import KeyRing\n"
            "ring = KeyRing.from_json('{\"keys\": [{\"key\": \"alice-key-0123456789\", \"users\": [\"alice\"]}]}')\n"
            "zep_core.mcp_http.KeyGate(object(), ring, 'alice')\n"
            "assert 'fastapi' not in {m.split('.')[0] for m in sys.modules if sys.modules[m] is not None}\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
