"""Errors over the wire: the library's class and message come back, with a status each; never a traceback or a path."""

from __future__ import annotations

import io
import json
import logging

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zep_core import (
    ConfigError,
    InvariantError,
    Message,
    NotFoundError,
    PermissionDeniedError,
    QueryError,
    ValidationError,
    ZepMemoryError,
)
from zep_core import errors as zep_errors
from zep_core.server import RemoteMemory, create_app

from tests.server.conftest import HTTP, KEYS, keyring, serving
from tests.server.test_round_trip import move_alice


def headers(who: str | None = "admin") -> dict[str, str]:
    return {"Authorization": f"Bearer {KEYS[who]}"} if who else {}


def post(url: str, verb: str, body=None, who: str | None = "admin", **options) -> httpx.Response:
    return HTTP.post(f"{url}/v1/{verb}", json=body, headers=headers(who), **options)


#: Calls the library refuses, each run on the Memory in-process and through the server.
REFUSED = [
    ("an unknown user", lambda m: m.entity_history("Alice", user_id="nobody"), NotFoundError),
    ("an unknown entity", lambda m: m.entity_history("Nobody", user_id="alice"), NotFoundError),
    ("an unknown related entity", lambda m: m.related_entities("Nobody", user_id="alice"), NotFoundError),
    ("an unknown episode", lambda m: m.get_episode("no-such-episode"), NotFoundError),
    ("forgetting an unknown user", lambda m: m.forget_user("nobody"), NotFoundError),
    ("exporting an unknown user", lambda m: list(m.export_records("nobody")), NotFoundError),
    ("limit 0", lambda m: m.get_context("Where?", user_id="alice", limit=0), ValidationError),
    ("a limit too large", lambda m: m.related_entities("Alice", user_id="alice", limit=10**6), ValidationError),
    ("a date that is not one", lambda m: m.get_context("Where?", user_id="alice", as_of="next Tuesday"),
     ValidationError),
    ("a threshold out of range", lambda m: m.get_context("Where?", user_id="alice", threshold=1.5), ValidationError),
    ("an unknown status", lambda m: m.episode_ids(user_id="alice", status="lost"), ValidationError),
    ("no messages", lambda m: m.conversation_end("s", [], user_id="alice"), ValidationError),
    ("a message over max_message_chars", lambda m: m.conversation_end("s", [Message("x" * 100_001)],
                                                                      user_id="alice"), ValidationError),
    ("an empty session id", lambda m: m.add_messages(" ", [Message("hello")], user_id="alice"), ValidationError),
    ("an episode id of another user", lambda m: m.conversation_end("s", [Message("I live in Rome.")],
                                                                   user_id="bob", episode_id="session-1"),
     ValidationError),
    ("a negative batch", lambda m: m.rebuild(batch_size=0), ValidationError),
    ("a write clause in cypher", lambda m: m.cypher("MATCH (a:Entity) SET a.name = 'x' RETURN a", user_id="alice"),
     QueryError),
    ("two cypher statements", lambda m: m.cypher("MATCH (a) RETURN a; MATCH (b) RETURN b", user_id="alice"),
     QueryError),
    ("a cypher syntax error", lambda m: m.cypher("MATCH (a:Entity RETURN a", user_id="alice"), QueryError),
    ("a file that is not an export", lambda m: m.import_user(['{"type": "fact"}']), ValidationError),
]


def test_the_remote_error_is_the_librarys_error_with_its_message(server, remote):
    admin, memory = remote("admin"), server.memory
    move_alice(remote("alice"))
    data_dir = str(memory.data_dir)
    for what, call, expected in REFUSED:
        with pytest.raises(expected) as local:
            call(memory)
        with pytest.raises(expected) as far:
            call(admin)
        assert type(far.value) is type(local.value), what
        assert str(far.value) == " ".join(str(local.value).replace(data_dir, "<data>").split()), what
        assert data_dir not in str(far.value), what


def test_an_invariant_broken_in_an_import_is_an_invariant_error(server, remote):
    alice, memory = remote("alice"), server.memory
    move_alice(alice)
    lines = []
    for line in io.StringIO(_export(alice, "alice")):
        row = json.loads(line)
        if row["type"] == "fact" and row["valid_until"] is None and not lines[-1:] == ["broken"]:
            row["valid_until"] = "1999-01-01T00:00:00+00:00"
            lines.append("broken")
        lines.append(json.dumps(row))
    lines = [line for line in lines if line != "broken"]
    with pytest.raises(InvariantError) as local:
        memory.import_user(lines, replace=True)
    with pytest.raises(InvariantError) as far:
        alice.import_user(lines, replace=True)
    assert str(far.value) == str(local.value) and "valid_until" in str(far.value)
    assert memory.episode_ids(user_id="alice") == ["session-1", "session-2"]  # nothing was written


