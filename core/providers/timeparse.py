"""Time expressions in chat text, read against the time the message was said.

A pure, clock-free parser for the phrases people use when they say when something
happened: "yesterday", "last week", "three years ago", "since 2019", "since May 2020",
"in 2019", "on 8 May 2023", "on May 8, 2023", "2023-05-08", "last Friday",
"last summer". Every result is a timezone-aware datetime in the reference's
timezone (UTC when the reference is naive).

Each expression resolves to the *start* of the period it names: "yesterday" is
midnight of the day before, "last month" the first of the previous month, "in 2019"
1 January 2019, "last week" the Monday of the previous week. Durations ("for three
years") are not points in time and are left to :func:`duration_start`.

A mention also says which bound of a period it states, when the words say so:
"since 2019" and "from 2015" are a ``start``, "until 2020", "till last year" and the
"to 2019" of "from 2015 to 2019" an ``end``; a plain "in 2019" is neither.

Example:
    >>> from datetime import datetime, timezone
    >>> ref = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    >>> resolve_time("I moved here two years ago", ref).date().isoformat()
    '2021-05-08'

"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone

__all__ = ["TimeMention", "asked_window", "duration_start", "find_times", "resolve_time"]

_MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3,
    "april": 4, "apr": 4, "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7,
    "august": 8, "aug": 8, "september": 9, "sept": 9, "sep": 9, "october": 10,
    "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}  # fmt: skip
_WEEKDAYS = {
    "monday": 0, "mon": 0, "tuesday": 1, "tues": 1, "tue": 1, "wednesday": 2,
    "wed": 2, "thursday": 3, "thurs": 3, "thu": 3, "friday": 4, "fri": 4,
    "saturday": 5, "sat": 5, "sunday": 6, "sun": 6,
}  # fmt: skip
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "a couple of": 2, "a couple": 2, "couple of": 2,
    "two": 2, "three": 3, "a few": 3, "few": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "several": 3,
}  # fmt: skip
_SEASONS = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}

_MONTH = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|december"
    r"|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?"
)
_MONTH_FULL = r"January|February|March|April|May|June|July|August|September|October|November|December"
_MONTH_CAP = rf"(?-i:{_MONTH_FULL}|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\.?"
_MONTH_CAP_FULL = rf"(?-i:{_MONTH_FULL})"
_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tues|tue|wed|thurs|thu|fri|sat|sun)\.?"
_COUNT = (
    r"(?:\d{1,3}|a\s+couple\s+of|a\s+couple|couple\s+of|a\s+few|few|several"
    r"|one|two|three|four|five|six|seven|eight|nine|ten|an|a)"
)
_UNIT = r"(?:day|week|month|year)s?"
_YEAR = r"(?:19|20)\d{2}"
_ORD = r"(?:st|nd|rd|th)?"

# One alternation; each outer named group is one kind of expression, inner groups
# carry the parts. Order matters: longer, more specific forms come first.
_TIME_RE = re.compile(
    rf"""
    (?<!\w)(?=\w)  # only try at the start of a word: cheap rejection elsewhere
    (?:
    (?P<range>\b(?:from|between)\s+(?:(?P<range_am>{_MONTH}),?\s+)?(?P<range_ay>{_YEAR})
        \s*(?:to|until|till|through|and|-|–)\s*(?:(?P<range_bm>{_MONTH}),?\s+)?(?P<range_by>{_YEAR})\b)
  | (?P<iso>\b(?P<iso_y>{_YEAR})-(?P<iso_m>\d{{2}})-(?P<iso_d>\d{{2}})\b)
  | (?P<dmy>\b(?P<dmy_d>\d{{1,2}}){_ORD}\s+(?:of\s+)?(?P<dmy_m>{_MONTH}),?\s+(?P<dmy_y>{_YEAR})\b)
  | (?P<mdy>\b(?P<mdy_m>{_MONTH})\s+(?P<mdy_d>\d{{1,2}}){_ORD},?\s+(?P<mdy_y>{_YEAR})\b)
  | (?P<my>\b(?P<my_m>{_MONTH}),?\s+(?:of\s+)?(?P<my_y>{_YEAR})\b)
  | (?P<sy>\b(?P<sy_s>spring|summer|fall|autumn|winter)\s+(?:of\s+)?(?P<sy_y>{_YEAR})\b)
  | (?P<dm>\b(?:(?P<dm_d1>\d{{1,2}}){_ORD}\s+(?:of\s+)?(?P<dm_m1>{_MONTH_CAP})
        |(?P<dm_m2>{_MONTH_CAP})\s+(?P<dm_d2>\d{{1,2}}){_ORD})\b)
  | (?P<ago>\b(?P<ago_n>{_COUNT})\s+(?P<ago_u>{_UNIT})\s+ago\b)
  | (?P<dby>\bthe\s+day\s+before\s+yesterday\b)
  | (?P<yday>\b(?:yesterday|last\s+night)\b)
  | (?P<today>\b(?:today|tonight|this\s+(?:morning|afternoon|evening))\b)
  | (?P<tmrw>\btomorrow\b)
  | (?P<rel>\b(?P<rel_w>last|this|next|past)\s+(?P<rel_u>week(?:end)?|month|year)\b)
  | (?P<wday>\b(?:last|this\s+past)\s+(?P<wday_d>{_WEEKDAY})(?=\W|$))
  | (?P<season>\b(?P<season_w>last|this)\s+(?P<season_s>spring|summer|fall|autumn|winter)\b)
  | (?P<lmonth>\b(?P<lmonth_w>last|since|in|back\s+in|from|during|until|till)\s+
        (?P<lmonth_m>{_MONTH_CAP_FULL})(?!,?\s*\d))
  | (?P<year>\b(?:in|since|from|of|during|around|by|until|till|through|back\s+in|circa)\s+(?P<year_y>{_YEAR})\b)
    )
    """,
    re.IGNORECASE | re.VERBOSE,
)

# Every expression above holds a digit or one of these words: texts without any skip the scan.
_HINT_RE = re.compile(
    r"\d|\b(?:ago|yesterday|today|tonight|tomorrow|last|this|next|past|spring|summer|fall|autumn|winter"
    r"|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)",
    re.IGNORECASE,
)
_DURATION_RE = re.compile(
    rf"\b(?:for|over)\s+(?:the\s+(?:last|past)\s+)?"
    rf"(?:(?:about|around|almost|nearly|roughly|over|more\s+than|just\s+over|at\s+least)\s+)?"
    rf"(?P<n>{_COUNT})\s+(?P<u>{_UNIT})(?:\s+and\s+(?P<n2>{_COUNT})\s+(?P<u2>{_UNIT}))?\b",
    re.IGNORECASE,
)
# The words before a mention (or opening it) that make it a period's start or end.
_START_RE = re.compile(r"(?:\b(?:since|from|starting(?:\s+in)?|beginning(?:\s+in)?)\s+)$", re.IGNORECASE)
_END_RE = re.compile(r"(?:\b(?:until|till|til|through|thru|up\s+to|up\s+until)\s+)$", re.IGNORECASE)
_START_WORDS = frozenset({"since", "from"})
_END_WORDS = frozenset({"until", "till", "through"})


@dataclass(frozen=True)
class TimeMention:
    """A time expression found in a text.

    Attributes:
        start: offset of the expression's first character.
        end: offset just past its last character.
        text: the expression as written.
        when: the start of the period it names.
        bound: ``"start"`` ("since 2019"), ``"end"`` ("until 2020") or ``None`` ("in 2019").

    """

    start: int
    end: int
    text: str
    when: datetime
    bound: str | None = None


def find_times(text: str, reference: datetime) -> list[TimeMention]:
    """Return every time expression in ``text`` that resolves, in order of position.

    Args:
        text: free text, e.g. one chat message.
        reference: when the text was said; relative expressions are read against it.

    Returns:
        The mentions, earliest position first; empty when there is none.

    """
    if not text:
        return []
    ref = _aware(reference)
    return list(_mentions(text, ref))


def resolve_time(text: str, reference: datetime) -> datetime | None:
    """Return the time the first time expression in ``text`` names, or ``None``.

    Args:
        text: free text, e.g. "I moved to Berlin last year".
        reference: when the text was said (timezone-aware; naive is read as UTC).

    Returns:
        A timezone-aware datetime in the reference's timezone, or ``None`` when the
        text states no time this parser understands.

    """
    for mention in _mentions(text, _aware(reference)) if text else ():
        return mention.when
    return None


def duration_start(text: str, reference: datetime) -> datetime | None:
    """Return when a stated duration began: "for three years" → three years back.

    Only meaningful for present-perfect statements ("I have lived here for three
    years"); the caller decides when to apply it.

    Args:
        text: free text.
        reference: when the text was said.

    Returns:
        Midnight of the day the duration started, or ``None`` without a duration.

    """
    match = _DURATION_RE.search(text) if text else None
    if match is None:
        return None
    ref = _aware(reference)
    start = _back(ref, _count(match["n"]), match["u"])
    return _back(start, _count(match["n2"]), match["u2"]) if match["n2"] else start


_DAY = timedelta(days=1)
_AGO_SLACK = {"day": 2, "week": 4, "month": 20, "year": 183}  # days either side of "N units ago"
_DAY_WORDS = re.compile(rf"yesterday|last night|today|tonight|tomorrow|morning|afternoon|evening|day before"
                        rf"|\b{_WEEKDAY}(?!\w)|\b\d{{1,2}}(?:st|nd|rd|th)?\b", re.IGNORECASE)
_SEASON_WORDS = re.compile(r"spring|summer|fall|autumn|winter", re.IGNORECASE)
_MONTH_WORDS = re.compile(rf"\bmonth|\b{_MONTH}(?!\w)", re.IGNORECASE)


def asked_window(text: str, reference: datetime) -> tuple[datetime, datetime] | None:
    """The stretch of time a question asks about, or ``None``: "two months ago", "last Saturday", "in January".

    Each mention becomes the period it names, with slack for how loosely people say it:
    a day ±1–2 days ("last Saturday", "a couple of days ago"), a week with two days each
    side, a month ±3 days ("in January", "last month"), "N months ago" ±20 days, a season,
    a year. Mentions that open or close a period ("since 2019", "until May") are not a
    window. Several mentions give the stretch that covers them all.

    Example:
        >>> from datetime import datetime, timezone
        >>> start, end = asked_window("What did I do two weeks ago?", datetime(2023, 5, 20, tzinfo=timezone.utc))
        >>> start.date().isoformat(), end.date().isoformat()
        ('2023-05-02', '2023-05-11')

    """
    ref = _aware(reference)
    spans = [s for s in (_window(m, ref) for m in find_times(text, ref)) if s is not None]
    if not spans:
        return None
    return min(s for s, _ in spans), max(e for _, e in spans)


_UNIT_DAYS = {"week": 7, "month": 31, "year": 366}


def _window(m: TimeMention, ref: datetime) -> tuple[datetime, datetime] | None:
    if m.bound is not None:
        return None
    said, when = m.text.lower(), m.when
    if said.startswith("past ") and not said.endswith("weekend"):  # "the past month": the last 31 days
        days = next(d for u, d in _UNIT_DAYS.items() if u in said)
        return ref - (days + 2) * _DAY, ref + _DAY
    if said.endswith("ago"):
        unit = next(u for u in _AGO_SLACK if u in said)
        return when - _AGO_SLACK[unit] * _DAY, when + (_AGO_SLACK[unit] + 1) * _DAY
    if _DAY_WORDS.search(said):
        return when - _DAY, when + 2 * _DAY
    if "week" in said:
        return when - 2 * _DAY, when + 9 * _DAY
    if _SEASON_WORDS.search(said):
        return when - 7 * _DAY, when + 99 * _DAY
    if _MONTH_WORDS.search(said):
        return when - 3 * _DAY, when + 34 * _DAY
    return when, when + 366 * _DAY  # a year


def _aware(reference: datetime) -> datetime:
    if reference.tzinfo is None or reference.tzinfo.utcoffset(reference) is None:
        return reference.replace(tzinfo=timezone.utc)
    return reference


def _mentions(text: str, ref: datetime) -> Iterator[TimeMention]:
    if not _HINT_RE.search(text):
        return
    for match in _TIME_RE.finditer(text):
        kind = match.lastgroup
        if kind == "range":
            yield from _range(match, ref)
            continue
        handler = _HANDLERS.get(kind) if kind else None
        when = handler(match, ref) if handler else None
        if when is not None:
            yield TimeMention(match.start(), match.end(), match.group(0), when, _bound(text, match))


def _bound(text: str, match: re.Match[str]) -> str | None:
    first = match.group(0).split(None, 1)[0].lower()
    if first in _START_WORDS:
        return "start"
    if first in _END_WORDS:
        return "end"
    before = text[max(0, match.start() - 16) : match.start()]
    if _END_RE.search(before):
        return "end"
    return "start" if _START_RE.search(before) else None


def _range(m: re.Match[str], ref: datetime) -> Iterator[TimeMention]:
    """Split a range ("from 2015 to 2019", "between May 2018 and June 2020") into a start and an end."""
    begin = date(int(m["range_ay"]), _month(m["range_am"]) if m["range_am"] else 1, 1)
    end = date(int(m["range_by"]), _month(m["range_bm"]) if m["range_bm"] else 1, 1)
    if end < begin:
        return
    cut = m.end("range_ay")
    gap = len(m.string[cut : m.end()]) - len(m.string[cut : m.end()].lstrip())
    yield TimeMention(m.start(), cut, m.string[m.start() : cut], _at(ref, begin), "start")
    yield TimeMention(cut + gap, m.end(), m.string[cut + gap : m.end()], _at(ref, end), "end")


def _at(ref: datetime, day: date) -> datetime:
    return datetime.combine(day, time(), tzinfo=ref.tzinfo)


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _month(name: str) -> int:
    return _MONTHS[name.lower().rstrip(".")]


def _count(word: str) -> int:
    word = " ".join(word.lower().split())
    return int(word) if word.isdigit() else _NUMBERS[word]


def _shift_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    month += 1
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def _back(ref: datetime, n: int, unit: str) -> datetime:
    unit = unit.lower().rstrip("s")
    today = ref.date()
    if unit == "day":
        return _at(ref, today - timedelta(days=n))
    if unit == "week":
        return _at(ref, today - timedelta(weeks=n))
    return _at(ref, _shift_months(today, -n * (12 if unit == "year" else 1)))


def _iso(m: re.Match[str], ref: datetime) -> datetime | None:
    day = _safe_date(int(m["iso_y"]), int(m["iso_m"]), int(m["iso_d"]))
    return _at(ref, day) if day else None


def _dmy(m: re.Match[str], ref: datetime) -> datetime | None:
    day = _safe_date(int(m["dmy_y"]), _month(m["dmy_m"]), int(m["dmy_d"]))
    return _at(ref, day) if day else None


def _mdy(m: re.Match[str], ref: datetime) -> datetime | None:
    day = _safe_date(int(m["mdy_y"]), _month(m["mdy_m"]), int(m["mdy_d"]))
    return _at(ref, day) if day else None


def _my(m: re.Match[str], ref: datetime) -> datetime:
    return _at(ref, date(int(m["my_y"]), _month(m["my_m"]), 1))


def _season_year(m: re.Match[str], ref: datetime) -> datetime:
    return _at(ref, date(int(m["sy_y"]), _SEASONS[m["sy_s"].lower()], 1))


def _day_month(m: re.Match[str], ref: datetime) -> datetime | None:
    """Place a date without a year in the reference's year, unless that is far ahead."""
    month_name, day_text = (m["dm_m1"], m["dm_d1"]) if m["dm_m1"] else (m["dm_m2"], m["dm_d2"])
    day = _safe_date(ref.year, _month(month_name), int(day_text))
    if day is None:
        return None
    if (day - ref.date()).days > 183:
        day = _safe_date(ref.year - 1, day.month, day.day) or day
    return _at(ref, day)


def _ago(m: re.Match[str], ref: datetime) -> datetime:
    return _back(ref, _count(m["ago_n"]), m["ago_u"])


def _relative_period(m: re.Match[str], ref: datetime) -> datetime:
    word, unit = m["rel_w"].lower(), m["rel_u"].lower()
    step = {"last": -1, "past": -1, "this": 0, "next": 1}[word]
    today = ref.date()
    if unit == "year":
        return _at(ref, date(today.year + step, 1, 1))
    if unit == "month":
        return _at(ref, _shift_months(today.replace(day=1), step))
    monday = today - timedelta(days=today.weekday()) + timedelta(weeks=step)
    return _at(ref, monday + timedelta(days=5) if unit == "weekend" else monday)


def _last_weekday(m: re.Match[str], ref: datetime) -> datetime:
    target = _WEEKDAYS[m["wday_d"].lower().rstrip(".")]
    back = (ref.weekday() - target) % 7 or 7
    return _at(ref, ref.date() - timedelta(days=back))


def _season(m: re.Match[str], ref: datetime) -> datetime:
    start_month = _SEASONS[m["season_s"].lower()]
    today = ref.date()
    year = today.year
    if m["season_w"].lower() == "this":
        if start_month == 12 and today.month < 3:
            year -= 1
        return _at(ref, date(year, start_month, 1))
    while _shift_months(date(year, start_month, 1), 3) > today:
        year -= 1
    return _at(ref, date(year, start_month, 1))


def _bare_month(m: re.Match[str], ref: datetime) -> datetime:
    month, word = _month(m["lmonth_m"]), m["lmonth_w"].lower()
    year = ref.year
    if word == "last" and month >= ref.month:
        year -= 1
    elif word not in ("in", "last", "until", "till") and month > ref.month:
        year -= 1  # "since August", said in May: last August; "until June" is this June
    return _at(ref, date(year, month, 1))


def _year(m: re.Match[str], ref: datetime) -> datetime:
    return _at(ref, date(int(m["year_y"]), 1, 1))


def _days_back(days: int) -> Callable[[re.Match[str], datetime], datetime]:
    def handler(_m: re.Match[str], ref: datetime) -> datetime:
        return _at(ref, ref.date() - timedelta(days=days))

    return handler


_HANDLERS: dict[str, Callable[[re.Match[str], datetime], datetime | None]] = {
    "iso": _iso,
    "dmy": _dmy,
    "mdy": _mdy,
    "my": _my,
    "sy": _season_year,
    "dm": _day_month,
    "ago": _ago,
    "dby": _days_back(2),
    "yday": _days_back(1),
    "today": _days_back(0),
    "tmrw": _days_back(-1),
    "rel": _relative_period,
    "wday": _last_weekday,
    "season": _season,
    "lmonth": _bare_month,
    "year": _year,
}
