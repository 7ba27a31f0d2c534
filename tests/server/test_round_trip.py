"""Every endpoint through RemoteMemory answers what the same call on the served Memory answers in-process."""

from __future__ import annotations

import asyncio
import inspect
import io
import socket
import subprocess
import sys
import threading
from datetime import datetime, timedelta, timezone

import pytest
from zep_core import Entity, Episode, Fact, IngestResult, MaintenanceReport, Memory, Message, StoreError
from zep_core.demo import SESSION_1, SESSION_2
from zep_core.server import RemoteMemory
from zep_core.transfer import ExportCounts, ImportReport

from tests.core.test_public_api import FACADE
from tests.server.conftest import HTTP

UTC = timezone.utc
QUESTION = "Where does Alice live now?"


def move_alice(remote):
    first = remote.conversation_end("session-1", SESSION_1, user_id="alice", episode_id="session-1")
    second = remote.conversation_end("session-2", SESSION_2, user_id="alice", episode_id="session-2")
    return first, second


def test_paris_to_berlin_through_remote_memory_is_what_the_library_answers(server, remote):
    alice = remote("alice")
    first, second = move_alice(alice)
    assert isinstance(first, IngestResult) and first.status == second.status == "done"
    assert "Alice lives in Paris." in [f.content for f in second.superseded]
    memory = server.memory

    facts = alice.get_context(QUESTION, user_id="alice")
    assert facts == memory.get_context(QUESTION, user_id="alice")
    assert [(f.score, f.semantic_score, f.lexical_score, f.graph_score) for f in facts] == [
        (f.score, f.semantic_score, f.lexical_score, f.graph_score)
        for f in memory.get_context(QUESTION, user_id="alice")]
    assert facts[0].content == "Alice lives in Berlin." and facts[0].is_current
    assert "Alice lives in Paris." not in [f.content for f in facts]

    history = alice.entity_history("Alice", user_id="alice")
    assert history == memory.entity_history("Alice", user_id="alice")
    paris = next(f for f in history if f.content == "Alice lives in Paris.")
    berlin = next(f for f in history if f.content == "Alice lives in Berlin.")
    assert paris.superseded_by == berlin.id and paris.valid_until == berlin.valid_from
    assert all(isinstance(f, Fact) and f.user_id == "alice" for f in history)

    before_the_move = datetime(2023, 12, 1, tzinfo=UTC)
    then = alice.get_context("Where does Alice live?", user_id="alice", as_of=before_the_move)
    assert then == memory.get_context("Where does Alice live?", user_id="alice", as_of=before_the_move)
    assert "Alice lives in Paris." in [f.content for f in then]
    assert alice.context_block(QUESTION, user_id="alice", limit=5) == memory.context_block(
        QUESTION, user_id="alice", limit=5)
    assert "Alice lives in Berlin." in alice.context_block(QUESTION, user_id="alice")


def test_queries_and_records_round_trip(server, remote):
    alice, memory = remote("alice"), server.memory
    move_alice(alice)
    related = alice.related_entities("Alice", user_id="alice", limit=3)
    assert related == memory.related_entities("Alice", user_id="alice", limit=3)
    assert related and all(isinstance(e, Entity) for e in related)
    assert alice.get_entity("Alice", user_id="alice") == memory.get_entity("Alice", user_id="alice")
    query = "MATCH (a:Entity {name: $n})-[r:FACT]->(b:Entity) RETURN b.name AS place, r.current AS current"
    rows = alice.cypher(query, {"n": "Alice"}, user_id="alice")
    assert rows == memory.cypher(query, {"n": "Alice"}, user_id="alice")
    assert {"place": "Berlin", "current": True} in rows and {"place": "Paris", "current": False} in rows
    assert alice.has_user("alice") is True
    assert alice.facts("alice") == memory.facts("alice")
    assert alice.episode_ids(user_id="alice") == ["session-1", "session-2"]
    assert alice.episode_ids(user_id="alice", status="done") == memory.episode_ids(user_id="alice", status="done")
    episode = alice.get_episode("session-1")
    assert isinstance(episode, Episode) and episode == memory.get_episode("session-1")
    assert [m.id for m in episode.messages] == ["s1-1", "s1-2", "s1-3"]


def test_users_and_has_user(server, remote):
    move_alice(remote("alice"))
    remote("bob").conversation_end("s", [Message("I live in Lisbon.", name="Bob")], user_id="bob")
    assert remote("admin").users() == server.memory.users() == ["alice", "bob"]
    assert remote("alice").users() == ["alice"]
    assert remote("carol").users() == ["alice"]  # carol's key may use carol too, but carol has no memory
    assert remote("carol").has_user("carol") is False


