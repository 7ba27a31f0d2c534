"""The object readers of the rule table: each reads a fact's object from the text after its verb.

A reader takes the rest of the sentence after a rule's match and returns the objects it
found there, or ``[]`` when nothing fit: a proper noun (strictly at the end of its
clause, for verbs as loose as "joined"), a person's name, a year, a profession, a role,
possessions, liked things, an activity or an age. :mod:`~zep_core.providers.patterns`
pairs each rule with one; the words they are written in live in
:mod:`~zep_core.providers.lexicon`.
"""

from __future__ import annotations

import re

from .lexicon import (
    ACTIVITIES,
    BAD_MODIFIERS,
    CAP_WORD,
    CONTEXT_WORDS,
    EMPTY_GERUNDS,
    HAS_HEADS,
    NAME,
    NOT_A_JOB,
    NOT_HOBBY_VERBS,
    NOT_NAMES,
    PHRASE_BOUNDARIES,
    PROFESSIONS,
    PRONOUN_STARTS,
    TRAILING_FILLERS,
    WORD_RE,
)

__all__ = ["read_activity", "read_age", "read_liked", "read_person", "read_possessions", "read_profession",
           "read_proper", "read_proper_strict", "read_role", "read_year"]


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




def read_proper(rest: str) -> list[str]:
    """Read a proper noun: "Berlin since 2019" → "Berlin" (nothing for a pronoun or a non-name)."""
    match = _PROPER_RE.match(rest)
    if match is None:
        return []
    obj = _strip_punct(match["obj"])
    first = obj.split()[0] if obj else ""
    return [obj] if obj and first not in NOT_NAMES and obj != "I" else []


def read_proper_strict(rest: str) -> list[str]:
    """Read a proper noun that ends its clause: "joined Acme", not "joined Mel at the park"."""
    match = _PROPER_RE.match(rest)
    if match is None or not _STRICT_TAIL_RE.match(rest, match.end()):
        return []
    return read_proper(rest)


def read_person(rest: str) -> list[str]:
    """Read a person's name, one or two capitalised words: "Anna Schmidt last year" → "Anna Schmidt"."""
    match = _PERSON_RE.match(rest)
    if match is None:
        return []
    words = match["obj"].split()
    if words[0] in NOT_NAMES:
        return []
    return [" ".join(w for w in words if w not in NOT_NAMES)]


def read_year(rest: str) -> list[str]:
    """Read a year: "1990 in Lyon" → "1990"."""
    match = _YEAR_RE.match(rest)
    return [match["obj"]] if match else []


def read_profession(rest: str) -> list[str]:
    """Read a profession of the lexicon after "a"/"an": "a senior nurse" → "senior nurse"."""
    match = _PROFESSION_RE.match(rest)
    if match is None:
        return []
    obj = match["obj"].lower()
    modifiers = obj.split()[:-1]
    if not BAD_MODIFIERS.isdisjoint(modifiers) or not NOT_A_JOB.isdisjoint(modifiers):
        return []
    return [obj]


def read_role(rest: str) -> list[str]:
    """Read what follows "work as": "a nurse at the hospital" → "nurse"."""
    return _phrases(rest, max_items=1)


def read_liked(rest: str) -> list[str]:
    """Read up to three liked things: "jazz, hiking and old films" → "jazz", "hiking", "old films"."""
    return _phrases(rest, max_items=3)


def read_possessions(rest: str) -> list[str]:
    """Read up to three things had: "two cats and a dog" → "two cats", "dog"."""
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


def read_activity(rest: str) -> list[str]:
    """Read an activity of the lexicon: "tennis every Sunday" → "tennis", "the piano" → "piano"."""
    match = _ACTIVITY_RE.match(rest)
    if match is None:
        return []
    words = match["obj"].lower().split()
    return [" ".join(words[1:] if words[0] == "the" else words)]


def read_age(rest: str) -> list[str]:
    """Read an age in years, 1 to 120: "34 years old" → "34"."""
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
    for found in WORD_RE.finditer(rest):  # lazily: the clause ends long before a long sentence does
        token = found.group()
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
