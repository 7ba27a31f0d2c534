"""How a verb request reaches the memory: VerbRouter in front of FastAPI, worker threads, quick reads.

A ``POST /v1/<verb>`` with a JSON body is answered by :class:`~zep_core.server.app.VerbRouter`
without FastAPI's routing; a body of another JSON media type (``application/vnd.x+json``) goes
down FastAPI's own route for the verb. Both must answer alike, refusals included.
"""

from __future__ import annotations

import json
import re
import threading

import pytest
from fastapi import FastAPI
from zep_core import Message
from zep_core.providers.rules import RuleExtractor
from zep_core.server import RemoteMemory, create_app

from .conftest import HTTP, KEYS, keyring, serving

ROUTE = "application/vnd.zep+json"  # FastAPI reads it as JSON; VerbRouter leaves it to FastAPI


def _post(url: str, verb: str, body: object, *, who: str | None, media: str) -> tuple[int, object]:
    headers = {"Content-Type": media}
    if who is not None:
        headers["Authorization"] = f"Bearer {KEYS[who]}"
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    answer = HTTP.post(f"{url}/v1/{verb}", content=raw, headers=headers)
    return answer.status_code, answer.json()


#: (verb, body, key): a success, each refusal, a malformed body, a write.
REQUESTS = [
    ("get_context", {"input": "Where does Alice live?", "user_id": "alice"}, "alice"),
    ("get_context", {"input": "Where does Alice live?", "user_id": "alice"}, "bob"),  # 403
    ("get_context", {"input": "Where does Alice live?", "user_id": "alice"}, None),  # 401
    ("get_context", {"input": "Where?", "user_id": "alice", "limt": 3}, "alice"),  # 422: unknown field
    ("get_context", b"{not json", "alice"),  # 422: not JSON
    ("get_entity", {"name": "Nobody", "user_id": "alice"}, "alice"),  # 404
    ("entity_history", {"name": "Alice", "user_id": "alice"}, "alice"),
    ("maintain", {}, "alice"),  # 403: an admin verb
    ("add_messages", {"session_id": "t", "user_id": "alice", "messages": [{"role": "user", "content": "hi"}]},
     "alice"),
]


def test_the_router_and_fastapis_route_answer_every_request_alike(server):
    server.memory.conversation_end("s1", [Message("I live in Paris.", name="Alice")], user_id="alice")
    for verb, body, who in REQUESTS:
        fast = _post(server.url, verb, body, who=who, media="application/json")
        routed = _post(server.url, verb, body, who=who, media=ROUTE)
        assert fast[0] == routed[0], (verb, who, fast, routed)
        if fast[0] == 200:
            assert fast[1] == routed[1], (verb, who)
        else:
            assert fast[1]["error"]["type"] == routed[1]["error"]["type"], (verb, who, fast, routed)
    assert len(server.memory.get_messages("t", user_id="alice")) == 2  # both paths stored their turn
    # what the memory answers in process is what both paths sent
    facts = [f.content for f in server.memory.get_context("Where does Alice live?", user_id="alice")]
    assert [f["content"] for f in _post(server.url, *REQUESTS[0][:2], who="alice", media=ROUTE)[1]["result"]] == facts


def test_a_body_that_is_not_json_is_refused_by_fastapi_with_a_readable_error(server):
    status, body = _post(server.url, "get_context", b"input=Where", who="alice", media="text/plain")
    assert status == 422 and body["error"]["type"] == "ValidationError"
    assert "malformed request" in body["error"]["message"]


def test_every_answer_says_how_long_the_verb_took(server):
    server.memory.conversation_end("s1", [Message("I live in Paris.", name="Alice")], user_id="alice")
    answer = HTTP.post(f"{server.url}/v1/get_context", json={"input": "Where?", "user_id": "alice"},
                       headers={"Authorization": f"Bearer {KEYS['alice']}"})
    assert answer.status_code == 200
    found = re.fullmatch(r"verb;dur=(\d+\.\d{3})", answer.headers["server-timing"])
    assert found and float(found.group(1)) > 0


def test_the_verbs_answer_under_a_mount_prefix(memory):
    memory.conversation_end("s1", [Message("I live in Paris.", name="Alice")], user_id="alice")
    outer, inner = FastAPI(), create_app(memory, keyring())
    outer.mount("/memory", inner)
    with serving(outer) as url, RemoteMemory(f"{url}/memory", api_key=KEYS["alice"]) as alice:
        assert [f.content for f in alice.get_context("Where does Alice live?", user_id="alice")] == [
            f.content for f in memory.get_context("Where does Alice live?", user_id="alice")]
        assert HTTP.get(f"{url}/memory/v1/info").status_code == 401  # the mounted app's own routes, too
    inner.state.workers.shutdown(wait=True)


class _Gated:
    """The rule extractor, made to wait in session ``slow`` until the test lets it go on."""

    def __init__(self) -> None:
        self.inner, self.entered, self.gate = RuleExtractor(), threading.Event(), threading.Event()

    def extract(self, messages, context):
        if any("Lisbon" in m.content for m in messages):
            self.entered.set()
            assert self.gate.wait(60), "the test never let the extraction go on"
        return self.inner.extract(messages, context)


@pytest.mark.parametrize("reader", ["alice", "bob"])
def test_a_read_is_answered_while_a_write_is_still_in_flight(make_memory, reader):
    """A write waiting on its model must not hold up reads: of another user, or of the same user."""
    extractor = _Gated()
    memory = make_memory(extractor=extractor)
    for user in ("alice", "bob"):
        memory.conversation_end("s0", [Message("I live in Paris.", name=user.title())], user_id=user)
    app = create_app(memory, keyring())
    written: list = []
    with serving(app) as url, RemoteMemory(url, api_key=KEYS["alice"]) as alice, \
            RemoteMemory(url, api_key=KEYS[reader]) as reads:
        writer = threading.Thread(target=lambda: written.append(alice.conversation_end(
            "slow", [Message("I moved to Lisbon.", name="Alice")], user_id="alice", episode_id="slow")))
        writer.start()
        try:
            assert extractor.entered.wait(60)
            answer = reads.get_context(f"Where does {reader.title()} live?", user_id=reader)
            assert written == [] and writer.is_alive()  # the read came back while the write still waited
            assert any("Paris" in f.content for f in answer), answer
        finally:
            extractor.gate.set()
            writer.join(60)
        assert written and written[0].status == "done"
        assert any("Lisbon" in f.content for f in alice.get_context("Where does Alice live?", user_id="alice"))
