"""A writer that ingests into a data folder until its disk is full (run by test_disk_full.py).

``python -m tests.reliability.disk_full_child DATA ACKS`` prints one JSON line with its
pid and those of its Chroma helper and child, appends each acknowledged episode id to
ACKS (fsynced, outside the full disk), and once ``conversation_end`` fails prints the
error as a JSON line. It goes on trying for a few more episodes, as a service would,
then closes the memory and prints how long closing took.
"""

from __future__ import annotations

import json
import os
import sys
import time

from zep_core import Memory, ZepMemoryError
from zep_core.stores import vector_process

#: Episodes tried after the first failure, as a service would keep getting requests.
TRIES_AFTER_FAILURE = 10


def episode(i: int) -> list[dict]:
    filler = " ".join(f"note{i}x{j}" for j in range(250))  # ~2.5 kB: the 20 MB disk fills in ~100 episodes
    return [{"role": "user", "name": "Ann", "content": f"I live in City{i} and I work at Company{i}. {filler}"},
            {"role": "assistant", "content": f"Noted: City{i}."}]


def main(data: str, acks: str) -> None:
    # every user's vectors in Chroma (no exact tier): the disk fills under all three stores' writes
    memory = Memory.open(data, vector_timeout_s=float(os.environ.get("ZEP_TEST_VECTOR_TIMEOUT_S", "30")),
                         vector_exact_below=0)
    helper = vector_process._HELPER.proc.pid if vector_process._HELPER else None
    print(json.dumps({"pid": os.getpid(), "helper": helper, "child": memory._stores.vectors.chroma.pid}), flush=True)
    failed_at = None
    tries = 0
    out = os.open(acks, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    for i in range(100_000):
        try:
            memory.conversation_end(f"s{i % 7}", episode(i), user_id=f"user{i % 5}", episode_id=f"e{i}")
        except ZepMemoryError as exc:
            if failed_at is None:
                failed_at = time.monotonic()
                print(json.dumps({"error": type(exc).__name__, "message": str(exc)}), flush=True)
            tries += 1
            if tries >= TRIES_AFTER_FAILURE:
                break
            continue
        os.write(out, f"e{i}\n".encode())
        os.fsync(out)
    start = time.monotonic()
    memory.close()
    print(json.dumps({"closed_in_s": time.monotonic() - start,
                      "since_error_s": time.monotonic() - (failed_at or start)}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
