"""Chroma in a child process: what a memory gets by default, and what happens when the child or its parent dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from zep_core.errors import StoreError
from zep_core.stores.vector_process import ChromaProcess, available
from zep_core.stores.vectors import ChromaVectorIndex

pytestmark = pytest.mark.skipif(not available(), reason="this platform has no fork() (Windows), so Chroma runs "
                                                        "in the memory's process (tested elsewhere)")

ROOT = Path(__file__).resolve().parents[2]
DIM = 8


def unit(i: int) -> np.ndarray:
    v = np.zeros((1, DIM), dtype=np.float32)
    v[0, i] = 1.0
    return v


def gone(pid: int, within_s: float = 60.0) -> bool:
    """Whether process ``pid`` has exited (a zombie counts: it runs no more), waiting up to ``within_s``."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        if state in ("Z", "X"):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def talk(memory, text: str, user: str = "ann") -> None:
    result = memory.conversation_end("s", [{"role": "user", "name": "Ann", "content": text}], user_id=user)
    assert result.status == "done", result.error


def test_chromas_runtime_in_the_child_has_one_worker_unless_the_environment_says_otherwise(tmp_path):
    index = ChromaProcess(tmp_path / "chroma")
    try:
        environ = Path(f"/proc/{index.pid}/environ").read_bytes().split(b"\0")
        expected = os.environ.get("TOKIO_WORKER_THREADS", "1")
        assert f"TOKIO_WORKER_THREADS={expected}".encode() in environ
        index.upsert("ann", "current", ["f1"], unit(0))
        assert index.query("ann", "current", unit(0)[0], 1)[0][0] == "f1"
    finally:
        index.close()


def test_a_memory_runs_chroma_in_a_child_by_default_and_in_process_when_asked(make_memory, tmp_path):
    memory = make_memory(tmp_path / "a")
    index = memory._stores.vectors
    assert isinstance(index, ChromaProcess)
    assert index.pid != os.getpid() and not gone(index.pid, within_s=0)
    talk(memory, "I live in Oslo.")
    assert "Oslo" in memory.context_block("Where does Ann live?", user_id="ann")
    pid = index.pid
    memory.close()
    assert gone(pid), "the Chroma child outlived its memory"

    inline = make_memory(tmp_path / "b", chroma_process=False)
    assert isinstance(inline._stores.vectors, ChromaVectorIndex)
    talk(inline, "I live in Rome.")
    assert "Rome" in inline.context_block("Where does Ann live?", user_id="ann")


def test_a_child_found_dead_is_started_again_and_nothing_is_lost(make_memory):
    memory = make_memory()
    talk(memory, "I live in Oslo.")
    memory.flush()
    index = memory._stores.vectors
    first = index.pid
    os.kill(first, signal.SIGKILL)
    assert gone(first)
    assert "Oslo" in memory.context_block("Where does Ann live?", user_id="ann")  # answered by a new child
    assert index.pid != first
    talk(memory, "I work at the harbour.")
    assert "harbour" in memory.context_block("Where does Ann work?", user_id="ann")
    assert memory.check_consistency() == {}


def test_a_child_that_dies_on_every_try_is_a_clear_error(tmp_path, monkeypatch):
    index = ChromaProcess(tmp_path / "chroma")
    index.upsert("ann", "current", ["a"], unit(0))
    start = ChromaProcess._start

    def dies(self):  # every child this index starts is dead before it answers, as on a file Chroma crashes on
        start(self)
        os.kill(self.pid, signal.SIGKILL)
        assert gone(self.pid)

    os.kill(index.pid, signal.SIGKILL)
    assert gone(index.pid)
    monkeypatch.setattr(ChromaProcess, "_start", dies)
    with pytest.raises(StoreError, match="stopped twice during query.*zep-memory rebuild"):
        index.query("ann", "current", unit(0)[0], 1)
    monkeypatch.undo()
    assert [i for i, _ in index.query("ann", "current", unit(0)[0], 1)] == ["a"]  # the files were never damaged
    index.close()
    with pytest.raises(StoreError, match="closed"):
        index.count("ann", "current")


CRASHER = textwrap.dedent("""
    import os, signal, sys
    from zep_core import Memory, MemoryConfig
    from tests.core.fakes import HashEmbedder
    memory = Memory(MemoryConfig(data_dir=sys.argv[1], embedder=HashEmbedder()))
    memory.conversation_end("s", [{"role": "user", "name": "Ann", "content": "I live in Oslo."}], user_id="ann")
    memory.flush()
    print(memory._stores.vectors.pid, flush=True)
    if sys.argv[2] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)  # no close, no exit handlers
    # "exit": leave without closing; the exit handlers close the memory and its child
""")


@pytest.mark.parametrize("how", ["kill", "exit"])
def test_the_child_ends_with_its_memorys_process_and_the_folder_opens_again(make_memory, tmp_path, how):
    data = tmp_path / "data"
    env = dict(os.environ, PYTHONPATH=str(ROOT), ORT_DISABLE_TELEMETRY="1")
    run = subprocess.run([sys.executable, "-c", CRASHER, str(data), how], capture_output=True, text=True, env=env,
                         cwd=ROOT, timeout=300)
    assert run.returncode == (-signal.SIGKILL if how == "kill" else 0), run.stderr
    child = int(run.stdout.split()[0])
    assert gone(child), "the Chroma child outlived the process that owned it"
    from tests.core.fakes import HashEmbedder

    memory = make_memory(data, embedder=HashEmbedder())
    assert "Oslo" in memory.context_block("Where does Ann live?", user_id="ann")
    assert memory.check_consistency() == {}


SCRIPT = """
from zep_core import Memory, MemoryConfig
from tests.core.fakes import HashEmbedder

memory = Memory(MemoryConfig(data_dir={data!r}, embedder=HashEmbedder()))
memory.conversation_end("s", [{{"role": "user", "name": "Ann", "content": "I live in Oslo."}}], user_id="ann")
print(memory.context_block("Where does Ann live?", user_id="ann"))
memory.close()
"""


def test_a_script_without_a_main_guard_runs(tmp_path):
    """multiprocessing's spawn and fork server would run this script again in the Chroma child."""
    script = tmp_path / "app.py"
    script.write_text(SCRIPT.format(data=str(tmp_path / "data")), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(ROOT), ORT_DISABLE_TELEMETRY="1")
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("Oslo") >= 1 and "Traceback" not in run.stderr
