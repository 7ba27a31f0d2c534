"""Tenants over the network: a key reads and writes only its users, on every endpoint, and leaks nothing."""

from __future__ import annotations

import dataclasses
import io
import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zep_core import ConfigError, Message, NotFoundError, PermissionDeniedError
from zep_core.server import KeyRing, RemoteMemory, create_app
from zep_core.server.app import VERBS

from tests.server.conftest import HTTP, KEYS, serving
from tests.server.test_round_trip import move_alice

BOB_SECRET = "Zanzibar-7781"


@dataclass
class Req:
    """One request to ``/v1/<verb>``: a JSON body, or (import) a query string and an NDJSON body."""

    json: Any = None
    params: dict[str, str] = field(default_factory=dict)
    content: str | None = None


def _message(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def cross_tenant_requests(bob_export: str, alice_export: str) -> dict[str, list[Req]]:
    """For each verb, requests alice's key may not make: bob's data, or the whole store."""
    bob = {"user_id": "bob"}
    return {
        # (a request without user_id is the key's own user: tests/server/test_round_trip.py)
        "conversation_end": [Req({"session_id": "x", "messages": _message("I live in Rome."), **bob})],
        "conversation_end_many": [Req({"episodes": [
            {"session_id": "x", "messages": _message("I live in Rome."), "user_id": "alice"},
            {"session_id": "y", "messages": _message("I live in Oslo."), **bob}]})],
        "get_context": [Req({"input": "Where does Bob live?", **bob})],
        "context_block": [Req({"input": "Where does Bob live?", **bob})],
        "entity_history": [Req({"name": "Bob", **bob})],
        "related_entities": [Req({"name": "Bob", **bob})],
        "get_entity": [Req({"name": "Bob", **bob})],
        "cypher": [Req({"query": "MATCH (a:Entity) RETURN a.name AS name", **bob})],
        "has_user": [Req(bob)],
        "get_episode": [Req({"episode_id": "bob-1", **bob})],
        "episode_ids": [Req(bob), Req({})],
        "facts": [Req(bob)],
        "add_messages": [Req({"session_id": "bob-chat", "messages": _message("hijacked"), **bob})],
        "get_messages": [Req({"session_id": "bob-chat", **bob})],
        "unended_count": [Req({"session_id": "bob-chat", **bob})],
        "clear_messages": [Req({"session_id": "bob-chat", **bob})],
        "end_session": [Req({"session_id": "bob-chat", **bob})],
        "forget_user": [Req(bob)],
        "export_user": [Req(bob), Req({"user_id": "bob", "embeddings": True})],
        "import_user": [Req(content=bob_export), Req(params={"user_id": "alice"}, content=bob_export),
                        Req(params={"user_id": "bob", "replace": "true"}, content=alice_export),
                        Req(params={"replace": "true"}, content=bob_export)],
        "refresh_entities": [Req(bob), Req({})],
        "maintain": [Req({})],
        "flush": [Req({})],
        "rebuild": [Req({})],
        "check_consistency": [Req(bob), Req({})],
        "stats": [Req(bob), Req({})],
    }


#: Endpoints without a user to refuse: they answer every key, with nothing of another user (tested below).
NO_TENANT = {"info", "now", "users"}


def send(url: str, path: str, req: Req, who: str | None) -> httpx.Response:
    auth = {"Authorization": f"Bearer {KEYS[who]}"} if who else {}
    if req.content is not None:
        return HTTP.post(f"{url}{path}", params=req.params, content=req.content.encode(), headers=auth)
    return HTTP.post(f"{url}{path}", json=req.json, headers=auth)


def export_of(memory, user: str) -> str:
    out = io.StringIO()
    memory.export_user(user, out, embeddings=True)
    return out.getvalue()


@pytest.fixture
def two_tenants(server, remote):
    move_alice(remote("alice"))
    bob = remote("bob")
    bob.conversation_end("bob-s1", [Message("I live in Lisbon.", name="Bob")], user_id="bob", episode_id="bob-1")
    bob.add_messages("bob-chat", [Message(f"My PIN is {BOB_SECRET}.", name="Bob")], user_id="bob")
    return server


def v1_routes(app) -> Iterator[tuple[str, set[str]]]:
    for route in app.routes:
        path = getattr(route, "path", "")
        if path.startswith("/v1/"):
            yield path, set(route.methods)


def test_every_endpoint_refuses_another_tenant_with_403_and_no_data(two_tenants):
    server, memory = two_tenants, two_tenants.memory
    before = {user: export_of(memory, user) for user in ("alice", "bob")}
    bob_turns = memory.get_messages("bob-chat", user_id="bob")
    cases = cross_tenant_requests(before["bob"], before["alice"])
    checked = set()
    for path, _methods in v1_routes(server.app):
        verb = path.removeprefix("/v1/")
        if verb in NO_TENANT:
            continue
        assert verb in cases, f"{path} has no cross-tenant case here: add one, so its tenant check is tested"
        for req in cases[verb]:
            answer = send(server.url, path, req, "alice")
            assert answer.status_code == 403, (path, req, answer.text)
            body = answer.json()
            assert body["error"]["type"] == "PermissionDeniedError" and set(body) == {"error"}, body
            for secret in ("Lisbon", BOB_SECRET, "bob-1", "Berlin"):
                assert secret not in answer.text, (path, secret)
        checked.add(verb)
    assert checked == {v.name for v in VERBS} - NO_TENANT
    assert {user: export_of(memory, user) for user in ("alice", "bob")} == before  # nothing was written
    assert memory.get_messages("bob-chat", user_id="bob") == bob_turns


def test_every_endpoint_needs_a_key(two_tenants):
    for path, methods in v1_routes(two_tenants.app):
        answer = HTTP.request(sorted(methods)[0], f"{two_tenants.url}{path}", json={})
        assert answer.status_code == 401, path
        assert answer.json()["error"]["type"] == "PermissionDeniedError"


def test_another_users_episode_is_not_found_as_if_it_did_not_exist(two_tenants, remote):
    alice = remote("alice")
    with pytest.raises(NotFoundError) as theirs:
        alice.get_episode("bob-1")
    with pytest.raises(NotFoundError) as nobodys:
        alice.get_episode("no-such-episode")
    assert str(theirs.value) == str(nobodys.value).replace("no-such-episode", "bob-1")
    assert remote("bob").get_episode("bob-1").user_id == "bob"


def test_endpoints_without_a_tenant_tell_nothing_of_other_users(two_tenants, remote):
    alice = remote("alice")
    assert alice.users() == ["alice"] and remote("bob").users() == ["bob"]
    info = alice.info()
    assert info["key"] == {"name": "alice", "admin": False, "users": ["alice"]}
    assert "bob" not in json.dumps(info) and BOB_SECRET not in json.dumps(info)
    assert alice.now() == two_tenants.memory.now()
    assert remote("alice").stats("alice").keys() == {"user", "embedder"}  # not the store's totals


def test_a_key_for_two_users_uses_both_and_no_other(two_tenants, remote):
    carol = remote("carol")
    assert carol.get_context("Where does Alice live?", user_id="alice")
    carol.add_messages("c", [Message("I live in Bern.", name="Carol")], user_id="carol")
    with pytest.raises(PermissionDeniedError):
        carol.conversation_end_many([{"session_id": "s", "user_id": "carol", "messages": [("user", "hi there")]},
                                     {"session_id": "s", "user_id": "bob", "messages": [("user", "hi there")]}])
    assert not two_tenants.memory.episode_ids(user_id="carol")  # the whole call was refused


# -- the key ring ----------------------------------------------------------------------------------


GOOD = "a-good-key-0123456789"


@pytest.mark.parametrize("data, says", [
    ([], "one field, 'keys'"),
    ({"keys": []}, "non-empty list"),
    ({"keys": [{"key": "short", "users": ["alice"]}]}, "keys[0]: the key is 5 characters"),
    ({"keys": [{"key": GOOD, "users": []}]}, "'users' must be a non-empty list"),
    ({"keys": [{"key": GOOD}]}, "'users' must be a non-empty list"),
    ({"keys": [{"key": GOOD, "users": ["alice"], "admin": True}]}, "drop 'users', or 'admin'"),
    ({"keys": [{"key": GOOD, "admin": "yes"}]}, "'admin' must be true or false"),
    ({"keys": [{"key": GOOD, "users": ["alice"], "user": "x"}]}, "unknown field 'user'"),
    ({"keys": [{"key": GOOD, "users": [""]}]}, "users[0]"),
    ({"keys": [{"key": GOOD + " x", "users": ["a"]}]}, "whitespace"),
    ({"keys": [{"key": 12345678901234567, "users": ["a"]}]}, "'key' must be a string"),
    ({"keys": [{"key": GOOD, "users": ["a"]}, {"key": GOOD, "admin": True, "name": "ops"}]}, "listed twice"),
    ({"keys": [{"key": "x" * 20, "users": ["a"]}, {"key": "tiny", "admin": True, "name": "ops"}]},
     "keys[1] (ops): the key is 4"),
])
def test_a_malformed_key_list_is_a_config_error_that_names_the_entry_not_the_secret(data, says):
    with pytest.raises(ConfigError, match=says.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")
                       .replace(")", r"\)")) as caught:
        KeyRing.from_data(data, "keys.json")
    assert str(caught.value).startswith("keys.json")
    assert GOOD not in str(caught.value) and "tiny" not in str(caught.value)


def test_keys_come_from_one_environment_variable(tmp_path):
    text = json.dumps({"keys": [{"key": GOOD, "users": ["alice"]}]})
    (tmp_path / "keys.json").write_text(text)
    assert KeyRing.from_env({}) is None
    assert KeyRing.from_env({"ZEP_MEMORY_API_KEYS": text}).authenticate(GOOD).users == {"alice"}
    assert KeyRing.from_env({"ZEP_MEMORY_KEYS_FILE": str(tmp_path / "keys.json")}).authenticate(GOOD).may("alice")
    with pytest.raises(ConfigError, match="set one of them"):
        KeyRing.from_env({"ZEP_MEMORY_API_KEYS": text, "ZEP_MEMORY_KEYS_FILE": str(tmp_path / "keys.json")})
    with pytest.raises(ConfigError, match="not valid JSON"):
        KeyRing.from_env({"ZEP_MEMORY_API_KEYS": "{keys"})
    ring = KeyRing.from_file(tmp_path / "keys.json")
    assert ring.authenticate("a-good-key-012345678") is None and ring.authenticate("") is None
    assert GOOD not in repr(ring)


# -- the property: random keys, random users, random verbs; nothing of another user ever comes back -----

USERS = ("u0", "u1", "u2", "u3")
PLACE = {"u0": "Quillmere", "u1": "Brandvik", "u2": "Tessaloo", "u3": "Orvenna"}
NAME = {"u0": "Ulla", "u1": "Ivor", "u2": "Tamsin", "u3": "Osric"}
GRANTS = [frozenset(c) for n in (1, 2) for c in itertools.combinations(USERS, n)] + ["admin"]
OPS = ("get_context", "context_block", "facts", "entity_history", "related_entities", "get_messages",
       "add_messages", "conversation_end", "has_user", "export_records", "episode_ids", "get_episode", "cypher",
       "users", "stats")


def key_of(grant) -> str:
    return "key-" + ("admin" if grant == "admin" else "-".join(sorted(grant))) + "-0123456789abcdef"


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            yield from strings(getattr(value, f.name))
    elif isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from strings(v)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            yield from strings(v)


def run_op(client: RemoteMemory, op: str, user: str) -> Any:
    place, name = PLACE.get(user, "Nowhere"), NAME.get(user, "Nobody")
    if op == "get_context":
        return client.get_context(f"Where does {name} live?", user_id=user)
    if op == "context_block":
        return client.context_block(f"Where does {name} live?", user_id=user)
    if op == "facts":
        return client.facts(user)
    if op == "entity_history":
        return client.entity_history(name, user_id=user)
    if op == "related_entities":
        return client.related_entities(name, user_id=user)
    if op == "get_messages":
        return client.get_messages("chat", user_id=user)
    if op == "add_messages":
        return client.add_messages("chat", [Message(f"I miss {place}.", name=name)], user_id=user)
    if op == "conversation_end":
        return client.conversation_end("more", [Message(f"I visited {place} again.", name=name)], user_id=user)
    if op == "has_user":
        return client.has_user(user)
    if op == "export_records":
        return list(client.export_records(user))
    if op == "episode_ids":
        return client.episode_ids(user_id=user)
    if op == "get_episode":
        return client.get_episode(f"{user}-e0")
    if op == "cypher":
        return client.cypher("MATCH (a:Entity)-[r:FACT]->(b:Entity) RETURN a.name, b.name", user_id=user)
    if op == "users":
        return client.users()
    if op == "stats":
        return client.stats(user)
    raise AssertionError(op)


@pytest.fixture
def many_tenants(make_memory):
    memory = make_memory()
    for user in USERS:
        memory.conversation_end("first", [Message(f"I live in {PLACE[user]}.", name=NAME[user])], user_id=user,
                                episode_id=f"{user}-e0")
        memory.add_messages("chat", [Message(f"My secret word is {PLACE[user]}.", name=NAME[user])], user_id=user)
    ring = KeyRing.from_data({"keys": [{"key": key_of(g), "admin": True} if g == "admin"
                                       else {"key": key_of(g), "users": sorted(g)} for g in GRANTS]})
    with serving(create_app(memory, ring)) as url:
        clients = {g: RemoteMemory(url, api_key=key_of(g)) for g in GRANTS}
        yield memory, clients
        for client in clients.values():
            client.close()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(st.sampled_from(GRANTS), st.sampled_from(OPS), st.sampled_from(USERS + ("nobody",))),
                      min_size=1, max_size=6))
