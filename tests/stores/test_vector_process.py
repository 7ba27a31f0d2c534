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
from zep_core.errors import StoreError, StoreUnavailableError
from zep_core.stores import vector_process
from zep_core.stores.vector_process import ChromaProcess, available
from zep_core.stores.vectors import ChromaVectorIndex

from tests.conftest import every_user_in_chroma

pytestmark = pytest.mark.skipif(not available(), reason="this platform has no fork() (Windows), so Chroma runs "
                                                        "in the memory's process (tested elsewhere)")

ROOT = Path(__file__).resolve().parents[2]
DIM = 8

@pytest.fixture
def make_memory(make_memory):
    """Every user's vectors in Chroma: these tests are about Chroma's collections and process."""
    return every_user_in_chroma(make_memory)



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
    index = memory._stores.vectors.chroma
    assert isinstance(index, ChromaProcess)
    assert index.pid != os.getpid() and not gone(index.pid, within_s=0)
    talk(memory, "I live in Oslo.")
    assert "Oslo" in memory.context_block("Where does Ann live?", user_id="ann")
    pid = index.pid
    memory.close()
    assert gone(pid), "the Chroma child outlived its memory"

    inline = make_memory(tmp_path / "b", chroma_process=False)
    assert isinstance(inline._stores.vectors.chroma, ChromaVectorIndex)
    talk(inline, "I live in Rome.")
    assert "Rome" in inline.context_block("Where does Ann live?", user_id="ann")


def test_a_child_found_dead_is_started_again_and_nothing_is_lost(make_memory):
    memory = make_memory()
    talk(memory, "I live in Oslo.")
    memory.flush()
    index = memory._stores.vectors.chroma
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
    memory = Memory(MemoryConfig(data_dir=sys.argv[1], embedder=HashEmbedder(), vector_exact_below=0))
    memory.conversation_end("s", [{"role": "user", "name": "Ann", "content": "I live in Oslo."}], user_id="ann")
    memory.flush()
    print(memory._stores.vectors.chroma.pid, flush=True)
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


# -- a child that never answers ----------------------------------------------------------------
# SIGSTOP makes a child that never answers, whatever it was doing: to its memory it is a Chroma call
# that never returns (as Chroma's own, stuck in a write on a full disk: tests/reliability/test_disk_full.py).


def wide(n: int, dim: int = 384) -> np.ndarray:
    return np.random.default_rng(n).random((n, dim), dtype=np.float32)


def test_a_call_the_child_never_answers_fails_at_its_deadline_and_the_next_call_gets_a_new_child(tmp_path):
    index = ChromaProcess(tmp_path / "chroma", timeout_s=1.0)
    try:
        index.upsert("ann", "current", ["a"], unit(0))
        stuck = index.pid
        os.kill(stuck, signal.SIGSTOP)
        start = time.monotonic()
        with pytest.raises(StoreUnavailableError, match=r"did not answer its query call within 1 s.*doctor"):
            index.query("ann", "current", unit(0)[0], 1)
        assert time.monotonic() - start < 1.0 + 6.0
        assert gone(stuck, within_s=10), "the stuck child was not killed"
        assert index.needs_check, "a child killed mid-call must mark the folder for a check"
        assert [i for i, _ in index.query("ann", "current", unit(0)[0], 1)] == ["a"]  # a new child, same files
        assert index.pid != stuck

        # A write too big for the socket's buffer: sending it to a child that never reads is bounded as well.
        os.kill(index.pid, signal.SIGSTOP)
        stuck, start = index.pid, time.monotonic()
        with pytest.raises(StoreUnavailableError, match="did not answer its upsert call"):
            index.upsert("bob", "current", [f"b{i}" for i in range(1000)], wide(1000))
        assert time.monotonic() - start < 1.0 + 6.0 and gone(stuck, within_s=10)
    finally:
        index.close()


def test_close_returns_at_the_deadline_when_the_child_never_closes_and_the_next_open_repairs(make_memory, tmp_path):
    data = tmp_path / "data"
    memory = make_memory(data, vector_timeout_s=1.0)
    talk(memory, "I live in Oslo.")
    memory.flush()
    stuck = memory._stores.vectors.chroma.pid
    os.kill(stuck, signal.SIGSTOP)
    start = time.monotonic()
    memory.close()
    assert time.monotonic() - start < 1.0 + 6.0, "close() waited on a child that never closes"
    assert gone(stuck, within_s=10)
    assert '"closed"' not in (data / ".zep.lock").read_text(), "a child killed at close leaves the folder unclean"

    again = make_memory(data)
    assert again._stores.recovering  # so Chroma's files were loaded in a probe before the child opened them
    assert "Oslo" in again.context_block("Where does Ann live?", user_id="ann")
    assert again.check_consistency() == {}