def _export(client, user):
    out = io.StringIO()
    client.export_user(user, out)
    return out.getvalue()


def test_keys_the_server_does_not_accept_get_401(server):
    refused = ((None, None, "needs an API key"), ("wrong", "wrong-key-0123456789abcdef", "unknown API key"))
    for who, key, says in refused:
        with RemoteMemory(server.url, api_key=key) as client, pytest.raises(PermissionDeniedError, match=says):
            client.get_context("Where?", user_id="alice")
        answer = HTTP.post(f"{server.url}/v1/get_context", json={"input": "Where?", "user_id": "alice"},
                            headers={"Authorization": f"Bearer {key}"} if key else {})
        assert answer.status_code == 401 and answer.headers["www-authenticate"] == "Bearer", who
        assert answer.json()["error"]["type"] == "PermissionDeniedError"
    basic = HTTP.post(f"{server.url}/v1/users", json={}, auth=("alice", KEYS["alice"]))
    assert basic.status_code == 401


def test_a_body_over_the_limit_gets_413_and_changes_nothing(memory):
    with serving(create_app(memory, keyring(), max_body_bytes=4096)) as url:
        with RemoteMemory(url, api_key=KEYS["alice"]) as alice:
            with pytest.raises(ValidationError, match="over the server's limit of 4096 bytes"):
                alice.conversation_end("s", [Message("I live in Paris. " * 500, name="Alice")], user_id="alice")
            assert alice.conversation_end("s", [Message("I live in Paris.", name="Alice")], user_id="alice")
        big = json.dumps({"session_id": "s", "user_id": "alice", "messages": [{"content": "x" * 10_000}]})
        declared = HTTP.post(f"{url}/v1/add_messages", content=big, headers={**headers("alice"),
                                                                              "Content-Type": "application/json"})
        chunked = HTTP.post(f"{url}/v1/add_messages", content=iter([big.encode()[:3000], big.encode()[3000:]]),
                             headers={**headers("alice"), "Content-Type": "application/json"})
        for answer in (declared, chunked):
            assert answer.status_code == 413
            assert answer.json()["error"]["type"] == "ValidationError"
    assert len(memory.episode_ids(user_id="alice")) == 1
    assert memory.get_messages("s", user_id="alice") == []


#: Requests FastAPI refuses before any verb runs: (verb, body, where the message points).
MALFORMED = [
    ("get_context", {"input": "Where?", "user_id": "alice", "limt": 3}, "limt"),
    ("get_context", {"input": 5, "user_id": "alice"}, "input"),
    ("get_context", {"input": "Where?", "user_id": "alice", "limit": "5"}, "limit"),
    ("conversation_end", {"session_id": "s", "user_id": "alice"}, "messages"),
    ("conversation_end", {"session_id": "s", "user_id": "alice", "messages": [{"role": "user"}]},
     "messages.0.content"),
    ("conversation_end_many", {"episodes": [{"session_id": "s", "messages": [], "extra": 1}]}, "episodes.0.extra"),
]


def test_a_malformed_request_is_a_readable_validation_error(server):
    for verb, body, where in MALFORMED:
        answer = post(server.url, verb, body)
        assert answer.status_code == 422, (verb, body)
        error = answer.json()["error"]
        assert error["type"] == "ValidationError" and where in error["message"], error
    for raw in (b"{not json", b'{"max_age_s": NaN}', b'{"max_age_s": 1e308}'):
        refused = HTTP.post(f"{server.url}/v1/refresh_entities", content=raw, headers={
            **headers(), "Content-Type": "application/json"})
        assert refused.status_code == 422 and refused.json()["error"]["type"] == "ValidationError", raw
    assert HTTP.get(f"{server.url}/v1/get_context", headers=headers()).status_code == 405
    unknown = post(server.url, "get_contexts", {})
    assert unknown.status_code == 404 and unknown.json()["error"]["type"] == "NotFoundError"


def test_an_argument_json_cannot_carry_is_refused_before_sending(server, remote):
    with pytest.raises(ValidationError, match="cannot be sent to the server as JSON"):
        remote("alice").cypher("RETURN $x AS x", {"x": object()}, user_id="alice")


