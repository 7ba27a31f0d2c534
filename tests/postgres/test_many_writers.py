"""Many processes writing one PostgreSQL database: each episode applied once, one value of a one-value fact.

Real processes (``writer_child``) and real servers (``zep-memory serve``) on one database, started
together. What a user would see: each episode id answered ``done`` once, whichever process got it
(the others ``pending`` while it was being extracted, ``duplicate`` after), its facts stored once,
never two current homes; ``forget_user`` racing an ingest ends in clear errors and consistent
stores.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections import Counter
from datetime import datetime, timezone

import pytest
from zep_core import Memory, MemoryConfig, Message
from zep_core.models import Fact
from zep_core.server import RemoteMemory

from tests.reliability.figures import ROOT
from tests.server.test_cli_serve import KEY, Serving

pytest.importorskip("psycopg", reason="PostgreSQL tests need the test extra: pip install -e '.[test]'")


def _together(url, tmp_path, *jobs: tuple[str, int], timeout: float = 240) -> list[list[str]]:
    """Run each ``(job, count)`` in a process of its own on ``url``, started together; each one's outcomes."""
    children = [subprocess.Popen([sys.executable, "-m", "tests.postgres.writer_child", url,
                                  str(tmp_path / f"scratch-{n}"), job, str(count)],
                                 cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True) for n, (job, count) in enumerate(jobs)]
    try:
        for child in children:
            assert child.stdout.readline().strip() == "ready", child.stderr.read()
        for child in children:
            child.stdin.write("go\n")
            child.stdin.flush()
        out = []
        for child in children:
            stdout, stderr = child.communicate(timeout=timeout)
            assert child.returncode == 0, stderr
            assert "Traceback" not in stderr, stderr
            out.append(json.loads(stdout))
        return out
    finally:
        for child in children:
            child.kill()
            child.wait()


def _current(memory: Memory, user: str) -> list[Fact]:
    return [f for f in memory.facts(user) if f.is_current]


def test_two_processes_sending_the_same_episodes_apply_each_once(pg_url, tmp_path, embedder):
    n = 30
    first, second = _together(pg_url, tmp_path, ("same", n), ("same", n))
    assert not [o for o in first + second if o not in ("done", "pending", "duplicate")], first + second
    done = [i for i in range(n) if "done" in (first[i], second[i])]
    assert len(done) == n and not [i for i in range(n) if first[i] == second[i] == "done"]  # each id done once
    with Memory(MemoryConfig(data_dir=tmp_path / "check", database_url=pg_url, embedder=embedder)) as memory:
        assert {memory.get_episode(f"same-{i}", user_id="greg").status for i in range(n)} == {"done"}
        current = _current(memory, "greg")
        assert [f.object for f in current if f.predicate == "lives_in"] == ["Madrid"]  # the last move only
        said = Counter((f.predicate, f.object.casefold()) for f in current)
        assert said.most_common(1)[0][1] == 1, said.most_common(3)  # nothing current twice
        likes = [f for f in memory.facts("greg") if f.predicate == "likes"]
        assert sorted(f.episode_id for f in likes) == sorted(f"same-{i}" for i in range(n))  # one per episode
        assert memory.check_consistency() == {}


def test_two_servers_on_one_database_store_each_resent_episode_once(pg_url, tmp_path, embedder):
    keys = json.dumps({"keys": [{"key": KEY, "users": ["greg"], "name": "test"}]})
    env = {"ZEP_MEMORY_API_KEYS": keys, "ZEP_DATABASE_URL": pg_url}
    servers = [Serving("--data", str(tmp_path / f"s{n}"), env=env) for n in range(2)]
    answers: list[str] = []
    try:
        def send(url):
            with RemoteMemory(url, api_key=KEY) as client:
                for i in range(20):
                    result = client.conversation_end("s", [Message(f"I live in City{i}. I like tea number {i}.",
                                                                   name="Greg", timestamp=datetime(
                                                                       2024, 1, 1 + i, tzinfo=timezone.utc))],
                                                     user_id="greg", episode_id=f"ep-{i}")
                    answers.append(result.status)

        threads = [threading.Thread(target=send, args=(s.url,)) for s in servers for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=240)
    finally:
        codes = [s.stop() for s in servers]
    assert codes == [0, 0], [("".join(s.err))[-2000:] for s in servers]
    assert len(answers) == 80 and set(answers) <= {"done", "pending", "duplicate"}, Counter(answers)
    assert answers.count("done") == 20, Counter(answers)
    with Memory(MemoryConfig(data_dir=tmp_path / "check", database_url=pg_url, embedder=embedder)) as memory:
        likes = [f for f in memory.facts("greg") if f.predicate == "likes"]
        assert len(likes) == 20 and len({f.episode_id for f in likes}) == 20
        assert [f.object for f in _current(memory, "greg") if f.predicate == "lives_in"] == ["City19"]
        assert memory.check_consistency() == {}


def test_forget_racing_an_ingest_in_another_process_ends_in_clear_errors_and_consistent_stores(
        pg_url, tmp_path, embedder):
    ingest, forgets = _together(pg_url, tmp_path, ("new", 60), ("forget", 40))
    assert not [o for o in ingest + forgets if o.startswith(("UNEXPECTED", "StoreUnavailableError", "StoreError"))], (
        ingest + forgets)
    assert set(ingest) <= {"done"} | {o for o in ingest if o.startswith("NotFoundError: user 'greg' was forgotten")}
    assert set(forgets) <= {"forgot", "NotFoundError: unknown user 'greg': nothing was ever stored for it; check "
                                      "the user_id or call conversation_end() first"}
    assert "forgot" in forgets and "done" in ingest
    with Memory(MemoryConfig(data_dir=tmp_path / "check", database_url=pg_url, embedder=embedder)) as memory:
        assert memory.check_consistency() == {}
        if memory.has_user("greg"):  # what the last episodes after the last forget taught
            assert all(f.user_id == "greg" for f in memory.facts("greg"))
