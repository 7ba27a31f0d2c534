"""A question that names a time ("two months ago", "last Saturday", "in January") finds what was said then.

Three museum visits are told in three months; each question names one of those times
and is asked on the memory's clock, as a user asks "now". The visit told then comes
first, although the three facts are alike in words and meaning.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from zep_core import Message, ScoringSettings
from zep_core.providers.timeparse import asked_window

UTC = timezone.utc

VISITS = [
    (datetime(2023, 1, 14, 10, tzinfo=UTC), "I visited the museum of natural history with my friend Tom today."),
    (datetime(2023, 3, 11, 10, tzinfo=UTC), "I visited the science museum with my sister Ana today."),
    (datetime(2023, 4, 29, 10, tzinfo=UTC), "I visited the modern art museum with my neighbour Li today."),
]


@pytest.fixture
def museums(make_memory, clock):
    def build(**scoring):
        memory = make_memory(scoring=ScoringSettings(**scoring)) if scoring else make_memory()
        for n, (when, text) in enumerate(VISITS):
            clock.now = when
            memory.conversation_end(f"s{n}", [Message(text, name="Kim", timestamp=when)], user_id="kim")
        return memory

    return build


@pytest.mark.parametrize(("asked", "question", "who"), [
    (datetime(2023, 5, 12, tzinfo=UTC), "I mentioned visiting a museum two months ago. Who was I with?", "Ana"),
    (datetime(2023, 5, 3, tzinfo=UTC), "Who went to the museum with me last Saturday?", "Li"),
    (datetime(2023, 5, 3, tzinfo=UTC), "Which museum did I visit in January, and with whom?", "Tom"),
])
def test_the_visit_told_at_the_named_time_comes_first(museums, clock, asked, question, who):
    memory = museums()
    clock.now = asked

    facts = memory.get_context(question, user_id="kim", speaker="Kim")

    assert who in facts[0].content, [f.content for f in facts]


def test_without_the_time_signal_the_order_is_not_that_of_the_named_times(museums, clock):
    """The control: the same three questions with ``time_weight=0`` miss at least one of the named visits."""
    memory = museums(time_weight=0)
    asked = [(datetime(2023, 5, 12, tzinfo=UTC), "I mentioned visiting a museum two months ago. Who was I with?",
              "Ana"),
             (datetime(2023, 5, 3, tzinfo=UTC), "Who went to the museum with me last Saturday?", "Li"),
             (datetime(2023, 5, 3, tzinfo=UTC), "Which museum did I visit in January, and with whom?", "Tom")]
    firsts = []
    for when, question, who in asked:
        clock.now = when
        firsts.append(who in memory.get_context(question, user_id="kim", speaker="Kim")[0].content)
    assert not all(firsts)


def test_an_as_of_question_reads_the_named_time_against_as_of(museums):
    memory = museums()

    facts = memory.get_context("Who was I with at the museum two months ago?", user_id="kim", speaker="Kim",
                               as_of=datetime(2023, 3, 15, tzinfo=UTC))

    assert "Tom" in facts[0].content  # two months before 15 March: the January visit


@pytest.mark.parametrize(("text", "start", "end"), [
    ("What did I do two weeks ago?", "2023-05-02", "2023-05-11"),
    ("Who did I meet last Saturday?", "2023-05-12", "2023-05-15"),
    ("What did I cook a couple of days ago?", "2023-05-16", "2023-05-21"),
    ("Which events did I go to in January?", "2022-12-29", "2023-02-04"),
    ("What did I watch during the past month?", "2023-04-17", "2023-05-21"),
    ("Where did I travel last summer?", "2022-05-25", "2022-09-08"),
    ("What did I do in 2021?", "2021-01-01", "2022-01-02"),
])
def test_the_window_a_question_names(text, start, end):
    window = asked_window(text, datetime(2023, 5, 20, 9, tzinfo=UTC))

    assert (window[0].date().isoformat(), window[1].date().isoformat()) == (start, end)


@pytest.mark.parametrize("text", ["Where do I live?", "What have I done since 2019?", "What is planned until May?",
                                  "How many months ago did I move?"])
def test_no_window_without_a_time_or_for_an_open_period(text):
    assert asked_window(text, datetime(2023, 5, 20, tzinfo=UTC)) is None
