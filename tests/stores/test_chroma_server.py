"""Chroma server mode: a memory whose vectors live on `chroma run`, reached by URL."""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import pytest
from zep_core import Memory, MemoryConfig, Message, StoreError
from zep_core.cli import main
from zep_core.stores.vectors import ChromaVectorIndex

from tests.stores.conftest import free_port

UTC = timezone.utc


def two_sessions(memory: Memory, user: str = "alice") -> None:
    memory.conversation_end("s1", [Message("I live in Paris.", name="Alice",
                                           timestamp=datetime(2023, 5, 8, tzinfo=UTC))], user_id=user)
    memory.conversation_end("s2", [Message("I moved to Berlin.", name="Alice",
                                           timestamp=datetime(2024, 3, 1, tzinfo=UTC))], user_id=user)


@pytest.fixture
def server_memory(tmp_path, embedder, chroma_server):
    # every user gets a collection on the server (no exact tier): these tests are about the server's Chroma
    memory = Memory(MemoryConfig(data_dir=tmp_path / "data", embedder=embedder, chroma_url=chroma_server,
                                 vector_exact_below=0))
    yield memory
    memory.close()


def test_conversation_end_and_get_context_work_against_a_chroma_server(server_memory, tmp_path):
    two_sessions(server_memory)
    facts = server_memory.get_context("Where does Alice live?", user_id="alice")
    assert facts[0].content == "Alice lives in Berlin."
    assert all("Paris" not in f.content for f in facts if f.predicate == "lives_in")
    assert server_memory.check_consistency() == {}
    assert not (tmp_path / "data" / "chroma" / "chroma.sqlite3").exists()  # nothing embedded on disk
    current = {f.id for f in facts}
    on_server = ChromaVectorIndex(tmp_path / "data" / "chroma", url=server_memory.config.chroma_url)
    assert current <= on_server.ids("alice", "current")
    assert server_memory.get_context("Where did Alice live?", user_id="alice",
                                     as_of="2023-12-01")[0].content == "Alice lives in Paris."


def test_two_data_folders_share_one_server_without_seeing_each_other(tmp_path, embedder, chroma_server):
    a = Memory(MemoryConfig(data_dir=tmp_path / "a", embedder=embedder, chroma_url=chroma_server, vector_exact_below=0))
    b = Memory(MemoryConfig(data_dir=tmp_path / "b", embedder=embedder, chroma_url=chroma_server, vector_exact_below=0))
    try:
        two_sessions(a, "alice")
        b.conversation_end("s1", [Message("I live in Rome.", name="Alice")], user_id="alice")
        assert [f.content for f in b.get_context("Where does Alice live?", user_id="alice")
                if f.predicate == "lives_in"] == ["Alice lives in Rome."]
        b.rebuild()  # drops and refills b's collections only
        assert a.check_consistency() == {} and b.check_consistency() == {}
        assert a.get_context("Where does Alice live?", user_id="alice")[0].content == "Alice lives in Berlin."
    finally:
        a.close()
        b.close()


def test_the_cli_takes_a_chroma_url(tmp_path, chroma_server, capsys):
    data = str(tmp_path / "data")
    demo = tmp_path / "chat.json"
    demo.write_text('{"session_id": "s1", "user_id": "alice", "messages": '
                    '[{"role": "user", "name": "Alice", "content": "I live in Lisbon."}]}')
    assert main(["ingest", str(demo), "--data", data, "--chroma-url", chroma_server]) == 0
    capsys.readouterr()
    assert main(["context", "Where does Alice live?", "--user", "alice", "--data", data,
                 "--chroma-url", chroma_server, "--json"]) == 0
    assert "Alice lives in Lisbon." in capsys.readouterr().out
    assert main(["doctor", "--data", data, "--chroma-url", chroma_server]) == 0
    assert main(["stats", "--data", data, "--chroma-url", chroma_server]) == 0
    assert f"server {chroma_server}" in capsys.readouterr().out


def test_a_server_that_is_not_running_is_a_clear_error(tmp_path, capsys):
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(StoreError, match="chroma run"):
        ChromaVectorIndex(tmp_path / "chroma", url=url)
    chats = tmp_path / "chats.jsonl"
    chats.write_text('{"session_id": "s1", "messages": [{"role": "user", "content": "I live in Oslo."}]}\n')
    assert main(["ingest", str(chats), "--data", str(tmp_path / "data"), "--chroma-url", url]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: could not open the Chroma vector index at " + url) and err.count("\n") == 1


def test_a_malformed_url_is_refused(tmp_path):
    with pytest.raises(StoreError, match="not an http"):
        ChromaVectorIndex(tmp_path / "chroma", url="ftp://example")


def test_the_namespace_keeps_a_data_folder_apart_on_the_server(tmp_path, chroma_server):
    one = ChromaVectorIndex(tmp_path / "one", url=chroma_server)
    two = ChromaVectorIndex(tmp_path / "two", url=chroma_server)
    assert one.namespace != two.namespace
    assert ChromaVectorIndex(tmp_path / "one", url=chroma_server).namespace == one.namespace
    one.upsert("alice", "current", ["x"], np.ones((1, 4), dtype=np.float32))
    two.upsert("alice", "current", ["y"], np.ones((1, 4), dtype=np.float32))
    two.reset()
    assert one.ids("alice", "current") == {"x"} and two.ids("alice", "current") == set()
