"""Time expressions are read against the time the message was said, never the clock."""

from datetime import datetime, timedelta, timezone

import pytest
from zep_core.providers.timeparse import duration_start, find_times, resolve_time

UTC = timezone.utc
# A Monday afternoon: the reference every relative expression below is read against.
REF = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def day(year: int, month: int, d: int) -> datetime:
    return datetime(year, month, d, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I saw her yesterday", day(2023, 5, 7)),
        ("we met today", day(2023, 5, 8)),
        ("this morning I went running", day(2023, 5, 8)),
        ("last night was fun", day(2023, 5, 7)),
        ("the day before yesterday", day(2023, 5, 6)),
        ("see you tomorrow", day(2023, 5, 9)),
        ("last week", day(2023, 5, 1)),
        ("last weekend", day(2023, 5, 6)),
        ("last month", day(2023, 4, 1)),
        ("last year", day(2022, 1, 1)),
        ("this year", day(2023, 1, 1)),
        ("next month", day(2023, 6, 1)),
        ("3 days ago", day(2023, 5, 5)),
        ("three days ago", day(2023, 5, 5)),
        ("two weeks ago", day(2023, 4, 24)),
        ("a month ago", day(2023, 4, 8)),
        ("ten years ago", day(2013, 5, 8)),
        ("a few years ago", day(2020, 5, 8)),
        ("a couple of weeks ago", day(2023, 4, 24)),
        ("since 2019", day(2019, 1, 1)),
        ("in 2019", day(2019, 1, 1)),
        ("back in 2010", day(2010, 1, 1)),
        ("since May 2020", day(2020, 5, 1)),
        ("in March, 2021", day(2021, 3, 1)),
        ("on 8 May 2023", day(2023, 5, 8)),
        ("on 8 May, 2023", day(2023, 5, 8)),
        ("on the 3rd of June 2022", day(2022, 6, 3)),
        ("on May 8, 2023", day(2023, 5, 8)),
        ("on Sept 1st 2021", day(2021, 9, 1)),
        ("on 2023-05-08", day(2023, 5, 8)),
        ("last Friday", day(2023, 5, 5)),
        ("last fri", day(2023, 5, 5)),
        ("this past Sunday", day(2023, 5, 7)),
        ("last Monday", day(2023, 5, 1)),
        ("last summer", day(2022, 6, 1)),
        ("the summer of 2019", day(2019, 6, 1)),
        ("last August", day(2022, 8, 1)),
        ("since March", day(2023, 3, 1)),
        ("on April 2", day(2023, 4, 2)),
    ],
)
def test_expression_resolves_to_the_start_of_the_period_it_names(text, expected):
    assert resolve_time(text, REF) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "I live in Paris",
        "I may go later",
        "I got a gift from Jan",
        "2000 people came",
        "I am 34",
        "a while ago",
        "on 2023-02-30",
        "on 31 February 2023",
    ],
)
def test_text_without_a_time_expression_resolves_to_none(text):
    assert resolve_time(text, REF) is None


def test_result_is_timezone_aware_utc_like_the_reference():
    when = resolve_time("yesterday", REF)
    assert when.tzinfo is not None
    assert when.utcoffset() == timedelta(0)


def test_naive_reference_is_read_as_utc():
    when = resolve_time("since 2019", datetime(2023, 5, 8, 13, 56))
    assert when == day(2019, 1, 1)


def test_reference_timezone_is_kept():
    plus_two = timezone(timedelta(hours=2))
    when = resolve_time("yesterday", datetime(2023, 5, 8, 1, 0, tzinfo=plus_two))
    assert when == datetime(2023, 5, 7, tzinfo=plus_two)


def test_relative_expressions_follow_the_reference_not_the_clock():
    assert resolve_time("last year", day(2001, 6, 1)) == day(2000, 1, 1)
    assert resolve_time("yesterday", day(2001, 6, 1)) == day(2001, 5, 31)


def test_months_ago_clamps_to_the_end_of_a_shorter_month():
    assert resolve_time("one month ago", day(2023, 3, 31)) == day(2023, 2, 28)


def test_last_weekday_on_that_weekday_means_a_week_earlier():
    friday = datetime(2023, 5, 12, 9, 0, tzinfo=UTC)
    assert resolve_time("last Friday", friday) == day(2023, 5, 5)


def test_last_month_in_january_is_december_of_the_year_before():
    assert resolve_time("last month", day(2024, 1, 15)) == day(2023, 12, 1)


def test_day_and_month_far_ahead_of_the_reference_belongs_to_the_previous_year():
    assert resolve_time("on December 20", day(2024, 1, 5)) == day(2023, 12, 20)


def test_first_expression_in_the_text_wins():
    assert resolve_time("I moved here in 2019 and got a dog yesterday", REF) == day(2019, 1, 1)


def test_find_times_reports_each_mention_with_its_position():
    text = "Last year I moved; two days ago I got a dog."
    mentions = find_times(text, REF)
    assert [m.text for m in mentions] == ["Last year", "two days ago"]
    assert [text[m.start : m.end] for m in mentions] == ["Last year", "two days ago"]
    assert [m.when for m in mentions] == [day(2022, 1, 1), day(2023, 5, 6)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I have lived here for three years", day(2020, 5, 8)),
        ("for 2 weeks", day(2023, 4, 24)),
        ("over the past six months", day(2022, 11, 8)),
        ("I live here", None),
    ],
)
def test_duration_start_counts_back_from_the_reference(text, expected):
    assert duration_start(text, REF) == expected
