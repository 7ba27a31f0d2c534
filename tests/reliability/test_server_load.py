"""The memory server under load, then killed: 8 client processes, one `zep-memory serve`, one SIGKILL.

The real ``zep-memory serve`` runs in a subprocess on 127.0.0.1 (a free port), with a
keys file holding one key per client user and an admin key. Eight client processes
(:mod:`tests.reliability.load_child`), each with its own user and key, ingest short
episodes through :meth:`RemoteMemory.conversation_end` (each with an ``episode_id``)
while a second thread of each calls ``get_context`` without pause.

1. **Load**: 50 episodes a client. Afterwards no call failed, and the server holds, per
   user, exactly the acknowledged episodes and their facts: none lost, none twice.
2. **SIGKILL**: the clients send more episodes; once some of them are acknowledged the
   server is killed with SIGKILL while they write, and started again on the same folder
   and port. The clients send again whatever went unanswered (the same episode ids).
   Afterwards every acknowledged episode is there, with its message, and the episodes
   sent again are not stored twice. An episode the kill cut short between storing it
   and extracting from it is kept ``pending`` (sending it again answers ``duplicate``);
   ``maintain`` — what the nightly ``zep-memory maintain`` does — extracts it. Then
   nothing is lost or duplicated, and ``zep-memory doctor`` says SQLite, Chroma and
   Kùzu agree.

The figures (p50/p95 of both calls, the outbox rows the kill left, the episodes sent
again) go to ``bench/results/reliability-server_load.json``. Bounded: every wait has a
deadline, every process is stopped on the way out.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("uvicorn", reason="the server extra is not installed: pip install -e '.[server]'")

from zep_core import Memory, MemoryConfig  # noqa: E402
from zep_core.server import RemoteMemory  # noqa: E402

from bench.common import percentiles  # noqa: E402
from tests.reliability.figures import ROOT, record  # noqa: E402
from tests.stores.state import problems, snapshot  # noqa: E402

CLIENTS, EPISODES, AFTER_KILL = 8, 50, 16
KILL_AFTER_ACKS = 40  # acknowledged episodes of the second round before the SIGKILL
NAMES = ("Ada", "Ben", "Cleo", "Dev", "Eve", "Finn", "Gus", "Hana")
ADMIN_KEY = "load-admin-key-0123456789abcdef"
SERVE = [sys.executable, "-m", "zep_core.cli", "serve"]
COMMAND = ".venv/bin/python -m pytest -q tests/reliability/test_server_load.py"


def user(c: int) -> str:
    return f"load{c}"


def key(c: int) -> str:
    return f"load-client-{c}-key-0123456789abcdef"


def write_keys(path: Path) -> Path:
    entries = [{"key": key(c), "users": [user(c)], "name": f"client {c}"} for c in range(CLIENTS)]
    path.write_text(json.dumps({"keys": [*entries, {"key": ADMIN_KEY, "admin": True, "name": "admin"}]}))
    return path


class Server:
    """``zep-memory serve`` in a subprocess; its stderr is read as it comes (the pipe never fills)."""

    def __init__(self, data: Path, keys: Path, port: int = 0) -> None:
        self.proc = subprocess.Popen([*SERVE, "--data", str(data), "--keys", str(keys), "--port", str(port),
                                      "--log-level", "warning"], cwd=ROOT, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, "ORT_DISABLE_TELEMETRY": "1"})
        self.err: list[str] = []
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.url = self._wait_for_url()
        self.port = int(self.url.rsplit(":", 1)[1])

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.err.append(line)
            self._lines.put(line)

    def _wait_for_url(self, within_s: float = 120) -> str:
        deadline = time.monotonic() + within_s
        while time.monotonic() < deadline:
            try:
                line = self._lines.get(timeout=0.5)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            found = re.search(r"serving .* at (http://\S+) ", line)
            if found:
                return found.group(1)
        self.stop(signal.SIGKILL)
        raise AssertionError("zep-memory serve did not start:\n" + "".join(self.err))

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)
            raise


class Clients:
    """The client processes of one round: started together, each on its own user and key."""

    def __init__(self, root: Path, url: str, first: int, count: int, resend_for_s: float) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.acks = [root / f"acks-{c}" for c in range(CLIENTS)]
        self.results = [root / f"result-{c}.json" for c in range(CLIENTS)]
        self.procs = []
        for c in range(CLIENTS):
            plan = {"url": url, "key": key(c), "user": user(c), "name": NAMES[c], "item": f"item{c}",
                    "first": first, "count": count, "acks": str(self.acks[c]), "resend_for_s": resend_for_s}
            (root / f"plan-{c}.json").write_text(json.dumps(plan))
            self.procs.append(subprocess.Popen(
                [sys.executable, "-m", "tests.reliability.load_child", str(root / f"plan-{c}.json"),
                 str(self.results[c])], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}))

    def acknowledged(self) -> int:
        return sum(self.acknowledged_each())

    def acknowledged_each(self) -> list[int]:
        return [len(p.read_text().splitlines()) if p.exists() else 0 for p in self.acks]

    def running(self) -> int:
        return sum(p.poll() is None for p in self.procs)

    def wait(self, within_s: float) -> list[dict]:
        deadline = time.monotonic() + within_s
        try:
            for proc in self.procs:
                code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
                assert code == 0, f"a client process exited {code}"
        finally:
            self.kill()
        return [json.loads(p.read_text()) for p in self.results]

    def kill(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)


def outbox_rows(db: Path) -> int:
    """Index writes left pending in SQLite (read with the server down, before the restart replays them)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT count(*) FROM outbox").fetchone()[0]
    finally:
        conn.close()


