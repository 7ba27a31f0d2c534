"""Prompts and response schemas of the OpenAI-compatible providers, as pydantic models.

Graphiti's habit: what we ask the model and the shape we expect back live together,
apart from the transport. The extraction prompt is sent once per episode, so it is
kept compact: messages and known facts are referred to by short refs (``m1``, ``k1``)
that are mapped back to real ids here, which also means a reference the model was
never shown cannot reach the core.

The schemas are **tolerant**: a field of the wrong type is coerced or left for the
core to reject, so one bad fact never sinks a whole episode. The core validates each
fact (confidence in [0, 1], ``valid_from <= valid_until``, non-empty parts) and lists
what it dropped in ``IngestResult.invalid``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from ..models import Entity, Fact, Message
from ..names import normalize_name
from .base import ExtractedEntity, ExtractedFact, Extraction, ExtractionContext
from .extractive import speaker_of

__all__ = [
    "EntitySummaries",
    "EpisodeExtraction",
    "ExtractionPrompt",
    "decode_json",
    "strict_schema",
    "summary_messages",
]

UTC = timezone.utc

EXTRACTION_SYSTEM = """\
You turn one conversation episode into long-term memory. Reply with one JSON object:
{"summary": str, "entities": [{"name": str, "type": str}], "facts": [{"subject": str, "predicate": str, \
"object": str, "object_is_entity": bool, "content": str, "confidence": number, "valid_from": str|null, \
"valid_until": str|null, "sources": [str]}], "contradicted": [str], "mistaken": [str]}
- summary: 1-3 sentences on what happened.
- entities: people, places, organizations and things named; type is person, place, organization, event or thing.
- facts: lasting facts worth remembering in later conversations (identity, home, work, family, relationships, \
preferences, possessions, activities, quantities, plans, events). Use names, never I/me/you: a speaker's \
own statement has the speaker as subject. predicate: short snake_case (lives_in, works_at, likes, has_child). \
object_is_entity: false when the object is a value (an age, a date, a description). content: one \
self-contained third-person sentence. confidence: 0..1. valid_from/valid_until: ISO 8601 date or time when \
the text states or implies it ("since 2019", "last week": resolve against the message time), else null. \
sources: the ids (m1, m2, ...) of the messages the fact comes from.
- contradicted: ids (k1, k2, ...) of known facts this episode shows are no longer true: a move, a new job, \
an activity stopped ("I stopped playing tennis"), a number that changed ("my team grew to 7": the known \
team size ends). Only ids listed below.
- mistaken: ids of known facts a speaker corrects as never true ("Biscuit is actually a cat", "I meant \
Victoria, not Vancouver"): the correction is a fact, the known fact goes here, not in contradicted.
Rules:
- Turns marked (assistant) are the assistant's words. Never take a fact about the user or anyone else from \
them (echoes such as "From what I remember, you live in Paris", summaries, guesses); only what the assistant \
says about itself, or a fact the user confirms (then cite the user's message).
- A correction inside this episode ("sorry, I meant", "actually", "not X but Y", "scratch that"): give only \
the corrected fact; never the value taken back.
- Greetings, thanks, compliments and small talk ("Nice to meet you", "Great question!") carry no fact.
- An ended activity or a changed number is a new fact (with valid_from) plus the old one in contradicted."""

SUMMARY_SYSTEM = """\
Write a summary of each entity from its facts: one or two sentences, at most 60 words, current facts first, \
past ones marked as past. Reply with one JSON object: {"summaries": [{"id": str, "summary": str}]} with \
one item per entity id given."""


class EntityItem(BaseModel):
    """An entity named in the episode."""

    model_config = ConfigDict(extra="ignore")
    name: str = ""
    type: str = "thing"

    @field_validator("name", "type", mode="before")
    @classmethod
    def _text(cls, value: Any) -> str:
        return _as_text(value) or ""


class FactItem(BaseModel):
    """A fact as the model states it; times are ISO strings, sources are message refs."""

    model_config = ConfigDict(extra="ignore")
    subject: str = ""
    predicate: str = ""
    object: str = ""
    object_is_entity: bool = True
    content: str = ""
    confidence: float = 0.8
    valid_from: str | None = None
    valid_until: str | None = None
    sources: list[str] = []

    @field_validator("subject", "predicate", "object", "content", mode="before")
    @classmethod
    def _text(cls, value: Any) -> str:
        return _as_text(value)

    @field_validator("object_is_entity", mode="before")
    @classmethod
    def _flag(cls, value: Any) -> bool:
        if isinstance(value, str):
            return value.strip().lower() not in ("false", "no", "0")
        return True if value is None else bool(value)

    @field_validator("confidence", mode="before")
    @classmethod
    def _confidence(cls, value: Any) -> float:
        """Numbers pass as they are (the core rejects ones outside [0, 1]); words become 0.8."""
        if isinstance(value, str):
            try:
                return float(value.strip())
            except ValueError:
                return 0.8
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return 0.8
        return value

    @field_validator("valid_from", "valid_until", mode="before")
    @classmethod
    def _time(cls, value: Any) -> str | None:
        text = _as_text(value).strip()
        return None if text.lower() in ("", "null", "none", "unknown") else text

    @field_validator("sources", mode="before")
    @classmethod
    def _refs(cls, value: Any) -> list[str]:
        if isinstance(value, (str, int)):
            value = [value]
        return [str(v) for v in value if isinstance(v, (str, int))] if isinstance(value, list) else []


class EpisodeExtraction(BaseModel):
    """The whole answer for one episode: the response schema of the extraction call."""

    model_config = ConfigDict(extra="ignore")
    summary: str | None = None
    entities: list[EntityItem] = []
    facts: list[FactItem] = []
    contradicted: list[str] = []
    mistaken: list[str] = []


class SummaryItem(BaseModel):
    """One entity's summary, keyed by the ref it was given under (``e1``…)."""

    id: str
    summary: str


