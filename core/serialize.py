"""Records as JSON-ready dicts: the one serializer of facts, entities, messages and episodes.

The export format (:mod:`zep_core.transfer`), the command line's ``--json`` output
and the adapters' document/node metadata all write records through these
functions, so a fact looks the same wherever it leaves the library. Times are ISO
8601 strings in UTC (``datetime.isoformat()``), ``None`` stays ``None``.

Example:
    >>> fact_to_dict(fact)["valid_from"]                                  # doctest: +SKIP
    '2024-03-01T09:00:00+00:00'

"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .models import Entity, Episode, Fact, Message

__all__ = ["entity_to_dict", "episode_to_dict", "fact_metadata", "fact_to_dict", "message_to_dict", "time_text"]


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
    """A chat message: id, role, speaker name, text and when it was said."""
    return {"id": message.id, "role": message.role, "name": message.name, "content": message.content,
            "timestamp": time_text(message.timestamp)}


def episode_to_dict(episode: Episode) -> dict[str, Any]:
    """An episode with its messages and extraction status."""
    return {"id": episode.id, "user_id": episode.user_id, "session_id": episode.session_id,
            "summary": episode.summary, "created_at": time_text(episode.created_at), "status": episode.status,
            "error": episode.error, "messages": [message_to_dict(m) for m in episode.messages]}
