"""Ctrl-C says what was kept and what to do; for `ingest`, running the command again resumes.

The real command in a process of its own, a real SIGINT once it has stored its first
batch: exit 130 with the message, then the same command again stores the rest and
skips what the first run stored. Nothing is lost, nothing is stored twice.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from zep_core import Memory, MemoryConfig

CONVERSATIONS = 2000


@pytest.fixture
def many(tmp_path) -> Path:
    path = tmp_path / "talk.jsonl"
    path.write_text("".join(json.dumps({"session_id": f"s{n}", "messages": [
        {"role": "user", "name": "Ada", "content": f"I planted tree number {n} in the orchard today."}]}) + "\n"
        for n in range(CONVERSATIONS)), encoding="utf-8")
    return path


def test_ctrl_c_during_ingest_says_what_was_kept_and_the_same_command_resumes(many, tmp_path, embedder):
    exe = str(Path(sys.executable).with_name("zep-memory"))
    data = tmp_path / "data"
    command = [exe, "ingest", str(many), "--data", str(data), "--user", "ada"]
    # A job started in the background of a shell (nohup, `&`, some CI runners) inherits SIGINT ignored, and
    # Python keeps it so: the command gets Ctrl-C's default, as it does in a terminal.
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    first = proc.stderr.readline()  # progress is printed as batches are stored
    assert first.startswith("ingested "), first
    proc.send_signal(signal.SIGINT)
    err = first + proc.stderr.read()
    assert proc.wait(timeout=120) == 130, err
    assert "interrupted: the conversations stored before it are kept" in err
    assert "run the same command again to resume" in err and "Traceback" not in err

    with Memory(MemoryConfig(data_dir=data, embedder=embedder)) as memory:
        kept = len(memory.episode_ids(user_id="ada"))
    assert 0 < kept < CONVERSATIONS  # interrupted part way

    again = subprocess.run(command, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert again.returncode == 0, again.stderr
    assert f"{kept} already stored" in again.stdout
    with Memory(MemoryConfig(data_dir=data, embedder=embedder)) as memory:
        assert len(memory.episode_ids(user_id="ada")) == CONVERSATIONS
