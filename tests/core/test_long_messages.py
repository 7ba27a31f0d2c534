"""A long message costs time linear in its length: read by the rule extractor in seconds, not minutes."""

import time
from datetime import datetime, timezone

import pytest
from zep_core.models import Message
from zep_core.providers.base import ExtractionContext
from zep_core.providers.rules import RuleExtractor

CONTEXT = ExtractionContext("u1", "s1", now=datetime(2024, 5, 1, tzinfo=timezone.utc))


def repeated(sentence: str, chars: int = 100_000) -> str:
    """``sentence`` (formatted with its number) over and over, cut at ``chars``."""
    out, size, i = [], 0, 0
    while size < chars:
        out.append(sentence.format(i=i))
        size += len(out[-1]) + 1
        i += 1
    return " ".join(out)[:chars]


#: The shapes that were quadratic: issue 44's message (a regex per value and clause: 365 s), corrections that
#: find nothing to correct (each asked every earlier sentence), one sentence without a full stop (each liked
#: thing's clause read to the end of the sentence), and clauses of several facts each.
SHAPES = {
    "issue 44": ". ".join(f"I like thing{i}" for i in range(9000))[:100_000],
    "corrections": repeated("I like tea. Actually, {i}."),
    "one sentence": repeated("i like thing{i} and i work at place{i} since 2019"),
    "clauses": repeated("I like x{i}, y{i} and z{i}; and I work at W{i}"),
}


@pytest.mark.parametrize("shape", SHAPES)
def test_a_100k_character_message_is_read_in_seconds(shape):
    start = time.monotonic()
    extraction = RuleExtractor().extract([Message(SHAPES[shape], name="Ann", id="m1")], CONTEXT)
    assert time.monotonic() - start < 30  # ~0.5 s here; minutes before
    assert extraction.facts


def test_every_statement_of_a_long_message_is_read():
    facts = RuleExtractor().extract([Message(SHAPES["issue 44"], name="Ann")], CONTEXT).facts
    liked = {f.object for f in facts if f.predicate == "likes"}
    said = SHAPES["issue 44"].count("I like thing")
    assert len(liked) in (said, said - 1)  # the last one may be cut mid-word
    assert {"thing0", "thing4999"} <= liked
