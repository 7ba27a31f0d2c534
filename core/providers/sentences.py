"""Reading one sentence: the rule matches in it, their times, and the canonical facts they state.

:func:`sentence_facts` runs the rule table (:mod:`~zep_core.providers.patterns`) over one
sentence already :func:`normalize`-d ("I'm" → "I am", "I no longer am" for "I am no
longer"…): for each match it finds the subject ("I" is the speaker, "my sister" the
speaker's sister), drops conditionals, questions' clauses and denials, reads the object,
and dates the fact from the times stated next to it — a time belongs to the nearest
match no other match stands between — so that "until 2020", "I used to", "I quit" end
it. Relations ("my sister Anna") and sizes ("my team has 7 engineers") are read here
too. :mod:`~zep_core.providers.rules` runs this over every sentence of an episode.
"""

from __future__ import annotations

import re
import sys
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..predicates import PREDICATES
from .base import ExtractedFact
from .extractive import predicate_phrase
from .lexicon import CONDITIONAL_WORDS, GROUPS, NAME, NOT_NAMES, NUMBER_WORDS, PETS, RELATIONS
from .patterns import RULES, Rule, agrees
from .timeparse import TimeMention, duration_start, find_times

__all__ = ["CANONICAL_CONFIDENCE", "HEDGED_CONFIDENCE", "Said", "normalize", "sentence_facts"]

CANONICAL_CONFIDENCE = 0.9
HEDGED_CONFIDENCE = 0.7

# --- sentence checks and relations ------------------------------------------------

_RELATIVE_CLAUSE_RE = re.compile(
    r"(?i:\b(?:the|a|an|all|every|some|any|those|these)\s+(?!(?:end|moment|meantime|past|beginning|morning|"
    r"afternoon|evening|weekend|summer|winter|spring|fall|autumn|future|meanwhile)\b)[\w-]+|"
    r"\b(?:what|everything|anything|something|whatever|nothing))\s*$"
)
_HEDGE_RE = re.compile(
    r"\b(?:I\s+think|I\s+guess|I\s+believe|I\s+suppose|maybe|probably|perhaps|might|possibly|"
    r"kinda|not\s+sure)\b",
    re.IGNORECASE,
)
_NARRATIVE_PREDICATES = frozenset(p.name for p in PREDICATES if p.narrative)  # "when I moved to Rome, …" happened
_CONTRACTION_RE = re.compile(r"\b([Ii])['’](m|ve|d|ll)\b|\b(can)['’]t\b|\b(won)['’]t\b|n['’]t\b")
_CONTRACTED = {"m": " am", "ve": " have", "d": " would", "ll": " will"}
_PERFECT_RE = re.compile(r"\b(?:have|has)\s+(?:\w+\s+)?(?:been|lived|worked|had|owned|studied)\b", re.IGNORECASE)
# "I am no longer a nurse", "I am not into jazz anymore" → "I no longer am …", which the rules read.
_COPULA_ENDED_RE = re.compile(
    r"\b(am|is|are|was|were)\s+(?:no\s+longer|not(?=[^.;!?]*\bany\s?(?:more|longer)\b))\b", re.IGNORECASE
)
# "I left Shopify and joined Stripe": a second verb whose subject, "I", is left out.
_ELIDED_I_RE = re.compile(
    r"(?<=\w)(,?\s+(?:and|but)(?:\s+(?:then|now|also))?|,\s+then)\s+(?=(?:joined|started|moved|switched|took|"
    r"got|adopted|bought|began|picked|became|quit|left|stopped|gave|dropped|now\s+(?:work|live|play))\b)",
    re.IGNORECASE,
)
# "I am currently working as", "I'm really into": an adverb after the auxiliary.
_AUX_ADVERB_RE = re.compile(
    r"\b(am|is|are|was|were|have|has|had)\s+(?:currently|also|still|just|recently|actually|really|now|finally|"
    r"already|officially|mainly|mostly|basically)\s+(?=\w)",
    re.IGNORECASE,
)
_ANYMORE_RE = re.compile(r"\bany\s?(?:more|longer)\b", re.IGNORECASE)
_CLAUSE_END_RE = re.compile(r"[,;:]|\s(?:but|and\s+now|though|although|whereas)\s", re.IGNORECASE)
_BASE_FORM_AUX = frozenset({"used", "do", "does", "did"})
_PERSONAL = ("I", "i")
_EPISODE_WINDOW = timedelta(days=31)  # a plain past tense dated closer than this is an event
_CLAUSE_LOOKBACK = 300  # characters around a match searched for "if", "when", "anymore"…
_MY_RELATION_RE = re.compile(
    r"(?<![\w'])(?i:my)\s+(?P<rel>(?i:best\s+friend|"
    + "|".join(sorted((k for k in RELATIONS if k != "best friend"), key=len, reverse=True))
    + rf"))\s+(?P<name>{NAME})(?![\w-])"
)


