"""What is true now, in chat written by others: the ``truth_chat`` dev set of ``../shared/data``.

``python -m bench.truth [--cases ID,...] [--classes C,...] [--limit N] [--dump FILE]
[--extractor local|openai] [--out DIR]`` runs ``truth_chat/truth_dev.json`` (260 cases,
443 checks) and prints the cases and checks that hold, by class, beside the rows below,
all measured in the same run; ``bench/results/truth.json`` keeps the figures.

The metric is the data README's, to the letter. Each case gets a fresh memory (a temp
folder, one embedder shared by all cases); each conversation of each of its users is one
``conversation_end`` (all conversations in time order, turns a minute apart from the
conversation's ``when``, the memory's clock at the conversation's last turn; a user
turn's speaker is its ``name`` or the user's, assistant turns are role ``assistant``).
Each check then asks ``get_context(question, user_id=user, limit=5, speaker=speaker)``
a minute after the case's last turn. A check holds when every ``must`` phrase (``"a|b"``:
either) is a case-blind substring of one of the 5 records returned — its content,
subject, predicate (``_`` read as a space) or object, each on its own — and no
``must_not`` phrase is found in any of them the same way. A case holds when all its
checks hold.

Rows:

- ``zep: defaults``: the records ``get_context`` returns.
- ``zep: facts only``: the first 5 that are not verbatim ``statement`` quotes
  (:data:`zep_core.temporal.STATEMENT`) of the same question asked for 50: how much of
  the figure rests on the quotes.
- ``bm25-turns``: BM25 over the raw turns of the asked user's conversations (each
  ``"speaker: text"``, as :mod:`bench.baselines` indexes them), top 5.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from .baselines import BM25Turns, RawTurn
from .common import RESULTS_DIR, TRUTH_DEV, Progress, write_result

__all__ = ["ROWS", "Check", "Conversation", "Record", "TruthCase", "Turn", "User", "Verdict", "judge", "load",
           "run", "select"]

ZEP, FACTS_ONLY, BM25 = ROWS = ("zep: defaults", "zep: facts only", "bm25-turns")
K = 5  # records read per check, as the README says
DEEP = 50  # records asked for when the quotes are set aside
ASSISTANT = "Assistant"  # the name bm25-turns gives assistant turns (the memory's default assistant_speaker)


# -- the data -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    """One turn: ``role`` is ``user`` or ``assistant``; ``name`` the speaker when not the user's own."""

    role: str
    text: str
    name: str | None = None


@dataclass(frozen=True)
class Conversation:
    """A conversation's start time and turns (a minute apart)."""

    when: datetime
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class User:
    """One user of a case: the memory's ``user_id`` (``key``), the name its turns are said under."""

    key: str
    name: str
    conversations: tuple[Conversation, ...]


@dataclass(frozen=True)
class Check:
    """A question asked by ``speaker`` of ``user``'s memory, with the phrases that must and must not come back."""

    user: str
    speaker: str
    question: str
    must: tuple[str, ...]
    must_not: tuple[str, ...]


@dataclass(frozen=True)
class TruthCase:
    """One case: its users' conversations and the checks run afterwards."""

    id: str
    kind: str
    note: str
    users: tuple[User, ...]
    checks: tuple[Check, ...]


def _time(text: str) -> datetime:
    when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def load(path: str | Path = TRUTH_DEV) -> list[TruthCase]:
    """The cases of a truth file (format: ``../shared/data/README.md``)."""
    data = json.loads(Path(path).read_text())
    if data.get("version") != 1:
        raise ValueError(f"{path}: expected a truth file of version 1, got {data.get('version')!r}")
    return [TruthCase(
        c["id"], c["class"], c.get("note", ""),
        tuple(User(u["key"], u["name"], tuple(
            Conversation(_time(v["when"]), tuple(Turn(t["role"], t["text"], t.get("name")) for t in v["turns"]))
            for v in u["conversations"])) for u in c["users"]),
        tuple(Check(k["user"], k["speaker"], k["question"], tuple(k["must"]), tuple(k["must_not"]))
              for k in c["checks"])) for c in data["cases"]]