def lost_and_duplicated(admin: RemoteMemory, results: list[dict]) -> tuple[list[str], list[str]]:
    """Compare what the server holds per user with what each client was acknowledged.

    Lost: an acknowledged episode, or a fact of one, that the server lacks. Duplicated:
    an episode or fact stored more often than acknowledged, or anything never acknowledged.
    An episode whose first answer was lost in the kill was acknowledged as ``duplicate``
    when sent again; it must hold what a first ingest of the same shape holds.
    """
    lost, duplicated = [], []
    for c, result in enumerate(results):
        acked: dict[str, int] = {}
        for episode_id, status, added in result["acked"]:
            if status == "done":
                acked[episode_id] = added
            else:
                assert status == "duplicate", (episode_id, status)
                acked.setdefault(episode_id, -1)
        shape = Counter(n for n in acked.values() if n >= 0).most_common(1)[0][0]
        expected = {e: shape if n < 0 else n for e, n in acked.items()}
        stored = admin.episode_ids(user_id=user(c))
        lost += [f"episode {e}" for e in expected if e not in stored]
        duplicated += [f"episode {e} (never acknowledged)" for e in set(stored) - set(expected)]
        duplicated += [f"episode {e} stored {n} times" for e, n in Counter(stored).items() if n > 1]
        facts = admin.facts(user(c))
        held = Counter(f.episode_id for f in facts)
        for episode_id, n in expected.items():
            if held[episode_id] < n:
                lost.append(f"{n - held[episode_id]} facts of {episode_id}")
            elif held[episode_id] > n:
                duplicated.append(f"{held[episode_id] - n} extra facts of {episode_id}")
        likes = Counter(f.object for f in facts if f.predicate == "likes")
        want = Counter(f"item{c}x{e.rsplit('-e', 1)[1]}" for e in expected)
        lost += [f"{user(c)} likes {o}" for o in want - likes]
        duplicated += [f"{user(c)} likes {o} x{likes[o]}" for o in likes - want]
    return lost, duplicated


def present_with_their_message(admin: RemoteMemory, results: list[dict]) -> list[str]:
    """Every acknowledged episode, read back one by one with its message (the client's own text)."""
    wrong = []
    for c, result in enumerate(results):
        for episode_id in {e for e, _, _ in result["acked"]}:
            episode = admin.get_episode(episode_id)
            index = episode_id.rsplit("-e", 1)[1]
            if episode.user_id != user(c) or [m.content for m in episode.messages] != [f"I like item{c}x{index}."]:
                wrong.append(f"{episode_id} came back as {episode.user_id}: {[m.content for m in episode.messages]}")
    return wrong


def merged(results: list[dict], field: str) -> list[float]:
    return [x for r in results for x in r[field]]


