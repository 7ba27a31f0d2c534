"""The offline summarizer: extractive episode summaries and fact-built entity summaries.

No model and no network. An episode summary is the episode's most informative
sentences (content-word frequency, first-person statements, proper nouns and dates
score higher), kept in their original order and prefixed with the speaker. An entity
summary is written from the entity's facts, current facts first, then what used to
be true, then a couple of things the entity said.

Example:
    >>> from zep_core.models import Message
    >>> summarize_messages([Message("I moved to Berlin last year.", name="Alice")])
    'Alice: I moved to Berlin last year.'

"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..models import Entity, Fact, Message
from ..predicates import templates
from .lexicon import remembered

__all__ = [
    "ExtractiveSummarizer",
    "predicate_phrase",
    "speaker_of",
    "split_sentences",
    "summarize_entity",
    "summarize_messages",
]

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\s*\n+\s*")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*|\d+")
_PROPER = re.compile(r"(?<=\s)(?!I\b)[A-Z][a-z]+")
_FIRST_PERSON = re.compile(r"\b(?:I|my|I'm|I've|me)\b")
_DIGIT = re.compile(r"\d")
_QUANTITY = re.compile(
    r"^(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|some|several|many|a|an|the|"
    r"lots|plenty|few|no|more|his|her|their|our|my)\b",
    re.IGNORECASE,
)

_STOPWORDS = frozenset(
    """a about above after again all also am an and any are as at be because been before
    being both but by can could did do does doing done down during each even ever every
    few for from get gets got had has have having he her here hers him his how i if in
    into is it its itself just let like me more most much my no nor not now of off oh ok
    okay on once only or other our out over own really same she should so some such than
    that the their them then there these they this those through to too under until up
    us very was way we well were what when where which while who whom why will with would
    yeah yes you your yours i'm i've it's that's don't can't thats im ive dont gonna wanna
    lot lots thing things pretty super totally definitely actually great awesome cool amazing
    wow nice glad happy thanks thank hey hello good fun sure sounds looks seems feel know
    think see wait can't hear keep""".split()
)

_PREDICATE_TEMPLATES = templates()  # each predicate's phrase (zep_core.predicates), in the registry's order
_PRIORITY = {name: rank for rank, name in enumerate(_PREDICATE_TEMPLATES)}
_SNIPPET_CHARS = 60


def predicate_phrase(predicate: str, obj: str) -> str:
    """Return the verb phrase stating a fact without its subject.

    Args:
        predicate: a canonical predicate such as ``lives_in`` or ``has_sister``.
        obj: the fact's object.

    Returns:
        e.g. ``"lives in Berlin"``, ``"has a dog"``, ``"has a sister, Anna"``.

    """
    template = _PREDICATE_TEMPLATES.get(predicate)
    if template is not None:
        return template.format(o=obj, a=_article(obj), v=_activity_verb(obj))
    if predicate.startswith("has_"):
        relation = predicate[4:].replace("_", " ")
        return f"has {_article(relation)}{relation}, {obj}"
    return f"{predicate.replace('_', ' ')} {obj}"


#: Activities one goes to do ("goes running"); games, sports with a ball and instruments are played.
_GOING = frozenset("running jogging swimming cycling biking climbing bouldering hiking skiing snowboarding surfing "
                   "skating skateboarding kayaking canoeing sailing diving rowing dancing spinning".split())
_DOING = frozenset("yoga pilates crossfit karate judo taekwondo kickboxing boxing fencing archery ballet salsa tango "
                   "weightlifting powerlifting knitting painting pottery gardening baking photography birdwatching "
                   "meditation dance tai chi jiu-jitsu jiu jitsu triathlons marathons".split())


def _activity_verb(activity: str) -> str:
    """The verb an activity takes: "goes running", "does yoga", "plays tennis"."""
    if activity in _GOING or activity.split()[-1] in _GOING:
        return "goes"
    return "does" if activity in _DOING else "plays"


def _article(noun: str) -> str:
    if not noun or noun[0].isupper() or _QUANTITY.match(noun):
        return ""
    head = noun.split()[-1].lower()
    if head.endswith("s") and not head.endswith(("ss", "us", "is")):
        return ""
    return "an " if noun[0].lower() in "aeiou" else "a "


def speaker_of(message: Message, default_speaker: str = "User") -> str:
    """Return who said a message: its name, else the default user, else "Assistant"."""
    if message.name:
        return message.name
    return default_speaker if message.role == "user" else message.role.capitalize()


