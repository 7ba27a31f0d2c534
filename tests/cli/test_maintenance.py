"""`stats`, `maintain`, `rebuild`, `doctor`, `forget`: inspecting and repairing a data folder."""

from __future__ import annotations

import json

from zep_core import Message

from tests.cli.configs import BrokenExtractor
from tests.core.fakes import HashEmbedder
from tests.stores.state import vector_ids, wipe_vector_index


def test_stats_counts_every_store_and_the_disk(cli, alice_data, open_memory):
    result = cli("stats", "--data", alice_data, "--user", "alice", "--json")
    assert result.code == 0
    stats = json.loads(result.out)
    library = open_memory(alice_data).stats()
    assert stats["records"] == library["records"] and stats["facts"] == library["facts"]
    assert stats["graph"] == library["graph"]
    assert stats["chroma"]["current"] == library["facts"]["current"]
    assert library["facts"]["superseded"] > 0  # searched in SQLite: no vectors of theirs in Chroma
    assert set(stats["chroma"]) == {"url", "current"}  # nor of entity names
    assert stats["pending_episodes"] == 0 and stats["pending_index_writes"] == 0
    assert stats["embedder"] == {"name": "local:all-MiniLM-L6-v2-int8", "dimension": 384}
    disk = stats["disk_bytes"]
    assert disk["sqlite"] > 0 and disk["chroma"] > 0 and disk["graph"] > 0 and disk["total"] >= disk["sqlite"]
    assert stats["user"]["episodes"] == 2 and stats["users"] == 1


def test_stats_text(cli, alice_data):
    out = cli("stats", "--data", alice_data).out
    assert "embedder      local:all-MiniLM-L6-v2-int8 (384-d)" in out and "pending       0 episodes" in out
    # alice has a Chroma collection (the fixture's vector_exact_below=0): her vectors are there
    assert ("vectors       6 (one per current fact): 0 searched exactly in SQLite, 6 in Chroma, "
            "the collections of 1 users") in out, out


def test_stats_of_a_small_folder_says_its_vectors_are_in_sqlite_and_there_is_no_chroma(cli, tmp_path, open_memory):
    with open_memory(tmp_path / "small") as memory:  # a user under vector_exact_below: no collection, no chroma/
        memory.conversation_end("s1", [Message("I live in Paris. I like jazz.", name="Ann")], user_id="ann")

    out = cli("stats", "--data", tmp_path / "small").out

    assert "no Chroma folder" in out.splitlines()[0] and "Chroma 0 B" not in out
    assert "vectors       2 (one per current fact): 2 searched exactly in SQLite, 0 in Chroma" in out, out


def test_maintain_exit_codes_follow_pending_episodes(cli, tmp_path, open_memory):
    data = tmp_path / "data"
    memory = open_memory(data, extractor=BrokenExtractor())
    result = memory.conversation_end("s1", [Message("I live in Paris.", name="Alice")], user_id="alice")
    assert result.status == "pending"
    memory.close()

    still = cli("maintain", "--data", data, "--config", "tests.cli.configs:broken_extractor", "--json")
    assert still.code == 1
    report = json.loads(still.out)
    assert report["retried"] == 1 and report["still_pending"] == [result.episode_id]

    done = cli("maintain", "--data", data)  # the default rule-based extractor works
    assert done.code == 0 and "1 done, 0 still pending" in done.out
    assert open_memory(data).get_context("Where does Alice live?", user_id="alice")[0].content == \
        "Alice lives in Paris."


def test_maintain_refreshes_stale_entity_summaries(cli, tmp_path, open_memory, clock):
    data = tmp_path / "data"
    memory = open_memory(data)
    memory.conversation_end("s1", [Message("I live in Paris.", name="Alice")], user_id="alice")
    assert memory.get_entity("Alice", user_id="alice").summary == ""
    memory.close()
    result = cli("maintain", "--data", data, "--json")
    assert result.code == 0 and json.loads(result.out)["entities_refreshed"] >= 2
    assert "Paris" in open_memory(data).get_entity("Alice", user_id="alice").summary


def test_maintain_exits_2_on_error(cli, tmp_path, open_memory):
    open_memory(tmp_path / "data")  # holds the folder
    result = cli("maintain", "--data", tmp_path / "data")
    assert result.code == 2 and result.err.startswith("error: ")


def test_doctor_finds_a_damaged_index_and_rebuild_repairs_it(cli, alice_data, open_memory):
    assert cli("doctor", "--data", alice_data).out == "ok: SQLite, Chroma and Kùzu agree\n"
    memory = open_memory(alice_data)
    wipe_vector_index(memory)  # the vector index is lost (a wiped Chroma folder or server)
    memory.close()
    broken = cli("doctor", "--data", alice_data)
    assert broken.code == 1
    assert "current missing in chroma: 6" in broken.out and "repair: zep-memory rebuild --data" in broken.out
    as_json = json.loads(cli("doctor", "--data", alice_data, "--json").out)
    assert as_json["ok"] is False and as_json["repair"].startswith("zep-memory rebuild")
    rebuilt = cli("rebuild", "--data", alice_data)
    assert rebuilt.code == 0 and "7 facts, 7 entities" in rebuilt.out
    assert cli("doctor", "--data", alice_data).code == 0


def test_rebuild_reembed_moves_a_folder_to_the_current_embedder(cli, tmp_path, open_memory):
    data = tmp_path / "data"
    memory = open_memory(data, embedder=HashEmbedder())
    memory.conversation_end("s1", [Message("I live in Paris.", name="Alice")], user_id="alice")
    memory.close()
    assert cli("context", "Where does Alice live?", "--data", data, "--user", "alice").code == 2
    result = cli("rebuild", "--reembed", "--data", data, "--json")
    assert result.code == 0 and json.loads(result.out)["reembedded"] is True
    stats = json.loads(cli("stats", "--data", data, "--json").out)
    assert stats["embedder"]["name"] == "local:all-MiniLM-L6-v2-int8"
    top = json.loads(cli("context", "Where does Alice live?", "--data", data, "--user", "alice", "--json").out)
    assert top[0]["content"] == "Alice lives in Paris." and top[0]["semantic_score"] > 0.6


def test_forget_removes_the_user_from_every_store(cli, alice_data, open_memory):
    memory = open_memory(alice_data)
    memory.conversation_end("s", [Message("I live in Rome.", name="Bob")], user_id="bob")
    memory.close()
    result = cli("forget", "alice", "--data", alice_data, "--yes")
    assert result.code == 0 and "forgot alice" in result.out
    memory = open_memory(alice_data)
    assert not memory.has_user("alice") and memory.has_user("bob")
    assert vector_ids(memory, "alice", "current") == set() and memory.check_consistency() == {}
    memory.close()
    again = cli("forget", "alice", "--data", alice_data, "--yes")
    assert again.code == 2 and again.err.startswith("error: unknown user 'alice'")
