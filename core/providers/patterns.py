"""The rule extractor's patterns: one rule per way of stating a canonical fact.

``RULES`` is the table :class:`~zep_core.providers.rules.RuleExtractor` runs over each
sentence. A :class:`Rule` pairs a predicate with the pattern that finds its subject and
verb ("I have lived in", "Anna works at") and an object reader
(:mod:`~zep_core.providers.objects`): a function that reads the object from the text
after the verb (a proper noun, a person's name, a year, a profession, an age,
possessions, or a short list of liked things) and returns ``[]`` when nothing fit. The
words they are written in live in :mod:`~zep_core.providers.lexicon`.

A pattern also says when the fact no longer holds. Its past-tense forms ("I lived in",
"I was a teacher") sit in a group named ``past``; the words before the verb that end
a state ("I used to live in", "I no longer work at", "I do not … anymore") in a group
named ``ended``; and a rule whose verb itself ends the state ("I quit my job at", "I
left Google") has ``ends=True``. :mod:`~zep_core.providers.sentences` turns these into
``valid_until``.

"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from .lexicon import (
    ADVERBS,
    CAP_WORD,
    FIRST_PERSON_VERBS,
    NOT_A_JOB_RE,
    PLACE_CONTEXT,
    PROFESSIONS,
    SUBJECT,
    THIRD_PERSON_VERBS,
)
from .objects import (
    read_activity,
    read_age,
    read_liked,
    read_person,
    read_possessions,
    read_profession,
    read_proper,
    read_proper_strict,
    read_role,
    read_year,
)

__all__ = ["RULES", "Rule", "agrees"]

# --- a rule -------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """One canonical predicate, the verbs that state it, and how to read its object.

    Attributes:
        predicate: the canonical predicate the rule states, e.g. ``lives_in``.
        pattern: finds the subject (group ``subj``) and verb; the object starts at its end.
        read_object: reads the objects from the text after the match; ``[]`` for none.
        object_type: the entity type of the object (``place``, ``person``…).
        triggers: lower-case substrings, one of which a sentence must hold to be tried.
        object_is_entity: whether the object names an entity (a year or an age does not).
        subject_first_person_only: only "I/my/me" may be the subject.
        ends: the verb states that the fact stopped holding ("quit", "left"); a time
            stated with it is when it ended.
        requires: the rule applies only to sentences this matches.
        excludes: the rule never applies to sentences this matches.
        trigger_re: the compiled ``triggers``, built on creation.

    """

    predicate: str
    pattern: re.Pattern[str]
    read_object: Callable[[str], list[str]]
    object_type: str
    triggers: tuple[str, ...]
    object_is_entity: bool = True
    subject_first_person_only: bool = False
    ends: bool = False
    requires: re.Pattern[str] | None = None
    excludes: re.Pattern[str] | None = None
    trigger_re: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # A cheap substring test (in C) before the full pattern runs.
        object.__setattr__(self, "trigger_re", re.compile("|".join(map(re.escape, self.triggers))))


    def applies_to(self, sentence: str) -> bool:
        """Whether the sentence passes the rule's ``requires`` and ``excludes`` checks."""
        if self.requires is not None and not self.requires.search(sentence):
            return False
        return self.excludes is None or not self.excludes.search(sentence)


# "I used to live", "Anna no longer works", "I do not … anymore" (the caller checks the "anymore").
_ENDED = r"(?:\s+(?P<ended>(?i:used\s+to|no\s+longer|(?:do|does|did)\s+not)){ADVERBS})?"


def _verbs(verbs: str, subject: str = SUBJECT, *, past: str | None = None, can_end: bool = True) -> re.Pattern[str]:
    alternatives = verbs if past is None else rf"{verbs}|(?P<past>{past})"
    ended = _ENDED.format(ADVERBS=ADVERBS) if can_end else ""
    return re.compile(rf"{subject}{ADVERBS}{ended}\s+(?P<verb>(?i:{alternatives}))(?:\s+|(?=\d))")


def agrees(match: re.Match[str], first_person: bool) -> bool:
    """Check the verb's person: "I like", "Anna likes"; never "Sounds like" or "I likes"."""
    verb = match.groupdict().get("verb")
    if not verb:
        return True
    head = verb.split(None, 1)[0].lower()
    return head not in (THIRD_PERSON_VERBS if first_person else FIRST_PERSON_VERBS)