@dataclass(frozen=True)
class Said:
    """One message prepared for the rules: who said it, when, its citation, and whether the assistant did."""

    speaker: str
    when: datetime
    ids: tuple[str, ...]
    assistant: bool = False
    users: frozenset[str] = frozenset()  # the conversation's users, lowercase: whom an echo names
    heard: frozenset[str] = frozenset()  # words the users said before this message, lowercase
    unsaid: frozenset[str] = frozenset()  # names only the user's jokes and small talk before this message said
    role: bool = False  # words said as someone else ("act as bailey: …"): quoted, no fact of the speaker


def normalize(sentence: str) -> str:
    """The sentence as the rules read it.

    Contractions expanded ("I'm" → "I am"), "I am no longer" read as "I no longer am", an
    elided "I" said again ("I left Acme and I joined Initech"), an adverb after the
    auxiliary dropped ("I am currently working as" → "I am working as").
    """

    def expand(match: re.Match[str]) -> str:
        if match[1]:
            return match[1] + _CONTRACTED[match[2].lower()]
        if match[3]:
            return match[3] + "not"
        if match[4]:
            return "will not"
        return " not"

    expanded = _CONTRACTION_RE.sub(expand, sentence.replace("’", "'"))
    expanded = _COPULA_ENDED_RE.sub(lambda m: f"no longer {m[1]}", expanded)
    if re.match(r"\s*(?:\w+[\s,]+){0,2}I\b", expanded):  # the sentence's subject is "I": say it again
        expanded = _ELIDED_I_RE.sub(lambda m: f"{m[1]} I ", expanded)
    return _AUX_ADVERB_RE.sub(lambda m: f"{m[1]} ", expanded)


@dataclass(frozen=True)
class _Found:
    """One rule match in a sentence, before its time is read: what it says and whether it ended."""

    rule: Rule
    match: re.Match[str]
    subject: str
    objects: list[str]
    ended: bool


def sentence_facts(sentence: str, said: Said) -> Iterator[ExtractedFact]:
    """The canonical facts a normalized sentence states, dated; then its relations and sizes (see the module)."""
    lower = sentence.lower()
    confidence = HEDGED_CONFIDENCE if _HEDGE_RE.search(sentence) else CANONICAL_CONFIDENCE
    times: list[TimeMention] | None = None
    found: list[_Found] = []
    for rule in RULES:
        if not rule.trigger_re.search(lower) or not rule.applies_to(sentence):
            continue
        for match in rule.pattern.finditer(sentence):
            subject = _subject(match, said.speaker, rule)
            if subject is None or _is_conditional(sentence, match, rule):
                continue
            ended = _ended(sentence, match, rule)
            if ended is None:
                continue
            if times is None:
                times = find_times(sentence, said.when)
            objects = rule.read_object(_until_time(sentence, match.end(), times))
            if objects:
                found.append(_Found(rule, match, subject, objects, ended))
    layout = _Layout(found, times or [])
    for item in found:
        valid_from, valid_until = _validity(sentence, item, layout, said.when)
        if valid_from != valid_until and _is_episode(item, valid_from, said.when):
            continue
        for obj in item.objects:
            yield _canonical(item.rule, item.subject, obj, (valid_from, valid_until), confidence, said)
    if "my" in lower:
        yield from _relation_facts(sentence, said, confidence)
    yield from _count_facts(sentence, said, confidence)


