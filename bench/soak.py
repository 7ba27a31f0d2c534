"""A soak run of SIGKILL trials: random operations, a kill at a random moment, a check after each.

Run: ``python -m bench.soak --trials 1000 --seed 1 [--out bench/results/soak.json]``
(not in CI; ``tests/bench/test_soak_smoke.py`` runs five trials). It writes the result
file, prints a one-line summary and exits 1 if anything was lost or inconsistent;
``docs/reliability.md`` quotes the file (``python -m tests.reliability.report``).

One data folder serves every trial, so it grows as a real one does and damage would
accumulate and show. A trial:

1. a child process opens the memory with the offline defaults and runs random
   operations until it is killed: ``ingest`` (an episode of small talk, jobs and
   tastes), ``supersede`` (an episode moving the speaker to another city; ``lives_in``
   holds one value at a time), ``forget`` (``forget_user``), ``rebuild``, ``export``
   (a user to a JSONL file), ``import`` (an earlier export back, ``replace=True``) and
   ``maintain``. It prints a JSON line before each operation and one after it
   returned — the acknowledgement — to its stdout, a file, flushed (a SIGKILL cannot
   take back what ``write()`` handed to the kernel). An episode a kill interrupted is
   sent again, same id and messages, by the next child, as a client would.
2. the parent SIGKILLs it: ``U(0, 0.3)`` s after the fork in 15 % of the trials (mostly
   while it opens), else ``U(0, 1)`` s after its open returned (with ``--after-episodes N``,
   after it also acknowledged N episodes);
3. the parent reopens the folder (recovery runs on open) and checks that
   ``check_consistency()`` is ``{}`` and the three stores, read directly, agree
   (``tests/stores/state.py``); that every acknowledged episode is stored with the same
   messages, ``done`` if it was acknowledged ``done`` (else ``pending``, which
   ``maintain`` retries); that a user acknowledged as forgotten has nothing left in any
   store; that no fact an acknowledged move superseded is current again; and that the
   current city is the one last acknowledged.

The parent keeps, per user, what the acknowledgements promise (:class:`Expected`),
replayed in order; an import puts back what was promised when the export was taken.
The operation a kill interrupted may or may not have taken effect, so the check
accepts the user as it was before it or as it would be after it, and carries on
from whichever holds.

Fork safety: children are forked from a *zygote* that has imported zep-memory, Chroma
and Kùzu (most of a child's start-up time) but runs no thread when it forks: it is
started with ``OPENBLAS_NUM_THREADS=1`` and refuses to fork if it has more than one.
onnxruntime starts a thread when it is imported, and the embedder's worker threads
would not survive a fork, so the zygote never imports it; each child loads the
embedder itself (about 0.1 s). The parent, which checks in-process, never forks.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from .common import RESULTS_DIR, Progress, dir_size, percentiles, write_result

__all__ = ["Expected", "Ledger", "Verdict", "check_folder", "main", "run"]

ROOT = Path(__file__).resolve().parents[1]
USERS = {"u0": "Alice", "u1": "Bob", "u2": "Carol", "u3": "Dan", "u4": "Eve", "u5": "Finn"}
CITIES = ("Paris", "Berlin", "Rome", "Lisbon", "Oslo", "Madrid", "Vienna", "Prague")
FIRMS = ("Acme", "Globex", "Initech", "Umbrella", "Hooli")
LIKES = ("jazz", "tea", "chess", "hiking", "sushi", "opera")
#: What an ``ingest`` episode says: never where the speaker lives (only ``supersede`` moves them).
SMALL_TALK = ("I work at {firm}.", "I like {like}.", "We talked about the weather today.",
              "My sister Ana works at {firm}.", "I like {like} and I work at {firm}.")
#: Relative weights of the operations a child picks from.
OPS = {"ingest": 45, "supersede": 25, "forget": 5, "export": 7, "import": 8, "rebuild": 4, "maintain": 6}
BASE = datetime(2020, 1, 1, tzinfo=timezone.utc)
EARLY_SHARE, EARLY_WINDOW_S, KILL_WINDOW_S = 0.15, 0.3, 1.0
OPEN_TIMEOUT_S = 120
KEEP_EXPORTS = 8


def digest(texts: Iterable[str]) -> str:
    """A short hash of an episode's message contents, to check it came back whole."""
    return hashlib.sha256("\x1e".join(texts).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _is_current(fact: Any) -> bool:
    return fact.valid_until is None and fact.superseded_by is None


# -- the child: random operations until the kill ----------------------------------------------------


class _Child:
    """One trial's child: opens the memory and runs random operations until it is killed."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.rng = random.Random(f"{spec['seed']}/{spec['trial']}")
        self.exports: list[str] = list(spec["exports"])
        self.memory: Any = None

    def run(self) -> None:
        from zep_core import Memory, MemoryConfig

        self.memory = Memory(MemoryConfig(data_dir=self.spec["data"]))
        _say(ev="open")
        if self.spec["retry"]:
            self._send(self.spec["retry"])
        for index in range(10_000):
            op = self.rng.choices(list(OPS), weights=list(OPS.values()))[0]
            getattr(self, f"_{op}")(index)
        time.sleep(3600)  # the parent kills it long before

    def _when(self, index: int, j: int = 0) -> str:
        seconds = self.spec["trial"] * 200_000 + index * 10 + j
        return (BASE + timedelta(seconds=seconds)).isoformat()

    def _send(self, begin: dict[str, Any]) -> None:
        from zep_core import Message

        start = _begin(**begin)
        user = begin["user"]
        messages = [Message(text, name=USERS[user], timestamp=datetime.fromisoformat(when))
                    for text, when in begin["messages"]]
        result = self.memory.conversation_end("soak", messages, user_id=user, episode_id=begin["episode_id"])
        _done(begin["op"], start, status=result.status,
              superseded=[f.id for f in result.superseded if f.predicate == "lives_in"])

    def _episode_id(self, index: int) -> str:
        return f"s{self.spec['seed']}-t{self.spec['trial']}-o{index}"

    def _users_with_memory(self) -> list[str]:
        return [u for u in USERS if self.memory.has_user(u)]

    def _ingest(self, index: int) -> None:
        rng = self.rng
        texts = [rng.choice(SMALL_TALK).format(firm=rng.choice(FIRMS), like=rng.choice(LIKES))
                 for _ in range(rng.choice((1, 1, 2, 3)))]
        self._send({"ev": "begin", "op": "ingest", "user": rng.choice(list(USERS)),
                    "episode_id": self._episode_id(index),
                    "messages": [[t, self._when(index, j)] for j, t in enumerate(texts)]})

    def _supersede(self, index: int) -> None:
        user = self.rng.choice(list(USERS))
        was = None
        if self.memory.has_user(user):
            was = next((f.object for f in self.memory.facts(user) if f.predicate == "lives_in"
                        and f.subject == USERS[user] and _is_current(f)), None)
        city = self.rng.choice([c for c in CITIES if c != was])
        text = f"I moved to {city}." if was else f"I live in {city}."
        self._send({"ev": "begin", "op": "supersede", "user": user, "episode_id": self._episode_id(index),
                    "messages": [[text, self._when(index)]], "city": city, "was": was})

    def _forget(self, index: int) -> None:
        users = self._users_with_memory()
        if not users:
            return self._ingest(index)
        user = self.rng.choice(users)
        start = _begin(ev="begin", op="forget", user=user)
        self.memory.forget_user(user)
        _done("forget", start)

    def _export(self, index: int) -> None:
        users = self._users_with_memory()
        if not users:
            return self._ingest(index)
        user = self.rng.choice(users)
        path = Path(self.spec["exports_dir"]) / f"{user}-t{self.spec['trial']}-o{index}.jsonl"
        part = path.with_suffix(".part")
        start = _begin(ev="begin", op="export", user=user, path=str(path))
        with part.open("w", encoding="utf-8") as out:
            self.memory.export_user(user, out, embeddings=self.rng.random() < 0.5)
        os.replace(part, path)
        self.exports.append(str(path))
        _done("export", start)

    def _import(self, index: int) -> None:
        if not self.exports:
            return self._ingest(index)
        path = self.rng.choice(self.exports)
        start = _begin(ev="begin", op="import", user=Path(path).name.split("-")[0], path=path)
        with open(path, encoding="utf-8") as lines:
            self.memory.import_user(lines, replace=True)
        _done("import", start)

    def _rebuild(self, index: int) -> None:
        start = _begin(ev="begin", op="rebuild")
        self.memory.rebuild()
        _done("rebuild", start)

    def _maintain(self, index: int) -> None:
        start = _begin(ev="begin", op="maintain")
        self.memory.maintain()
        _done("maintain", start)


def _say(**event: Any) -> None:
    """One line on stdout (the trial's acks file), flushed before going on."""
    print(json.dumps(event), flush=True)


def _begin(**event: Any) -> float:
    """Announce an operation; returns when it started."""
    _say(**event)
    return time.perf_counter()


def _done(op: str, start: float, **result: Any) -> None:
    """Acknowledge an operation that returned, with how long it took."""
    _say(ev="done", op=op, seconds=round(time.perf_counter() - start, 4), **result)


def _threads() -> int:
    """Threads of this process (Linux); 1 means a fork copies everything there is."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def serve() -> None:
    """The zygote: import once, then fork a child per ``fork`` line on stdin; ``reap`` waits for it."""
    import chromadb  # noqa: F401  (the start-up cost every child shares)
    import kuzu  # noqa: F401
    import zep_core.providers.local  # noqa: F401  (onnxruntime itself is imported by each child)
    import zep_core.providers.rules  # noqa: F401
    import zep_core.transfer  # noqa: F401
    from zep_core import Memory  # noqa: F401

    threads = _threads()
    print(json.dumps({"ready": threads == 1, "threads": threads}), flush=True)
    if threads != 1:
        return
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["cmd"] == "fork":
            pid = os.fork()
            if pid == 0:
                _child_main(cmd)
            print(json.dumps({"pid": pid}), flush=True)
        elif cmd["cmd"] == "reap":
            _, status = os.waitpid(cmd["pid"], 0)
            print(json.dumps({"signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
                              "exit": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None}), flush=True)


def _child_main(spec: dict[str, Any]) -> None:
    code = 0
    try:
        os.dup2(os.open(spec["acks"], os.O_WRONLY | os.O_APPEND), 1)
        os.dup2(os.open(spec["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 2)
        _Child(spec).run()
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        code = 3
    os._exit(code)


class _Zygote:
    """The parent's handle on the zygote process: JSON lines over a pipe."""

    def __init__(self) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
                   ORT_DISABLE_TELEMETRY="1")
        self.proc = subprocess.Popen([sys.executable, "-m", "bench.soak", "--zygote"], cwd=ROOT, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        hello = self._reply()
        self.threads = hello.get("threads")
        if not hello.get("ready"):
            self.close()
            raise RuntimeError(f"the soak zygote runs {self.threads} threads after its imports; forking it would "
                               "not be safe (a thread holding a lock is not copied); find the import that starts one")

    def _reply(self) -> dict[str, Any]:
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the soak zygote died (exit {self.proc.poll()})")
        return json.loads(line)

    def ask(self, **cmd: Any) -> dict[str, Any]:
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return self._reply()

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


# -- the parent: what the acknowledgements promise ---------------------------------------------------


@dataclass(frozen=True)
class Expected:
    """What must hold for one user after the operations acknowledged so far.

    Attributes:
        episodes: acknowledged episode id -> (digest of its messages, status acknowledged).
        retired: ``lives_in`` facts an acknowledged move superseded: never current again.
        city: the current ``lives_in`` (``None``: none); checked only when ``city_known``.
        city_known: false after a move acknowledged ``duplicate`` or ``pending``, whose
            episode may wait for ``maintain``.
        forgotten: ``forget_user`` was acknowledged, and nothing for the user since.

    """

    episodes: dict[str, tuple[str, str]] = field(default_factory=dict)
    retired: frozenset[str] = frozenset()
    city: str | None = None
    city_known: bool = True
    forgotten: bool = False


@dataclass
class Ledger:
    """The promises of every acknowledgement so far: per user, and per export file."""

    users: dict[str, Expected] = field(default_factory=dict)
    exports: dict[str, Expected] = field(default_factory=dict)
    #: acknowledgements of episodes (by id) that no check has looked up yet
    unchecked: Counter = field(default_factory=Counter)
    #: acknowledged episodes a later forget or import took away before any check saw them (one the
    #: acknowledgements promised, or one the kill cut short that the check found done)
    dropped_unchecked: int = 0

    def replace_user(self, user: str, after: Expected) -> None:
        """Set ``user``'s expectations; episodes it no longer promises leave the unchecked ones."""
        for episode_id in set(self.user(user).episodes) - set(after.episodes):
            self.dropped_unchecked += self.unchecked.pop(episode_id, 0)
        self.users[user] = after

    def checked(self, expected: Expected) -> int:
        """Mark ``expected``'s episodes as looked up; returns how many had not been yet."""
        return sum(self.unchecked.pop(episode_id, 0) for episode_id in expected.episodes)

    def user(self, user: str) -> Expected:
        """What is expected of ``user`` (nothing, for a user never seen)."""
        return self.users.get(user, Expected())

    def apply(self, events: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
        """Replay one trial's acknowledgements; return the ``begin`` of the operation the kill cut short."""
        running = None
        for event in events:
            if event["ev"] == "begin":
                running = event
            elif event["ev"] == "done" and running is not None:
                self._done(running, event)
                running = None
        return running

    def _done(self, begin: dict[str, Any], done: dict[str, Any]) -> None:
        op, user = begin["op"], begin.get("user")
        if op in ("ingest", "supersede"):
            before = self.user(user)
            episodes = {**before.episodes, begin["episode_id"]: (digest(t for t, _ in begin["messages"]),
                                                                 done["status"])}
            after = replace(before, episodes=episodes, forgotten=False)
            if op == "supersede":
                moved = done["status"] == "done"
                after = replace(after, retired=after.retired | set(done["superseded"]),
                                city=begin["city"] if moved else None, city_known=moved)
            self.users[user] = after
            self.unchecked[begin["episode_id"]] += 1
        elif op == "forget":
            self.replace_user(user, Expected(forgotten=True))
        elif op == "export":
            self.exports[begin["path"]] = self.user(user)
        elif op == "import":
            self.replace_user(user, self.exports[begin["path"]])

    def alternatives(self, running: dict[str, Any] | None,
                     stored: str | None = None) -> tuple[str | None, list[Expected]]:
        """The states a user may be in after a kill during ``running``: before it, or after it.

        For an episode the kill interrupted, ``stored`` is the status it was found stored
        with (None: not stored). A stored episode is adopted as if acknowledged with that
        status: a pending one is extracted later by ``maintain`` or the retry, so a move
        it makes is no longer known, rather than assumed not to happen.
        """
        op = running["op"] if running else None
        user = running.get("user") if running else None
        if user is None:
            return None, []
        before = self.user(user)
        if op in ("ingest", "supersede"):
            if stored is None:
                return user, [before]
            episodes = {**before.episodes, running["episode_id"]: (digest(t for t, _ in running["messages"]), stored)}
            after = replace(before, episodes=episodes, forgotten=False)
            if op == "ingest":
                return user, [after]
            if stored != "done":
                return user, [replace(after, city=None, city_known=False)]
            return user, [replace(after, city=running["city"], city_known=True), replace(after, city_known=False)]
        if op == "forget":
            return user, [before, Expected(forgotten=True)]
        if op == "import":
            return user, [before, self.exports.get(running["path"], before)]
        return user, [before]


@dataclass
class Verdict:
    """What one check found: problems as ``(kind, message)``, kind ``lost`` or ``inconsistent``."""

    problems: list[tuple[str, str]] = field(default_factory=list)
    episodes_checked: int = 0
    episodes_first_checked: int = 0
    reopen_seconds: float = 0.0
    outbox_left: int = 0

    @property
    def lost(self) -> int:
        """Acknowledged episodes missing or changed."""
        return sum(kind == "lost" for kind, _ in self.problems)

    @property
    def inconsistent(self) -> bool:
        """Whether anything other than a lost episode was wrong."""
        return any(kind != "lost" for kind, _ in self.problems)


class _Observed:
    """The reopened memory, read once per user and shared by the alternatives."""

    def __init__(self, memory: Any, state: Any) -> None:
        self.memory, self.state = memory, state
        self._facts: dict[str, list[Any]] = {}

    def facts(self, user: str) -> list[Any]:
        if user not in self._facts:
            self._facts[user] = self.memory.facts(user) if self.memory.has_user(user) else []
        return self._facts[user]

    def episode(self, episode_id: str) -> Any:
        from zep_core import NotFoundError

        try:
            return self.memory.get_episode(episode_id)
        except NotFoundError:
            return None

    def traces(self, user: str) -> list[str]:
        from tests.stores.state import traces

        return traces(self.state, user) + (["has_user() is true"] if self.memory.has_user(user) else [])


def _user_problems(seen: _Observed, user: str, expected: Expected) -> list[tuple[str, str]]:
    """Where the stored ``user`` breaks what was promised; [] when it keeps every promise."""
    if expected.forgotten:
        left = seen.traces(user)
        return [("inconsistent", f"user {user} was forgotten but still has data: {left[:4]}")] if left else []
    out: list[tuple[str, str]] = []
    for episode_id, (want, status) in expected.episodes.items():
        episode = seen.episode(episode_id)
        if episode is None or episode.user_id != user:
            out.append(("lost", f"acknowledged episode {episode_id} of {user} is missing"))
        elif digest(episode.texts) != want:
            out.append(("lost", f"acknowledged episode {episode_id} of {user} came back with other messages"))
        elif episode.status not in ("done", "pending") or (status == "done" and episode.status != "done"):
            out.append(("inconsistent", f"acknowledged episode {episode_id} is {episode.status} "
                                        f"({episode.error}); it was acknowledged {status}"))
    facts = seen.facts(user)
    current = {f.id for f in facts if _is_current(f)}
    if expected.retired & current:
        out.append(("inconsistent", f"lives_in facts {sorted(expected.retired & current)[:3]} of {user} were "
                                    "superseded by an acknowledged move but are current again"))
    if expected.city_known:
        cities = sorted(f.object for f in facts if f.id in current and f.predicate == "lives_in"
                        and f.subject == USERS.get(user))
        want_cities = [expected.city] if expected.city else []
        if cities != want_cities:
            out.append(("inconsistent", f"{USERS.get(user, user)} ({user}) currently lives in {cities}; the last "
                                        f"acknowledged move says {want_cities}"))
    return out


def _outbox_rows(db: Path) -> int:
    """Index writes a kill left queued, read before the memory replays them."""
    if not db.exists():
        return 0
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return conn.execute("SELECT count(*) FROM outbox").fetchone()[0]
    except sqlite3.OperationalError:  # killed before the schema existed
        return 0
    finally:
        conn.close()


def check_folder(data_dir: Path, embedder: Any, ledger: Ledger,
                 running: dict[str, Any] | None = None) -> Verdict:
    """Reopen ``data_dir`` and check it against ``ledger``; adopts the state the killed operation left.

    Args:
        data_dir: the data folder, closed (its last process was killed or closed it).
        embedder: the embedder the folder was built with (reused across checks).
        ledger: what the acknowledgements promise; updated for the user of ``running``.
        running: the ``begin`` event of the operation the kill cut short, if any.

    """
    from zep_core import Memory, MemoryConfig

    from tests.stores.state import problems, snapshot

    verdict = Verdict(outbox_left=_outbox_rows(Path(data_dir) / "zep.db"))
    started = time.perf_counter()
    try:
        memory = Memory(MemoryConfig(data_dir=data_dir, embedder=embedder))
    except Exception as exc:  # a folder that cannot be reopened is the worst finding
        verdict.problems.append(("inconsistent", f"reopening failed: {type(exc).__name__}: {exc}"))
        return verdict
    verdict.reopen_seconds = time.perf_counter() - started
    try:
        found = memory.check_consistency()
        verdict.problems += [("inconsistent", f"check_consistency: {k} {v[:3]}") for k, v in found.items()]
        state = snapshot(memory)
        verdict.problems += [("inconsistent", p) for p in problems(state, memory.config.single_valued_predicates)]
        seen = _Observed(memory, state)
        interrupted = seen.episode(running["episode_id"]) if running and running.get("episode_id") else None
        stored = interrupted.status if interrupted is not None and interrupted.user_id == running.get("user") else None
        touched, alternatives = ledger.alternatives(running, stored)
        for user in sorted(set(ledger.users) - {touched}):
            verdict.problems += _user_problems(seen, user, ledger.users[user])
            verdict.episodes_checked += len(ledger.users[user].episodes)
            verdict.episodes_first_checked += ledger.checked(ledger.users[user])
        if touched is not None:
            results = [_user_problems(seen, touched, alt) for alt in alternatives]
            kept = next((i for i, found in enumerate(results) if not found), None)
            verdict.problems += results[0] if kept is None else []
            ledger.replace_user(touched, alternatives[kept or 0])
            verdict.episodes_checked += len(ledger.users[touched].episodes)
            verdict.episodes_first_checked += ledger.checked(ledger.users[touched])
    except Exception:
        verdict.problems.append(("inconsistent", f"the check failed: {traceback.format_exc(limit=4)}"))
    finally:
        memory.close()
    return verdict


# -- the run ------------------------------------------------------------------------------------------


def read_events(path: Path) -> list[dict[str, Any]]:
    """The complete lines of a trial's acks file (a line the kill cut short was never acknowledged)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n")[:-1] if line]


def _wait_for(acks: Path, pid: int, timeout: float, episodes: int = 0) -> bool:
    """Wait until the child's open returned and it acknowledged ``episodes`` episodes; False if it ended."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        events = read_events(acks)
        if events[:1] == [{"ev": "open"}] and sum(
                e["ev"] == "done" and e["op"] in ("ingest", "supersede") for e in events) >= episodes:
            return True
        try:
            if Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z":
                return False  # it ended on its own
        except OSError:
            return False
        time.sleep(0.005)
    return False


class _Soak:
    """The parent's state across trials: one folder, the ledger, the counters."""

    def __init__(self, work: Path, seed: int, embedder: Any, kill_window: float, after_episodes: int = 0) -> None:
        self.work, self.seed, self.embedder, self.kill_window = work, seed, embedder, kill_window
        self.after_episodes = after_episodes
        self.data, self.exports_dir = work / "data", work / "exports"
        self.acks, self.log = work / "acks.jsonl", work / "child.log"
        self.exports_dir.mkdir(parents=True, exist_ok=True)
        self.rng = random.Random(seed)
        self.ledger = Ledger()
        self.retry: dict[str, Any] | None = None
        self.counts: Counter = Counter()
        self.started: Counter = Counter()
        self.acknowledged: Counter = Counter()
        self.killed: Counter = Counter()
        self.op_seconds: dict[str, list[float]] = {}
        self.seconds: dict[str, list[float]] = {"trial": [], "child": [], "check": [], "reopen": []}
        self.failures: list[dict[str, Any]] = []

    def trial(self, zygote: _Zygote, trial: int) -> Verdict:
        """Fork a child, kill it, check the folder; returns the verdict."""
        t0 = time.perf_counter()
        self.acks.write_bytes(b"")
        early = self.rng.random() < EARLY_SHARE
        delay = self.rng.uniform(0, EARLY_WINDOW_S if early else self.kill_window)
        spec = {"data": str(self.data), "acks": str(self.acks), "log": str(self.log), "seed": self.seed,
                "trial": trial, "retry": self.retry, "exports": list(self.ledger.exports),
                "exports_dir": str(self.exports_dir)}
        pid = zygote.ask(cmd="fork", **spec)["pid"]
        opened = early or _wait_for(self.acks, pid, OPEN_TIMEOUT_S, self.after_episodes)
        time.sleep(delay)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        ended = zygote.ask(cmd="reap", pid=pid)
        self.seconds["child"].append(time.perf_counter() - t0)
        events = read_events(self.acks)
        running = self.ledger.apply(events)
        t1 = time.perf_counter()
        verdict = check_folder(self.data, self.embedder, self.ledger, running)
        self.seconds["check"].append(time.perf_counter() - t1)
        self.seconds["reopen"].append(verdict.reopen_seconds)
        if ended["signal"] != signal.SIGKILL or not opened:
            tail = self.log.read_text(errors="replace")[-1500:] if self.log.exists() else ""
            verdict.problems.append(("inconsistent", f"the child ended on its own or never got as far as the kill "
                                                     f"waits for ({ended}): {tail}"))
        self._count(events, running, verdict)
        self.retry = running if running and running["op"] in ("ingest", "supersede") else None
        self._prune_exports()
        self.seconds["trial"].append(time.perf_counter() - t0)
        if verdict.problems:
            self.failures.append({"trial": trial, "seed": self.seed, "killed_during": self._killed_during(
                events, running), "problems": [m for _, m in verdict.problems[:10]]})
        return verdict

    @staticmethod
    def _killed_during(events: Sequence[dict[str, Any]], running: dict[str, Any] | None) -> str:
        if not events or events[0] != {"ev": "open"}:
            return "open"
        return running["op"] if running else "between operations"

    def _count(self, events: Sequence[dict[str, Any]], running: dict[str, Any] | None, verdict: Verdict) -> None:
        begins = [e for e in events if e["ev"] == "begin"]
        self.started.update(e["op"] for e in begins)
        for done in (e for e in events if e["ev"] == "done"):
            self.acknowledged[done["op"]] += 1
            self.op_seconds.setdefault(done["op"], []).append(done["seconds"])
        self.killed[self._killed_during(events, running)] += 1
        moves = [d for b, d in zip(begins, (e for e in events if e["ev"] == "done"))
                 if b["op"] == "supersede" and d["status"] == "done" and b.get("was")]
        self.counts.update(trials=1, lost=verdict.lost, inconsistent=int(verdict.inconsistent),
                           episodes_checked=verdict.episodes_checked,
                           episodes_first_checked=verdict.episodes_first_checked,
                           outbox_rows_replayed=verdict.outbox_left,
                           trials_with_outbox_rows_left=int(verdict.outbox_left > 0), moves_acknowledged=len(moves),
                           episodes_acknowledged=sum(e["ev"] == "done" and e["op"] in ("ingest", "supersede")
                                                     for e in events))

    def _prune_exports(self) -> None:
        """Keep the newest acknowledged exports; drop older ones and any a kill left unacknowledged."""
        for path in list(self.ledger.exports)[:-KEEP_EXPORTS]:
            del self.ledger.exports[path]
        for file in self.exports_dir.iterdir():
            if str(file) not in self.ledger.exports:
                file.unlink()

    def data_at_end(self) -> dict[str, Any]:
        """The folder's size and contents after the last trial."""
        from zep_core import Memory, MemoryConfig

        with Memory(MemoryConfig(data_dir=self.data, embedder=self.embedder)) as memory:
            stats = memory.stats()
        return {"users": stats["users"], "episodes": stats["records"]["episodes"],
                "facts": stats["records"]["facts"], "entities": stats["records"]["entities"],
                "pending_episodes": stats["pending_episodes"], "megabytes": round(dir_size(self.data) / 2**20, 1)}


def _seconds(values: Sequence[float]) -> dict[str, float]:
    return {"mean": round(sum(values) / len(values), 3) if values else float("nan"), **percentiles(values)}


def run(trials: int, seed: int, *, out: Path | None = None, work: Path | None = None, embedder: Any = None,
        kill_window: float = KILL_WINDOW_S, after_episodes: int = 0, keep_going: bool = False,
        quiet: bool = False) -> dict[str, Any]:
    """Run ``trials`` SIGKILL trials on one data folder and write the result file.

    Args:
        trials: how many trials.
        seed: seeds the operations each child picks and the kill delays.
        out: the result file (default ``bench/results/soak.json``).
        work: the folder for the data, the exports and the acks (default: a temporary
            folder, removed after a run that found nothing).
        embedder: the offline default embedder, if one is loaded already.
        kill_window: the kill comes ``U(0, kill_window)`` s after a child's open returned.
        after_episodes: ... and, in a trial not killed early, after the child acknowledged this
            many episodes (the smoke test's 1: on a loaded machine a child can spend the whole
            window on its first operation, and a run that acknowledged nothing checks nothing).
        keep_going: go on after a trial that found a problem (by default the run stops
            there and keeps the folder as it was).
        quiet: no progress lines.

    Returns:
        The figures, as written to the result file (plus ``path``).

    """
    from zep_core.providers.local import LocalEmbedder

    progress = Progress("soak", quiet=quiet)
    out = Path(out) if out else RESULTS_DIR / "soak.json"
    temporary = work is None
    work = Path(work) if work else Path(tempfile.mkdtemp(prefix="zep-soak-"))
    soak = _Soak(work, seed, embedder or LocalEmbedder(), kill_window, after_episodes)
    zygote = _Zygote()
    started = time.perf_counter()
    try:
        for trial in range(trials):
            verdict = soak.trial(zygote, trial)
            if verdict.problems:
                progress(f"trial {trial}: {soak.failures[-1]['problems'][0][:300]}")
                if not keep_going:
                    break
            if (trial + 1) % 10 == 0 or trial + 1 == trials:
                c = soak.counts
                progress(f"trial {trial + 1}/{trials}: {c['episodes_acknowledged']} episodes acknowledged, "
                         f"{c['lost']} lost, {c['inconsistent']} inconsistent, "
                         f"{(time.perf_counter() - started) / (trial + 1):.2f} s/trial")
    finally:
        zygote.close()
    total = time.perf_counter() - started
    c = soak.counts
    result = {
        "command": f"python -m bench.soak --trials {trials} --seed {seed}"
                   + (f" --after-episodes {after_episodes}" if after_episodes else ""),
        "trials": c["trials"], "requested_trials": trials, "seed": seed,
        "episodes_acknowledged": c["episodes_acknowledged"], "lost": c["lost"], "inconsistent": c["inconsistent"],
        "episodes_checked": c["episodes_checked"], "moves_acknowledged": c["moves_acknowledged"],
        # each acknowledged episode is looked up by the check after its trial, unless a forget or an
        # import (acknowledged, or cut short but done) took it away first: the two add up to
        # episodes_acknowledged
        "episodes_first_checked": c["episodes_first_checked"],
        "episodes_forgotten_before_a_check": soak.ledger.dropped_unchecked,
        "ops": {op: {"started": soak.started[op], "acknowledged": soak.acknowledged[op], "killed": soak.killed[op],
                     "seconds": percentiles(soak.op_seconds.get(op, []), (50, 95))} for op in OPS},
        "op_weights": OPS,
        "kills": dict(soak.killed.most_common()),
        "kill_delay": {"early_share": EARLY_SHARE, "early_window_s": EARLY_WINDOW_S,
                       "window_after_open_s": kill_window, "after_episodes": after_episodes},
        "outbox_rows_replayed": c["outbox_rows_replayed"],
        "trials_with_outbox_rows_left": c["trials_with_outbox_rows_left"],
        "seconds": round(total, 1),
        "seconds_per_trial": _seconds(soak.seconds["trial"]),
        "child_seconds": _seconds(soak.seconds["child"]),
        "check_seconds": _seconds(soak.seconds["check"]),
        "reopen_seconds": _seconds(soak.seconds["reopen"]),
        "data_at_end": soak.data_at_end() if not soak.failures else None,
        "zygote_threads_at_fork": zygote.threads,
        "failures": soak.failures[:20],
        "work_dir": str(work) if soak.failures or not temporary else None,
    }
    path = write_result(out.stem, result, out.parent)
    if temporary and not soak.failures:
        shutil.rmtree(work, ignore_errors=True)
    return {**result, "path": str(path)}


def main(argv: Sequence[str] | None = None) -> int:
    """The CLI; returns 1 when a trial lost or broke something."""
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000, help="SIGKILL trials (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=1, help="seeds operations and kill delays (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "soak.json",
                        help="result file (default: %(default)s)")
    parser.add_argument("--work", type=Path, help="folder for the data and exports (default: a temporary one)")
    parser.add_argument("--kill-window", type=float, default=KILL_WINDOW_S,
                        help="kill U(0, this) s after a child's open returned (default: %(default)s)")
    parser.add_argument("--after-episodes", type=int, default=0,
                        help="start the kill delay after the child acknowledged this many episodes (default: 0)")
    parser.add_argument("--keep-going", action="store_true", help="do not stop at the first trial that fails")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.add_argument("--zygote", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.zygote:
        serve()
        return 0
    if args.trials < 1 or not 0 < args.kill_window <= 60 or args.after_episodes < 0:
        parser.error("--trials must be >= 1, --kill-window in (0, 60] seconds and --after-episodes >= 0")
    r = run(args.trials, args.seed, out=args.out, work=args.work, kill_window=args.kill_window,
            after_episodes=args.after_episodes,
            keep_going=args.keep_going, quiet=args.quiet)
    print(f"soak: {r['trials']} trials, {r['episodes_acknowledged']} acknowledged episodes, {r['lost']} lost, "
          f"{r['inconsistent']} inconsistent, {r['seconds_per_trial']['mean']:.2f} s per trial "
          f"(seed {args.seed}) -> {r['path']}")
    for failure in r["failures"][:3]:
        print(f"  trial {failure['trial']} (killed during {failure['killed_during']}): {failure['problems'][0]}"
              f"\n  data kept in {r['work_dir']}", file=sys.stderr)
    return 1 if r["lost"] or r["inconsistent"] else 0


if __name__ == "__main__":
    sys.exit(main())
