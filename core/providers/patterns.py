"""The rule extractor's patterns: one rule per way of stating a canonical fact.

``RULES`` is the table :class:`~zep_core.providers.rules.RuleExtractor` runs over each
sentence. A :class:`Rule` pairs a predicate with the pattern that finds its subject and
verb ("I have lived in", "Anna works at") and an object reader: a function that reads
the object from the text after the verb (a proper noun, a person's name, a year, a
profession, an age, possessions, or a short list of liked things) and returns ``[]``
when nothing fit. The words they are written in live in
:mod:`~zep_core.providers.lexicon`.

A pattern also says when the fact no longer holds. Its past-tense forms ("I lived in",
"I was a teacher") sit in a group named ``past``; the words before the verb that end
a state ("I used to live in", "I no longer work at", "I do not … anymore") in a group
named ``ended``; and a rule whose verb itself ends the state ("I quit my job at", "I
left Google") has ``ends=True``. :mod:`~zep_core.providers.rules` turns these into
``valid_until``.

"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from .lexicon import (
    ACTIVITIES,
    ADVERBS,
    BAD_MODIFIERS,
    CAP_WORD,
    CONTEXT_WORDS,
    EMPTY_GERUNDS,
    FIRST_PERSON_VERBS,
    HAS_HEADS,
    NAME,
    NOT_A_JOB,
    NOT_A_JOB_RE,
    NOT_HOBBY_VERBS,
    NOT_NAMES,
    PHRASE_BOUNDARIES,
    PLACE_CONTEXT,
    PROFESSIONS,
    PRONOUN_STARTS,
    SUBJECT,
    THIRD_PERSON_VERBS,
    TRAILING_FILLERS,
    WORD_RE,
)

__all__ = ["RULES", "Rule", "agrees"]

# --- object patterns ----------------------------------------------------------------

_PROPER_RE = re.compile(
    rf"(?:(?i:the)\s+)?(?P<obj>{CAP_WORD}(?:\s+(?:(?:of|de|del|da|du|la|le|von|van|upon|on|am|&)\s+)?"
    rf"(?!I\b){CAP_WORD})*)"
)
_PERSON_RE = re.compile(rf"(?P<obj>{NAME}(?:\s+{NAME})?)(?![\w'’-])")
_YEAR_RE = re.compile(r"(?P<obj>(?:19|20)\d{2})\b")
_PROFESSION_RE = re.compile(rf"(?i:an?)\s+(?P<obj>(?:[a-z-]+\s+){{0,2}}?(?i:{PROFESSIONS}))(?![\w'’-])")
_HAS_RE = re.compile(
    r"(?:(?P<article>(?i:a|an|this))\s+|(?P<count>(?i:one|two|three|four|five|six|seven|eight|nine|ten"
    r"|\d{1,2}|some|several|a\s+couple\s+of|a\s+few))\s+)?"
    rf"(?P<obj>(?:[a-z-]+\s+){{0,2}}?(?i:{HAS_HEADS}))(?![\w'’-])"
)
_ACTIVITY_RE = re.compile(rf"(?i:(?P<obj>{ACTIVITIES}))(?![\w'’-])")
_AGE_RE = re.compile(r"(?P<obj>\d{1,3})(?:\s*(?:years?|yrs?)(?:\s+old)?|\s*y/?o)?(?![\w%$])")
_AGE_TAIL_RE = re.compile(r"\s*(?:$|[,.!;:)]|(?i:now|today|this|last|and|but|so|already|yesterday|myself)\b)")
_STRICT_TAIL_RE = re.compile(r"\s*(?:$|[,.!;:)]|(?i:as|in|back|recently|last|this|a\s+few|and|but|so)\b)")
_ADJECTIVE_COMMA_RE = re.compile(r"(?i:\b(?:a|an|the)\s+[\w-]+)$")
_LIST_SPLIT_RE = re.compile(r"\s*(?:,\s*(?:and\s+|or\s+)?|\s+and\s+|\s+or\s+)\s*")

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


# --- object readers ----------------------------------------------------------------


def _proper(rest: str) -> list[str]:
    match = _PROPER_RE.match(rest)
    if match is None:
        return []
    obj = _strip_punct(match["obj"])
    first = obj.split()[0] if obj else ""
    return [obj] if obj and first not in NOT_NAMES and obj != "I" else []


def _proper_strict(rest: str) -> list[str]:
    """Read a proper noun that ends its clause: "joined Acme", not "joined Mel at the park"."""
    match = _PROPER_RE.match(rest)
    if match is None or not _STRICT_TAIL_RE.match(rest, match.end()):
        return []
    return _proper(rest)


def _person(rest: str) -> list[str]:
    match = _PERSON_RE.match(rest)
    if match is None:
        return []
    words = match["obj"].split()
    if words[0] in NOT_NAMES:
        return []
    return [" ".join(w for w in words if w not in NOT_NAMES)]


def _year(rest: str) -> list[str]:
    match = _YEAR_RE.match(rest)
    return [match["obj"]] if match else []


def _profession(rest: str) -> list[str]:
    match = _PROFESSION_RE.match(rest)
    if match is None:
        return []
    obj = match["obj"].lower()
    modifiers = obj.split()[:-1]
    if not BAD_MODIFIERS.isdisjoint(modifiers) or not NOT_A_JOB.isdisjoint(modifiers):
        return []
    return [obj]


def _role(rest: str) -> list[str]:
    """Read what follows "work as": "a nurse at the hospital" → "nurse"."""
    return _phrases(rest, max_items=1)


def _liked(rest: str) -> list[str]:
    return _phrases(rest, max_items=3)


def _possessions(rest: str) -> list[str]:
    found: list[str] = []
    position = 0
    while len(found) < 3:
        match = _HAS_RE.match(rest, position)
        if match is None:
            break
        obj = match["obj"].lower()
        modifiers = obj.split()[:-1]
        if not BAD_MODIFIERS.isdisjoint(modifiers) or any(w.endswith("ed") for w in modifiers):
            break
        count = match["count"]
        found.append(f"{count.lower()} {obj}" if count else obj)
        joiner = _LIST_SPLIT_RE.match(rest, match.end())
        if joiner is None:
            break
        position = joiner.end()
    return found


def _activity(rest: str) -> list[str]:
    """Read an activity of the lexicon: "tennis every Sunday" → "tennis", "the piano" → "piano"."""
    match = _ACTIVITY_RE.match(rest)
    if match is None:
        return []
    words = match["obj"].lower().split()
    return [" ".join(words[1:] if words[0] == "the" else words)]


def _age(rest: str) -> list[str]:
    match = _AGE_RE.match(rest)
    if match is None or not _AGE_TAIL_RE.match(rest, match.end()):
        return []
    return [match["obj"]] if 0 < int(match["obj"]) <= 120 else []


def _phrases(rest: str, *, max_items: int) -> list[str]:
    items: list[str] = []
    for chunk in _list_items(_first_clause(rest))[:max_items]:
        item = _noun_phrase(chunk)
        if item is None:
            break
        items.append(item)
    return items


def _list_items(clause: str) -> list[str]:
    """Split "hiking, camping and fishing" but keep "a safe, inviting place" whole."""
    items: list[str] = []
    for piece in _LIST_SPLIT_RE.split(clause):
        if items and _ADJECTIVE_COMMA_RE.search(items[-1]):
            items[-1] = f"{items[-1]}, {piece}"
        else:
            items.append(piece)
    return items


def _first_clause(rest: str) -> str:
    """Cut at the first punctuation or boundary word that is not a list joiner."""
    words: list[str] = []
    for token in WORD_RE.findall(rest):
        lower = token.lower()
        if token == ",":
            words.append(",")
            continue
        if lower in ("and", "or") and words:
            words.append(lower)
            continue
        if not (token[0].isalnum() or token[0] in "'’") or (lower in PHRASE_BOUNDARIES and words):
            break
        words.append(token)
    while words and words[-1] in (",", "and", "or"):  # "jazz and | I work…": the joiner led elsewhere
        words.pop()
    return " ".join(words).replace(" ,", ",").strip(" ,")


def _noun_phrase(chunk: str) -> str | None:
    words = chunk.split()
    if words and words[0].lower() == "to" and len(words) > 1:
        words = words[1:]
        if len(words) > 1 and words[0].lower() in ("just", "really", "also", "simply", "always"):
            words = words[1:]
        if words[0].lower() in NOT_HOBBY_VERBS:
            return None  # "I like to think…", "I'd love to say…"
        words = [_gerund(words[0].lower()), *words[1:]]
    if words and words[0].lower() in ("a", "an", "both"):
        words = words[1:]
    if words and words[0].lower() == "the":
        if not (len(words) > 1 and words[1][:1].isupper()):
            return None  # "the color" points at something in the chat; "the Beatles" does not
        words = words[1:]
    while words and words[-1].lower() in TRAILING_FILLERS:
        words.pop()
    if not words or len(words) > 4 or re.split(r"['’]", words[0].lower())[0] in PRONOUN_STARTS:
        return None
    lowered = [w.lower() for w in words]
    if not PHRASE_BOUNDARIES.isdisjoint(lowered) or not CONTEXT_WORDS.isdisjoint(lowered):
        return None
    if len(words) == 1 and lowered[0] in EMPTY_GERUNDS:
        return None
    return _strip_punct(" ".join(words))


def _gerund(verb: str) -> str:
    if (verb.endswith("ing") and len(verb) > 5) or not verb.isalpha():
        return verb
    if verb.endswith("ie"):
        return verb[:-2] + "ying"
    if verb.endswith("e") and not verb.endswith(("ee", "ye", "oe")):
        return verb[:-1] + "ing"
    vowels = "aeiou"
    if (
        len(verb) <= 4
        and len(verb) >= 3
        and verb[-1] not in vowels + "wxy"
        and verb[-2] in vowels
        and verb[-3] not in vowels
    ):
        return verb + verb[-1] + "ing"
    return verb + "ing"


def _strip_punct(text: str) -> str:
    text = text.strip().rstrip(",;:!?\"')(")
    if text.endswith(".") and "." not in text.split()[-1][:-1]:
        text = text[:-1]
    return text.strip()


# --- the rules ----------------------------------------------------------------------

# Verb phrases shared by several rules. "be …" forms follow "used to" ("I used to be a nurse").
_WORK_AT = (
    r"(?:work|works|am\s+working|is\s+working|be\s+working|(?:have|has)\s+worked|(?:have|has)\s+been\s+working)"
    r"\s+(?:at|for)|(?:am|is|be)\s+employed\s+(?:at|by)"
)
_WORKED_AT = r"(?:worked|was\s+working|were\s+working|had\s+worked)\s+(?:at|for)|(?:was|were)\s+employed\s+(?:at|by)"
_WORK_AS = r"work\s+as|works\s+as|(?:am|is|be)\s+working\s+as|(?:have|has)\s+(?:been\s+working|worked)\s+as"
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
        _proper,
        "place",
        ("liv", "moved", "relocated", "based", "reside"),
    ),
    Rule(
        "lives_in",
        re.compile(rf"{_MY_HOME}\s+(?i:home|house|apartment|place)\s+(?i:is)\s+(?:(?i:now)\s+)?(?i:in)\s+"),
        _proper,
        "place",
        ("home", "house", "apartment", "place"),
        subject_first_person_only=True,
    ),
    Rule(
        "lives_in",
        _verbs(r"(?:have\s+|has\s+)?moved\s+(?:out\s+of|away\s+from)"),
        _proper,
        "place",
        ("moved",),
        ends=True,
    ),
    Rule("lives_in", _verbs(_LEFT), _proper_strict, "place", ("left",), ends=True, requires=PLACE_CONTEXT),
    Rule(
        "works_at",
        _verbs(
            rf"{_WORK_AT}|(?:got|found|landed|took|started|accepted|have|has)\s+(?:a|my)\s+(?:new\s+)?job\s+(?:at|with)|"
            r"got\s+hired\s+(?:at|by)|was\s+hired\s+(?:at|by)|"
            r"started\s+working\s+(?:at|for)|began\s+working\s+(?:at|for)",
            past=_WORKED_AT,
        ),
        _proper,
        "organization",
        ("work", "employed", "job", "hired"),
    ),
    Rule(
        "works_at",
        _verbs(r"joined|(?:have|has)\s+joined|started\s+at"),
        _proper_strict,
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
        _proper,
        "organization",
        ("a ", "an ", "as "),
    ),
    Rule(
        "works_at",
        _verbs(rf"(?:{_QUIT}|{_FIRED}|{_LEFT})\s+{_MY_JOB}|{_QUIT}|{_FIRED}"),
        _proper,
        "organization",
        ("quit", "resigned", "stopped", "fired", "laid off", "left"),
        ends=True,
    ),
    Rule("works_at", _verbs(_LEFT), _proper_strict, "organization", ("left",), ends=True, excludes=PLACE_CONTEXT),
    Rule(
        "works_as",
        _verbs(_WORK_AS, past=_WORKED_AS),
        _role,
        "profession",
        ("as",),
    ),
    Rule(
        "works_as",  # "I work at Acme as a designer", "I joined Initech as an engineer"
        _verbs(
            rf"(?:{_WORK_AT}|joined|(?:have|has)\s+joined)\s+{_ORG},?\s+as",
            past=rf"(?:{_WORKED_AT})\s+{_ORG},?\s+as",
        ),
        _role,
        "profession",
        (" as ",),
    ),
    Rule(
        "works_as",
        _verbs(r"am|is|be|became|(?:have|has)\s+been|am\s+now|is\s+now", past=r"was|were|had\s+been"),
        _profession,
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
        _proper,
        "organization",
        ("stud", "enrolled", "school"),
    ),
    Rule("born_in", _verbs(r"(?:was|were)\s+born\s+in", can_end=False), _proper, "place", ("born",)),
    Rule(
        "birth_year",
        _verbs(r"(?:was|were)\s+born\s+in", can_end=False),
        _year,
        "thing",
        ("born",),
        object_is_entity=False,
    ),
    Rule(
        "is_from",
        _verbs(r"(?:am|is)\s+(?:originally\s+)?from|(?:come|comes)\s+(?:originally\s+)?from", can_end=False),
        _proper,
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
        _person,
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
        _liked,
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
        _liked,
        "thing",
        ("hate", "dislike", "detest", "stand", "not"),
    ),
    Rule(
        "has",
        _verbs(r"(?:have|has)\s+got|have|has|own|owns|got|adopted|bought|(?:have|has)\s+had"),
        _possessions,
        "thing",
        ("have", "has", "own", "got", "adopted", "bought"),
    ),
    Rule(
        "is_named",
        re.compile(
            r"(?:(?P<subj>(?<![\w'])[Mm]y)\s+(?i:name)\s+(?i:is)|(?<![\w'])(?i:call)\s+(?P<subj2>me)"
            r"|(?P<subj3>(?<![\w'])I)\s+(?i:am\s+called|go\s+by))\s+"
        ),
        _person,
        "person",
        ("name", "call", "called", "go by"),
        object_is_entity=False,
        subject_first_person_only=True,
    ),
    Rule(
        "does",  # "I play tennis", "I do yoga", "I took up squash", "I switched to squash"
        _verbs(_PLAY, past=r"played|practi[cs]ed|did|went"),
        _activity,
        "activity",
        ("play", "practi", "do", "go", "took", "taken", "picked", "start", "began", "switched", "moved on", "into",
         "been"),
    ),
    Rule(
        "does",  # "I stopped playing tennis", "I quit yoga", "I gave up chess", "I switched from tennis to squash"
        _verbs(_STOPPED),
        _activity,
        "activity",
        ("stopped", "quit", "gave up", "given up", "switched", "dropped"),
        ends=True,
    ),
    Rule(
        "age",
        _verbs(r"am|is|turned|(?:will\s+)?turn|just\s+turned", can_end=False),
        _age,
        "thing",
        ("am", "is", "turn"),
        object_is_entity=False,
    ),
)