def _ended(sentence: str, match: re.Match[str], rule: Rule) -> bool | None:
    """Whether the match states a state that is over; ``None`` when it denies the fact.

    "I used to live", "I no longer live", "I lived", "I quit" are over; "I do not live
    in Paris" denies it, "I do not live in Paris anymore" is over; "I be a nurse"
    without "used to" is no English the rules read.
    """
    groups = match.groupdict()
    aux = (groups.get("ended") or "").lower().split()
    verb = (groups.get("verb") or "").lower().split()
    if aux and aux[-1] == "not":
        clause = sentence[match.end() : match.end() + _CLAUSE_LOOKBACK]
        cut = _CLAUSE_END_RE.search(clause)
        return True if _ANYMORE_RE.search(clause[: cut.start()] if cut else clause) else None
    if verb[:1] == ["be"] and not aux:
        return None
    if not (aux and aux[0] in _BASE_FORM_AUX) and not agrees(match, first_person=match["subj"] in _PERSONAL):
        return None
    return bool(aux) or rule.ends or groups.get("past") is not None


def _subject(match: re.Match[str], speaker: str, rule: Rule) -> str | None:
    raw = match.group("subj") or (match.groupdict().get("subj2") or match.groupdict().get("subj3"))
    if raw is None:
        return None
    if raw.lower() in ("i", "my", "me"):
        return speaker
    if rule.subject_first_person_only:
        return None
    if raw[:3].lower() == "my ":  # "my sister lives in Oslo": the speaker's sister
        return f"{speaker}'s {' '.join(raw.split()[1:]).lower()}"
    words = raw.split()
    while words and words[0] in NOT_NAMES:
        words.pop(0)
    if not words or any(w in NOT_NAMES for w in words):
        return None
    return " ".join(words)


def _is_conditional(sentence: str, match: re.Match[str], rule: Rule) -> bool:
    prefix = sentence[max(0, match.start() - _CLAUSE_LOOKBACK) : match.start()]  # bounded: no quadratic scan
    segment = prefix[max(prefix.rfind(","), prefix.rfind(";"), prefix.rfind(":")) + 1 :].lower()
    if _RELATIVE_CLAUSE_RE.search(segment):
        return True
    words = set(segment.replace("'", " ").split())
    if "when" in words and rule.predicate not in _NARRATIVE_PREDICATES:
        return True
    return not CONDITIONAL_WORDS.isdisjoint(words)


def _until_time(sentence: str, start: int, times: list[TimeMention]) -> str:
    i = bisect_left(times, start, key=lambda t: t.start)
    return sentence[start : times[i].start if i < len(times) else len(sentence)]


class _Layout:
    """Where a sentence's matches and time mentions lie, to tell which times are whose.

    A time belongs to a match unless another match stands wholly between them.
    """

    def __init__(self, found: list[_Found], times: list[TimeMention]) -> None:
        by_start = sorted((f.match.start(), f.match.end()) for f in found)
        self._starts = [s for s, _ in by_start]
        self._first_end_after = [e for _, e in by_start]  # suffix minimum of ends
        for i in range(len(by_start) - 2, -1, -1):
            self._first_end_after[i] = min(self._first_end_after[i], self._first_end_after[i + 1])
        by_end = sorted((e, s) for s, e in by_start)
        self._ends = [e for e, _ in by_end]
        self._last_start_before = [s for _, s in by_end]  # prefix maximum of starts
        for i in range(1, len(by_end)):
            self._last_start_before[i] = max(self._last_start_before[i], self._last_start_before[i - 1])
        self.times = times
        self._time_starts = [t.start for t in times]
        self._time_ends = [t.end for t in times]

    def window(self, match: re.Match[str]) -> tuple[int, int]:
        """The span outside which another match cuts this one off from a time."""
        i = bisect_left(self._starts, match.end())
        high = self._first_end_after[i] if i < len(self._starts) else sys.maxsize
        j = bisect_right(self._ends, match.start())
        low = self._last_start_before[j - 1] if j else -1
        return low, high

    def times_of(self, match: re.Match[str]) -> list[TimeMention]:
        """The times no other match stands between this match and."""
        low, high = self.window(match)
        return self.times[bisect_right(self._time_ends, low) : bisect_left(self._time_starts, high)]