def test_a_memory_whose_chroma_child_gets_stuck_goes_on_with_a_new_one(make_memory):
    memory = make_memory(vector_timeout_s=1.0)
    talk(memory, "I live in Oslo.")
    memory.flush()
    stuck = memory._stores.vectors.chroma.pid
    os.kill(stuck, signal.SIGSTOP)
    talk(memory, "I work at the harbour.")  # committed to SQLite; its index write goes to the stuck child
    try:  # the read waits for that write (read-your-writes): it gets the timeout if the indexer did not first
        memory.context_block("Where does Ann work?", user_id="ann")
    except StoreUnavailableError as exc:
        assert "did not answer" in str(exc)
    assert gone(stuck, within_s=10)
    assert "harbour" in memory.context_block("Where does Ann work?", user_id="ann")  # through a new child
    assert memory._stores.vectors.chroma.pid != stuck
    assert memory.check_consistency() == {}


HOLDER = textwrap.dedent("""
    import json, os, sys
    from zep_core import Memory, MemoryConfig
    from zep_core.stores import vector_process
    from tests.core.fakes import HashEmbedder
    memory = Memory(MemoryConfig(data_dir=sys.argv[1], embedder=HashEmbedder(), vector_exact_below=0))
    memory.conversation_end("s", [{"role": "user", "name": "Ann", "content": "I live in Oslo."}], user_id="ann")
    memory.flush()
    child = memory._stores.vectors.chroma.pid
    print(json.dumps({"child": child, "helper": vector_process._HELPER.proc.pid}), flush=True)
    sys.stdin.read()  # until the test kills this process
""")


def start_holder(data: Path) -> tuple[subprocess.Popen, dict]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), ORT_DISABLE_TELEMETRY="1")
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(data)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env=env, cwd=ROOT)
    line = proc.stdout.readline()
    assert line, f"the holder exited: {proc.wait()}"
    import json

    return proc, json.loads(line)


def test_the_chroma_processes_die_with_a_killed_memory_even_when_the_child_is_stuck(make_memory, tmp_path):
    from tests.core.fakes import HashEmbedder

    data = tmp_path / "data"
    proc, pids = start_holder(data)
    os.kill(pids["child"], signal.SIGSTOP)  # stuck in native code, as far as its socket can tell
    proc.kill()
    proc.wait()
    assert gone(pids["helper"], within_s=15), "the helper outlived the memory's process"
    assert gone(pids["child"], within_s=15), "a stuck Chroma child outlived the memory's process"
    memory = make_memory(data, embedder=HashEmbedder())
    assert "Oslo" in memory.context_block("Where does Ann live?", user_id="ann")
    assert memory.check_consistency() == {}


def test_a_new_holder_kills_a_chroma_process_left_by_a_holder_that_is_gone(make_memory, tmp_path):
    """A leftover that nothing else stops (its helper stopped too, as a stuck or older helper would not act)."""
    from tests.core.fakes import HashEmbedder

    data = tmp_path / "data"
    proc, pids = start_holder(data)
    try:
        os.kill(pids["helper"], signal.SIGSTOP)
        os.kill(pids["child"], signal.SIGSTOP)
        proc.kill()
        proc.wait()
        assert not gone(pids["child"], within_s=0), "the leftover is meant to outlive its holder here"
        start = time.monotonic()
        memory = make_memory(data, embedder=HashEmbedder())
        assert time.monotonic() - start < 60
        assert gone(pids["child"], within_s=10), "the new holder left the leftover running"
        assert "Oslo" in memory.context_block("Where does Ann live?", user_id="ann")
        assert memory.check_consistency() == {}
    finally:
        for pid in (pids["child"], pids["helper"]):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_a_process_forked_from_the_memorys_leaves_its_chroma_child_alone(make_memory):
    memory = make_memory()
    talk(memory, "I live in Oslo.")
    memory.flush()
    pid = os.fork()
    if pid == 0:  # exits at once, running no exit handlers but what a forked copy would run at exit
        code = 0
        try:
            index = memory._stores.vectors.chroma
            index.close()  # a copy's close must not close the parent's child
            vector_process._after_fork_in_child()  # idempotent: it ran at fork
            code = 0 if vector_process._HELPER is None else 3
        except BaseException:
            code = 4
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    assert "Oslo" in memory.context_block("Where does Ann live?", user_id="ann")