def test_conversation_end_many_round_trips_and_reports_progress(server, remote):
    seen = []
    results = remote("alice").conversation_end_many([
        {"session_id": "s1", "user_id": "alice", "episode_id": "a1", "messages": [Message("I live in Paris.",
                                                                                          name="Alice")]},
        {"session_id": "s2", "user_id": "alice", "episode_id": "a2",
         "messages": [Message("I moved to Berlin.", name="Alice", timestamp=datetime(2024, 3, 1, tzinfo=UTC))]},
    ], batch_size=1, progress=lambda i, r: seen.append((i, r.episode_id)))
    assert [r.status for r in results] == ["done", "done"] and seen == [(0, "a1"), (1, "a2")]
    assert "Alice lives in Paris." in [f.content for f in results[1].superseded]
    assert server.memory.episode_ids(user_id="alice") == ["a1", "a2"]
    again = remote("alice").conversation_end_many([{"session_id": "s1", "user_id": "alice", "episode_id": "a1",
                                                     "messages": [("user", "I live in Paris.")]}])
    assert [r.status for r in again] == ["duplicate"]


def test_the_session_buffer_round_trips(server, remote):
    alice, memory = remote("alice"), server.memory
    alice.add_messages("chat", [Message("I live in Lisbon.", name="Alice"), Message("Nice.", role="assistant")],
                       user_id="alice")
    alice.add_messages("chat", [{"role": "user", "content": "I work at Acme.", "name": "Alice"}], user_id="alice")
    turns = alice.get_messages("chat", user_id="alice")
    assert turns == memory.get_messages("chat", user_id="alice")
    assert [m.content for m in turns] == ["I live in Lisbon.", "Nice.", "I work at Acme."]
    assert all(m.timestamp == memory.now() for m in turns)  # stamped by the server's clock
    assert alice.get_messages("chat", user_id="alice", limit=1) == turns[-1:]
    assert alice.unended_count("chat", user_id="alice") == 3
    result = alice.end_session("chat", user_id="alice")
    assert isinstance(result, IngestResult) and result.status == "done"
    assert {f.object for f in result.added} >= {"Lisbon", "Acme"}
    assert alice.unended_count("chat", user_id="alice") == 0
    assert alice.end_session("chat", user_id="alice") is None
    alice.clear_messages("chat", user_id="alice")
    assert alice.get_messages("chat", user_id="alice") == []
    assert "Alice lives in Lisbon." in [f.content for f in alice.facts("alice")]  # learned facts stay


def test_export_is_byte_for_byte_the_library_export_and_imports_back(server, remote):
    alice, memory = remote("alice"), server.memory
    move_alice(alice)
    alice.add_messages("chat", [Message("A line\u2028separator and a \x1c file separator.", name="Alice")],
                       user_id="alice")
    local = io.StringIO()
    memory.export_user("alice", local, embeddings=True)
    out = io.StringIO()
    counts = alice.export_user("alice", out, embeddings=True)
    assert out.getvalue() == local.getvalue()
    assert counts == ExportCounts(episodes=2, entities=memory.stats("alice")["user"]["entities"],
                                  facts=len(memory.facts("alice")), chat_messages=1)
    assert list(alice.export_records("alice")) == list(memory.export_records("alice"))
    facts_before = memory.facts("alice")

    alice.forget_user("alice")
    assert not memory.has_user("alice")
    report = alice.import_user(io.StringIO(out.getvalue()), user_id="alice")
    assert isinstance(report, ImportReport)
    assert (report.user_id, report.episodes, report.facts, report.chat_messages, report.reembedded) == (
        "alice", 2, len(facts_before), 1, False)
    assert memory.facts("alice") == facts_before
    replaced = alice.import_user(out.getvalue().split("\n"), replace=True)  # not splitlines(): U+2028
    assert replaced.replaced is True and memory.facts("alice") == facts_before