def test_an_unexpected_failure_is_an_internal_error_logged_by_the_server_only(server, remote, monkeypatch, caplog):
    secret_place = f"{server.memory.data_dir}/zep.db"

    def broken():
        raise RuntimeError(f"disk at {secret_place} caught fire")

    monkeypatch.setattr(server.memory, "users", broken)
    with caplog.at_level(logging.ERROR, logger="zep_core.server"):
        answer = post(server.url, "users", {})
        with pytest.raises(ZepMemoryError) as caught:
            remote("admin").users()
    assert answer.status_code == 500
    assert answer.json() == {"error": {"type": "ZepMemoryError", "message": "internal error"}}
    assert type(caught.value) is ZepMemoryError and str(caught.value) == "internal error"
    logged = [r for r in caplog.records if r.exc_info and "caught fire" in str(r.exc_info[1])]
    assert logged, "the server logs what went wrong"


def test_no_error_body_carries_a_traceback_or_a_path(server, remote, monkeypatch, tmp_path):
    move_alice(remote("alice"))
    bodies = [post(server.url, verb, body) for verb, body, _ in MALFORMED]
    bodies += [post(server.url, "export_user", {"user_id": "nobody"}),  # the library names the data folder
               post(server.url, "get_context", {"input": "x", "user_id": "alice", "as_of": "never"}),
               post(server.url, "cypher", {"query": "MATCH (a:Entity RETURN a", "user_id": "alice"}),
               post(server.url, "cypher", {"query": "CALL show_tables() RETURN *", "user_id": "alice"}),
               post(server.url, "get_context", {"input": "x", "user_id": "bob"}, who="alice"),
               post(server.url, "users", {}, who=None),
               HTTP.post(f"{server.url}/v1/import_user", content=b"\xff\xfe not utf-8", headers=headers()),
               HTTP.post(f"{server.url}/v1/import_user", content=b"{}\n", headers=headers())]
    monkeypatch.setattr(server.memory, "facts", lambda user_id: 1 / 0)
    bodies.append(post(server.url, "facts", {"user_id": "alice"}))
    public = set(zep_errors.__all__)
    for answer in bodies:
        assert answer.status_code >= 400
        body = answer.json()
        assert set(body) == {"error"} and set(body["error"]) == {"type", "message"}, body
        assert body["error"]["type"] in public, body
        text = answer.text
        for leak in ("Traceback", 'File "', str(tmp_path), str(server.memory.data_dir), "site-packages", ".py"):
            assert leak not in text, (leak, text)


def test_a_client_with_bad_settings_is_a_config_error():
    for options in ({"url": "127.0.0.1:8765"}, {"url": "http://127.0.0.1:8765", "api_key": "has space"},
                    {"url": "http://127.0.0.1:8765", "timeout": 0}, {"url": "http://127.0.0.1:8765", "retries": -1}):
        with pytest.raises(ConfigError):
            RemoteMemory(**options)


# -- hostile bodies: whatever arrives, the answer is the library's error or a shape error, never a 500 ------

JSON = st.recursive(st.none() | st.booleans() | st.integers(min_value=-2**70, max_value=2**70)
                    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                    max_leaves=6)
PLAUSIBLE = st.sampled_from(["alice", "Alice", "session-1", "s1-1", "", " ", "\x00", "2024-01-01", "MATCH (a) RETURN a",
                             "done", 0, -1, 10**19, 1.5, True, [], {}, [{"content": "I live in Rome."}],
                             [{"role": "user", "content": ""}], [["user", "hi"]]])


def _fields(verb) -> list[str]:
    return list(verb.request.model_fields)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_hostile_body_never_makes_an_internal_error(hostile_server, data):
    from zep_core.server.app import VERBS

    verb = data.draw(st.sampled_from([v for v in VERBS if v.ndjson != "in"]))
    keys = data.draw(st.just(_fields(verb)) | st.lists(st.sampled_from([*_fields(verb), "junk"]), unique=True,
                                                       max_size=4))
    body = {k: data.draw(PLAUSIBLE | JSON) for k in keys}
    answer = HTTP.post(f"{hostile_server}/v1/{verb.name}", json=body, headers=headers())
    assert answer.status_code < 500, (verb.name, body, answer.text)
    if answer.status_code >= 400:
        assert set(answer.json()["error"]) == {"type", "message"}


@pytest.fixture
def hostile_server(memory):
    move_alice_in_process(memory)
    with serving(create_app(memory, keyring())) as url:
        yield url


def move_alice_in_process(memory):
    from zep_core.demo import SESSION_1, SESSION_2

    memory.conversation_end("session-1", SESSION_1, user_id="alice", episode_id="session-1")
    memory.conversation_end("session-2", SESSION_2, user_id="alice", episode_id="session-2")
