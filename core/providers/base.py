"""The provider seams: embedders, extractors and summarizers.

Each seam is a small ``typing.Protocol``. The offline defaults live in
``providers/local.py`` (embedder), ``providers/rules.py`` (extractor) and
``providers/extractive.py`` (summarizer); OpenAI-compatible ones in
``providers/openai.py``. The core never asks which one it has.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, runtime_checkable

import numpy as np

from ..models import Entity, Fact, Message

__all__ = [
    "Embedder",
    "ExtractedCorrection",
    "ExtractedEntity",
    "ExtractedFact",
    "Extraction",
    "ExtractionContext",
    "Extractor",
    "Summarizer",
]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalized float32 vectors.

    Attributes:
        name: a stable identity stored with the data (e.g. ``local:all-MiniLM-L6-v2-int8``).
        dimension: the vector length.

    """

    name: str
    dimension: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return an ``(len(texts), dimension)`` float32 array of unit vectors."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Return one ``(dimension,)`` unit vector; implementations may cache it."""
        ...


@dataclass(frozen=True)
class ExtractedEntity:
    """An entity the extractor saw: a name and a type (person, place, org, thing…)."""

    name: str
    entity_type: str = "thing"


@dataclass(frozen=True)
class ExtractedFact:
    """A fact the extractor proposes; the core validates it and applies the rules.

    Attributes:
        subject: the subject's name, already resolved ("I" → the speaker).
        predicate: a canonical snake_case predicate (``lives_in``, ``works_at``…).
        object: the object's name or value.
        content: one readable sentence stating the fact.
        confidence: in [0, 1].
        valid_from: when it became true; ``None`` means "the source message's time".
        valid_until: when it stopped being true, if stated.
        source_message_ids: ids of the messages it came from (caller ids).
        subject_type: entity type of the subject.
        object_type: entity type of the object when it is an entity.
        object_is_entity: whether the object is a graph node (``Paris``) rather than a
            literal value (an age, a free-text statement).
        covered: a quote whose every word the other facts of its message say ("I live in
            Paris" beside "Alice lives in Paris."): the core stores it only when one of
            those facts is not stored (discarded by the rules), so nothing said is lost
            and the context does not hold one fact twice.
        attribute: what it is a claim about (:mod:`zep_core.attributes`: ``home``, ``work``…),
            if known: a newer claim on a one-value attribute retires it.
        cue: what it says of what was said before: ``"change"`` (it replaced or ended
            something: "switched to", "got rid of") or ``"correction"`` ("it's actually"),
            else None; with ``names``, the words that say which thing ("corolla"), it
            retires the speaker's earlier statements that name the same thing.
        names: see ``cue``.
        retires: whether its ``attribute`` is sure enough to retire the older claims on it (None:
            the extractor does not say; an attribute it gives then always does).
        counts: the counts it states, by what they count (``("# people report to me", "11")``):
            an earlier statement counting the same thing with another value is replaced.
        swap: a correction's wrong word and the words meant, when it says both ("remember i
            said pepper is a beagle? she's actually a basset hound mix": ``("beagle", "basset
            hound mix")``): the corrected statement is kept with the one put for the other.

    """

    subject: str
    predicate: str
    object: str
    content: str
    confidence: float = 0.8
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    source_message_ids: tuple[str, ...] = ()
    subject_type: str = "person"
    object_type: str = "thing"
    object_is_entity: bool = True
    covered: bool = False
    attribute: str | None = None
    cue: str | None = None
    names: tuple[str, ...] = ()
    retires: bool | None = None
    counts: tuple[tuple[str, str], ...] = ()
    swap: tuple[str, str] | None = None


@dataclass(frozen=True)
class ExtractedCorrection:
    """A speaker taking back something they said ("Sorry, I meant Victoria, not Vancouver").

    The core finds the statement corrected — in the messages named by ``in_messages``
    (earlier in this episode), else among the speaker's current facts — takes back the
    facts drawn from it that mention ``wrong`` (they are kept in history as never having
    held), and stores them again with ``right`` in its place, from the same time.

    Attributes:
        speaker: who corrects (already resolved, as a fact's subject).
        right: the value meant; None when something is only taken back ("scratch that").
        wrong: the value taken back, when known (said, or found in the corrected message).
        about: when ``wrong`` is not known: a name the corrected statement mentions
            ("Biscuit is actually a cat"); the wrong value is then the one of the same kind
            as ``right`` in that statement.
        in_messages: ids of this episode's messages that the correction corrects.
        source_message_ids: the message that says the correction.

    """

    speaker: str
    right: str | None
    wrong: str | None = None
    about: str | None = None
    in_messages: tuple[str, ...] = ()
    source_message_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class Extraction:
    """Everything one extraction pass over an episode returns.

    Attributes:
        contradicted_fact_ids: known facts (of ``ExtractionContext.known_facts``) that
            held and no longer do ("I moved to Berlin": the Paris fact ends).
        mistaken_fact_ids: known facts that never held: a speaker corrected them
            ("Biscuit is actually a cat"). They are kept in history as taken back, and
            the episode's fact of the same subject and predicate replaces each.
        corrections: corrections by value, for extractors that do not see fact ids
            (the rule extractor): the core finds what they correct.

    """

    summary: str | None = None
    entities: tuple[ExtractedEntity, ...] = ()
    facts: tuple[ExtractedFact, ...] = ()
    contradicted_fact_ids: tuple[str, ...] = ()
    usage: Mapping[str, int] = field(default_factory=dict)
    corrections: tuple[ExtractedCorrection, ...] = ()
    mistaken_fact_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class ExtractionContext:
    """What the core tells the extractor besides the messages.

    Attributes:
        user_id: the tenant.
        session_id: the conversation.
        now: the ingest time (the fallback for messages without a timestamp).
        known_facts: current facts about the entities the episode mentions, so an
            LLM can say which ones it contradicts; found without any LLM call.
        default_speaker: the name used for a ``user`` message that has no ``name``.
        assistant_speaker: the name used for an ``assistant`` message that has no
            ``name`` (its words are memory too: "what did you recommend?"); None leaves
            such messages out of the extraction.

    """

    user_id: str
    session_id: str
    now: datetime
    known_facts: tuple[Fact, ...] = ()
    default_speaker: str = "User"
    assistant_speaker: str | None = "Assistant"


@runtime_checkable
class Extractor(Protocol):
    """Turns an episode's messages into a summary, entities and facts.

    Attributes:
        needs_known_facts: whether the core should look up ``known_facts`` for it.

    """

    needs_known_facts: bool

    def extract(self, messages: Sequence[Message], context: ExtractionContext) -> Extraction:
        """Extract from one episode. Raise any exception to leave it pending."""
        ...


@runtime_checkable
class Summarizer(Protocol):
    """Writes entity summaries from their facts, many entities per call."""

    def summarize_entities(self, items: Sequence[tuple[Entity, Sequence[Fact]]]) -> list[str]:
        """Return one summary per ``(entity, facts)`` pair, in order."""
        ...