#: Words whose full stop ends no sentence ("St. Mary's", "Dr. Okafor", "e.g. this").
_ABBREVIATION = re.compile(r"(?:^|[\s(])(?:st|dr|mr|mrs|ms|mt|jr|sr|prof|vs|etc|approx|dept|ave|blvd|rd|e\.g|i\.e)"
                           r"\.[\"')\]]*$", re.IGNORECASE)


def split_sentences(text: str) -> list[str]:
    """Split text into sentences on ``.!?`` followed by space (not after "St.", "Dr."…), and on line breaks."""
    return list(_sentences(text))


@remembered  # one message is split by several readers of its episode
def _sentences(text: str) -> tuple[str, ...]:
    out: list[str] = []
    for part in _SENTENCE_END.split(text):
        if not part or not part.strip():
            continue
        if out and _ABBREVIATION.search(out[-1]):
            out[-1] = f"{out[-1]} {part.strip()}"
        else:
            out.append(part.strip())
    return tuple(out)


def summarize_messages(
    messages: Sequence[Message],
    max_sentences: int = 3,
    max_chars: int = 400,
    *,
    default_speaker: str = "User",
) -> str:
    """Return the episode's most informative sentences, speaker-prefixed, in order.

    Args:
        messages: the episode; system and tool messages are ignored.
        max_sentences: at most this many sentences.
        max_chars: the summary never exceeds this length.
        default_speaker: the name shown for ``user`` messages without a name.

    Returns:
        e.g. ``"Alice: I moved to Berlin last year. Bob: I work at Acme."``; empty
        when nothing informative was said.

    """
    sentences = [
        (speaker_of(m, default_speaker), sentence)
        for m in messages
        if m.role in ("user", "assistant")
        for sentence in split_sentences(m.content)
    ]
    candidates = [_Candidate(index, speaker, text) for index, (speaker, text) in enumerate(sentences)]
    speakers = {c.speaker.casefold() for c in candidates}
    for candidate in candidates:
        candidate.words = [w for w in _content_words(candidate.text) if w not in speakers]
        candidate.bonus = _bonus(candidate.text, speakers)
    frequency = Counter(w for c in candidates for w in set(c.words))
    chosen = _choose([c for c in candidates if len(set(c.words)) >= 2], frequency, max_sentences, max_chars)
    text = " ".join(f"{c.speaker}: {c.text}" for c in sorted(chosen, key=lambda c: c.index))
    return _clip(text, max_chars)


@dataclass
class _Candidate:
    """A sentence that may go into a summary, with what scoring needs."""

    index: int
    speaker: str
    text: str
    words: list[str] = field(default_factory=list)
    bonus: float = 0.0

    @property
    def cost(self) -> int:
        return len(self.speaker) + 2 + len(self.text)


def _content_words(sentence: str) -> list[str]:
    return [
        w for w in (t.lower().replace("’", "'") for t in _WORD.findall(sentence)) if len(w) > 2 and w not in _STOPWORDS
    ]


def _bonus(sentence: str, speakers: set[str]) -> float:
    """Favour first-person statements, proper nouns (not the speakers') and numbers."""
    proper = [w for w in _PROPER.findall(sentence) if w.casefold() not in speakers]
    bonus = 1.0 if _FIRST_PERSON.search(sentence) else 0.0
    bonus += min(len(proper), 3) * 0.5 + (0.5 if _DIGIT.search(sentence) else 0.0)
    return bonus * (0.5 if sentence.endswith("?") else 1.0)


def _score(candidate: _Candidate, frequency: Counter[str], covered: set[str]) -> float:
    """Frequent content words not yet covered by chosen sentences, per sqrt(length)."""
    fresh = set(candidate.words) - covered
    score = sum(frequency[w] for w in fresh) / math.sqrt(len(candidate.words) + 1)
    return (score + candidate.bonus) * (0.5 if candidate.text.endswith("?") else 1.0)


def _choose(pool: list[_Candidate], frequency: Counter[str], max_sentences: int, max_chars: int) -> list[_Candidate]:
    chosen: list[_Candidate] = []
    covered: set[str] = set()
    used = 0
    while pool and len(chosen) < max_sentences:
        fitting = [c for c in pool if used + c.cost + (1 if chosen else 0) <= max_chars]
        if not fitting:
            break
        best = max(fitting, key=lambda c: (_score(c, frequency, covered), -c.index))
        chosen.append(best)
        covered.update(best.words)
        used += best.cost + (1 if len(chosen) > 1 else 0)
        pool = [c for c in pool if c is not best]
    if not chosen and pool and max_sentences > 0:
        best = max(pool, key=lambda c: (_score(c, frequency, covered), -c.index))
        best.text = _clip(best.text, max(max_chars - len(best.speaker) - 2, 1))
        chosen.append(best)
    return chosen


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    if limit <= 1:
        return text[:limit]
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip(" ,;:") + "…"