def test_maintenance_verbs_round_trip(server, remote):
    admin, memory = remote("admin"), server.memory
    move_alice(remote("alice"))
    assert remote("alice").refresh_entities(user_id="alice", max_age=timedelta(0)) > 0
    assert remote("alice").refresh_entities(user_id="alice", max_age=timedelta(0)) == 0  # nothing changed since
    report = admin.maintain()
    assert isinstance(report, MaintenanceReport) and report.still_pending == () and report.failed == ()
    assert isinstance(admin.flush(), int)
    assert admin.check_consistency() == {} and remote("alice").check_consistency("alice") == {}
    stats = admin.stats("alice")
    assert stats["records"] == memory.stats("alice")["records"] and stats["user"]["episodes"] == 2
    assert remote("alice").stats("alice") == {"user": memory.stats("alice")["user"],
                                              "embedder": memory.stats()["embedder"]}
    rebuilt = admin.rebuild()
    assert rebuilt["facts"] == len(memory.facts("alice"))
    assert admin.get_context(QUESTION, user_id="alice") == memory.get_context(QUESTION, user_id="alice")


def test_now_and_config_mirror_the_served_memory(server, remote, clock):
    alice, memory = remote("alice"), server.memory
    assert alice.now() == memory.now() == clock.now
    clock.advance(hours=5)
    assert alice.now() == clock.now
    config = alice.config
    for name in ("default_speaker", "assistant_speaker", "context_limit", "semantic_threshold", "hop_scores",
                 "max_message_chars", "max_messages_per_episode", "single_valued_predicates",
                 "entity_refresh_interval"):
        assert getattr(config, name) == getattr(memory.config, name), name
    assert alice.info()["key"] == {"name": "alice", "admin": False, "users": ["alice"]}


def test_remote_memory_has_the_signature_of_memory_for_every_verb():
    """The same parameters and defaults, but one: where Memory's ``user_id`` is "default", a RemoteMemory's is
    None, the key's user (the server refuses a request that names no user unless its key is bound to one)."""
    for name in sorted(FACADE - {"open"}):
        remote_sig, local_sig = inspect.signature(getattr(RemoteMemory, name)), inspect.signature(getattr(Memory,
                                                                                                          name))
        local = [(p.name, p.kind, None if p.name == "user_id" and p.default == "default" else p.default)
                 for p in local_sig.parameters.values()]
        assert [(p.name, p.kind, p.default) for p in remote_sig.parameters.values()] == local, name


def test_every_endpoint_has_its_remote_memory_method():
    from zep_core.server.app import VERBS

    assert all(callable(getattr(RemoteMemory, verb.name, None)) for verb in VERBS)
    assert {verb.name for verb in VERBS} >= FACADE - {"open", "close", "now", "export_records"}


def test_async_twins_answer_as_the_sync_calls(server, remote):
    alice = remote("alice")

    async def run():
        async with RemoteMemory(server.url, api_key="alice-key-0123456789abcdef") as client:
            first = await client.aconversation_end("session-1", SESSION_1, user_id="alice", episode_id="session-1")
            facts = await client.aget_context(QUESTION, user_id="alice")
            block = await client.acontext_block(QUESTION, user_id="alice")
            return first, facts, block

    first, facts, block = asyncio.run(run())
    assert first.status == "done"
    assert asyncio.run(alice.aget_context(QUESTION, user_id="alice")) == facts  # a client used by one loop,
    assert asyncio.run(alice.aget_context(QUESTION, user_id="alice")) == facts  # then by another
    assert facts == alice.get_context(QUESTION, user_id="alice") == server.memory.get_context(QUESTION,
                                                                                              user_id="alice")
    assert block == server.memory.context_block(QUESTION, user_id="alice")


def test_health_and_readiness(server):
    assert HTTP.get(f"{server.url}/healthz").json() == {"status": "ok"}
    assert HTTP.get(f"{server.url}/readyz").json() == {"status": "ready"}
    server.memory.close()
    answer = HTTP.get(f"{server.url}/readyz")
    assert answer.status_code == 503 and answer.json()["error"]["message"].startswith("not ready")
    assert HTTP.get(f"{server.url}/healthz").status_code == 200


def test_the_openapi_document_describes_every_verb(server):
    doc = HTTP.get(f"{server.url}/openapi.json").json()
    from zep_core.server.app import VERBS

    assert {f"/v1/{v.name}" for v in VERBS} | {"/v1/info", "/v1/now"} <= set(doc["paths"])
    schemas = doc["components"]["schemas"]
    assert {"FactOut", "EntityOut", "IngestResultOut", "ErrorBody", "ContextRequest"} <= set(schemas)


def test_the_fact_model_of_the_openapi_document_is_the_serializers_dict(server, remote):
    from zep_core.serialize import fact_to_dict
    from zep_core.server.wire import FactOut

    move_alice(remote("alice"))
    for fact in server.memory.entity_history("Alice", user_id="alice"):
        assert set(fact_to_dict(fact, scores=True)) <= set(FactOut.model_fields)
        FactOut.model_validate(fact_to_dict(fact, scores=True))
    assert set(FactOut.model_fields) - set(fact_to_dict(fact, scores=True)) <= {"newer_fact_id"}


