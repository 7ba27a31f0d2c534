"""A later stage of life ends what was said of an earlier one (:mod:`zep_core.stages`), for the same person only.

News often retires what came before without naming it: a wedding ends an engagement, a birth
ends a pregnancy, a new school year ends the last one, a licence ends a learner's permit. The
sentences here are our own, not the evaluation set's.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from zep_core import Message
from zep_core.stages import TRACKS, stages_of

T = datetime(2024, 3, 1, tzinfo=timezone.utc)


def _tell(memory, *sessions: str, user: str = "kai", name: str = "Kai") -> None:
    for i, text in enumerate(sessions):
        memory.conversation_end(f"s{i}", [Message(text, name=name, timestamp=T + timedelta(days=40 * i))],
                                user_id=user)


def _current(memory, user: str = "kai") -> str:
    return "\n".join(f.content for f in memory.facts(user) if f.is_current)


@pytest.mark.parametrize("track", TRACKS, ids=lambda t: t.name)
def test_every_tracks_examples_read_as_an_earlier_then_a_later_stage(track):
    for earlier, later in track.examples:
        before, after = stages_of(earlier).get(track.name), stages_of(later).get(track.name)
        assert before is not None and after is not None, (earlier, later)
        assert before[0] < after[0], (earlier, later)


def test_a_wedding_ends_the_engagement_and_keeps_what_else_was_said(memory):
    _tell(memory, "priya and i just got engaged!! I work nights at the bakery so planning is slow",
          "we got married in the garden last saturday, still on cloud nine")
    now = _current(memory)
    assert "got engaged" not in now
    assert "I work nights at the bakery" in now and "got married in the garden" in now


def test_a_birth_ends_the_pregnancy_of_the_same_person_only(memory):
    _tell(memory, "my sister amara is pregnant with twins, due in june. my cousin tobi is expecting too",
          "amara's twins were born yesterday, both healthy!")
    now = _current(memory)
    assert "amara's twins were born" in now
    assert "amara is pregnant" not in now


def test_someone_elses_news_ends_nothing_of_the_speakers_own(memory):
    _tell(memory, "I'm pregnant!! due in august, we haven't told anyone yet",
          "my best friend's baby was born this morning, a little girl")
    assert "I'm pregnant" in _current(memory)


def test_a_new_school_year_ends_the_last_one_and_an_earlier_year_ends_nothing(memory):
    _tell(memory, "my daughter zoe is in third grade and loves fractions",
          "zoe started fourth grade this week, new teacher is strict",
          "zoe's little brother otto is in first grade now")
    now = _current(memory)
    assert "zoe is in third grade" not in now
    assert "zoe started fourth grade" in now and "otto is in first grade" in now


def test_a_licence_ends_the_learners_permit_and_a_plan_to_move_ends_only_where_it_was_going(memory):
    _tell(memory, "got my learner's permit, driving with my dad on sundays",
          "we're planning to move to porto in the autumn",
          "passed my driving test this morning!!",
          "we're in the middle of a heatwave")
    now = _current(memory)
    assert "learner's permit" not in now and "passed my driving test" in now
    assert "planning to move to porto" in now  # "we're in the middle" is not "we're in porto"
    memory.conversation_end("s9", [Message("we're in porto!! the flat has a balcony", name="Kai",
                                           timestamp=T + timedelta(days=400))], user_id="kai")
    assert "planning to move to porto" not in _current(memory)
