"""The process the crash test kills: it ingests until SIGKILL arrives.

Run as ``python -m tests.reliability.crash_child`` from the repository root. It starts
as a *zygote*: it imports zep-memory, Chroma and Kùzu once (most of a child's start-up
time), then serves one JSON command per stdin line:

* ``{"cmd": "fork", "data": …, "acks": …, "log": …, "seed": s, "trial": t,
  "embedder": "hash" | "local", "retry": [episode ids]}`` forks a child that opens the
  memory and ingests episodes until it is killed; replies ``{"pid": …}``;
* ``{"cmd": "reap", "pid": …}`` waits for that child; replies how it ended.

A child appends one line to the ``acks`` file, and fsyncs it, after every call that
returned: ``open <pid of its Chroma process, or -1>``, ``ep <id> <user> <n messages> <digest>
<status>``, ``forget <user>``.
Episodes are a pure function of (seed, trial, index), so a retry re-sends the same one.
"""

from __future__ import annotations

import faulthandler
import json
import os
import random
import sys
import traceback
from datetime import datetime, timedelta, timezone

import chromadb  # noqa: F401  (imported before forking: this is the start-up cost we share)
import kuzu  # noqa: F401
from zep_core import Memory, MemoryConfig, Message
from zep_core.providers.local import LocalEmbedder
from zep_core.providers.rules import RuleExtractor  # noqa: F401

from tests.core.fakes import HashEmbedder
from tests.stores.state import digest

USERS = {"u0": "Alice", "u1": "Bob", "u2": "Carol", "temp": "Dora"}
CITIES = ("Paris", "Berlin", "Rome", "Lisbon", "Oslo", "Madrid", "Vienna", "Prague")
FIRMS = ("Acme", "Globex", "Initech", "Umbrella", "Hooli")
LIKES = ("jazz", "tea", "chess", "hiking", "sushi", "opera")
TEMPLATES = ("I live in {city}.", "I moved to {city}.", "I work at {firm}.", "I like {like}.",
             "I live in {city} and I work at {firm}.", "We talked about the weather today.")
BASE = datetime(2020, 1, 1, tzinfo=timezone.utc)


def episode(seed: int, trial: int, index: int) -> tuple[str, str, list[Message]]:
    """The episode a child sends at ``index`` of ``trial``: (episode id, user, messages)."""
    rng = random.Random(f"{seed}/{trial}/{index}")
    user = "temp" if rng.random() < 0.08 else rng.choice(("u0", "u1", "u2"))
    count = rng.choice((1, 1, 2, 3, 8))
    start = BASE + timedelta(minutes=trial * 10_000 + index * 10)
    messages = [Message(rng.choice(TEMPLATES).format(city=rng.choice(CITIES), firm=rng.choice(FIRMS),
                                                     like=rng.choice(LIKES)),
                        name=USERS[user], timestamp=start + timedelta(seconds=j))
                for j in range(count)]
    return f"c{seed}-t{trial}-e{index}", user, messages


def ingest_until_killed(data: str, acks: str, seed: int, trial: int, embedder: str, retry: list[str],
                        database_url: str | None = None) -> None:
    """Open the memory and keep writing; never returns on its own (the parent kills it)."""
    fd = os.open(acks, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def ack(line: str) -> None:
        os.write(fd, (line + "\n").encode())
        os.fsync(fd)

    emb = HashEmbedder() if embedder == "hash" else LocalEmbedder()
    # a user's vectors get a Chroma collection from their third current fact: kills land in both tiers and
    # in promotions (a collection built from SQLite, then marked); Chroma is started at the open, as the
    # parent kills its process too. On PostgreSQL, an HNSW index of their own from their third (kills land in
    # its builds, and between a mark and its copy)
    memory = Memory(MemoryConfig(data_dir=data, embedder=emb, vector_exact_below=3, postgres_exact_below=3,
                                 database_url=database_url))
    ack(f"open {getattr(getattr(memory._stores.vectors, 'chroma', None), 'pid', None) or -1}")

    def send(eid: str, user: str, messages: list[Message]) -> None:
        result = memory.conversation_end("s", messages, user_id=user, episode_id=eid)
        ack(f"ep {eid} {user} {len(messages)} {digest(m.content for m in messages)} {result.status}")

    for eid in retry:  # the episode the last kill interrupted, sent again as a client would
        _, t, e = eid.split("-")
        send(*episode(seed, int(t[1:]), int(e[1:])))
    rng = random.Random(f"{seed}/{trial}/actions")
    for index in range(100_000):
        roll = rng.random()
        if roll < 0.04 and memory.has_user("temp"):
            memory.forget_user("temp")
            ack("forget temp")
        elif roll < 0.08:
            memory.refresh_entities(max_age=timedelta(0))
            ack("refresh")
        else:
            send(*episode(seed, trial, index))


def serve() -> None:
    """The zygote loop: fork children on request, reap them when asked."""
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["cmd"] == "fork":
            pid = os.fork()
            if pid == 0:
                code = 0
                try:
                    log = os.open(cmd["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                    os.dup2(log, 2)
                    faulthandler.enable()  # a native crash leaves every thread's stack in the log
                    ingest_until_killed(cmd["data"], cmd["acks"], cmd["seed"], cmd["trial"], cmd["embedder"],
                                        cmd["retry"], cmd.get("database_url"))
                except BaseException:
                    traceback.print_exc()
                    sys.stderr.flush()
                    code = 3
                os._exit(code)
            print(json.dumps({"pid": pid}), flush=True)
        elif cmd["cmd"] == "reap":
            _, status = os.waitpid(cmd["pid"], 0)
            print(json.dumps({"signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
                              "exit": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None}), flush=True)


if __name__ == "__main__":
    serve()
