"""Concurrent use: threads sharing one Memory, and processes sharing one data folder.

Threads: writers ingest while readers query, with the default background indexer
running; afterwards no fact is lost or duplicated, racing restatements reinforce one
fact, racing moves leave exactly the newest one current, and the stores agree.

Processes: a second process (or a second Memory in this one) gets an immediate
:class:`StoreLockedError` naming the folder and the holder — never a hang — and a
holder killed with SIGKILL leaves no lock behind (flock dies with the process).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from datetime import datetime, timedelta, timezone

import pytest
from zep_core import Memory, MemoryConfig, Message, NotFoundError, StoreLockedError

from tests.reliability.figures import ROOT, record
from tests.stores.state import problems, snapshot, traces

UTC = timezone.utc
T0 = datetime(2024, 1, 1, tzinfo=UTC)
WRITERS, READERS, EPISODES_PER_WRITER = 6, 4, 16
CITIES = ("Paris", "Berlin", "Rome", "Lisbon", "Oslo", "Madrid", "Vienna", "Prague", "Dublin", "Athens",
          "Warsaw", "Bern")


def _writer(memory, w, plan, errors, done):
    try:
        for kind, user, text, ts in plan:
            result = memory.conversation_end(f"w{w}", [Message(text, name=user.capitalize(), timestamp=ts)],
                                             user_id=user)
            assert result.status == "done", result
            done[kind] += 1
    except Exception as exc:  # reported by the test, with the thread
        errors.append(f"writer {w}: {type(exc).__name__}: {exc}")


def _reads(memory, user):
    """The six reads of a round; each checks that nothing of another user comes back."""
    def context():
        question = f"What does {user.capitalize()} like, where does she live?"
        assert all(f.user_id == user for f in memory.get_context(question, user_id=user)), "foreign fact"

    def graph():
        rows = memory.cypher("MATCH (e:Entity)-[r:FACT]->(x) RETURN e.user_id AS u, r.user_id AS ru", user_id=user)
        assert all(row["u"] == row["ru"] == user for row in rows), rows

    return (context, lambda: memory.context_block("Where does Shared live?", user_id=user),
            lambda: memory.entity_history(user.capitalize(), user_id=user),
            lambda: memory.related_entities(user.capitalize(), user_id=user), graph, memory.stats)


def _reader(memory, r, stop, errors, done, min_rounds=5):
    rng = random.Random(r)
    users = [f"own{w}" for w in range(WRITERS)] + ["shared"]
    rounds = 0
    while not stop.is_set() or rounds < min_rounds:
        rounds += 1
        writing = not stop.is_set()
        for read in _reads(memory, rng.choice(users)):
            try:
                read()
                done["reads"] += 1
                done["reads_while_writing"] += writing
            except NotFoundError:  # the user, or its entity, has not been stored yet
                done["not_found_yet"] += 1
            except Exception as exc:
                errors.append(f"reader {r}: {type(exc).__name__}: {exc}")
                return


def _plans(rng):
    """Per writer: its own likes, a restatement of one shared like, and two moves of the shared user.

    The writers reach their first move, the shared like and their second move at about
    the same time, so those race: six moves a day apart, then six more.
    """
    moves = [("move", "shared", f"I live in {c}.", T0 + timedelta(days=i)) for i, c in enumerate(CITIES)]
    plans = []
    for w in range(WRITERS):
        own = [("own", f"own{w}", f"I like item{w}x{i}.", T0 + timedelta(hours=i)) for i in range(EPISODES_PER_WRITER)]
        rng.shuffle(own)
        same = ("same", "shared", "I like green tea.", T0 + timedelta(minutes=w))
        half = len(own) // 2
        plans.append(own[:half] + [moves[w], same] + own[half:] + [moves[WRITERS + w]])
    return plans, moves


def test_threads_ingesting_while_others_query_lose_and_duplicate_nothing(make_memory):
    memory = make_memory()
    plans, moves = _plans(random.Random(11))
    errors: list[str] = []
    done: Counter = Counter()
    stop = threading.Event()
    started = time.monotonic()
    writers = [threading.Thread(target=_writer, args=(memory, w, plans[w], errors, done)) for w in range(WRITERS)]
    readers = [threading.Thread(target=_reader, args=(memory, r, stop, errors, done)) for r in range(READERS)]
    for t in writers + readers:
        t.start()
    for t in writers:
        t.join(timeout=300)
    stop.set()
    for t in readers:
        t.join(timeout=60)
    seconds = time.monotonic() - started
    assert not errors, errors[:5]

    for w in range(WRITERS):  # every own fact once, none twice, none lost
        likes = Counter(f.object for f in memory.entity_history(f"Own{w}", user_id=f"own{w}") if f.predicate == "likes")
        assert likes == Counter({f"item{w}x{i}": 1 for i in range(EPISODES_PER_WRITER)})
    shared = memory.entity_history("Shared", user_id="shared")
    tea = [f for f in shared if f.predicate == "likes" and f.object == "green tea"]
    assert len(tea) == 1 and tea[0].is_current and len(tea[0].source_message_ids) == WRITERS  # reinforced
    homes = [f for f in shared if f.predicate == "lives_in"]
    newest = max(moves, key=lambda m: m[3])[2].split()[-1].rstrip(".")
    assert [f.object for f in homes if f.is_current] == [newest]
    assert all(f.valid_until is not None and f.superseded_by for f in homes if not f.is_current)
    assert memory.check_consistency() == {}
    assert problems(snapshot(memory), memory.config.single_valued_predicates) == []

    record("concurrency", {
        "writers": WRITERS, "readers": READERS, "episodes_ingested": sum(done[k] for k in ("own", "same", "move")),
        "racing_restatements": done["same"], "racing_moves": done["move"], "reads": done["reads"],
        "reads_while_writing": done["reads_while_writing"], "reads_answered_not_found_yet": done["not_found_yet"],
        "errors": len(errors),
        "lives_in_facts_stored": len(homes), "seconds": round(seconds, 1)},
        ".venv/bin/python -m pytest -q tests/reliability/test_concurrency.py")


def test_forget_user_racing_ingestion_of_that_user_leaves_no_trace(make_memory):
    from tests.core.fakes import HashEmbedder

    memory = make_memory(embedder=HashEmbedder())
    memory.conversation_end("s", [Message("I live in Oslo.", name="Bea")], user_id="bystander")
    outcomes: Counter = Counter()
    errors: list[str] = []
    stop = threading.Event()

    def ingest():
        try:
            for i in range(40):
                try:
                    memory.conversation_end("s", [Message(f"I like thing{i}.", name="Xena")], user_id="xena")
                    outcomes["stored"] += 1
                except NotFoundError as exc:  # forgotten while being processed: said so, nothing kept
                    assert "forgotten" in str(exc)
                    outcomes["refused_forgotten"] += 1
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            stop.set()

    def forget():
        while not stop.is_set():
            try:
                memory.forget_user("xena")
                outcomes["forgets"] += 1
            except NotFoundError:
                pass

    threads = [threading.Thread(target=ingest), threading.Thread(target=forget)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors and outcomes["forgets"] > 0
    if memory.has_user("xena"):
        memory.forget_user("xena")
    state = snapshot(memory)
    assert traces(state, "xena") == [] and "Xena" not in repr(state.rows)
    assert memory.check_consistency() == {}
    assert problems(state, memory.config.single_valued_predicates) == []
    assert "Oslo" in memory.context_block("Where does Bea live?", user_id="bystander")


HOLDER = textwrap.dedent("""
    import sys, time
    from zep_core import Memory, MemoryConfig
    from tests.core.fakes import HashEmbedder
    memory = Memory(MemoryConfig(data_dir=sys.argv[1], embedder=HashEmbedder()))
    memory.conversation_end("s", [{"role": "user", "content": "I live in Paris.", "name": "Ann"}], user_id="ann")
    memory.flush()
    print("holding", flush=True)
    time.sleep(120)
