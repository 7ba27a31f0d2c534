"""One client process of the server load test: it ingests its episodes while it reads.

Run as ``python -m tests.reliability.load_child PLAN RESULT`` from the repository root.
``PLAN`` is a JSON file: ``{"url", "key", "user", "name", "first", "count",
"acks", "resend_for_s", "item"}``. The process opens two :class:`RemoteMemory` clients
with its own key: a writer thread sends ``count`` episodes — ``conversation_end`` with
an ``episode_id`` each, so sending one again is safe — and a reader thread calls
``get_context`` over and over until the writer is done.

After every answered ``conversation_end`` the writer appends ``ep <episode id>
<status> <facts added>`` to the ``acks`` file (flushed and fsynced: the parent watches it
to know when to kill the server). When the server cannot be reached — killed, or not
yet back — the writer sends the same episode again, for up to ``resend_for_s`` seconds
(0: never), as a client with a durable queue would; the reader counts such calls as
made during the outage. Any other error is an error. The result file gets the latencies,
the acknowledgements, the episodes sent again, and the errors.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from zep_core import Message, StoreError, ZepMemoryError
from zep_core.server import RemoteMemory

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
_UNREACHABLE = "zep-memory server at"  # what RemoteMemory's transport errors say (cannot reach, timeout, reset)


def episode(plan: dict, index: int) -> tuple[str, list[Message]]:
    """The episode ``index`` of this client: its id and its one message (a fact of its own)."""
    text = f"I like {plan['item']}x{index}."
    return f"{plan['user']}-e{index}", [Message(text, name=plan["name"], timestamp=T0 + timedelta(minutes=index))]


def unreachable(exc: Exception) -> bool:
    """Whether ``exc`` says the server could not be reached (rather than that it refused the call)."""
    return isinstance(exc, StoreError) and _UNREACHABLE in str(exc)


class Client:
    """The two threads of one client process and what they saw."""

    def __init__(self, plan: dict) -> None:
        self.plan = plan
        self.writes_ms: list[float] = []
        self.reads_ms: list[float] = []
        self.acked: list[list] = []  # [episode id, status, facts added]
        self.resent: list[str] = []
        self.errors: list[str] = []
        self.reads = self.reads_unreachable = 0
        self.writing = threading.Event()
        self.first_ack = threading.Event()
        self.done = threading.Event()

    def write(self) -> None:
        plan = self.plan
        fd = os.open(plan["acks"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            with RemoteMemory(plan["url"], api_key=plan["key"], timeout=60) as memory:
                for index in range(plan["first"], plan["first"] + plan["count"]):
                    if not self._send(memory, fd, *episode(plan, index)):
                        return
        finally:
            os.close(fd)
            self.first_ack.set()
            self.done.set()

    def _send(self, memory: RemoteMemory, fd: int, episode_id: str, messages: list[Message]) -> bool:
        give_up, again = None, False
        while True:
            started = time.perf_counter()
            try:
                result = memory.conversation_end(f"{self.plan['user']}-s", messages, user_id=self.plan["user"],
                                                 episode_id=episode_id)
            except ZepMemoryError as exc:
                if not unreachable(exc) or self.plan["resend_for_s"] <= 0:
                    self.errors.append(f"conversation_end {episode_id}: {type(exc).__name__}: {exc}")
                    return False
                give_up = give_up or time.monotonic() + self.plan["resend_for_s"]
                if time.monotonic() > give_up:
                    self.errors.append(f"conversation_end {episode_id}: server unreachable for "
                                       f"{self.plan['resend_for_s']} s: {exc}")
                    return False
                if not again:
                    self.resent.append(episode_id)
                    again = True
                time.sleep(0.2)
                continue
            if not again:  # a call that waited out a restart is not a latency
                self.writes_ms.append((time.perf_counter() - started) * 1000)
            self.acked.append([episode_id, result.status, len(result.added)])
            os.write(fd, f"ep {episode_id} {result.status} {len(result.added)}\n".encode())
            os.fsync(fd)
            self.first_ack.set()
            return True

    def read(self) -> None:
        plan = self.plan
        question = f"What does {plan['name']} like?"
        self.first_ack.wait()  # before the first episode the user does not exist yet (NotFoundError)
        with RemoteMemory(plan["url"], api_key=plan["key"], timeout=60) as memory:
            while not self.done.is_set():
                started = time.perf_counter()
                try:
                    facts = memory.get_context(question, user_id=plan["user"])
                except ZepMemoryError as exc:
                    if unreachable(exc) and plan["resend_for_s"] > 0:
                        self.reads_unreachable += 1
                        time.sleep(0.2)
                        continue
                    self.errors.append(f"get_context: {type(exc).__name__}: {exc}")
                    return
                self.reads_ms.append((time.perf_counter() - started) * 1000)
                self.reads += 1
                foreign = [f.user_id for f in facts if f.user_id != plan["user"]]
                if foreign or not facts:
                    self.errors.append(f"get_context answered {len(facts)} facts, of other users: {foreign[:3]}")
                    return

    def run(self) -> dict:
        threads = [threading.Thread(target=self.write), threading.Thread(target=self.read)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return {"user": self.plan["user"], "acked": self.acked, "resent": self.resent, "errors": self.errors,
                "writes_ms": self.writes_ms, "reads_ms": self.reads_ms, "reads": self.reads,
                "reads_unreachable": self.reads_unreachable}


def main(argv: list[str]) -> int:
    plan = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    result = Client(plan).run()
    Path(argv[1]).write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
