"""The three stores stay in agreement: outbox replay, rebuild, forget_user, locks."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from datetime import timedelta

import pytest
from zep_core import ConfigError, Memory, MemoryConfig, Message, NotFoundError
from zep_core.stores.vectors import collection_name
from zep_core.tenant import Tenant

from tests.conftest import every_user_in_chroma
from tests.core.fakes import HashEmbedder, ScriptedExtractor, said

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

@pytest.fixture
def make_memory(make_memory):
    """Every user's vectors in Chroma: these tests are about Chroma's collections and process."""
    return every_user_in_chroma(make_memory)



def talk(memory, user, *lines, session="s"):
    return memory.conversation_end(session, [Message(t, name=user.capitalize()) for t in lines], user_id=user)


@pytest.mark.parametrize("index_writes", ["sync", "background"])
def test_outbox_is_replayed_after_a_crash_between_sqlite_commit_and_index_writes(tmp_path, index_writes):
    data = tmp_path / "data"
    child = textwrap.dedent(f"""
        import os, sys, time
        from zep_core import Memory, MemoryConfig, Message
        from zep_core.sync import IndexSync
        memory = Memory(MemoryConfig(data_dir={str(data)!r}, index_writes={index_writes!r}))
        memory.conversation_end("s", [Message("I live in Paris.", name="Alice")], user_id="alice")
        memory.flush()
        IndexSync.drain = lambda self: os._exit(17)   # die before any index write of episode 2
        memory.conversation_end("s", [Message("I moved to Berlin.", name="Alice")], user_id="alice")
        time.sleep(30)  # background mode: the indexer thread dies on its next pass
    """)
    proc = subprocess.run([sys.executable, "-c", child], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 17, proc.stderr
    memory = Memory(MemoryConfig(data_dir=data))
    try:
        assert memory.stats()["pending_index_writes"] == 0
        assert memory.check_consistency() == {}
        assert "Berlin" in memory.context_block("Where does Alice live?", user_id="alice")
        assert "Paris" not in memory.context_block("Where does Alice live?", user_id="alice")
        by_words = memory.get_context("Berlin", user_id="alice", threshold=1.0)  # the lexical index alone
        assert "Alice lives in Berlin." in [f.content for f in by_words] and by_words[0].lexical_score > 0
    finally:
        memory.close()


def test_rebuild_recreates_chroma_and_kuzu_equal_to_before(memory):
    talk(memory, "alice", "I live in Paris.", "I work at Acme and I like jazz.")
    talk(memory, "alice", "I moved to Berlin.")
    talk(memory, "bob", "I live in Rome.")
    memory.flush()
    stores = memory._stores

    def indexed(u):
        return stores.vectors.ids(Tenant.of(u), "current"), stores.graph.snapshot(u)

    before = {u: indexed(u) for u in ("alice", "bob")}
    context_before = memory.context_block("Where does Alice live?", user_id="alice")
    counts = memory.rebuild()
    after = {u: indexed(u) for u in ("alice", "bob")}
    assert after == before and counts["facts"] > 0
    assert memory.check_consistency() == {}
    assert memory.context_block("Where does Alice live?", user_id="alice") == context_before


def test_a_different_embedder_on_reopen_is_a_clear_error(make_memory, tmp_path):
    first = make_memory(tmp_path / "d")
    talk(first, "alice", "I live in Paris.")
    first.close()
    with pytest.raises(ConfigError, match="built with the embedder local:.*re-embed"):
        make_memory(tmp_path / "d", embedder=HashEmbedder())


def test_reembed_on_embedder_change_keeps_the_memory_usable(make_memory, tmp_path):
    first = make_memory(tmp_path / "d")
    talk(first, "alice", "I live in Paris.")
    first.close()
    second = make_memory(tmp_path / "d", embedder=HashEmbedder(), on_embedder_mismatch="reembed")
    assert second.check_consistency() == {}
    assert any(f.object == "Paris" for f in second.get_context("Alice lives in Paris", user_id="alice"))
    second.close()
    make_memory(tmp_path / "d", embedder=HashEmbedder()).close()  # the new identity was recorded


def test_forget_user_leaves_nothing_behind_in_any_store(memory):
    talk(memory, "alice", "I live in Paris.", "I like jazz.")
    talk(memory, "bob", "I live in Rome.")
    memory.add_messages("chat", [Message("hello there")], user_id="alice")
    memory.forget_user("alice")
    db = memory._stores.records.db
    for table in ("episodes", "messages", "facts", "entities", "aliases", "session_messages"):
        assert db.execute(f"SELECT count(*) FROM {table} WHERE user_id = 'alice'").fetchone()[0] == 0, table
    names = set(memory._stores.vectors.collection_ids())
    assert not any(collection_name("alice", k) in names for k in ("current", "history", "entity"))
    nodes, edges = memory._stores.graph.snapshot("alice")
    assert nodes == set() and edges == {}
    assert memory._stores.graph.snapshot("bob")[0]
    assert not memory.has_user("alice")
    assert memory.get_context("Paris", user_id="alice") == []
    with pytest.raises(NotFoundError):
        memory.entity_history("Alice", user_id="alice")
    assert memory.get_context("Where does Bob live?", user_id="bob")


def test_refresh_entities_touches_only_stale_entities(memory, clock):
    talk(memory, "alice", "I live in Paris.")
    assert memory.refresh_entities() == 2  # Alice and Paris: never summarized
    alice = memory.get_entity("Alice", user_id="alice")
    assert "Paris" in alice.summary and alice.fact_count == 1 and alice.last_updated == clock.now
    assert memory.refresh_entities() == 0  # nothing changed
    clock.advance(hours=1)
    talk(memory, "alice", "I like jazz.")
    assert memory.refresh_entities() == 1  # jazz is new; Alice changed but was refreshed < 6 h ago
    assert "jazz" not in memory.get_entity("Alice", user_id="alice").summary
    clock.advance(hours=6)
    assert memory.refresh_entities() == 1  # Alice only: Paris and jazz did not change since
    assert memory.get_entity("Paris", user_id="alice").last_updated < clock.now
    alice = memory.get_entity("Alice", user_id="alice")
    assert "jazz" in alice.summary and alice.last_updated == clock.now


def test_auto_refresh_runs_on_a_background_schedule(make_memory):
    import time

    memory = make_memory(auto_refresh=True, entity_refresh_interval=timedelta(milliseconds=100))
    talk(memory, "alice", "I live in Paris.")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not memory.get_entity("Alice", user_id="alice").summary:
        time.sleep(0.05)
    assert "Paris" in memory.get_entity("Alice", user_id="alice").summary


def test_a_second_process_gets_an_immediate_error_naming_the_folder_and_holder(memory):
    code = ("from zep_core import Memory, MemoryConfig, StoreLockedError\n"
            f"try:\n    Memory(MemoryConfig(data_dir={str(memory.data_dir)!r}))\n"
            "except StoreLockedError as e:\n    print('LOCKED', e)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert "LOCKED" in out.stdout and str(memory.data_dir) in out.stdout
    assert f"process {os.getpid()}" in out.stdout
    with pytest.raises(ConfigError, match="in use by this process with other settings"):  # in process: shared,
        Memory(MemoryConfig(data_dir=memory.data_dir))  # and this one asks for another embedder than the open one


def test_importing_zep_core_creates_no_files_and_loads_no_frameworks(tmp_path):
    code = ("import sys, zep_core\n"
            "bad = [m for m in sys.modules if m.split('.')[0] in "
            "('langchain', 'langchain_core', 'llama_index', 'chromadb', 'kuzu', 'onnxruntime', 'openai')]\n"
            "print('MODULES', bad)\n")
    env = {**os.environ, "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=60)
    assert "MODULES []" in out.stdout, out.stdout + out.stderr
    assert list(tmp_path.iterdir()) == []


def test_scripted_contradiction_survives_reopen(make_memory, tmp_path):
    scripted = ScriptedExtractor()
    scripted.push(said("Alice", "lives_in", "Paris"))
    m = make_memory(tmp_path / "d", extractor=scripted)
    talk(m, "alice", "x y z")
    m.close()
    again = make_memory(tmp_path / "d")
    assert [f.object for f in again.entity_history("Alice", user_id="alice")] == ["Paris"]


def _journal_mode(data) -> str:
    import sqlite3

    conn = sqlite3.connect(str(data / "chroma" / "chroma.sqlite3"))
    try:
        return conn.execute("PRAGMA journal_mode").fetchone()[0]
    finally:
        conn.close()


def _chroma_log_plans(data) -> list[str]:
    """How Chroma's own SQLite plans its two statements on the write log (chroma 1.5: rust/log/src/sqlite_log.rs)."""
    import sqlite3

    conn = sqlite3.connect(str(data / "chroma" / "chroma.sqlite3"))
    try:
        return [conn.execute("EXPLAIN QUERY PLAN " + sql, ["persistent://t/n/c", 1]).fetchall()[0][3] for sql in (
            "SELECT seq_id, id, operation, vector, encoding, metadata FROM embeddings_queue WHERE topic = ? "
            "AND seq_id > ? ORDER BY seq_id ASC",
            "DELETE FROM embeddings_queue WHERE topic = ? AND seq_id < ?")]
    finally:
        conn.close()


