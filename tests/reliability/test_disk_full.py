"""A full disk: one clear error, nothing acknowledged lost, no process left behind, and the folder opens again.

Each test mounts a small tmpfs (20 MB) of its own, which needs root (CAP_SYS_ADMIN); where the
machine does not allow it the tests are skipped with that reason. A ballast file takes part of the
disk, and deleting it is how "space is freed". The writer (``disk_full_child.py``) runs in a process
of its own with the offline defaults, so that it can be killed and its processes looked for.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from zep_core import Memory, StoreError, StoreUnavailableError
from zep_core.stores.lock import DataDirLock
from zep_core.stores.vector_process import ChromaProcess, available

from tests.reliability.figures import record

ROOT = Path(__file__).resolve().parents[2]
#: The bar: a writer whose disk filled up has exited this long after its first error.
EXIT_WITHIN_S = 60.0
#: ... and no process of it is left this long after it exited.
SURVIVE_AT_MOST_S = 10.0

pytestmark = pytest.mark.skipif(not available(), reason="needs fork() and /proc (Linux)")
FIGURES: dict = {}


def keep(name: str, figures: dict) -> None:
    FIGURES[name] = figures
    record("disk_full", FIGURES, ".venv/bin/python -m pytest -q tests/reliability/test_disk_full.py")


@pytest.fixture
def small_disk(tmp_path):
    """A 20 MB tmpfs mounted at tmp_path/disk, unmounted afterwards."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=20m", "tmpfs", str(disk)], capture_output=True,
                           text=True)
    if mount.returncode != 0:
        pytest.skip("mounting a small tmpfs needs root (CAP_SYS_ADMIN), which this machine does not give: "
                    f"{(mount.stderr or mount.stdout).strip()}")
    try:
        yield disk
    finally:
        left = holders(disk)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        if subprocess.run(["umount", str(disk)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(disk)], capture_output=True)
        assert not left, f"processes still had files open on the full disk: {left}"


def holders(folder: Path) -> list[int]:
    """Processes with a file (or their working directory) under ``folder``."""
    prefix = str(folder)
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            links = [os.readlink(proc / "cwd")] + [os.readlink(fd) for fd in (proc / "fd").iterdir()]
        except OSError:
            continue
        if any(link.startswith(prefix) for link in links):
            found.append(int(proc.name))
    return found


