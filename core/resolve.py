"""Entity resolution: names to stable ids, and the entities an input names.

An entity's id is a hash of the user and its normalized name, so the same name
always lands on the same node for a user and never on another user's. Aliases
("my name is Alice" makes Alice an alias of the speaker) map more names to it.
"""

from __future__ import annotations

import hashlib
import re

from .predicates import predicate_aliases
from .providers.claims import is_request
from .temporal import normalize_name

__all__ = ["FIRST_PERSON", "asks_for_advice", "canonical_predicate", "entity_id", "input_aliases", "is_first_person",
           "asks_what_the_assistant_said", "mentions_first_person", "mentions_second_person", "speaker_of"]

FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself", "i'm", "im"})
_WORD = re.compile(r"[\w'’-]+", re.UNICODE)


def entity_id(user_id: str, name: str) -> str:
    """The id of the entity called ``name`` for ``user_id``."""
    key = f"{user_id}\x1f{normalize_name(name)}".encode()
    return hashlib.sha256(key).hexdigest()[:32]


def speaker_of(name: str | None, role: str = "user", *, default: str) -> str:
    """Who "I" is in a message: its speaker's name, else ``default`` for the user, else the role.

    Example:
        >>> speaker_of(None, "user", default="User"), speaker_of(None, "assistant", default="User")
        ('User', 'Assistant')

    """
    if name:
        return name
    return default if role == "user" else role.capitalize()


def is_first_person(name: str) -> bool:
    """Whether a subject or object is "I/me/my…" and must resolve to the speaker."""
    return normalize_name(name) in FIRST_PERSON


def mentions_first_person(text: str) -> bool:
    """Whether ``text`` speaks in the first person singular ("Where do I live?")."""
    return any(w.casefold() in FIRST_PERSON or w.casefold().startswith(("i'", "i’")) for w in _WORD.findall(text))


SECOND_PERSON = frozenset({"you", "your", "yours", "yourself", "you're", "you've", "you'd", "you'll"})


_ASKS_WHAT_YOU_SAID = re.compile(
    r"\b(?:did|have)\s+you\s+(?:\w+\s+){0,2}?(?:recommend|suggest|say|tell|mention|give|list|share|propose|advise|"
    r"call|name|provide|write|send|show|offer|pick|choose|describe|explain|make|create)\b|"
    r"\byou(?:'ve|\s+have)?\s+(?:\w+\s+){0,2}?(?:recommended|suggested|said|told|mentioned|gave|given|listed|"
    r"shared|proposed|advised|provided|wrote|written|sent|showed|offered|picked|chose|described|explained|made|"
    r"created)\b|\byou\s+remember(?:ed)?\b|\bremind\s+me\b|"
    r"\b(?:our|the)\s+(?:previous|last|earlier|other)\s+(?:conversation|chat|talk|discussion)\b|"
    r"\bwe\s+(?:talked|discussed|decided|chatted|spoke|went\s+over)\b",
    re.IGNORECASE)


#: "Remind me what I said…", "what did I tell you…": the user's own words, whatever else the text says.
_ASKS_WHAT_I_SAID = re.compile(
    r"\b(?:I|I've|I\s+have)\s+(?:\w+\s+)?(?:said|told|mentioned|wrote|shared|asked|say|tell|mention)\b|"
    r"\bdid\s+I\s+(?:\w+\s+)?(?:say|tell|mention|write|share|ask)\b", re.IGNORECASE)


def asks_what_the_assistant_said(text: str) -> bool:
    """Whether ``text`` asks about the assistant's own words ("What did you recommend?", "you told me…").

    Past words of the assistant ("did you", "you suggested"), or a look back at a
    conversation ("remind me", "our previous chat", "we talked about"): the answer is
    likely in the assistant's turns. A request ("Can you suggest…?") is not, nor a
    question about the user's own words ("Remind me what I said about…").

    Example:
        >>> asks_what_the_assistant_said("Can you remind me what you suggested for Rome?")
        True
        >>> asks_what_the_assistant_said("Where do I live?"), asks_what_the_assistant_said("Can you suggest a book?")
        (False, False)
        >>> asks_what_the_assistant_said("Remind me what I said about books.")
        False

    """
    return _ASKS_WHAT_YOU_SAID.search(text) is not None and _ASKS_WHAT_I_SAID.search(text) is None


def asks_for_advice(text: str) -> bool:
    """Whether ``text`` asks for a recommendation or tips ("any suggestions?", "can you recommend a show?").

    Such a request names what it wants, not what was said before: a memory finds the asker's
    circumstances by meaning, not by the request's words. Asking to be reminded of what was said
    ("can you remind me what you recommended?") is a question about the past, not a request.

    Example:
        >>> asks_for_advice("I'm thinking of baking for my colleagues. Any tips?")
        True
        >>> asks_for_advice("How many fitness classes do I attend?")
        False
        >>> asks_for_advice("Can you remind me of the 7th job on your list?")
        False

    """
    return _ASKS_WHAT_YOU_SAID.search(text) is None and is_request(text)


def mentions_second_person(text: str) -> bool:
    """Whether ``text`` addresses the assistant ("What did you recommend?")."""
    return any(w.casefold().replace("’", "'") in SECOND_PERSON for w in _WORD.findall(text))


def input_aliases(text: str, *, max_words: int = 4, max_grams: int = 2000) -> list[str]:
    """Normalized word n-grams of ``text`` (1..max_words) that could name an entity.

    Possessives are tried both ways ("Alice's" → "alice's" and "alice").
    """
    words = [w.strip("'’-") for w in _WORD.findall(text)]
    words = [w for w in words if w]
    grams: dict[str, None] = {}
    for n in range(1, max_words + 1):
        for i in range(len(words) - n + 1):
            gram = normalize_name(" ".join(words[i:i + n]))
            grams[gram] = None
            if gram.endswith(("'s", "’s")):
                grams[gram[:-2]] = None
            if len(grams) >= max_grams:
                return list(grams)
    return list(grams)


_PREDICATE_ALIASES = predicate_aliases()  # the synonyms of each predicate (zep_core.predicates)


def canonical_predicate(predicate: str) -> str:
    """snake_case a predicate and map common synonyms (``moved to`` → ``lives_in``)."""
    if not isinstance(predicate, str):
        return predicate
    key = re.sub(r"[^\w]+", "_", predicate.strip().casefold()).strip("_")
    return _PREDICATE_ALIASES.get(key, key) or predicate


#: "How many fish…", "how much did I spend…", "the total number of siblings I have": the answer is a count or a sum.
#: "How many days passed between…", "how much time…" ask for time between dates, not a count said.
_HOW_MANY = re.compile(r"(?i)\bhow\s+(?:many|much)\b(?!\s+(?:more\s+|longer\s+)?(?:days?|weeks?|months?|years?|"
                       r"hours?|minutes?|time)\b)|\btotal\b")


def asks_how_many(text: str) -> bool:
    """Whether ``text`` asks for a count or a sum ("How many fish are in my aquariums?", "my total spend").

    Example:
        >>> asks_how_many("How many fish are there in total in both of my aquariums?")
        True
        >>> asks_how_many("Which fish did I add first?"), asks_how_many("How many days ago did I buy the tank?")
        (False, False)

    """
    return _HOW_MANY.search(text) is not None
