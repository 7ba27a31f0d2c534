"""Records as JSON-ready dicts: the one serializer of facts, entities, messages and episodes.

``*_to_dict`` write a record; ``*_from_dict`` read one back (the memory server's client,
:mod:`zep_core.server`, rebuilds records from what the server sent). The export format
(:mod:`zep_core.transfer`), the command line's ``--json`` output, the memory server's
answers and the adapters' document/node metadata all write records through these
functions, so a fact looks the same wherever it leaves the library. Times are ISO
8601 strings in UTC (``datetime.isoformat()``), ``None`` stays ``None``.

Example:
    >>> fact_to_dict(fact)["valid_from"]                                  # doctest: +SKIP
    '2024-03-01T09:00:00+00:00'

"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from datetime import datetime
from typing import Any

from .errors import ValidationError
from .models import Entity, Episode, Fact, Message

__all__ = ["entity_from_dict", "entity_to_dict", "episode_from_dict", "episode_to_dict", "fact_from_dict",
           "fact_metadata", "fact_to_dict", "message_from_dict", "message_to_dict", "time_text"]


def time_text(value: datetime | None) -> str | None:
    """A datetime as ISO 8601 text, or None."""
    return value.isoformat() if value is not None else None


def fact_to_dict(fact: Fact, *, scores: bool = False) -> dict[str, Any]:
    """A fact with every field; ``scores`` adds its retrieval score and the parts it came from."""
    out = {
        "id": fact.id, "user_id": fact.user_id, "episode_id": fact.episode_id, "content": fact.content,
        "subject": fact.subject, "predicate": fact.predicate, "object": fact.object,
        "confidence": fact.confidence, "valid_from": time_text(fact.valid_from),
        "valid_until": time_text(fact.valid_until), "superseded_by": fact.superseded_by,
        "source_message_ids": list(fact.source_message_ids),
        "created_at": time_text(fact.created_at), "expired_at": time_text(fact.expired_at),
    }
    if fact.attribute is not None:
        out["attribute"] = fact.attribute
    if scores:
        out.update(score=fact.score, semantic_score=fact.semantic_score, lexical_score=fact.lexical_score,
                   graph_score=fact.graph_score)
        if fact.newer_fact_id:
            out["newer_fact_id"] = fact.newer_fact_id
    return out


def fact_metadata(fact: Fact) -> dict[str, Any]:
    """A retrieved fact as flat metadata beside its text (a LangChain Document, a LlamaIndex node).

    Every field but the text, the id as ``fact_id``, and the score parts.
    """
    out = fact_to_dict(fact, scores=True)
    del out["content"]
    return {"fact_id": out.pop("id"), **out}


def entity_to_dict(entity: Entity) -> dict[str, Any]:
    """An entity with its summary and aliases."""
    return {"id": entity.id, "user_id": entity.user_id, "name": entity.name, "entity_type": entity.entity_type,
            "summary": entity.summary, "fact_count": entity.fact_count,
            "last_updated": time_text(entity.last_updated), "aliases": list(entity.aliases)}


def message_to_dict(message: Message) -> dict[str, Any]:
    """A chat message: id, role, speaker name, text and when it was said (and its ``extra``, when it has one)."""
    data = {"id": message.id, "role": message.role, "name": message.name, "content": message.content,
            "timestamp": time_text(message.timestamp)}
    if message.extra is not None:
        data["extra"] = dict(message.extra)
    return data


def episode_to_dict(episode: Episode) -> dict[str, Any]:
    """An episode with its messages and extraction status."""
    return {"id": episode.id, "user_id": episode.user_id, "session_id": episode.session_id,
            "summary": episode.summary, "created_at": time_text(episode.created_at), "status": episode.status,
            "error": episode.error, "messages": [message_to_dict(m) for m in episode.messages]}


# -- back again: the records a dict above describes, checked as any new record is ---------------

_FACT_FIELDS = tuple(f.name for f in fields(Fact))
_ENTITY_FIELDS = tuple(f.name for f in fields(Entity))


def _mapping(data: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise ValidationError(f"{what} must be an object, got {type(data).__name__}")
    return data


def fact_from_dict(data: Mapping[str, Any]) -> Fact:
    """The :class:`Fact` that :func:`fact_to_dict` wrote, scores included when present.

    Keys that are not fields of a fact (an export row's ``type``, ``subject_id``) are
    ignored; times are read from their ISO text.

    Raises:
        ValidationError: a missing or malformed field (the record's own checks).

    """
    data = _mapping(data, "a fact")
    try:
        return Fact(**{name: data[name] for name in _FACT_FIELDS if name in data})
    except TypeError as exc:  # a required field is missing
        raise ValidationError(f"a fact is incomplete: {exc}") from None


def entity_from_dict(data: Mapping[str, Any]) -> Entity:
    """The :class:`Entity` that :func:`entity_to_dict` wrote.

    Raises:
        ValidationError: a missing or malformed field.

    """
    data = _mapping(data, "an entity")
    try:
        return Entity(**{name: data[name] for name in _ENTITY_FIELDS if name in data})
    except TypeError as exc:
        raise ValidationError(f"an entity is incomplete: {exc}") from None


def message_from_dict(data: Mapping[str, Any]) -> Message:
    """The :class:`Message` that :func:`message_to_dict` wrote.

    Raises:
        ValidationError: a missing or malformed field.

    """
    data = _mapping(data, "a message")
    if "content" not in data:
        raise ValidationError("a message has no 'content'")
    return Message(content=data["content"], role=data.get("role", "user"), name=data.get("name"),
                   id=data.get("id"), timestamp=data.get("timestamp"), extra=data.get("extra"))


def episode_from_dict(data: Mapping[str, Any]) -> Episode:
    """The :class:`Episode` that :func:`episode_to_dict` wrote, with its messages.

    Raises:
        ValidationError: a missing or malformed field.

    """
    data = _mapping(data, "an episode")
    messages = data.get("messages", ())
    if isinstance(messages, (str, bytes, Mapping)):
        raise ValidationError("an episode's messages must be a list")
    try:
        return Episode(id=data["id"], user_id=data["user_id"], session_id=data["session_id"],
                       summary=data.get("summary"), created_at=data["created_at"],
                       status=data.get("status", "pending"), error=data.get("error"),
                       messages=tuple(message_from_dict(m) for m in messages))
    except KeyError as exc:
        raise ValidationError(f"an episode has no {exc.args[0]!r}") from None
