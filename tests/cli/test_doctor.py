"""`doctor`, `stats`, `maintain` and `rebuild` on a damaged data folder: what is set aside, and how to repair it."""

from __future__ import annotations

import ast
import contextlib
import io
import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
from zep_core import MemoryConfig, Message
from zep_core.cli import main

from tests.cli.configs import BrokenExtractor
from tests.core.test_recovery import as_unprivileged


def error_on_missing_index() -> MemoryConfig:
    """``--config tests.cli.test_doctor:error_on_missing_index``: a lost index is an error, not a rebuild."""
    return MemoryConfig(on_missing_index="error")


def poison_a_fact(data: Path) -> str:
    """What a bad import left: a fact whose stored vector is NaN, and its outbox row."""
    conn = sqlite3.connect(data / "zep.db")
    with conn:
        fid = conn.execute("SELECT id FROM facts WHERE content LIKE '%Berlin%' LIMIT 1").fetchone()[0]
        conn.execute("UPDATE facts SET embedding = ? WHERE id = ?", [np.full(384, np.nan, np.float32).tobytes(), fid])
        conn.execute("INSERT INTO outbox(op, user_id, ref_id, payload) VALUES ('fact', 'alice', ?, ?)",
                     [fid, json.dumps({"change": "sync"})])
    conn.close()
    return fid


def test_doctor_reports_a_quarantined_index_write_and_what_to_do(cli, alice_data):
    fid = poison_a_fact(alice_data)
    context = cli("context", "Where does Alice live?", "--data", alice_data, "--user", "alice")
    assert context.code == 0 and "Berlin" in context.out  # the folder opens; the rest answers
    doctor = cli("doctor", "--data", alice_data)
    assert doctor.code == 1
    assert "quarantined index writes: 1" in doctor.out and f"fact {fid} of alice:" in doctor.out
    assert "NaN" in doctor.out and "zep-memory rebuild --reembed" in doctor.out
    assert "the stores disagree" not in doctor.out  # nothing else is wrong
    report = json.loads(cli("doctor", "--data", alice_data, "--json").out)
    assert report["ok"] is False and report["repair"] is None
    assert report["problems"]["quarantined_index_writes"][0].startswith(f"fact {fid} of alice:")
    stats = cli("stats", "--data", alice_data)
    assert "set aside     0 failed episodes, 1 quarantined index writes" in stats.out

    assert cli("rebuild", "--reembed", "--data", alice_data).code == 0
    assert cli("doctor", "--data", alice_data).out == "ok: SQLite, Chroma and Kùzu agree\n"


def test_doctor_and_stats_show_failed_episodes_and_maintain_stops_retrying_them(cli, tmp_path, open_memory):
    data = tmp_path / "data"
    memory = open_memory(data, extractor=BrokenExtractor())
    episode = memory.conversation_end("s1", [Message("I live in Paris.", name="Alice")], user_id="alice")
    memory.close()
    broken = ("--data", data, "--config", "tests.cli.configs:broken_extractor")
    assert cli("maintain", *broken).code == 1  # attempt 2 of 3: still pending
    last = cli("maintain", *broken)
    assert last.code == 0 and "1 episodes failed for good (see `zep-memory doctor`)" in last.out
    assert json.loads(cli("maintain", *broken, "--json").out)["failed"] == [episode.episode_id]

    doctor = cli("doctor", *broken)
    assert doctor.code == 0 and doctor.out.startswith("ok: SQLite, Chroma and Kùzu agree")
    assert "failed episodes: 1" in doctor.out and f"{episode.episode_id} of alice: gave up after 3" in doctor.out
    assert "unreachable" in doctor.out
    failed = json.loads(cli("doctor", *broken, "--json").out)["failed_episodes"]
    assert failed == [{"episode_id": episode.episode_id, "user_id": "alice", "session_id": "s1",
                       "error": failed[0]["error"]}] and "ConnectionError" in failed[0]["error"]
    stats = json.loads(cli("stats", *broken, "--json").out)
    assert stats["failed_episodes"] == 1 and stats["pending_episodes"] == 0


def test_doctor_reports_a_deleted_index_instead_of_rebuilding_it(cli, alice_data):
    shutil.rmtree(alice_data / "chroma")
    doctor = cli("doctor", "--data", alice_data)
    assert doctor.code == 1 and "current missing in chroma" in doctor.out and "repair: zep-memory rebuild" in doctor.out
    assert cli("rebuild", "--data", alice_data).code == 0
    assert cli("doctor", "--data", alice_data).code == 0


def test_on_missing_index_error_from_a_config_names_the_rebuild_command(cli, alice_data):
    shutil.rmtree(alice_data / "chroma")
    strict = ("--data", alice_data, "--config", "tests.cli.test_doctor:error_on_missing_index")
    refused = cli("stats", *strict)
    assert refused.code == 2 and refused.err.startswith("error: the vector index (Chroma)")
    assert f"zep-memory rebuild --data {alice_data}" in refused.err and "Traceback" not in refused.err
    rebuilt = cli("rebuild", *strict)
    assert rebuilt.code == 0 and "7 facts, 7 entities" in rebuilt.out
    assert cli("stats", *strict).code == 0


def test_stats_on_a_read_only_data_folder_is_a_clear_error(read_only_memory):
    data = read_only_memory

    def stats() -> tuple[int, str]:
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(["stats", "--data", str(data), "--config", "tests.core.test_recovery:hash_config"])
        return code, err.getvalue()

    outcome, answer = as_unprivileged(stats)
    assert outcome == "returned", answer
    code, err = ast.literal_eval(answer)
    assert code == 2 and err.startswith(f"error: the data folder {data} is read-only for this process")
    assert "make it writable" in err and "Traceback" not in err