def test_random_keys_and_users_never_see_another_users_memory(many_tenants, steps):
    memory, clients = many_tenants
    leaks = []
    for grant, op, user in steps:
        allowed = set(USERS) | {"nobody"} if grant == "admin" else set(grant)
        before = [(len(memory.get_messages("chat", user_id=u)), memory.episode_ids(user_id=u)) for u in USERS]
        try:
            got, outcome = run_op(clients[grant], op, user), "ok"
        except PermissionDeniedError:
            got, outcome = None, "denied"
        except NotFoundError:
            got, outcome = None, "not found"
        if op not in ("users", "get_episode") and user not in allowed:
            assert outcome == "denied", (grant, op, user)
            after = [(len(memory.get_messages("chat", user_id=u)), memory.episode_ids(user_id=u)) for u in USERS]
            assert after == before, (grant, op, user)  # a refused request changed nothing
            continue
        assert outcome != "denied", (grant, op, user)
        if outcome == "not found":  # an unknown user, or an episode of a user the key may not use
            assert user == "nobody" or (op == "get_episode" and user not in allowed), (grant, op, user)
            continue
        visible = allowed if op == "users" else {user}
        others = [text for u in USERS if u not in visible for text in (PLACE[u], NAME[u], f"{u}-e0")]
        leaks += [(grant, op, user, other) for text in strings(got) for other in others if other in text]
        if op == "users":
            leaks += [(grant, op, u) for u in got if u not in allowed]
    assert leaks == []