""")


def _holder(data):
    env = dict(os.environ, PYTHONPATH=str(ROOT), ORT_DISABLE_TELEMETRY="1")
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(data)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line.strip() == "holding", proc.stderr.read()
    return proc


@pytest.fixture
def hash_config(tmp_path):
    from tests.core.fakes import HashEmbedder

    return MemoryConfig(data_dir=tmp_path / "data", embedder=HashEmbedder())


def test_a_second_process_gets_an_immediate_error_naming_folder_and_holder(hash_config):
    holder = _holder(hash_config.data_dir)
    try:
        started = time.monotonic()
        with pytest.raises(StoreLockedError) as caught:
            Memory(hash_config)
        waited = time.monotonic() - started
        message = str(caught.value)
        assert str(hash_config.data_path) in message and f"process {holder.pid}" in message, message
        assert waited < 2.0
    finally:
        holder.kill()
        holder.wait()
    _record_lock("live_holder", waited, message.replace(str(hash_config.data_path), "<data>"))


def test_a_second_memory_in_the_same_process_shares_the_first_ones_stores(hash_config):
    first = Memory(hash_config)
    try:
        second = Memory(hash_config)  # same folder, same settings: the same stores, not a lock error
        second.conversation_end("s", [Message("I live in Rome.", name="Ann")], user_id="ann")
        assert "Rome" in first.context_block("Where does Ann live?", user_id="ann")  # one memory, two handles
        second.close()
        first.conversation_end("s2", [Message("I like jazz.", name="Ann")], user_id="ann")  # still usable
    finally:
        first.close()
    with Memory(hash_config) as again:  # and free once the last handle closed
        assert again.check_consistency() == {}


def test_a_sigkilled_holder_leaves_no_stale_lock(hash_config):
    holder = _holder(hash_config.data_dir)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    lock_file = hash_config.data_path / ".zep.lock"
    assert str(holder.pid) in lock_file.read_text()  # the file stays, naming the dead holder ...
    started = time.monotonic()
    with Memory(hash_config) as memory:  # ... but the kernel released the flock with the process
        waited = time.monotonic() - started
        assert memory.check_consistency() == {}
        assert "Paris" in memory.context_block("Where does Ann live?", user_id="ann")
    _record_lock("after_sigkill", waited, "opened")


def test_processes_racing_to_open_one_folder_get_one_winner_and_clear_errors(hash_config):
    racer = textwrap.dedent("""
        import sys, time
        from zep_core import Memory, MemoryConfig, StoreLockedError
        from tests.core.fakes import HashEmbedder
        config = MemoryConfig(data_dir=sys.argv[1], embedder=HashEmbedder())
        sys.stdin.readline()                      # everyone starts together
        try:
            memory = Memory(config)
        except StoreLockedError as exc:
            print("locked", exc, flush=True)
        else:
            print("opened", flush=True)
            sys.stdin.readline()                  # hold until every racer has answered
            memory.close()
    """)
    env = dict(os.environ, PYTHONPATH=str(ROOT), ORT_DISABLE_TELEMETRY="1")
    procs = [subprocess.Popen([sys.executable, "-c", racer, str(hash_config.data_dir)], cwd=ROOT, env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for _ in range(4)]
    try:
        time.sleep(2.0)  # imports done
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        answers = [p.stdout.readline().strip() for p in procs]
        for p, answer in zip(procs, answers):
            if answer == "opened":
                p.stdin.write("done\n")
                p.stdin.flush()
            assert p.wait(timeout=60) == 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert sorted(a.split()[0] for a in answers) == ["locked", "locked", "locked", "opened"], answers
    assert all(str(hash_config.data_path) in a for a in answers if a.startswith("locked"))
    with Memory(hash_config) as memory:
        assert memory.check_consistency() == {}
    _record_lock("racing_opens", None, f"{len(procs)} processes: 1 opened, {len(procs) - 1} StoreLockedError")


_LOCKS: dict[str, dict] = {}


def _record_lock(name, seconds, outcome):
    _LOCKS[name] = {"seconds": None if seconds is None else round(seconds, 4), "outcome": outcome[:240]}
    record("locks", _LOCKS, ".venv/bin/python -m pytest -q tests/reliability/test_concurrency.py")
