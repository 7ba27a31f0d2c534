"""The chat corpus of bench/chat.py on the offline defaults: what is true now, from real chat.

The issue's bar: at least 60 cases of our own, several phrasings per class, and at least
95 % of their checks hold. A failure lists each check that did not hold with the facts
the memory returned.
"""

from __future__ import annotations

from collections import Counter

from bench.chat import CASES, Ask, Case, Nothing, TakenBack, judge, run


def test_the_corpus_is_broad():
    assert len(CASES) >= 60 and len({c.name for c in CASES}) == len(CASES)
    kinds = Counter(c.kind for c in CASES)
    assert all(n >= 5 for kind, n in kinds.items() if kind not in ("story", "assistant words")), kinds
    turns = [role for c in CASES for conv in c.conversations for role, _ in conv]
    assert {"u", "a"} <= set(turns) and sum(len(c.conversations) > 1 for c in CASES) >= 20


def test_at_least_95_percent_of_the_corpus_holds(memory):
    report = run(memory)
    failed = [f"{o.case}: {o.check}: {o.why}" for o in report.outcomes if not o.held]
    assert report.held / len(report.outcomes) >= 0.95, "\n".join(failed)


def test_the_checks_fail_when_the_memory_is_stale(memory):
    stale = Case("stale", "control", ((("u", "I live in Paris."),), (("u", "I like jazz."),)),
                 (Ask("Where does Maya live?", has=("Berlin",), lacks=("Paris",)), TakenBack("Paris"), Nothing()))
    from bench.chat import ingest

    ingest(memory, stale, "stale")
    assert [o.held for o in judge(memory, stale, "stale")] == [False, False, False]