def select(cases: Sequence[TruthCase], ids: Iterable[str] = (), classes: Iterable[str] = (),
           limit: int | None = None) -> list[TruthCase]:
    """The cases named in ``ids`` and of ``classes`` (each: all when empty), the first ``limit`` of them.

    Raises:
        ValueError: an id or a class that no case has.

    """
    ids, classes = list(ids), list(classes)
    for wanted, known, what in ((ids, {c.id for c in cases}, "case"), (classes, {c.kind for c in cases}, "class")):
        unknown = [x for x in wanted if x not in known]
        if unknown:
            raise ValueError(f"no {what} {', '.join(unknown)} in the data; known: {', '.join(sorted(known))}")
    out = [c for c in cases if (not ids or c.id in ids) and (not classes or c.kind in classes)]
    return out[:limit] if limit is not None else out


# -- the metric -------------------------------------------------------------------------


@dataclass(frozen=True)
class Record:
    """One returned item as the metric reads it: a fact, or a raw turn (its text as ``content``)."""

    content: str
    subject: str = ""
    predicate: str = ""
    object: str = ""
    statement: bool = False

    @classmethod
    def of_fact(cls, fact: Any) -> Record:
        """A :class:`~zep_core.Fact`'s record; ``statement``: it is a verbatim quote."""
        from zep_core.temporal import STATEMENT

        quote = fact.predicate.strip().casefold() == STATEMENT
        return cls(fact.content, fact.subject, fact.predicate, fact.object, quote)

    def fields(self) -> tuple[str, ...]:
        """The texts a phrase is looked for in, each case-folded; the predicate's ``_`` read as a space."""
        return tuple(x.casefold() for x in (self.content, self.subject, self.predicate.replace("_", " "),
                                            self.object))


def found_at(phrase: str, records: Sequence[Record]) -> int | None:
    """The rank (from 0) of the first record one of whose fields holds the phrase (``"a|b"``: either); else None."""
    options = [p.casefold() for p in phrase.split("|")]
    for rank, record in enumerate(records):
        if any(option in text for text in record.fields() for option in options):
            return rank
    return None


@dataclass(frozen=True)
class Verdict:
    """Whether a check held; the ``must`` phrases found nowhere and the ``must_not`` ones found (with rank)."""

    held: bool
    missing: tuple[str, ...] = ()
    stale: tuple[tuple[str, int], ...] = ()


def judge(check: Check, records: Sequence[Record]) -> Verdict:
    """The README's rule on the top :data:`K` of ``records``."""
    top = list(records)[:K]
    missing = tuple(p for p in check.must if found_at(p, top) is None)
    stale = tuple((p, rank) for p in check.must_not if (rank := found_at(p, top)) is not None)
    return Verdict(not missing and not stale, missing, stale)


# -- running a case -----------------------------------------------------------------------


class Clock:
    """The memory's clock: set by the runner to the time of what it feeds or asks."""

    def __init__(self) -> None:
        self.at = datetime.now(timezone.utc)

    def __call__(self) -> datetime:
        return self.at


def messages(user: User, conversation: Conversation) -> list[Any]:
    """A conversation's turns as messages, a minute apart; user turns named, assistant turns not."""
    from zep_core import Message

    return [Message(t.text, role=t.role, name=(t.name or user.name) if t.role == "user" else None,
                    timestamp=conversation.when + timedelta(minutes=i)) for i, t in enumerate(conversation.turns)]


def _in_time_order(case: TruthCase) -> list[tuple[User, int, Conversation]]:
    return sorted(((u, n, c) for u in case.users for n, c in enumerate(u.conversations)), key=lambda x: x[2].when)


def ingest(memory: Any, case: TruthCase, clock: Clock) -> datetime:
    """Every conversation of ``case``, in time order, one ``conversation_end`` each; returns the last turn's time."""
    last = datetime.min.replace(tzinfo=timezone.utc)
    for user, n, conversation in _in_time_order(case):
        msgs = messages(user, conversation)
        clock.at = msgs[-1].timestamp
        last = max(last, clock.at)
        memory.conversation_end(f"{case.id}-{user.key}-{n + 1}", msgs, user_id=user.key)
    return last


def raw_turns(user: User) -> list[RawTurn]:
    """The user's turns as bm25-turns indexes them: ``"speaker: text"``."""
    return [RawTurn(f"{n}:{i}", f"{(t.name or user.name) if t.role == 'user' else ASSISTANT}: {t.text}")
            for n, c in enumerate(user.conversations) for i, t in enumerate(c.turns)]


