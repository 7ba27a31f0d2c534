"""A writer in a process of its own, on the database named by its arguments (``tests/postgres/test_many_writers.py``).

``python -m tests.postgres.writer_child URL DATA JOB COUNT``: opens the memory, prints
``ready``, waits for a line on its input (so that the writers begin together), then runs
``JOB`` ``COUNT`` times and prints one JSON line: the outcome of each call (an ingest
result's status, ``forgot``, or the error's class and message; ``UNEXPECTED …`` for
anything that is not one of the library's errors).
"""

from __future__ import annotations

import json
import sys
import time
from datetime import datetime, timedelta, timezone

CITIES = ("Paris", "Berlin", "Rome", "Lisbon", "Oslo", "Madrid")
T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def same(memory, i: int) -> str:
    """Episode ``same-<i>`` of greg: a move and a liking, a day after the one before."""
    from zep_core import Message

    message = Message(f"I live in {CITIES[i % len(CITIES)]}. I like tea number {i}.", name="Greg",
                      timestamp=T0 + timedelta(days=i))
    return memory.conversation_end("s", [message], user_id="greg", episode_id=f"same-{i}").status


def new(memory, i: int) -> str:
    """A new episode of greg naming a new friend (a new entity, so a new entity vector)."""
    from zep_core import Message

    message = Message(f"I live in Paris. My friend Vic{i} plays chess. Vic likes tea.", name="Greg")
    return memory.conversation_end("s", [message], user_id="greg").status


def forget(memory, i: int) -> str:
    """``forget_user('greg')``, then a short pause."""
    try:
        memory.forget_user("greg")
    finally:
        time.sleep(0.03)
    return "forgot"


def main(url: str, data: str, job: str, count: str) -> None:
    from zep_core import Memory, MemoryConfig, ZepMemoryError

    run = {"same": same, "new": new, "forget": forget}[job]
    outcomes: list[str] = []
    with Memory(MemoryConfig(data_dir=data, database_url=url)) as memory:
        print("ready", flush=True)
        sys.stdin.readline()
        for i in range(int(count)):
            try:
                outcomes.append(run(memory, i))
            except ZepMemoryError as exc:
                outcomes.append(f"{type(exc).__name__}: {exc}")
            except Exception as exc:  # what the test must never see: reported, not raised
                outcomes.append(f"UNEXPECTED {type(exc).__name__}: {exc}")
    print(json.dumps(outcomes))


if __name__ == "__main__":
    main(*sys.argv[1:])