# -- a lost answer, a dead server, a server that never answers ---------------------------------------


class DropFirstAnswers:
    """A TCP proxy in front of the server that delivers every request but loses the first ``n`` answers."""

    def __init__(self, upstream: str, n: int) -> None:
        host, port = upstream.removeprefix("http://").split(":")
        self.upstream, self.left = (host, int(port)), n
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream = socket.create_connection(self.upstream)
        drop = self.left > 0
        self.left -= drop
        threading.Thread(target=self._pipe, args=(client, upstream), daemon=True).start()
        answer = upstream.recv(65536)
        try:
            while answer and not drop:
                client.sendall(answer)
                answer = upstream.recv(65536)
        except OSError:
            pass
        for end in (client, upstream):  # shutdown, not just close: it wakes the pipe thread and sends the FIN
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            end.close()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def close(self) -> None:
        self.listener.close()


def test_a_lost_answer_is_retried_without_storing_the_episode_twice(server):
    proxy = DropFirstAnswers(server.url, n=1)
    try:
        with RemoteMemory(proxy.url, api_key="alice-key-0123456789abcdef", retries=2) as client:
            result = client.conversation_end("s", [Message("I live in Oslo.", name="Alice")], user_id="alice",
                                             episode_id="oslo")
    finally:
        proxy.close()
    assert result.status == "duplicate"  # the first attempt stored it; its answer was lost
    assert server.memory.episode_ids(user_id="alice") == ["oslo"]
    assert [f.content for f in server.memory.facts("alice")].count("Alice lives in Oslo.") == 1


def test_a_lost_answer_without_an_episode_id_is_not_sent_again(server):
    proxy = DropFirstAnswers(server.url, n=1)
    try:
        with RemoteMemory(proxy.url, api_key="alice-key-0123456789abcdef", retries=3) as client:
            with pytest.raises(StoreError, match="may have been applied"):
                client.conversation_end("s", [Message("I live in Oslo.", name="Alice")], user_id="alice")
    finally:
        proxy.close()
    assert len(server.memory.episode_ids(user_id="alice")) == 1  # sent once, stored once


def test_a_server_that_is_not_there_is_a_store_error_naming_the_url():
    with socket.create_server(("127.0.0.1", 0)) as taken:
        url = f"http://127.0.0.1:{taken.getsockname()[1]}"
    with RemoteMemory(url, retries=1) as client, pytest.raises(StoreError, match="cannot reach") as caught:
        client.users()
    assert url in str(caught.value)


def test_a_server_that_never_answers_times_out():
    with socket.create_server(("127.0.0.1", 0)) as silent:
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        with RemoteMemory(url, timeout=0.2, retries=1) as client, pytest.raises(StoreError, match="did not answer"):
            client.get_context("anything", user_id="alice")


def test_importing_the_package_loads_no_server_dependency():
    code = ("import sys, zep_core, zep_core.server; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('fastapi', 'uvicorn', 'httpx', 'starlette')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_missing_server_extra_says_how_to_install_it():
    code = ("import sys; sys.modules['httpx'] = None\n"
            "from zep_core import ConfigError\n"
            "try:\n    from zep_core.server import RemoteMemory\nexcept ConfigError as exc:\n    print(exc)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "pip install -e '.[server]' in a clone of zep-memory" in out and "docs/install.md" in out



def test_a_request_without_user_id_is_the_keys_user_or_refused(server, remote):
    """No shared default user over HTTP: a key bound to one user may leave user_id out; any other key may not."""
    from zep_core import Message, ValidationError

    alice, admin = remote("alice"), remote("admin")
    alice.conversation_end("s1", [Message("I live in Lisbon.", name="Alice")])

    assert "Alice lives in Lisbon." in [f.content for f in server.memory.get_context("Where does Alice live?",
                                                                                     user_id="alice")]
    assert "Alice lives in Lisbon." in [f.content for f in alice.get_context("Where does Alice live?")]
    assert not server.memory.has_user("default")
    with pytest.raises(ValidationError, match="user_id is required: this key may use any user"):
        admin.get_context("Where does Alice live?")
    with pytest.raises(ValidationError, match="user_id is required: this key may use 2 users"):
        remote("carol").conversation_end("s1", [Message("I live in Rome.", name="Carol")])
    assert not server.memory.has_user("default")