def runs(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def wait_until(condition, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def fill(disk: Path, leave_bytes: int = 0) -> Path:
    """Fill the disk with a ballast file (all of it, or all but ``leave_bytes``); return the file."""
    ballast = disk / "ballast"
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize - leave_bytes
    with open(ballast, "ab") as out:
        try:
            while free > 0:
                out.write(b"\0" * min(free, 1 << 20))
                out.flush()
                free -= 1 << 20
        except OSError:  # full
            pass
    return ballast


def free_space(disk: Path, ballast: Path) -> None:
    """What an operator does: delete what filled the disk, and give it room to spare."""
    ballast.unlink()
    subprocess.run(["mount", "-o", "remount,size=200m", str(disk)], check=True)


def start_writer(data: Path, acks: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT), ORT_DISABLE_TELEMETRY="1")
    with open(acks.with_suffix(".log"), "w") as log:  # its stderr, with the stacks of a native crash
        return subprocess.Popen([sys.executable, "-X", "faulthandler", "-m", "tests.reliability.disk_full_child",
                                 str(data), str(acks)], stdout=subprocess.PIPE, stderr=log, text=True, env=env,
                                cwd=ROOT)


def check_whole(data: Path, acks: Path) -> int:
    """Open the folder once space is back: every acknowledged episode whole, the stores agreeing, doctor 0."""
    acked = acks.read_text().split() if acks.exists() else []
    assert acked, "the writer acknowledged nothing before the disk filled up"
    with Memory.open(data) as memory:
        for eid in acked:
            episode = memory.get_episode(eid)
            assert len(episode.messages) == 2 and episode.status == "done", (eid, episode.status)
        last = acked[-1]
        user = memory.get_episode(last).user_id
        assert f"City{last[1:]}" in memory.context_block("Where does Ann live?", user_id=user)
        assert memory.check_consistency() == {}
    doctor = subprocess.run([sys.executable, "-m", "zep_core.cli", "doctor", "--data", str(data)],
                            capture_output=True, text=True, env=dict(os.environ, ORT_DISABLE_TELEMETRY="1"),
                            cwd=ROOT, timeout=300)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    return len(acked)


# the default keeps the harder ending (killed while its indexer retries); CI's full matrix runs both
@pytest.mark.parametrize("end", [pytest.param("exits", marks=pytest.mark.full_matrix), "sigkill"])
def test_a_writer_on_a_full_disk_gets_a_clear_error_leaves_nothing_behind_and_loses_nothing(small_disk, tmp_path,
                                                                                             end):
    data, acks = small_disk / "data", tmp_path / "acks"
    ballast = fill(small_disk, leave_bytes=17 << 20)  # 17 MB left: ~100 episodes of the writer's
    writer = start_writer(data, acks)
    pids = json.loads(writer.stdout.readline())
    error = json.loads(writer.stdout.readline())
    failed_at = time.monotonic()
    assert error["error"] == "StoreUnavailableError", error
    assert "full" in error["message"] and "free space" in error["message"], error
    if end == "sigkill":  # in its next call, with its indexer retrying against the full disk
        writer.kill()
    try:
        writer.wait(timeout=EXIT_WITHIN_S)
    except subprocess.TimeoutExpired:
        writer.kill()
        pytest.fail(f"the writer had not exited {EXIT_WITHIN_S:.0f} s after its disk filled up")
    assert time.monotonic() - failed_at < EXIT_WITHIN_S
    if end == "exits":
        assert writer.returncode == 0, acks.with_suffix(".log").read_text()[-3000:]
        closed = json.loads(writer.stdout.readlines()[-1])
        assert closed["since_error_s"] < EXIT_WITHIN_S
    others = [pid for pid in (pids["helper"], pids["child"]) if pid]
    assert wait_until(lambda: not any(runs(p) for p in others), SURVIVE_AT_MOST_S), \
        "a Chroma process of the writer outlived it"
    assert wait_until(lambda: not holders(small_disk), SURVIVE_AT_MOST_S), holders(small_disk)

    exited_s = time.monotonic() - failed_at
    free_space(small_disk, ballast)
    start = time.monotonic()
    acknowledged = check_whole(data, acks)
    keep(f"writer_{end}", {"acknowledged": acknowledged, "error": error["error"],
                           "exited_after_error_s": round(exited_s, 2), "survivors": 0,
                           "reopen_check_doctor_s": round(time.monotonic() - start, 1), "lost": 0, "doctor": "ok"})


def test_a_chroma_process_on_a_full_disk_answers_every_call_within_its_deadline(small_disk):
    """Chroma itself, not a test double: on a full disk some of its writes never return (a delete, often)."""
    deadline_s = 3.0
    index = ChromaProcess(small_disk / "chroma", timeout_s=deadline_s)
    rng = np.random.default_rng(0)
    users = [f"u{u}" for u in range(10)]
    for user in users:
        index.upsert(user, "current", [f"{user}-{i}" for i in range(60)], rng.random((60, 384), dtype=np.float32))
    ballast = fill(small_disk)
    first_child, outcomes, slowest = index.pid, [], 0.0
    for n in range(60):
        user = users[n % len(users)]
        start = time.monotonic()
        try:
            if n % 2:
                index.delete(user, "current", [f"{user}-{i}" for i in range(n, 60)])
            else:
                index.upsert(user, "current", [f"{user}-x{n}-{i}" for i in range(60)],
                             rng.random((60, 384), dtype=np.float32))
            outcomes.append("ok")
        except StoreError as exc:
            outcomes.append("stuck" if "did not answer" in str(exc) else type(exc).__name__)
        took = time.monotonic() - start
        slowest = max(slowest, took)
        assert took < deadline_s + 7.0, f"call {n} took {took:.1f} s"
    start = time.monotonic()
    index.close()
    assert time.monotonic() - start < deadline_s + 7.0
    assert wait_until(lambda: not runs(first_child), SURVIVE_AT_MOST_S)
    assert any(o != "ok" for o in outcomes), "the full disk refused nothing"
    keep("chroma_calls", {"calls": len(outcomes), "deadline_s": deadline_s,
                          "outcomes": {o: outcomes.count(o) for o in sorted(set(outcomes))},
                          "slowest_s": round(slowest, 1)})
    if "stuck" in outcomes or any(o == "StoreUnavailableError" for o in outcomes):
        assert index.needs_check
    ballast.unlink()


def test_the_lock_record_is_kept_on_a_full_disk(small_disk):
    lock = DataDirLock(small_disk / ".zep.lock")
    lock.acquire()
    ballast = fill(small_disk)
    lock.release(clean=True)  # written in place: no new block needed
    assert json.loads((small_disk / ".zep.lock").read_text())["closed"] is True
    lock.acquire()
    lock.release(clean=False)  # this holder's own record stays: unclean
    again = DataDirLock(small_disk / ".zep.lock")
    again.acquire()
    assert again.unclean_since is not None
    again.release()

    (small_disk / "other").mkdir()
    try:
        (small_disk / "other" / ".zep.lock").touch()
    except OSError:
        pass  # no inode left either: the lock file cannot even be created
    with pytest.raises(StoreError, match="lock file .*(full|space)"):
        DataDirLock(small_disk / "other" / ".zep.lock").acquire()
    ballast.unlink()


def test_opening_a_memory_on_a_full_disk_is_one_clear_error(small_disk):
    data = small_disk / "data"
    Memory.open(data).close()
    ballast = fill(small_disk)
    with pytest.raises(StoreError) as caught:
        with Memory.open(data) as memory:
            memory.conversation_end("s", [{"role": "user", "content": "I live in Oslo. " * 200}], user_id="ann")
    assert isinstance(caught.value, StoreUnavailableError) or "full" in str(caught.value) \
        or "space" in str(caught.value), caught.value
    ballast.unlink()
    with Memory.open(data) as memory:
        memory.conversation_end("s", [{"role": "user", "content": "I live in Oslo."}], user_id="ann")
        assert "Oslo" in memory.context_block("Where do I live?", user_id="ann")
        assert memory.check_consistency() == {}
