"""`export` / `import`: a user's memory leaves as JSONL and comes back identical, without re-extraction."""

from __future__ import annotations

import json

import numpy as np
import pytest
from zep_core import Message
from zep_core.transfer import export_user, import_user

from tests.cli.configs import BrokenExtractor
from tests.core.fakes import HashEmbedder
from tests.stores.state import stored_fact_vector
from tests.stores.state import user_records as snapshot


@pytest.fixture
def rich_data(alice_data, open_memory):
    """Alice's demo memory plus unended chat turns, a pending episode and an unrefreshed entity.

    Opened with end_left_sessions=False throughout, or closing would end the waiting chat turns."""
    memory = open_memory(alice_data, end_left_sessions=False)
    memory.add_messages("chat-1", [Message("I adopted a cat called Tom.", name="Alice", id="c1"),
                                   Message("Lovely!", role="assistant", id="c2")], user_id="alice")
    memory.end_session("chat-1", user_id="alice")
    memory.add_messages("chat-1", [Message("I started learning Go.", name="Alice")], user_id="alice")
    memory.close()
    broken = open_memory(alice_data, extractor=BrokenExtractor(), end_left_sessions=False)
    assert broken.conversation_end("s3", [Message("I live in Oslo now.", name="Alice")],
                                   user_id="alice").status == "pending"
    broken.close()
    return alice_data


@pytest.mark.parametrize("embeddings", [True, False], ids=["with-embeddings", "re-embedding"])
def test_export_forget_import_restores_identical_facts(cli, rich_data, tmp_path, open_memory, embeddings):
    memory = open_memory(rich_data, end_left_sessions=False)
    before = snapshot(memory, "alice")
    memory.close()
    export = tmp_path / "alice.jsonl"
    flags = ["--embeddings"] if embeddings else []
    result = cli("export", "--data", rich_data, "--user", "alice", "--out", export, *flags)
    assert result.code == 0, result.err
    assert "exported 4 episodes" in result.out and "3 chat turns" in result.out
    assert cli("forget", "alice", "--data", rich_data, "--yes").code == 0
    imported = cli("import", export, "--data", rich_data, "--json")
    assert imported.code == 0, imported.err
    report = json.loads(imported.out)
    assert report["reembedded"] is (not embeddings) and report["facts"] == len(before["facts"])

    memory = open_memory(rich_data, end_left_sessions=False)
    after = snapshot(memory, "alice")
    assert after["facts"] == before["facts"]  # every field: ids, validity, superseded_by, sources, times
    assert after == before
    assert memory.check_consistency() == {}
    assert memory.get_context("Where does Alice live?", user_id="alice")[0].content == "Alice lives in Berlin."
    assert memory.get_episode(before["episodes"][-1].id).status == "pending"
    memory.close()
    again = tmp_path / "again.jsonl"
    assert cli("export", "--data", rich_data, "--user", "alice", "--out", again, *flags).code == 0
    assert again.read_bytes() == export.read_bytes()


def test_import_into_another_folder_moves_a_user(cli, alice_data, tmp_path, open_memory):
    export = tmp_path / "alice.jsonl"
    assert cli("export", "--data", alice_data, "--user", "alice", "--out", export, "--embeddings").code == 0
    target = tmp_path / "elsewhere"
    assert cli("import", export, "--data", target).code == 0
    assert snapshot(open_memory(target), "alice") == snapshot(open_memory(alice_data), "alice")


def test_export_to_stdout_and_its_format(cli, alice_data):
    result = cli("export", "--data", alice_data, "--user", "alice")
    lines = [json.loads(x) for x in result.out.splitlines()]
    assert lines[0] == {"type": "zep-memory-export", "version": 1, "user_id": "alice", "embedder": None}
    assert [x["type"] for x in lines[1:]] == ["episode"] * 2 + ["entity"] * 7 + ["fact"] * 7
    paris = next(x for x in lines if x["type"] == "fact" and x["content"] == "Alice lives in Paris.")
    assert paris["superseded_by"] and paris["valid_until"] and paris["source_message_ids"] == ["s1-1"]
    assert {"created_at", "expired_at", "confidence", "subject_id", "object_id", "episode_id"} <= set(paris)
    alice = next(x for x in lines if x["type"] == "entity" and x["name"] == "Alice")
    assert alice["summary"] and "alice" in alice["aliases"]
    assert "exported 2 episodes, 7 entities, 7 facts" in result.err