def summarize_entity(entity: Entity, facts: Sequence[Fact], max_chars: int = 300) -> str:
    """Write one entity's summary from its facts, current facts first.

    Args:
        entity: the entity; its name and aliases decide which facts are about it.
        facts: its facts (current and superseded) in any order.
        max_chars: the summary never exceeds this length.

    Returns:
        e.g. ``"Alice lives in Berlin; works at Acme. Previously: lives in Paris
        (until 2024-03-01)."``; empty when there are no facts.

    """
    names = {entity.name.casefold(), *(a.casefold() for a in entity.aliases)}
    own = [f for f in facts if f.subject.casefold() in names]
    current = _ordered([f for f in own if f.is_current and f.predicate != "statement"])
    related = _ordered(
        [f for f in facts if f.is_current and f.subject.casefold() not in names and f.predicate != "statement"]
    )
    parts = [
        _own_part(entity.name, current),
        _listed("Related", [f"{f.subject} {predicate_phrase(f.predicate, f.object)}" for f in related]),
        _previously(own),
        _said(own),
    ]
    return _fit([p for p in parts if p], max_chars)


def _ordered(facts: list[Fact]) -> list[Fact]:
    return sorted(
        facts,
        key=lambda f: (_PRIORITY.get(f.predicate, len(_PRIORITY)), f.predicate, -f.valid_from.timestamp(), f.object),
    )


def _unique(phrases: list[str]) -> list[str]:
    return list(dict.fromkeys(phrases))


def _own_part(name: str, facts: list[Fact]) -> str:
    phrases = _unique([predicate_phrase(f.predicate, f.object) for f in facts])
    return f"{name} {'; '.join(phrases)}." if phrases else ""


def _listed(label: str, phrases: list[str]) -> str:
    phrases = _unique(phrases)[:3]
    return f"{label}: {'; '.join(phrases)}." if phrases else ""


def _previously(own: list[Fact]) -> str:
    past = sorted(
        (f for f in own if not f.is_current and f.predicate != "statement"),
        key=lambda f: (-(f.valid_until or f.valid_from).timestamp(), f.predicate, f.object),
    )
    phrases = [
        predicate_phrase(f.predicate, f.object)
        + (f" (until {f.valid_until.date().isoformat()})" if f.valid_until else " (superseded)")
        for f in past
    ]
    return _listed("Previously", phrases[:2])


def _said(own: list[Fact]) -> str:
    statements = sorted(
        (f for f in own if f.is_current and f.predicate == "statement"),
        key=lambda f: (-f.valid_from.timestamp(), f.object),
    )
    snippets = _unique([f'"{_clip(f.object, _SNIPPET_CHARS)}"' for f in statements])[:2]
    return f"Said: {' '.join(snippets)}" if snippets else ""


def _fit(parts: list[str], max_chars: int) -> str:
    text = ""
    for part in parts:
        candidate = f"{text} {part}" if text else part
        if len(candidate) > max_chars:
            return text or _clip(part, max_chars)
        text = candidate
    return text


class ExtractiveSummarizer:
    """The offline :class:`~zep_core.providers.base.Summarizer`: summaries built from facts.

    Example:
        >>> from datetime import datetime, timezone
        >>> from zep_core.models import Entity, Fact
        >>> alice = Entity(name="Alice", entity_type="person")
        >>> fact = Fact(content="Alice lives in Berlin.", subject="Alice", predicate="lives_in",
        ...             object="Berlin", valid_from=datetime(2024, 1, 1, tzinfo=timezone.utc))
        >>> ExtractiveSummarizer().summarize_entities([(alice, [fact])])
        ['Alice lives in Berlin.']

    """

    def __init__(self, max_chars: int = 300) -> None:
        """Create a summarizer whose summaries are at most ``max_chars`` long."""
        self.max_chars = max_chars

    def summarize_entities(self, items: Sequence[tuple[Entity, Sequence[Fact]]]) -> list[str]:
        """Return one summary per ``(entity, facts)`` pair, in order."""
        return [summarize_entity(entity, facts, self.max_chars) for entity, facts in items]