class EntitySummaries(BaseModel):
    """The answer of one summarization call, many entities at once."""

    summaries: list[SummaryItem]


class _Envelope(BaseModel):
    """The top level of an extraction answer, checked before its items one by one."""

    summary: Any = None
    entities: list[Any] = []
    facts: list[Any]
    contradicted: list[Any] = []
    mistaken: list[Any] = []

    @field_validator("entities", "facts", "contradicted", "mistaken", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return [] if value is None else value


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return ""


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema in the form ``json_schema`` strict mode accepts.

    Every property is required (optional ones are nullable), no extra properties,
    no defaults, titles or descriptions (the prompt says what the fields mean).
    """
    def fix(node: Any) -> Any:
        if isinstance(node, dict):
            node = {k: fix(v) for k, v in node.items() if k not in ("default", "title", "description")}
            if node.get("type") == "object" and "properties" in node:
                node["required"] = list(node["properties"])
                node["additionalProperties"] = False
            return node
        if isinstance(node, list):
            return [fix(v) for v in node]
        return node

    return fix(model.model_json_schema())


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)


def decode_json(content: str) -> dict[str, Any]:
    """The JSON object in a reply, tolerating code fences and text around it.

    Raises:
        ValueError: there is no JSON object in the reply.

    """
    text = _FENCE.sub("", content.strip())
    start, end = text.find("{"), text.rfind("}")
    if start < 0:
        raise ValueError("the reply holds no JSON object")
    try:
        data = json.loads(text[start:end + 1] if end > start else text[start:])
    except json.JSONDecodeError as exc:
        raise ValueError(f"the reply is not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError("the reply is JSON but not an object")
    return data


def _clock(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M")


def _validity(fact: Fact) -> str:
    since = f"since {fact.valid_from.date().isoformat()}"
    return f"{since}, until {fact.valid_until.date().isoformat()}" if fact.valid_until else since


_PARTIAL_DATE = re.compile(r"^(\d{4})(?:-(\d{1,2}))?$")


def parse_time(text: str | None) -> datetime | str | None:
    """An ISO date or time as UTC; ``YYYY`` and ``YYYY-MM`` mean their first day.

    Returns the text unchanged when it is no date, so that the core rejects the fact
    and reports why instead of guessing a time.
    """
    if text is None:
        return None
    match = _PARTIAL_DATE.match(text)
    try:
        if match:
            return datetime(int(match[1]), int(match[2] or 1), 1, tzinfo=UTC)
        value = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except (ValueError, OverflowError):
        return text


class ExtractionPrompt:
    """The extraction request for one episode, and the mapping of its refs back to ids.

    Args:
        messages: the episode's messages.
        context: the ingest context (known facts, default speaker, now).
        max_known_facts: how many known facts are shown at most.
        predicates: preferred single-valued predicate names, listed in the prompt.

    """

    def __init__(self, messages: Sequence[Message], context: ExtractionContext, *,
                 max_known_facts: int = 50, predicates: Sequence[str] = ()) -> None:
        self.messages = list(messages)
        self.context = context
        self.known = list(context.known_facts)[:max_known_facts]
        self.predicates = sorted(predicates)
        self.message_refs = {f"m{i + 1}": m for i, m in enumerate(self.messages)}
        self.fact_refs = {f"k{i + 1}": f.id for i, f in enumerate(self.known)}

    def chat_messages(self) -> list[dict[str, str]]:
        """The system and user messages of the request."""
        system = EXTRACTION_SYSTEM
        if self.predicates:
            system += ("\nUse these predicates where they fit; each holds one value at a time: "
                       + ", ".join(self.predicates) + ".")
        return [{"role": "system", "content": system}, {"role": "user", "content": self._episode_text()}]

    def _episode_text(self) -> str:
        lines = []
        if self.known:
            lines.append("Known facts:")
            lines += [f"{ref}: {f.content} ({_validity(f)})" for ref, f in zip(self.fact_refs, self.known)]
        lines.append("Episode (times UTC):")
        last = None
        for ref, message in self.message_refs.items():
            stamp = _clock(message.timestamp or self.context.now)
            if stamp != last:
                lines.append(f"[{stamp}]")
                last = stamp
            speaker = speaker_of(message, self.context.default_speaker)
            role = "" if message.role == "user" else f" ({message.role})"  # the assistant's turns, marked
            lines.append(f"{ref} {speaker}{role}: {message.content}")
        return "\n".join(lines)

    def parse(self, data: Mapping[str, Any]) -> Extraction:
        """Turn a decoded answer into an :class:`Extraction`; usage is added by the caller.

        Raises:
            ValueError: the answer's top level is unusable (no ``facts`` list…).

        """
        envelope = _Envelope.model_validate(data)
        entities = [e for e in (_entity(item) for item in envelope.entities) if e is not None]
        types = {normalize_name(e.name): e.entity_type for e in entities}
        facts = tuple(self._fact(item, types) for item in envelope.facts)
        mistaken = tuple(dict.fromkeys(i for i in (self._known_id(r) for r in envelope.mistaken) if i))
        contradicted = tuple(dict.fromkeys(i for i in (self._known_id(r) for r in envelope.contradicted)
                                           if i and i not in mistaken))
        summary = _as_text(envelope.summary).strip() or None
        return Extraction(summary=summary, entities=tuple(entities), facts=facts,
                          contradicted_fact_ids=contradicted, mistaken_fact_ids=mistaken)

    def _known_id(self, ref: Any) -> str | None:
        ref = _as_text(ref).strip()
        short = _ref("k", ref)
        if short in self.fact_refs:
            return self.fact_refs[short]
        return ref if ref in self.fact_refs.values() else None

    def _message(self, ref: str) -> Message | None:
        ref = ref.strip()
        return self.message_refs.get(_ref("m", ref)) or next((m for m in self.messages if m.id == ref), None)

    def _fact(self, item: Any, types: Mapping[str, str]) -> ExtractedFact:
        try:
            fact = FactItem.model_validate(item) if isinstance(item, dict) else FactItem(content=_as_text(item))
        except ValidationError:  # the validators coerce, so this is a defensive net
            fact = FactItem(content=str(item)[:200])
        sources = [m for m in (self._message(r) for r in fact.sources) if m is not None]
        valid_from, valid_until = parse_time(fact.valid_from), parse_time(fact.valid_until)
        said_at = (sources[0].timestamp if sources else None) or self.context.now
        if valid_from is None and isinstance(valid_until, datetime) and valid_until < said_at:
            valid_from = valid_until  # "lived in Paris until 2020": held at least until then
        return ExtractedFact(
            subject=fact.subject.strip(), predicate=fact.predicate, object=fact.object.strip(),
            content=fact.content.strip(), confidence=fact.confidence, valid_from=valid_from,  # type: ignore[arg-type]
            valid_until=valid_until,  # type: ignore[arg-type]
            source_message_ids=tuple(dict.fromkeys(m.id for m in sources if m.id)),
            subject_type=types.get(normalize_name(fact.subject), "person"),
            object_type=types.get(normalize_name(fact.object), "thing"),
            object_is_entity=fact.object_is_entity)


def _ref(prefix: str, text: str) -> str:
    """``K1``, ``k1`` and ``1`` all name the ref ``k1``."""
    text = text.lower()
    return prefix + text if text.isdigit() else text


def _entity(item: Any) -> ExtractedEntity | None:
    if not isinstance(item, dict):
        return None
    try:
        entity = EntityItem.model_validate(item)
    except ValidationError:
        return None
    name = entity.name.strip()
    return ExtractedEntity(name, entity.type.strip().lower() or "thing") if name else None


def summary_messages(items: Sequence[tuple[Entity, Sequence[Fact]]], *,
                     max_facts: int = 30) -> list[dict[str, str]]:
    """The request summarizing a batch of entities; entity ``i`` is ``e{i+1}``."""
    lines = []
    for i, (entity, facts) in enumerate(items):
        lines.append(f"e{i + 1}: {entity.name} ({entity.entity_type})")
        ordered = sorted(facts, key=lambda f: (not f.is_current, -f.valid_from.timestamp()))[:max_facts]
        for f in ordered:
            state = "" if f.is_current else ", past"
            lines.append(f"- {f.content} ({_validity(f)}{state})")
    return [{"role": "system", "content": SUMMARY_SYSTEM}, {"role": "user", "content": "\n".join(lines)}]


def parse_summaries(data: Mapping[str, Any], count: int) -> list[str | None]:
    """Summaries by position; ``None`` where the answer has none for an entity."""
    out: list[str | None] = [None] * count
    items = data.get("summaries")
    if not isinstance(items, list):
        raise ValueError("the reply has no 'summaries' list")
    for item in items:
        if not isinstance(item, dict):
            continue
        ref, text = _as_text(item.get("id")).strip().lstrip("e"), _as_text(item.get("summary")).strip()
        if ref.isdigit() and 1 <= int(ref) <= count and text:
            out[int(ref) - 1] = text
    return out