def test_import_refuses_a_user_that_has_memory_unless_replace(cli, alice_data, tmp_path, open_memory):
    export = tmp_path / "alice.jsonl"
    assert cli("export", "--data", alice_data, "--user", "alice", "--out", export).code == 0
    memory = open_memory(alice_data)
    memory.conversation_end("s9", [Message("I moved to Madrid.", name="Alice")], user_id="alice")
    memory.close()
    refused = cli("import", export, "--data", alice_data)
    assert refused.code == 2 and "already has memory" in refused.err and "--replace" in refused.err
    replaced = cli("import", export, "--data", alice_data, "--replace")
    assert replaced.code == 0 and "replacing the previous memory" in replaced.out
    memory = open_memory(alice_data)
    assert memory.get_context("Where does Alice live?", user_id="alice")[0].content == "Alice lives in Berlin."
    assert "s9" not in {memory.get_episode(i).session_id for i in memory.episode_ids(user_id="alice")}
    assert memory.check_consistency() == {}


def test_embeddings_from_another_model_are_replaced_by_new_ones(tmp_path, open_memory, embedder):
    source = open_memory(tmp_path / "hash", embedder=HashEmbedder())
    source.conversation_end("s", [Message("I live in Paris.", name="Alice")], user_id="alice")
    path = tmp_path / "alice.jsonl"
    with open(path, "w", encoding="utf-8") as out:
        export_user(source, "alice", out, embeddings=True)
    target = open_memory(tmp_path / "local")
    with open(path, encoding="utf-8") as lines:
        report = import_user(target, lines)
    assert report.reembedded
    fact = target.entity_history("Alice", user_id="alice")[0]
    stored = stored_fact_vector(target, "alice", fact.id)
    assert np.allclose(stored, embedder.embed([fact.content])[0], atol=1e-6)
    assert target.check_consistency() == {}


@pytest.mark.parametrize("mutate, message", [
    (lambda lines: lines[1:], "line 1 must be the 'zep-memory-export' header"),
    (lambda lines: [lines[0].replace('"version":1', '"version":9')] + lines[1:], "version 9 is not supported"),
    (lambda lines: lines[:2] + ["{broken"] + lines[2:], "line 3 is not valid JSON"),
    (lambda lines: lines + ['{"type":"fact","user_id":"mallory"}'], "belongs to user 'mallory'"),
    (lambda lines: lines + ['{"type":"gossip"}'], "unknown record type 'gossip'"),
    (lambda lines: [x.replace('"confidence":', '"confidence":7,"x":') for x in lines], "confidence"),
])
def test_damaged_exports_are_refused_before_anything_is_written(cli, alice_data, tmp_path, mutate, message):
    export = tmp_path / "alice.jsonl"
    assert cli("export", "--data", alice_data, "--user", "alice", "--out", export).code == 0
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text("\n".join(mutate(export.read_text().splitlines())) + "\n")
    target = tmp_path / "target"
    result = cli("import", damaged, "--data", target)
    assert result.code == 2 and result.err.startswith("error: ") and message in result.err
    assert not target.exists()  # nothing written, not even the new folder


def test_import_under_another_user_id_is_refused(cli, alice_data, tmp_path):
    export = tmp_path / "alice.jsonl"
    assert cli("export", "--data", alice_data, "--user", "alice", "--out", export).code == 0
    result = cli("import", export, "--data", tmp_path / "t", "--user", "bob")
    assert result.code == 2 and "holds the memory of 'alice', not 'bob'" in result.err


def test_exporting_an_unknown_user_is_an_error_and_leaves_no_file(cli, alice_data, tmp_path):
    out = tmp_path / "nobody.jsonl"
    result = cli("export", "--data", alice_data, "--user", "nobody", "--out", out)
    assert result.code == 2 and "unknown user 'nobody'" in result.err
    assert not out.exists() and not (tmp_path / "nobody.jsonl.tmp").exists()