# --- the rules ----------------------------------------------------------------------

# Verb phrases shared by several rules. "be …" forms follow "used to" ("I used to be a nurse").
_WORK_AT = (
    r"(?:work|works|am\s+working|is\s+working|be\s+working|(?:have|has)\s+worked|(?:have|has)\s+been\s+working)"
    r"\s+(?:at|for)|(?:am|is|be)\s+employed\s+(?:at|by)"
)
_WORKED_AT = r"(?:worked|was\s+working|were\s+working|had\s+worked)\s+(?:at|for)|(?:was|were)\s+employed\s+(?:at|by)"
_WORK_AS = (r"work\s+as|works\s+as|(?:am|is|be)\s+working\s+as|(?:have|has)\s+(?:been\s+working|worked)\s+as|"
            # a job taken up: "I just started a new job as a teacher", "I got a position as a nurse"
            r"(?:started|began|(?:have|has)\s+started)\s+(?:working\s+as|(?:a\s+)?(?:new\s+)?(?:job|position|role)\s+as)|"
            r"(?:got|took|landed|accepted|(?:have|has)\s+(?:got|gotten|taken|landed|accepted))\s+(?:a\s+)?(?:new\s+)?"
            r"(?:job|position|role)\s+as")
_WORKED_AS = r"worked\s+as|(?:was|were)\s+working\s+as|had\s+worked\s+as"
_A_JOB = rf"(?i:an?)\s+(?:(?!{NOT_A_JOB_RE})[\w-]+\s+){{0,2}}?(?i:{PROFESSIONS})"
_ORG = rf"(?:(?i:the)\s+)?(?-i:{CAP_WORD}(?:\s+(?:(?:of|&)\s+)?{CAP_WORD})*)"
_MY_JOB = r"(?:my|his|her|their|the|a)\s+(?:[\w-]+\s+)?(?:job|position|role|internship|work)\s+(?:at|with|for)"
_QUIT = r"quit|resigned\s+from|(?:have|has|had)\s+(?:quit|resigned\s+from)|stopped\s+working\s+(?:at|for)"
_FIRED = r"(?:got|was|were)\s+(?:fired|laid\s+off)\s+(?:from|by)"
_LEFT = r"left|(?:have|has|had)\s+left"

_DOING = r"(?:playing|doing|going|practi[cs]ing)"
_PLAY = (
    rf"play|plays|practi[cs]e|practi[cs]es|do|does|go|goes|(?:am|is|be)\s+(?:into\s+)?{_DOING}|"
    rf"(?:have|has)\s+been(?:\s+{_DOING})?|(?:started|began|start)\s+{_DOING}|took\s+up|(?:have|has)\s+taken\s+up|"
    r"picked\s+up|(?:have\s+|has\s+)?switched\s+(?:over\s+)?(?:from\s+(?:[\w-]+\s+){1,3}?)?to|moved\s+on\s+to"
)
_STOPPED = (
    rf"(?:have\s+|has\s+|had\s+)?(?:stopped|quit)(?:\s+{_DOING})?|gave\s+up(?:\s+(?:on\s+)?{_DOING})?|"
    rf"(?:have|has|had)\s+given\s+up(?:\s+(?:on\s+)?{_DOING})?|(?:have\s+|has\s+)?switched\s+(?:away\s+)?from|"
    r"(?:have\s+|has\s+)?dropped"
)