@dataclass(frozen=True)
class Outcome:
    """One check of one case: the records each row returned and its verdict."""

    case: str
    kind: str
    index: int
    check: Check
    returned: dict[str, tuple[Record, ...]]
    verdicts: dict[str, Verdict]


def run_case(memory: Any, case: TruthCase, clock: Clock) -> list[Outcome]:
    """Feed ``case`` to ``memory`` (fresh), then judge every check on every row."""
    asked_at = ingest(memory, case, clock) + timedelta(minutes=1)
    clock.at = asked_at
    turns = {u.key: BM25Turns(raw_turns(u)) for u in case.users}
    out = []
    for i, check in enumerate(case.checks):
        ask = dict(user_id=check.user, speaker=check.speaker)
        returned = {
            ZEP: tuple(map(Record.of_fact, memory.get_context(check.question, limit=K, **ask))),
            FACTS_ONLY: tuple(r for r in map(Record.of_fact, memory.get_context(check.question, limit=DEEP, **ask))
                              if not r.statement)[:K],
            BM25: tuple(Record(h.text) for h in turns[check.user].search(check.question, K)),
        }
        out.append(Outcome(case.id, case.kind, i, check, returned,
                           {row: judge(check, records) for row, records in returned.items()}))
    return out


def open_memory(folder: str, embedder: Any, clock: Clock, extractor: str = "local", model: str | None = None) -> Any:
    """A fresh memory in ``folder``: the offline defaults, or the OpenAI extractor on the environment's endpoint."""
    from zep_core import Memory, MemoryConfig

    if extractor == "openai":
        options = {"extractor_model": model} if model else {}
        config = MemoryConfig.from_env(data_dir=folder, embedder=embedder, extractor_provider="openai", **options)
    else:
        config = MemoryConfig(data_dir=folder, embedder=embedder)
    return Memory(config, clock=clock)


# -- the report ---------------------------------------------------------------------------