def _validity(
    sentence: str, item: _Found, layout: _Layout, said_at: datetime
) -> tuple[datetime | None, datetime | None]:
    """The fact's ``(valid_from, valid_until)`` from the times stated next to it.

    A time belongs to the nearest match it is not cut off from by another match. "until
    2020" ends the fact; any other time starts it, except after a verb that ends the
    fact ("I left Google in 2021"). An ended fact without a stated end ends when it was
    said; one without a stated start starts when it ends (the start is unknown).
    """
    match = item.match
    mine = layout.times_of(match)
    ends = [t for t in mine if t.bound == "end"]
    starts = [t for t in mine if t.bound != "end"]
    until = _nearest(ends, match)
    if item.rule.ends and until is None:
        until = _nearest([t for t in starts if t.bound is None], match)
    if until is not None:
        starts = [t for t in starts if t is not until and t.start < until.start and t.when <= until.when]
    start = _nearest(starts, match)
    valid_from = start.when if start else None
    valid_until = until.when if until else None
    if valid_until is not None and valid_until > said_at:
        valid_until = said_at if item.ended else None  # "until June", said in May: it still holds
    elif valid_until is None and item.ended:
        valid_until = said_at
    if valid_until is None and valid_from is None and _PERFECT_RE.search(match.group(0)):
        valid_from = duration_start(sentence[match.end() : layout.window(match)[1]], said_at)
    if valid_until is not None and (valid_from is None or valid_from > valid_until):
        valid_from = valid_until
    return valid_from, valid_until


def _is_episode(item: _Found, valid_from: datetime | None, said_at: datetime) -> bool:
    """A plain past tense dated days ago tells an event, not a state that ended.

    "I worked at Acme yesterday" says nothing about whether Alice still works there, so
    it must not end that fact; "I lived in Rome in 2010" did end, and so did "I lived
    in Rome until last week" (the caller passes only a start read from the text).
    """
    plain_past = item.match.groupdict().get("past") is not None and not item.match.groupdict().get("ended")
    return plain_past and valid_from is not None and said_at - valid_from < _EPISODE_WINDOW


def _nearest(mentions: list[TimeMention], match: re.Match[str]) -> TimeMention | None:
    return min(mentions, key=lambda t: _distance(t, match)) if mentions else None


def _distance(mention: TimeMention, match: re.Match[str]) -> int:
    if mention.start >= match.end():
        return mention.start - match.end()
    return max(match.start() - mention.end, 0)


def _canonical(
    rule: Rule,
    subject: str,
    obj: str,
    validity: tuple[datetime | None, datetime | None],
    confidence: float,
    said: Said,
) -> ExtractedFact:
    valid_from, valid_until = validity
    phrase = predicate_phrase(rule.predicate, obj)
    return ExtractedFact(
        subject=subject,
        predicate=rule.predicate,
        object=obj,
        content=f"{subject} {_used_to(phrase) if valid_until else phrase}.",
        confidence=confidence,
        valid_from=valid_from,
        valid_until=valid_until,
        source_message_ids=said.ids,
        subject_type="person",
        object_type=rule.object_type,
        object_is_entity=rule.object_is_entity,
    )


_BASE_VERBS = {"lives": "live", "works": "work", "studies": "study", "is": "be", "likes": "like",
               "dislikes": "dislike", "has": "have", "goes": "go", "was": "be", "plays": "play",
               "does": "do"}  # fmt: skip


def _used_to(phrase: str) -> str:
    """Turn "lives in Rome" into "used to live in Rome": how an ended fact reads."""
    verb, _, rest = phrase.partition(" ")
    return f"used to {_BASE_VERBS.get(verb, verb)} {rest}".rstrip()


def _relation_facts(sentence: str, said: Said, confidence: float) -> Iterator[ExtractedFact]:
    for match in _MY_RELATION_RE.finditer(sentence):
        name = match["name"]
        if name in NOT_NAMES or name == said.speaker:
            continue
        relation = RELATIONS[" ".join(match["rel"].lower().split())]
        predicate = "married_to" if relation == "spouse" else f"has_{relation}"
        yield ExtractedFact(
            subject=said.speaker,
            predicate=predicate,
            object=name,
            content=f"{said.speaker} {predicate_phrase(predicate, name)}.",
            confidence=confidence,
            source_message_ids=said.ids,
            object_type="thing" if relation in PETS else "person",
        )


