"""The offline extractor: regular-expression rules over what speakers say.

No model and no network. Two kinds of facts come out of an episode:

* **canonical facts** from plain first-person or named statements — ``lives_in``,
  ``works_at``, ``works_as``, ``studies_at``, ``born_in``, ``birth_year``,
  ``is_from``, ``married_to``, ``likes``, ``dislikes``, ``has``, ``is_named``,
  ``age`` and ``has_<relation>`` ("my sister Anna") — with "I/me/my" resolved to
  the speaker and the time they became true read from the sentence ("since 2019",
  "last year") against the message's timestamp;
* a **statement fact** per informative message (``predicate="statement"``, the
  utterance as object), so nothing said goes unindexed.

The rules favour precision: questions, negations ("I don't live in Paris anymore")
and conditionals ("if I moved to Rome") produce no canonical facts. An unnamed
assistant message speaks as ``ExtractionContext.assistant_speaker`` ("Assistant"), so
what it recommended is remembered too. Anything subtler is the LLM extractor's job.

This module runs the rules over an episode; the rule table and its object readers
are in :mod:`~zep_core.providers.patterns`, the words they are written in are in
:mod:`~zep_core.providers.lexicon`.

Example:
    >>> from datetime import datetime, timezone
    >>> from zep_core.models import Message
    >>> from zep_core.providers.base import ExtractionContext
    >>> ctx = ExtractionContext("u1", "s1", now=datetime(2024, 5, 1, tzinfo=timezone.utc))
    >>> out = RuleExtractor().extract([Message("I live in Berlin.", name="Alice")], ctx)
    >>> [(f.subject, f.predicate, f.object) for f in out.facts]
    [('Alice', 'lives_in', 'Berlin'), ('Alice', 'statement', 'I live in Berlin.')]

"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from ..models import Message
from .base import ExtractedEntity, ExtractedFact, Extraction, ExtractionContext
from .extractive import predicate_phrase, speaker_of, split_sentences, summarize_messages
from .lexicon import CONDITIONAL_WORDS, FILLER_WORDS, NAME, NOT_NAMES, PETS, RELATIONS, WORD_RE
from .patterns import RULES, Rule, agrees
from .timeparse import TimeMention, duration_start, find_times

__all__ = ["RuleExtractor", "is_informative"]

CANONICAL_CONFIDENCE = 0.9
HEDGED_CONFIDENCE = 0.7
STATEMENT_CONFIDENCE = 0.6
STATEMENT_MAX_CHARS = 500
_QUESTION_MAX_WORDS = 8

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
_NARRATIVE_PREDICATES = frozenset({"lives_in", "works_at"})  # "when I moved to Rome, …" still happened
_CONTRACTION_RE = re.compile(r"\b([Ii])['’](m|ve|d|ll)\b|\b(can)['’]t\b|\b(won)['’]t\b|n['’]t\b")
_CONTRACTED = {"m": " am", "ve": " have", "d": " would", "ll": " will"}
_SPACE_RE = re.compile(r"\s+")
_PERFECT_RE = re.compile(r"\b(?:have|has)\s+(?:\w+\s+)?(?:been|lived|worked|had|owned|studied)\b", re.IGNORECASE)
_MY_RELATION_RE = re.compile(
    r"(?<![\w'])(?i:my)\s+(?P<rel>(?i:best\s+friend|"
    + "|".join(sorted((k for k in RELATIONS if k != "best friend"), key=len, reverse=True))
    + rf"))\s+(?P<name>{NAME})(?![\w-])"
)

# --- the extractor -----------------------------------------------------------------


def is_informative(text: str) -> bool:
    """Whether a message says something worth indexing: 3+ words, not only pleasantries.

    Example:
        >>> is_informative("ok thanks!"), is_informative("I adopted a puppy")
        (False, True)

    """
    words = [w.lower().strip("'’") for w in WORD_RE.findall(text) if w[0].isalnum()]
    if len(words) < 3 or all(w in FILLER_WORDS for w in words):
        return False
    return not _is_short_question(text, len(words))


def _is_short_question(text: str, n_words: int) -> bool:
    """A short message that only asks ("Where do I live now?") states nothing to remember."""
    sentences = [s.strip() for s in split_sentences(text) if s.strip()]
    return n_words <= _QUESTION_MAX_WORDS and bool(sentences) and all(s.endswith("?") for s in sentences)


@dataclass(frozen=True)
class _Said:
    """One message prepared for the rules: who said it, when, and its citation."""

    speaker: str
    when: datetime
    ids: tuple[str, ...]


class RuleExtractor:
    """The offline :class:`~zep_core.providers.base.Extractor`: rules, no model.

    Example:
        >>> from datetime import datetime, timezone
        >>> from zep_core.models import Message
        >>> from zep_core.providers.base import ExtractionContext
        >>> ctx = ExtractionContext("u1", "s1", now=datetime(2024, 5, 1, tzinfo=timezone.utc))
        >>> facts = RuleExtractor().extract([Message("I moved to Lisbon last year")], ctx).facts
        >>> facts[0].subject, facts[0].object, facts[0].valid_from.year
        ('User', 'Lisbon', 2023)

    """

    needs_known_facts = False

    def __init__(self, summary_sentences: int = 3, summary_chars: int = 400) -> None:
        """Create an extractor whose episode summaries keep that many sentences and chars."""
        self.summary_sentences = summary_sentences
        self.summary_chars = summary_chars

    def extract(self, messages: Sequence[Message], context: ExtractionContext) -> Extraction:
        """Extract canonical and statement facts, entities and a summary from one episode.

        Args:
            messages: the episode, in order.
            context: the ingest context; ``now`` is the fallback message time and
                ``default_speaker`` names unnamed ``user`` messages.

        Returns:
            The extraction; facts cite their message ids where messages have ids.

        """
        facts: dict[tuple[str, str, str], ExtractedFact] = {}
        speakers: list[str] = []
        heard: list[Message] = []
        for message in messages:
            said = _said(message, context)
            if said is None:
                continue
            heard.append(message)
            speakers.append(said.speaker)
            for fact in _message_facts(message.content, said):
                _merge(facts, fact)
        summary = summarize_messages(
            heard,
            self.summary_sentences,
            self.summary_chars,
            default_speaker=context.default_speaker,
        )
        return Extraction(
            summary=summary or None,
            entities=_entities(speakers, facts.values()),
            facts=tuple(facts.values()),
        )


def _said(message: Message, context: ExtractionContext) -> _Said | None:
    if message.role not in ("user", "assistant"):
        return None
    if message.role == "assistant" and not message.name:
        if not context.assistant_speaker:
            return None
        message = replace(message, name=context.assistant_speaker)
    ids = (message.id,) if message.id else ()
    return _Said(speaker_of(message, context.default_speaker), message.timestamp or context.now, ids)


def _merge(facts: dict[tuple[str, str, str], ExtractedFact], fact: ExtractedFact) -> None:
    key = (fact.subject.casefold(), fact.predicate, fact.object.casefold())
    seen = facts.get(key)
    if seen is None:
        facts[key] = fact
        return
    ids = tuple(dict.fromkeys(seen.source_message_ids + fact.source_message_ids))
    facts[key] = replace(seen, source_message_ids=ids, confidence=max(seen.confidence, fact.confidence))


def _message_facts(text: str, said: _Said) -> Iterator[ExtractedFact]:
    for sentence in split_sentences(text):
        if not sentence.rstrip("\"')").endswith("?"):
            yield from _sentence_facts(_normalize(sentence), said)
    flat = _SPACE_RE.sub(" ", text).strip()
    if is_informative(flat):
        yield _statement(flat, said)


def _normalize(sentence: str) -> str:
    def expand(match: re.Match[str]) -> str:
        if match[1]:
            return match[1] + _CONTRACTED[match[2].lower()]
        if match[3]:
            return match[3] + "not"
        if match[4]:
            return "will not"
        return " not"

    return _CONTRACTION_RE.sub(expand, sentence.replace("’", "'"))


def _sentence_facts(sentence: str, said: _Said) -> Iterator[ExtractedFact]:
    lower = sentence.lower()
    confidence = HEDGED_CONFIDENCE if _HEDGE_RE.search(sentence) else CANONICAL_CONFIDENCE
    times: list[TimeMention] | None = None
    for rule in RULES:
        if not rule.trigger_re.search(lower):
            continue
        for match in rule.pattern.finditer(sentence):
            subject = _subject(match, said.speaker, rule)
            if subject is None or _is_conditional(sentence, match, rule):
                continue
            if not agrees(match, first_person=match["subj"] in ("I", "i")):
                continue
            if times is None:
                times = find_times(sentence, said.when)
            objects = rule.read_object(_until_time(sentence, match.end(), times))
            when = _when(sentence, match, times, said.when) if objects else None
            for obj in objects:
                yield _canonical(rule, subject, obj, when, confidence, said)
    if "my" in lower:
        yield from _relation_facts(sentence, said, confidence)


def _subject(match: re.Match[str], speaker: str, rule: Rule) -> str | None:
    raw = match.group("subj") or (match.groupdict().get("subj2") or match.groupdict().get("subj3"))
    if raw is None:
        return None
    if raw.lower() in ("i", "my", "me"):
        return speaker
    if rule.subject_first_person_only:
        return None
    words = raw.split()
    while words and words[0] in NOT_NAMES:
        words.pop(0)
    if not words or any(w in NOT_NAMES for w in words):
        return None
    return " ".join(words)


def _is_conditional(sentence: str, match: re.Match[str], rule: Rule) -> bool:
    prefix = sentence[: match.start()]
    segment = prefix[max(prefix.rfind(","), prefix.rfind(";"), prefix.rfind(":")) + 1 :].lower()
    if _RELATIVE_CLAUSE_RE.search(segment):
        return True
    words = set(segment.replace("'", " ").split())
    if "when" in words and rule.predicate not in _NARRATIVE_PREDICATES:
        return True
    return not CONDITIONAL_WORDS.isdisjoint(words)


def _until_time(sentence: str, start: int, times: list[TimeMention]) -> str:
    end = next((t.start for t in times if t.start >= start), len(sentence))
    return sentence[start:end]


def _when(sentence: str, match: re.Match[str], times: list[TimeMention], said_at: datetime) -> datetime | None:
    if times:
        return min(times, key=lambda t: _distance(t, match)).when
    if _PERFECT_RE.search(match.group(0)):
        return duration_start(sentence[match.end() :], said_at)
    return None


def _distance(mention: TimeMention, match: re.Match[str]) -> int:
    if mention.start >= match.end():
        return mention.start - match.end()
    return max(match.start() - mention.end, 0)


def _canonical(
    rule: Rule, subject: str, obj: str, when: datetime | None, confidence: float, said: _Said
) -> ExtractedFact:
    return ExtractedFact(
        subject=subject,
        predicate=rule.predicate,
        object=obj,
        content=f"{subject} {predicate_phrase(rule.predicate, obj)}.",
        confidence=confidence,
        valid_from=when,
        source_message_ids=said.ids,
        subject_type="person",
        object_type=rule.object_type,
        object_is_entity=rule.object_is_entity,
    )


def _relation_facts(sentence: str, said: _Said, confidence: float) -> Iterator[ExtractedFact]:
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


def _statement(text: str, said: _Said) -> ExtractedFact:
    if len(text) > STATEMENT_MAX_CHARS:
        cut = text[: STATEMENT_MAX_CHARS - 1]
        text = cut[: cut.rfind(" ")] + "…" if " " in cut else cut + "…"
    return ExtractedFact(
        subject=said.speaker,
        predicate="statement",
        object=text,
        content=f"{said.speaker}: {text}",
        confidence=STATEMENT_CONFIDENCE,
        source_message_ids=said.ids,
        object_type="thing",
        object_is_entity=False,
    )


def _entities(speakers: list[str], facts: Iterable[ExtractedFact]) -> tuple[ExtractedEntity, ...]:
    seen: dict[str, ExtractedEntity] = {}

    def add(name: str, entity_type: str) -> None:
        seen.setdefault(name.casefold(), ExtractedEntity(name, entity_type))

    for speaker in speakers:
        add(speaker, "person")
    for fact in facts:
        add(fact.subject, fact.subject_type)
        if fact.object_is_entity:
            add(fact.object, fact.object_type)
    return tuple(seen.values())