def test_chroma_metadata_is_in_wal_mode_with_its_log_indexed_when_created_and_after_every_reopen(make_memory,
                                                                                                tmp_path, clock):
    import sqlite3

    data = tmp_path / "data"
    memory = make_memory(data)
    talk(memory, "alice", "I live in Paris.")
    memory.close()
    assert _journal_mode(data) == "wal"
    assert all("zep_embeddings_queue_topic" in plan for plan in _chroma_log_plans(data))  # a new folder: at once
    conn = sqlite3.connect(str(data / "chroma" / "chroma.sqlite3"))  # as a folder from an older version has it
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute("DROP INDEX zep_embeddings_queue_topic")
    conn.close()
    assert _journal_mode(data) == "delete"
    assert not any("zep_embeddings_queue_topic" in plan for plan in _chroma_log_plans(data))
    memory = make_memory(data)
    clock.advance(days=1)
    talk(memory, "alice", "I moved to Berlin.", session="s2")
    assert "Berlin" in memory.context_block("Where does Alice live?", user_id="alice")
    memory.close()
    assert _journal_mode(data) == "wal"
    assert all("zep_embeddings_queue_topic" in plan for plan in _chroma_log_plans(data))
    assert not (data / "chroma" / "chroma.sqlite3-wal").exists()  # closed: the log is folded back in