# --- sizes: a count holds one value at a time (rule 6 of talk.py) ----------------------------

_NUMBER = r"(?P<n>\d{1,6}|" + "|".join(sorted(map(re.escape, NUMBER_WORDS), key=len, reverse=True)) + ")"
_UNIT = r"(?:\s+(?P<unit>(?!(?:and|but|now|so|in|on|at|of|this|total|people\s+now)\b)[a-z]+))?"
_SIZE_VERB = (r"(?:has|have|is|are|was|consists\s+of|is\s+made\s+up\s+of|(?:has\s+)?(?:grew|grown|shrank|shrunk|"
              r"dropped|fell|fallen|doubled|tripled|expanded|increased|decreased|went\s+(?:up|down)|gone\s+(?:up|down))"
              r"\s+to|is\s+(?:up|down)\s+to|now\s+has|now\s+is|reached|hit|counts)")
_QUALIFIER = r"(?:(?:now|only|just|about|around|roughly|exactly|over|almost|nearly)\s+)*"
_SIZES = (
    # "my team has 4 engineers", "my team grew to 7", "our family is now five people"
    re.compile(rf"(?P<owner>(?<![\w'])(?i:my|our)|{NAME}['’]s)\s+(?:(?i:whole|entire|little|new|current)\s+)?"
               rf"(?P<noun>(?i:{GROUPS}))\s+(?i:(?:now\s+)?{_SIZE_VERB})\s+{_QUALIFIER}(?i:{_NUMBER}){_UNIT}"),
    # "there are 7 engineers on my team"
    re.compile(rf"(?i:there\s+(?:are|is)\s+(?:now\s+)?{_QUALIFIER}{_NUMBER}{_UNIT}\s+(?:on|in)\s+)"
               rf"(?P<owner>(?i:my|our))\s+(?P<noun>(?i:{GROUPS}))"),
    # "I lead 5 engineers", "I now manage a team of 7", "my team of 6"
    re.compile(rf"(?P<owner>(?<![\w'])I)\s+(?i:(?:now\s+|currently\s+|also\s+)?(?:lead|manage|supervise|oversee|run|"
               rf"have)\s+(?:a\s+(?P<noun>team|group|staff|crew)\s+of\s+)?{_QUALIFIER}{_NUMBER}"
               rf"(?:\s+(?P<unit>people|engineers|developers|designers|reports|employees|researchers|nurses|"
               rf"teachers|analysts|members|staff|folks|direct\s+reports))?)"),
    re.compile(rf"(?P<owner>(?<![\w'])(?i:my|our))\s+(?P<noun>(?i:team|group|staff|crew))\s+(?i:of\s+{_NUMBER}{_UNIT})"),
    # "we're a team of 10", "we are now a family of five"
    re.compile(rf"(?P<owner>(?<![\w'])(?i:we))(?i:'re|\s+are)\s+(?i:(?:now|still|currently)\s+)?(?i:an?)\s+"
               rf"(?P<noun>(?i:{GROUPS}))\s+(?i:of\s+{_QUALIFIER}{_NUMBER}){_UNIT}"),
)


def _count_facts(sentence: str, said: Said, confidence: float) -> Iterator[ExtractedFact]:
    """``<owner>'s <group> size <n> [unit]``: "Maya's team has 7 engineers." (``size`` is single-valued)."""
    seen: set[str] = set()
    for pattern in _SIZES:
        for match in pattern.finditer(sentence):
            groups = match.groupdict()
            noun = (groups.get("noun") or "").lower()
            if not noun and not groups.get("unit"):
                continue  # "I have 2" says nothing of a team
            noun = noun or "team"
            owner = groups["owner"]
            who = said.speaker if owner.lower() in ("i", "my", "our", "we") else owner[:-2]
            if noun in seen:
                continue
            seen.add(noun)
            raw = groups["n"].lower()
            number = str(NUMBER_WORDS.get(raw, raw))
            unit = (groups.get("unit") or "").lower()
            obj = f"{number} {unit}".strip()
            subject = f"{who}'s {noun}"
            yield ExtractedFact(subject=subject, predicate="size", object=obj, content=f"{subject} has {obj}.",
                                confidence=confidence, source_message_ids=said.ids, subject_type="group",
                                object_is_entity=False)