def summarize(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """Cases and checks held per row, overall and by class (classes in order of first appearance)."""
    rows: dict[str, Any] = {}
    for row in ROWS:
        case_held: dict[str, bool] = {}
        kind_of: dict[str, str] = {}
        checks: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for o in outcomes:
            held = o.verdicts[row].held
            case_held[o.case] = case_held.get(o.case, True) and held
            kind_of[o.case] = o.kind
            checks[o.kind][0] += held
            checks[o.kind][1] += 1
        by_class: dict[str, dict[str, int]] = {}
        for case, held in case_held.items():
            c = by_class.setdefault(kind_of[case], {"cases_held": 0, "cases": 0})
            c["cases_held"] += held
            c["cases"] += 1
        for kind, c in by_class.items():
            c["checks_held"], c["checks"] = checks[kind]
        rows[row] = {"cases_held": sum(case_held.values()), "cases": len(case_held),
                     "checks_held": sum(c["checks_held"] for c in by_class.values()),
                     "checks": sum(c["checks"] for c in by_class.values()), "by_class": by_class}
    return rows


def failure(o: Outcome, row: str = ZEP) -> dict[str, Any]:
    """A failed check as ``--dump`` writes it: what was asked, what came back, which phrase failed."""
    v = o.verdicts[row]
    return {"case": o.case, "class": o.kind, "check": o.index, "user": o.check.user, "speaker": o.check.speaker,
            "question": o.check.question, "must": list(o.check.must), "must_not": list(o.check.must_not),
            "missing": list(v.missing), "stale": [{"phrase": p, "rank": r} for p, r in v.stale],
            "returned": [{"content": r.content, "predicate": r.predicate, "statement": r.statement}
                         for r in o.returned[row]],
            "held_by": [other for other in ROWS if other != row and o.verdicts[other].held]}


def run(cases: Sequence[TruthCase], *, embedder: Any = None, extractor: str = "local", model: str | None = None,
        progress: Callable[[str], None] | None = None) -> tuple[dict[str, Any], list[Outcome]]:
    """Every case in a fresh memory of its own; returns the result (as ``truth.json`` holds it) and each check."""
    if embedder is None:
        from zep_core.providers.local import LocalEmbedder

        embedder = LocalEmbedder()
    clock, outcomes = Clock(), []
    start = time.perf_counter()
    for n, case in enumerate(cases):
        with tempfile.TemporaryDirectory(prefix="truth-") as folder:
            memory = open_memory(folder, embedder, clock, extractor, model)
            try:
                outcomes += run_case(memory, case, clock)
            finally:
                memory.close()
        if progress and (n + 1) % 20 == 0:
            progress(f"{n + 1}/{len(cases)} cases")
    seconds = time.perf_counter() - start
    result = {"cases": len(cases), "checks": len(outcomes), "k": K, "extractor": extractor, "model": model,
              "seconds": round(seconds, 1), "rows": summarize(outcomes),
              "failed": [failure(o) for o in outcomes if not o.verdicts[ZEP].held]}
    return result, outcomes


def _share(held: int, total: int) -> str:
    return f"{held}/{total} ({held / total:.1%})" if total else "–"


def format_table(result: dict[str, Any]) -> str:
    """Cases held by class, one column per row of the run; then the totals and checks held."""
    rows = result["rows"]
    kinds = list(rows[ZEP]["by_class"])
    width = max(len(k) for k in [*kinds, "checks held"]) + 2
    lines = [f"{'class':{width}}" + "".join(f"{row:>22}" for row in ROWS)]
    for kind in kinds:
        lines.append(f"{kind:{width}}" + "".join(
            f"{_share(rows[r]['by_class'][kind]['cases_held'], rows[r]['by_class'][kind]['cases']):>22}"
            for r in ROWS))
    lines.append(f"{'cases held':{width}}" + "".join(f"{_share(rows[r]['cases_held'], rows[r]['cases']):>22}"
                                                     for r in ROWS))
    lines.append(f"{'checks held':{width}}" + "".join(f"{_share(rows[r]['checks_held'], rows[r]['checks']):>22}"
                                                      for r in ROWS))
    return "\n".join(lines)


def _csv(text: str | None) -> list[str]:
    return [x.strip() for x in (text or "").split(",") if x.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the truth dev set, print the table, write ``truth.json`` (and ``--dump``); returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m bench.truth", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=TRUTH_DEV, help="truth file (default: %(default)s)")
    parser.add_argument("--cases", help="only these case ids, comma-separated")
    parser.add_argument("--classes", help="only these classes, comma-separated")
    parser.add_argument("--limit", type=int, help="only the first N cases (after --cases/--classes)")
    parser.add_argument("--dump", type=Path, help="write every failed check of the defaults to this JSON file")
    parser.add_argument("--extractor", choices=("local", "openai"), default="local",
                        help="openai: the OpenAI extractor on OPENAI_BASE_URL / OPENAI_API_KEY (embedder stays local)")
    parser.add_argument("--model", help="the chat model for --extractor openai (default: the provider's)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results folder (default: bench/results)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args(argv)
    from zep_core.errors import ConfigError

    try:
        cases = select(load(args.data), _csv(args.cases), _csv(args.classes), args.limit)
        if args.extractor == "openai":
            _check_endpoint()
    except (OSError, ValueError, ConfigError) as error:
        parser.exit(2, f"python -m bench.truth: {error}\n")
    progress = Progress("truth", quiet=args.quiet)
    progress(f"{len(cases)} cases, {sum(len(c.checks) for c in cases)} checks, extractor {args.extractor}")
    result, _ = run(cases, extractor=args.extractor, model=args.model, progress=progress)
    result["data"] = str(args.data)
    result["selection"] = {"cases": _csv(args.cases), "classes": _csv(args.classes), "limit": args.limit}
    print(f"truth_chat: {len(cases)} cases, {result['checks']} checks, top {K}, extractor {args.extractor}, "
          f"{result['seconds']:.0f} s")
    print(format_table(result))
    print(f"written: {write_result('truth', result, args.out)}")
    if args.dump:
        args.dump.parent.mkdir(parents=True, exist_ok=True)
        args.dump.write_text(json.dumps(result["failed"], indent=1, ensure_ascii=False) + "\n")
        print(f"written: {args.dump} ({len(result['failed'])} failed checks)")
    return 0


def _check_endpoint() -> None:
    """Raise ``ConfigError`` now, not at the first case, when ``--extractor openai`` has no endpoint."""
    from zep_core import MemoryConfig
    from zep_core.providers.factory import choose_provider

    choose_provider(MemoryConfig.from_env(extractor_provider="openai"), "extractor_provider")


if __name__ == "__main__":
    sys.exit(main())
