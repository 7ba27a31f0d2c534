"""The memory context an adapter puts in front of a model, and who "I" is in a question."""

from __future__ import annotations

import re
from datetime import datetime

from zep_core import Fact, Memory

__all__ = ["context_block_for", "facts_for", "mentions_user", "speaker_of"]

_USER_WORDS = re.compile(r"\b(?:i|me|my|mine|myself|user)\b", re.IGNORECASE)


def speaker_of(memory: Memory, user_name: str | None) -> str:
    """The name first-person words resolve to: ``user_name`` or the memory's default speaker."""
    return user_name or memory.config.default_speaker


def mentions_user(text: str) -> bool:
    """Whether a query is about the user: "I/me/my…" or "the user"."""
    return _USER_WORDS.search(text) is not None


_THE_USER = re.compile(r"\b(?:the )?user\b", re.IGNORECASE)


def _query(memory: Memory, text: str, speaker: str | None) -> str:
    """The question within the input limit, with "the user" (an agent's word) named.

    "I/me/my" are resolved by the core (``get_context(speaker=...)``); an agent asking
    a tool about "the user" means the same person, so the name is put in its place.
    """
    if speaker:
        text = _THE_USER.sub(speaker, text)
    return text[: memory.config.max_message_chars]


def facts_for(memory: Memory, text: str, *, user_id: str, speaker: str | None = None,
              limit: int | None = None, as_of: datetime | str | None = None) -> list[Fact]:
    """``get_context`` for ``text``; an unknown user or an empty text gives no facts."""
    if not text.strip() or not memory.has_user(user_id):
        return []
    return memory.get_context(_query(memory, text, speaker), user_id=user_id, limit=limit, as_of=as_of, speaker=speaker)


def context_block_for(memory: Memory, text: str, *, user_id: str, speaker: str | None = None,
                      limit: int | None = None) -> str:
    """``context_block`` for ``text``; an unknown user or an empty text gives ``""``."""
    if not text.strip() or not memory.has_user(user_id):
        return ""
    return memory.context_block(_query(memory, text, speaker), user_id=user_id, limit=limit, speaker=speaker)
