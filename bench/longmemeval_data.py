"""LongMemEval's questions and haystacks as the benchmarks read them: the oracle file and the S file.

Each haystack session is one episode dated by ``haystack_dates``; each turn gets the id
``{session_id}:{turn_idx}``, its role, and a timestamp one second after the previous turn.
A question's evidence is its ``has_answer`` turns. The S file (``longmemeval_s_dev.json.gz``)
holds the real haystacks, ~48 sessions a question; a session id listed twice keeps its
first copy. :func:`sample` draws a fixed number of questions per type with a fixed seed.
"""

from __future__ import annotations

import gzip
import json
import random
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

__all__ = ["AskedClock", "Item", "Turn", "ingest_bulk", "load", "parse_date", "sample", "session_of"]


@dataclass(frozen=True)
class Turn:
    """One haystack turn."""

    id: str
    role: str
    content: str
    timestamp: datetime
    has_answer: bool
    session: str


@dataclass
class Item:
    """One LongMemEval question with its haystack."""

    id: str
    type: str
    question: str
    answer: str
    sessions: list[tuple[str, datetime, list[Turn]]]
    asked: datetime | None = None  # the question's date: "two months ago" is read against it
    answer_sessions: tuple[str, ...] = field(default=())  # ``answer_session_ids`` found in the haystack

    @property
    def turns(self) -> list[Turn]:
        """Every turn, in order."""
        return [t for _, _, turns in self.sessions for t in turns]

    @property
    def evidence(self) -> tuple[str, ...]:
        """Ids of the ``has_answer`` turns."""
        return tuple(t.id for t in self.turns if t.has_answer)


def parse_date(text: str) -> datetime:
    """Read ``"2023/05/20 (Sat) 12:36"`` as a UTC datetime."""
    clean = re.sub(r"\s*\([A-Za-z]+\)\s*", " ", text).strip()
    return datetime.strptime(clean, "%Y/%m/%d %H:%M").replace(tzinfo=timezone.utc)


def session_of(turn_id: str) -> str:
    """The session id of a turn id ``{session_id}:{turn_idx}``."""
    return turn_id.rsplit(":", 1)[0]


def _item(q: dict[str, Any]) -> Item:
    sessions, seen = [], set()
    for sid, date, raw in zip(q["haystack_session_ids"], q["haystack_dates"], q["haystack_sessions"]):
        if sid in seen:  # a few S haystacks list a session twice: the first copy stands
            continue
        seen.add(sid)
        when = parse_date(date)
        turns = [Turn(f"{sid}:{i}", t["role"], t["content"], when + timedelta(seconds=i),
                      bool(t.get("has_answer")), sid)
                 for i, t in enumerate(raw) if str(t.get("content", "")).strip()]
        if turns:
            sessions.append((sid, when, turns))
    sessions.sort(key=lambda s: s[1])
    asked = parse_date(q["question_date"]) if q.get("question_date") else None
    answer_sessions = tuple(s for s in q.get("answer_session_ids", ()) if s in seen)
    return Item(q["question_id"], q["question_type"], q["question"], str(q["answer"]), sessions, asked,
                answer_sessions)


def load(path: str | Path, *, per_type: int | None = None) -> list[Item]:
    """The questions of an oracle or S file (``.gz``: gzip), the first ``per_type`` of each type if given."""
    path = Path(path)
    with (gzip.open(path, "rt") if path.suffix == ".gz" else path.open()) as f:
        data = json.load(f)
    taken: dict[str, int] = defaultdict(int)
    out = []
    for q in data:
        if per_type is not None and taken[q["question_type"]] >= per_type:
            continue
        out.append(_item(q))
        taken[q["question_type"]] += 1
    return out


def sample(items: Sequence[Item], per_type: int | None, seed: int) -> list[Item]:
    """The questions with evidence turns, ``per_type`` of each type drawn with ``seed`` (None: all), in file order."""
    scored = [it for it in items if it.evidence]
    if per_type is None:
        return scored
    by_type: dict[str, list[int]] = defaultdict(list)
    for n, it in enumerate(scored):
        by_type[it.type].append(n)
    rng = random.Random(seed)
    picked = {n for t in sorted(by_type) for n in rng.sample(by_type[t], min(per_type, len(by_type[t])))}
    return [it for n, it in enumerate(scored) if n in picked]


class AskedClock:
    """The memory's clock in these benches: the time now, except while a question is asked on its own date."""

    def __init__(self) -> None:
        self.at: datetime | None = None

    def __call__(self) -> datetime:
        return self.at or datetime.now(timezone.utc)


def ingest_bulk(memory: Any, items: Sequence[Item]) -> int:
    """Every session of ``items`` through ``conversation_end_many`` (the bulk import); returns facts added."""
    from zep_core import Message

    episodes = [{"session_id": sid, "user_id": it.id, "episode_id": f"{it.id}:{sid}",
                 "messages": [Message(content=t.content, role=t.role, id=t.id, timestamp=t.timestamp) for t in turns]}
                for it in items for sid, _, turns in it.sessions]
    results = memory.conversation_end_many(episodes)
    failed = [r for r in results if r.status != "done"]
    if failed:
        raise RuntimeError(f"{len(failed)} episodes ended {failed[0].status}: {failed[0].error}")
    return sum(len(r.added) for r in results)
