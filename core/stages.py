"""Stages of life that follow one another: a later stage said ends what was said of an earlier one.

Some news retires what came before without naming it: "we're back from the honeymoon!! married
life is weird" ends "omar and i are engaged"; "my grandson felix was born" ends "my daughter
erin is expecting"; "leo's in first grade now" ends "my son leo starts kindergarten"; "got my
license today" ends "I have my learner's permit". Each :class:`Track` is such a sequence, its
stages in the order life goes through them, each stage the words that say it. A statement is at
the highest stage of a track it says (:func:`stages_of`); a newer statement at a later stage of
the same track, about the same person (:func:`same_subject`), retires the older one
(:func:`zep_core.named.named_by_stages`), keeping what it said of other things.

The stages are data, each with the words people use; nothing here reads a store or a clock,
and one test walks every track with its examples.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["TRACKS", "Track", "stages_of"]


@dataclass(frozen=True)
class Track:
    """Stages that follow one another, the earliest first.

    Attributes:
        name: what the track is ("wedding").
        stages: one pattern per stage, in the order they come; a text is at the last one it says.
        words: the words that find the statements of the track in a user's lexical index.
        named: the later stage must name what the earlier one did (the place one moves to); else it is
            enough that both are about the speaker or share a name.
        examples: ``(earlier, later)`` statements, the later ending the earlier (the test walks them).

    """

    name: str
    stages: tuple[re.Pattern[str], ...]
    words: str
    examples: tuple[tuple[str, str], ...]
    named: bool = False


def _p(pattern: str) -> re.Pattern[str]:
    return re.compile(rf"(?i)(?<![\w'’])(?:{pattern})(?![\w'’])")


_GRADES = ("first|1st", "second|2nd", "third|3rd", "fourth|4th", "fifth|5th", "sixth|6th", "seventh|7th",
           "eighth|8th", "ninth|9th", "tenth|10th", "eleventh|11th")

TRACKS: tuple[Track, ...] = (
    Track("wedding", (
        _p(r"engaged|fianc[eé]e?|(?:planning|plan)\s+(?:a|our|the|my)\s+(?:\w+\s+)?wedding"),
        _p(r"(?:got|are|we're|were|i'm|just|now)\s+married|married\s+life|honeymoon|newlyweds?|tied\s+the\s+knot|"
           r"got\s+hitched|(?:our|my)\s+wedding\s+was"),
    ), "engaged fiance fiancee wedding", (
        ("omar and i are engaged and planning a september wedding!", "we're back from the honeymoon!! married life"),
        ("my fiancé and I are planning our wedding", "we got married last weekend"))),
    Track("baby", (
        _p(r"(?:is|am|i'm|she's|we're|are)\s+(?:\w+\s+)?(?:expecting|pregnant)|due\s+(?:in|on)\s+\w+|"
           r"going\s+to\s+be\s+a\s+(?:grandma|grandpa|grandmother|grandfather|mom|mum|dad|mother|father|aunt|uncle)|"
           r"baby\s+(?:is\s+)?on\s+the\s+way"),
        _p(r"was\s+born|were\s+born|gave\s+birth|had\s+(?:the|a|our|her|his|their)\s+baby|newborn|"
           r"(?:my|our)\s+(?:new\s+)?(?:grandson|granddaughter|grandbaby)"),
    ), "expecting pregnant due grandma grandpa baby", (
        ("my daughter erin is expecting in october!", "my grandson felix was born on the 3rd!! erin is doing great"),
        ("I'm pregnant, due in May", "she was born on tuesday, 7 lbs"))),
    Track("school", (
        _p(r"pre-?school|pre-?k|daycare|nursery\s+school"),
        _p(r"kindergarten|kinder"),
        *(_p(rf"(?:{g})\s+grade(?:r)?") for g in _GRADES),
        _p(r"senior\s+(?:year\s+)?(?:in|of|at)\s+high\s+school|high\s+school\s+senior|twelfth\s+grade|12th\s+grade"),
        _p(r"(?:college|university|uni)\s+(?:freshman|student)|freshman\s+(?:year\s+)?(?:at|in)\s+(?:college|uni)|"
           r"(?:off|started|starts|starting|moved\s+in)\s+at\s+(?:college|university|uni)\b|"
           r"(?:off|started|starts|starting)\s+(?:college|university|uni)|off\s+at\s+(?:the\s+)?university\s+of"),
    ), "preschool kindergarten grade school senior college university freshman", (
        ("my son leo starts kindergarten next week", "leo's in first grade now"),
        ("my oldest, ben, is a senior in high school", "dropped ben off at university of michigan last week"))),
    Track("fostering", (
        _p(r"foster(?:ing)?|fostered"),
        _p(r"adopted|adopting\s+(?:him|her|them)|foster\s+fail"),
    ), "foster fostering fostered", (
        ("i'm fostering a greyhound named comet", "foster fail, we officially adopted comet"),)),
    Track("driving", (
        _p(r"learner'?s\s+permit|learning\s+to\s+drive|(?:driving|road)\s+test\s+is"),
        _p(r"(?:got|have|has)\s+(?:my|her|his|a)\s+(?:driver'?s\s+)?licen[cs]e|"
           r"passed\s+(?:my|the|her|his)\s+(?:driving|road|drivers?)\s+test"),
    ), "permit learner driving test license", (
        ("im 16 and have my learners permit", "I PASSED!!! got my license today"),)),
    Track("housing", (
        _p(r"(?:our|my|the)\s+landlord|renting\s+(?:a|an|our|my)|(?:our|my)\s+lease"),
        _p(r"closed\s+on\s+(?:our|a|the|my)\s+(?:\w+\s+)?(?:house|home|condo|place)|"
           r"bought\s+(?:a|our|my|the)\s+(?:\w+\s+)?(?:house|home|condo)|homeowners?"),
    ), "landlord renting lease", (
        ("our landlord is raising rent on our apartment", "WE CLOSED ON OUR HOUSE in san leandro"),)),
    Track("moving", (
        _p(r"(?:planning|plan|going|hoping|about)\s+to\s+move|we'?re\s+moving|i'?m\s+moving"),
        _p(r"(?:we'?re|i'?m|we\s+are|i\s+am)\s+(?:now\s+|finally\s+|officially\s+)?(?:in|living\s+in|settled\s+in)|"
           r"(?:we|i)\s+(?:just\s+|finally\s+)?moved\s+(?:in|to|into)"),
    ), "planning move moving", (
        ("we are planning to move from manchester to leeds", "we're in leeds!! the flat is lovely"),), named=True),
)


def stages_of(text: str) -> dict[str, tuple[int, list[tuple[int, int]]]]:
    """For each track ``text`` says a stage of: the latest stage said and where each stage's words are.

    Example:
        >>> {k: v[0] for k, v in stages_of("married life is weird, i keep saying fiancé by accident").items()}
        {'wedding': 1}
        >>> stages_of("leo's in first grade now")["school"][0], stages_of("any good cafes?")
        (2, {})

    """
    out: dict[str, tuple[int, list[tuple[int, int]]]] = {}
    for track in TRACKS:
        spans, latest = [], -1
        for rank, pattern in enumerate(track.stages):
            for found in pattern.finditer(text):
                spans.append(found.span())
                latest = rank
        if latest >= 0:
            out[track.name] = (latest, spans)
    return out


def track(name: str) -> Track:
    """The track named ``name``."""
    return next(t for t in TRACKS if t.name == name)