def test_eight_client_processes_then_a_sigkill_lose_and_duplicate_nothing(tmp_path, embedder):
    data, keys = tmp_path / "data", write_keys(tmp_path / "keys.json")
    started = time.monotonic()
    server, second = Server(data, keys), None
    try:
        # -- 1. load: 8 processes, 50 episodes each, reading all along ----------------------------------------
        load_started = time.monotonic()
        first = Clients(tmp_path / "round1", server.url, first=0, count=EPISODES, resend_for_s=0).wait(300)
        load_s = time.monotonic() - load_started
        errors = [e for r in first for e in r["errors"]]
        assert errors == [], errors[:5]
        assert [len(r["acked"]) for r in first] == [EPISODES] * CLIENTS
        assert all(status == "done" for r in first for _, status, _ in r["acked"])
        assert all(r["reads"] > 0 for r in first), [r["reads"] for r in first]
        with RemoteMemory(server.url, api_key=ADMIN_KEY) as admin:
            lost, duplicated = lost_and_duplicated(admin, first)
        assert (lost, duplicated) == ([], []), (lost[:5], duplicated[:5])

        # -- 2. SIGKILL while they write, restart on the same folder and port ------------------------------
        second = Clients(tmp_path / "round2", server.url, first=EPISODES, count=AFTER_KILL, resend_for_s=120)
        # The kill comes after KILL_AFTER_ACKS acknowledgements in all, or as soon as one client is half way
        # through its episodes: on a loaded machine one client can run far ahead of the others, and none
        # may have finished when the server dies (each must see the kill mid-write).
        deadline = time.monotonic() + 120
        while second.acknowledged() < KILL_AFTER_ACKS and max(second.acknowledged_each()) < AFTER_KILL // 2:
            assert time.monotonic() < deadline, f"the second round stalled: {second.acknowledged_each()} acked"
            time.sleep(0.02)
        server.proc.send_signal(signal.SIGKILL)
        assert server.proc.wait(timeout=60) == -signal.SIGKILL
        acked_at_kill, writing_at_kill = second.acknowledged(), second.running()
        pending_at_kill = outbox_rows(data / "zep.db")
        restart_started = time.monotonic()
        server = Server(data, keys, port=server.port)  # the clients know this address: a process manager's restart
        restart_s = time.monotonic() - restart_started
        after = second.wait(300)
        rounds = [{**a, "acked": a["acked"] + b["acked"]} for a, b in zip(first, after)]
        with RemoteMemory(server.url, api_key=ADMIN_KEY) as admin:
            wrong = present_with_their_message(admin, rounds)
            pending = admin.episode_ids(status="pending")  # stored, their extraction cut short by the kill
            maintained = admin.maintain()  # what `zep-memory maintain` (cron) does: extracts them
            lost, duplicated = lost_and_duplicated(admin, rounds)
            stored = len(admin.episode_ids())
            consistency = admin.check_consistency()
    finally:
        if second is not None:
            second.kill()
        stopped = server.stop(signal.SIGTERM)
    assert stopped == 0, "".join(server.err)
    assert outbox_rows(data / "zep.db") == 0  # a clean stop leaves no index write behind
    assert "Traceback" not in "".join(server.err)
    assert writing_at_kill == CLIENTS, "the kill came after a client had finished"

    errors = [e for r in after for e in r["errors"]]
    assert errors == [], errors[:5]
    assert [len(r["acked"]) for r in after] == [AFTER_KILL] * CLIENTS
    resent = [e for r in after for e in r["resent"]]
    resent_stored = [e for r in after for e, status, _ in r["acked"] if status == "duplicate"]
    assert set(resent_stored) <= set(resent)  # only an episode sent again can have been stored already
    assert set(pending) <= set(resent_stored), pending  # cut short means unanswered, so it was sent again
    assert (maintained.completed, maintained.still_pending, maintained.failed) == (len(pending), (), ())
    assert (lost, duplicated, wrong) == ([], [], []), (lost[:5], duplicated[:5], wrong[:5])
    assert stored == CLIENTS * (EPISODES + AFTER_KILL)
    assert consistency == {}

    doctor = subprocess.run([sys.executable, "-m", "zep_core.cli", "doctor", "--data", str(data)], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert doctor.stdout.startswith("ok: SQLite, Chroma and Kùzu agree"), doctor.stdout
    with Memory(MemoryConfig(data_dir=data, embedder=embedder)) as memory:  # the tests' own view of the stores
        assert problems(snapshot(memory), memory.config.single_valued_predicates) == []

    writes, reads = percentiles(merged(first, "writes_ms"), (50, 95)), percentiles(merged(first, "reads_ms"), (50, 95))
    record("server_load", {
        "clients": CLIENTS, "episodes_per_client": EPISODES, "episodes_acknowledged": CLIENTS * EPISODES,
        "load_seconds": round(load_s, 1), "episodes_per_s": round(CLIENTS * EPISODES / load_s, 1),
        "conversation_end_ms": writes, "get_context_ms": reads, "reads": sum(r["reads"] for r in first),
        "errors": 0, "lost": 0, "duplicated": 0,
        "kill": {"episodes_per_client": AFTER_KILL, "acknowledged_before_kill": acked_at_kill,
                 "clients_writing_at_kill": writing_at_kill, "outbox_rows_left": pending_at_kill,
                 "restart_seconds": round(restart_s, 1), "episodes_sent_again": len(resent),
                 "sent_again_already_stored": len(resent_stored),
                 "pending_after_restart_completed_by_maintain": len(pending),
                 "reads_while_unreachable": sum(r["reads_unreachable"] for r in after),
                 "episodes_checked": sum(len({e for e, _, _ in r["acked"]}) for r in rounds),
                 "lost": 0, "duplicated": 0, "doctor": doctor.stdout.strip()},
        "seconds": round(time.monotonic() - started, 1),
    }, COMMAND)
