"""Time arithmetic at datetime.min/max: the episode is stored cleanly, never pending forever."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from zep_core import Message, ValidationError

from tests.core.fakes import HashEmbedder

UTC = timezone.utc
YEAR_1 = datetime(1, 1, 1, tzinfo=UTC)
YEAR_9999 = datetime(9999, 12, 31, 23, tzinfo=UTC)


@pytest.fixture
def mem(make_memory):
    return make_memory(embedder=HashEmbedder(), max_extraction_attempts=3)


def ingest_clean_or_rejected(mem, messages):
    """conversation_end either stores the episode as done or raises ValidationError leaving nothing."""
    try:
        result = mem.conversation_end("s", messages, user_id="u", episode_id="e1")
    except ValidationError:
        assert mem.episode_ids(user_id="u") == [] and mem.facts("u") == []
        return None
    assert result.status == "done", result.error
    report = mem.maintain()
    assert report.still_pending == () and report.failed == () and report.retried == 0
    assert mem.get_episode("e1").status == "done"
    return result


@pytest.mark.parametrize(("when", "text"), [
    (YEAR_1, "Yesterday I moved to Rome."),
    (YEAR_1, "I have lived in Rome for 3 years."),
    (YEAR_1, "Last week I started at Acme."),
    (YEAR_9999, "Tomorrow I move to Rome."),
    (YEAR_9999, "In 3 years I will live in Rome."),
    (datetime(2024, 1, 1, tzinfo=UTC), "I have lived in Rome for 5000 years."),
])
def test_dates_past_the_calendar_never_leave_an_episode_pending(mem, when, text):
    ingest_clean_or_rejected(mem, [Message(text, name="Ann", timestamp=when)])


def test_the_message_with_an_impossible_date_is_set_aside_and_named_the_others_are_learned(mem):
    result = ingest_clean_or_rejected(mem, [
        Message("Yesterday I moved to Rome.", name="Ann", timestamp=YEAR_1, id="m1"),
        Message("I work at Acme.", name="Ann", timestamp=datetime(2024, 1, 1, tzinfo=UTC), id="m2")])
    assert result is not None
    assert any("message 0 (m1) set aside" in r and "outside years 1..9999" in r for r in result.invalid)
    assert [f.object for f in result.added if f.predicate == "works_at"] == ["Acme"]
    episode = mem.get_episode("e1")
    assert episode.messages[0].content == "Yesterday I moved to Rome."  # nothing the user said is lost


def test_timestamps_at_the_ends_of_the_calendar_still_store_their_facts(mem):
    result = ingest_clean_or_rejected(mem, [Message("I like history.", name="Ann", timestamp=YEAR_1),
                                            Message("I like maps.", name="Ann", timestamp=YEAR_1)])
    assert result is not None and result.invalid == ()
    assert {f.object for f in result.added if f.predicate == "likes"} == {"history", "maps"}
    last = datetime.max.replace(tzinfo=UTC)
    second = mem.conversation_end("s", [Message("I live in Oslo.", name="Bo", timestamp=last),
                                        Message("I live in Rome.", name="Bo", timestamp=last)], user_id="u")
    assert second.status == "done"  # ties at the last microsecond stay ties: no overflow