_MY_HOME = r"(?P<subj>(?<![\w'])[Mm]y)"
RULES: tuple[Rule, ...] = (
    Rule(
        "lives_in",
        _verbs(
            r"live\s+in|lives\s+in|(?:am|is|be)\s+living\s+in|(?:have|has)\s+(?:always\s+|also\s+)?lived\s+in|"
            r"(?:have|has)\s+been\s+living\s+in|reside\s+in|resides\s+in|"
            r"(?:have\s+|has\s+)?(?:moved|relocated)(?:\s+back|\s+here|\s+over)?(?:\s+from(?:\s+the)?(?:\s+(?-i:[A-Z][\w.-]*))+)?"
            r"\s+to|(?:am|is|be)\s+based\s+in",
            past=r"lived\s+in|(?:was|were)\s+living\s+in|resided\s+in|(?:was|were)\s+based\s+in|"
            r"had\s+(?:always\s+)?lived\s+in|had\s+been\s+living\s+in",
        ),
        read_proper,
        "place",
        ("liv", "moved", "relocated", "based", "reside"),
    ),
    Rule(
        "lives_in",
        re.compile(rf"{_MY_HOME}\s+(?i:home|house|apartment|place)\s+(?i:is)\s+(?:(?i:now)\s+)?(?i:in)\s+"),
        read_proper,
        "place",
        ("home", "house", "apartment", "place"),
        subject_first_person_only=True,
    ),
    Rule(
        "lives_in",
        _verbs(r"(?:have\s+|has\s+)?moved\s+(?:out\s+of|away\s+from)"),
        read_proper,
        "place",
        ("moved",),
        ends=True,
    ),
    Rule("lives_in", _verbs(_LEFT), read_proper_strict, "place", ("left",), ends=True, requires=PLACE_CONTEXT),
    Rule(
        "works_at",
        _verbs(
            rf"{_WORK_AT}|(?:got|found|landed|took|started|accepted|have|has)\s+(?:a|my)\s+(?:new\s+)?job\s+(?:at|with)|"
            r"got\s+hired\s+(?:at|by)|was\s+hired\s+(?:at|by)|"
            r"started\s+working\s+(?:at|for)|began\s+working\s+(?:at|for)",
            past=_WORKED_AT,
        ),
        read_proper,
        "organization",
        ("work", "employed", "job", "hired"),
    ),
    Rule(
        "works_at",
        _verbs(r"joined|(?:have|has)\s+joined|started\s+at"),
        read_proper_strict,
        "organization",
        ("joined", "started at"),
    ),
    Rule(
        "works_at",  # "I am a designer at Acme", "I work as a nurse for the Red Cross"
        _verbs(
            rf"(?:am|is|be|(?:have|has)\s+been)\s+{_A_JOB}\s+(?:at|for|with)|"
            rf"(?:{_WORK_AS})\s+(?:(?:an?|the)\s+)?(?:[\w-]+\s+){{1,4}}?(?:at|for|with)",
            past=rf"(?:was|were)\s+{_A_JOB}\s+(?:at|for|with)|(?:{_WORKED_AS})\s+(?:(?:an?|the)\s+)?(?:[\w-]+\s+){{1,4}}?"
            r"(?:at|for|with)",
        ),
        read_proper,
        "organization",
        ("a ", "an ", "as "),
    ),
    Rule(
        "works_at",
        _verbs(rf"(?:{_QUIT}|{_FIRED}|{_LEFT})\s+{_MY_JOB}|{_QUIT}|{_FIRED}"),
        read_proper,
        "organization",
        ("quit", "resigned", "stopped", "fired", "laid off", "left"),
        ends=True,
    ),
    Rule("works_at", _verbs(_LEFT), read_proper_strict, "organization", ("left",), ends=True, excludes=PLACE_CONTEXT),
    Rule(
        "works_as",
        _verbs(_WORK_AS, past=_WORKED_AS),
        read_role,
        "profession",
        ("as",),
    ),
    Rule(
        "works_as",  # "I work at Acme as a designer", "I joined Initech as an engineer"
        _verbs(
            rf"(?:{_WORK_AT}|joined|(?:have|has)\s+joined)\s+{_ORG},?\s+as",
            past=rf"(?:{_WORKED_AT})\s+{_ORG},?\s+as",
        ),
        read_role,
        "profession",
        (" as ",),
    ),
    Rule(
        "works_as",
        _verbs(r"am|is|be|became|(?:have|has)\s+been|am\s+now|is\s+now", past=r"was|were|had\s+been"),
        read_profession,
        "profession",
        ("a ", "an "),
    ),
    Rule(
        "studies_at",
        _verbs(
            r"study\s+at|studies\s+at|(?:am|is|be)\s+studying\s+at|(?:am|is|be)\s+a\s+student\s+at|"
            r"(?:am|is|be)\s+enrolled\s+(?:at|in)|go\s+to\s+school\s+at",
            past=r"studied\s+at|(?:was|were)\s+studying\s+at|(?:was|were)\s+a\s+student\s+at|"
            r"(?:was|were)\s+enrolled\s+(?:at|in)|went\s+to\s+school\s+at",
        ),
        read_proper,
        "organization",
        ("stud", "enrolled", "school"),
    ),
    Rule("born_in", _verbs(r"(?:was|were)\s+born\s+in", can_end=False), read_proper, "place", ("born",)),
    Rule(
        "birth_year",
        _verbs(r"(?:was|were)\s+born\s+in", can_end=False),
        read_year,
        "thing",
        ("born",),
        object_is_entity=False,
    ),
    Rule(
        "is_from",
        _verbs(r"(?:am|is)\s+(?:originally\s+)?from|(?:come|comes)\s+(?:originally\s+)?from", can_end=False),
        read_proper,
        "place",
        ("from",),
    ),
    Rule(
        "married_to",
        _verbs(
            r"married|(?:am|is|be)\s+married\s+to|got\s+married\s+to|"
            r"(?:have|has)\s+been\s+married\s+to|wed",
            past=r"(?:was|were)\s+married\s+to|had\s+been\s+married\s+to",
        ),
        read_person,
        "person",
        ("married", "wed"),
    ),
    Rule(
        "likes",
        _verbs(
            r"like|likes|love|loves|enjoy|enjoys|adore|adores|(?:am|is|be)\s+into|"
            r"(?:am|is|be)\s+(?:a\s+)?(?:big\s+|huge\s+)?fan\s+of|"
            r"(?:am|is|be)\s+passionate\s+about|(?:am|is|be)\s+obsessed\s+with|(?:am|is|be)\s+crazy\s+about"
        ),
        read_liked,
        "thing",
        ("like", "love", "enjoy", "adore", "into", "fan", "passionate", "obsessed", "crazy"),
    ),
    Rule(
        "dislikes",
        _verbs(
            r"hate|hates|dislike|dislikes|detest|detests|cannot\s+stand|can\s+not\s+stand|"
            r"(?:do|does)\s+not\s+(?:really\s+)?(?:like|enjoy)|am\s+not\s+(?:really\s+)?(?:a\s+)?(?:big\s+)?fan\s+of|"
            r"is\s+not\s+(?:really\s+)?(?:a\s+)?(?:big\s+)?fan\s+of|am\s+not\s+(?:really\s+)?into|"
            r"is\s+not\s+(?:really\s+)?into"
        ),
        read_liked,
        "thing",
        ("hate", "dislike", "detest", "stand", "not"),
    ),
    Rule(
        "has",
        _verbs(r"(?:have|has)\s+got|have|has|own|owns|got|adopted|bought|(?:have|has)\s+had"),
        read_possessions,
        "thing",
        ("have", "has", "own", "got", "adopted", "bought"),
    ),
    Rule(
        "is_named",
        re.compile(
            r"(?:(?P<subj>(?<![\w'])[Mm]y)\s+(?i:name)\s+(?i:is)|(?<![\w'])(?i:call)\s+(?P<subj2>me)"
            r"|(?P<subj3>(?<![\w'])I)\s+(?i:am\s+called|go\s+by))\s+"
        ),
        read_person,
        "person",
        ("name", "call", "called", "go by"),
        object_is_entity=False,
        subject_first_person_only=True,
    ),
    Rule(
        "does",  # "I play tennis", "I do yoga", "I took up squash", "I switched to squash"
        _verbs(_PLAY, past=r"played|practi[cs]ed|did|went"),
        read_activity,
        "activity",
        ("play", "practi", "do", "go", "took", "taken", "picked", "start", "began", "switched", "moved on", "into",
         "been"),
    ),
    Rule(
        "does",  # "I stopped playing tennis", "I quit yoga", "I gave up chess", "I switched from tennis to squash"
        _verbs(_STOPPED),
        read_activity,
        "activity",
        ("stopped", "quit", "gave up", "given up", "switched", "dropped"),
        ends=True,
    ),
    Rule(
        "age",
        _verbs(r"am|is|turned|(?:will\s+)?turn|just\s+turned", can_end=False),
        read_age,
        "thing",
        ("am", "is", "turn"),
        object_is_entity=False,
    ),
)