def test_a_folder_from_an_older_version_loses_its_unread_entity_collections(make_memory, tmp_path):
    import sqlite3

    from zep_core.stores.vectors import ChromaVectorIndex

    data = tmp_path / "data"
    memory = make_memory(data)
    talk(memory, "alice", "I live in Paris.")
    memory.close()
    index = ChromaVectorIndex(data / "chroma")  # what an older version wrote beside the fact vectors
    index.client.create_collection(collection_name("alice", "entity"), embedding_function=None).add(
        ids=["e1"], embeddings=[[1.0] * 384])
    index.close()
    conn = sqlite3.connect(str(data / "zep.db"))  # and with no record of having dropped them
    with conn:
        conn.execute("DELETE FROM meta WHERE key = 'retired_vectors'")
    conn.close()
    memory = make_memory(data)
    names = set(memory._stores.vectors.collection_ids())
    assert collection_name("alice", "entity") not in names and collection_name("alice", "current") in names
    assert memory.check_consistency() == {} and "Paris" in memory.context_block("Where do I live?", user_id="alice",
                                                                                speaker="Alice")


def test_an_old_folders_retired_collections_are_dropped_once_and_as_of_still_finds_the_past(make_memory, tmp_path,
                                                                                           clock):
    """Older versions kept entity-name and superseded-fact vectors in Chroma; as_of now searches SQLite instead."""
    memory = make_memory(tmp_path / "d")
    talk(memory, "alice", "I live in Paris.")
    clock.advance(days=30)
    talk(memory, "alice", "I moved to Berlin.")
    memory.flush()
    paris = next(f for f in memory.facts("alice") if f.object == "Paris")
    assert paris.valid_until is not None  # superseded by Berlin
    vectors = memory._stores.vectors
    unit = memory.embedder.embed_query("an old vector")[None, :]
    for kind in ("entity", "history"):  # what an older version left behind
        vectors.upsert(Tenant.of("alice"), kind, ["old-" + kind], unit)
    memory._stores.records.set_meta("retired_vectors", "dropped")  # the mark of a version that retired "entity" only
    memory.close()

    again = make_memory(tmp_path / "d")
    names = set(again._stores.vectors.collection_ids())
    assert collection_name("alice", "current") in names
    assert not {collection_name("alice", k) for k in ("entity", "history")} & names
    assert again.check_consistency() == {}
    then = again.get_context("Where does Alice live?", user_id="alice", as_of=paris.valid_from + timedelta(days=1))
    now = again.get_context("Where does Alice live?", user_id="alice")
    assert [f.object for f in then if f.predicate == "lives_in"] == ["Paris"]
    assert [f.object for f in now if f.predicate == "lives_in"] == ["Berlin"]
    assert again.stats()["vectors"] == {"current": len([f for f in again.facts("alice") if f.is_current])}
