"""What a caller hands in as an episode: its ids checked, and the id it gets when it has none.

An episode sent without an ``episode_id`` gets :func:`episode_key`: ``f-`` and 30 hex
digits of a SHA-256 over its user, its session and each message's role, name, id, content
and timestamp, in order. Sending the same episode again — a script run twice, an import
replayed, a client's retry — gives the same id, so it is a ``duplicate`` and nothing is
stored twice. A message without a timestamp is hashed without one (the memory's clock,
which dates it, is not part of the id): the same words sent again in the same session are
the same episode, whenever they are sent. To store them twice, give each send its own
``episode_id`` or its messages their timestamps. ``zep-memory ingest`` has made its ids
this way from the start, so what it stored before and what the library stores agree.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from .errors import ValidationError
from .models import Message
from .tenant import check_ids
from .validation import check_episodes, check_id

__all__ = ["EpisodeSpec", "episode_key", "episode_specs"]


def episode_key(user_id: str, session_id: str, messages: Iterable[Message]) -> str:
    """The default episode id: the same user, session and messages give the same id.

    Example:
        >>> a = episode_key("alice", "s1", [Message("I live in Paris.", name="Alice")])
        >>> a == episode_key("alice", "s1", [Message("I live in Paris.", name="Alice")]), a[:2], len(a)
        (True, 'f-', 32)

    """
    h = hashlib.sha256(f"{user_id}\x1f{session_id}".encode())
    for m in messages:
        stamp = m.timestamp.isoformat() if m.timestamp else ""
        h.update(json.dumps([m.role, m.name, m.id, m.content, stamp], ensure_ascii=False).encode())
    return "f-" + h.hexdigest()[:30]


class EpisodeSpec(NamedTuple):
    """One episode for ``Ingestor.conversation_end_many``, its ids already checked."""

    session_id: str
    messages: Sequence[Any]
    user_id: str
    episode_id: str | None


_EPISODE_KEYS = ("session_id", "messages", "user_id", "episode_id")


def episode_specs(episodes: Iterable[Any], progress: Any = None) -> list[EpisodeSpec]:
    """The episodes of ``Memory.conversation_end_many`` as :class:`EpisodeSpec`, their ids checked (messages later).

    Raises:
        ValidationError: not an iterable of episodes (or ``progress`` not a callable), or an
            episode with an unknown or missing key or a bad id, named by position (from 0).

    """
    check_episodes(episodes, progress)
    return [_episode_spec(item, i) for i, item in enumerate(episodes)]


def _episode_spec(item: Any, position: int) -> EpisodeSpec:
    """One item of ``Memory.conversation_end_many`` as checked ids and its messages (checked later)."""
    where = f"episode {position}"
    if isinstance(item, Mapping):
        unknown = [k for k in item if k not in _EPISODE_KEYS]
        if unknown:
            raise ValidationError(f"{where}: unknown key {unknown[0]!r}; an episode has "
                                  f"{', '.join(_EPISODE_KEYS)}")
        fields = {k: item[k] for k in _EPISODE_KEYS if k in item}
    else:
        fields = {k: getattr(item, k) for k in _EPISODE_KEYS if hasattr(item, k)}
    for required in ("session_id", "messages"):
        if required not in fields:
            raise ValidationError(f"{where} has no {required!r}; pass a mapping with 'session_id' and 'messages' "
                                  "(and optionally 'user_id', 'episode_id'), or an EpisodeInput")
    try:
        session_id, user_id = check_ids(session_id=fields["session_id"], user_id=fields.get("user_id", "default"))
        episode_id = fields.get("episode_id")
        if episode_id is not None:
            check_id(episode_id, "episode_id")
    except ValidationError as exc:
        raise ValidationError(f"{where}: {exc}") from None
    return EpisodeSpec(session_id, fields["messages"], user_id, episode_id)
