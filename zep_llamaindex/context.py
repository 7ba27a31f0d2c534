"""What memory knows about an input: the facts and the context block, for one user.

Two rules shared by every adapter in this package:

* a user with no stored data has no context (an empty result, not an error);
* a first-person input ("Where do I live?") is asked on behalf of its speaker
  (``get_context(speaker=...)``), so "I" finds the facts filed under the speaker's name.
"""

from __future__ import annotations

from datetime import datetime

from zep_core import Fact, Memory

__all__ = ["current_context", "current_facts", "speaker_name"]


def speaker_name(memory: Memory, user_name: str | None) -> str:
    """Who "I" is: ``user_name``, else the memory's ``default_speaker``."""
    return user_name or memory.config.default_speaker


def _query(memory: Memory, text: str | None) -> str:
    if not text or not text.strip():
        return ""
    return text[: memory.config.max_message_chars]


def current_facts(memory: Memory, text: str | None, *, user_id: str, speaker: str,
                  limit: int | None = None, as_of: datetime | str | None = None) -> list[Fact]:
    """GetContext for ``text`` on behalf of ``speaker``; ``[]`` for empty input or an unknown user."""
    query = _query(memory, text)
    if not query or not memory.has_user(user_id):
        return []
    return memory.get_context(query, user_id=user_id, limit=limit, as_of=as_of, speaker=speaker)


def current_context(memory: Memory, text: str | None, *, user_id: str, speaker: str,
                    limit: int | None = None) -> str:
    """The prompt-ready context block for ``text``; ``""`` for empty input or an unknown user."""
    query = _query(memory, text)
    if not query or not memory.has_user(user_id):
        return ""
    return memory.context_block(query, user_id=user_id, limit=limit, speaker=speaker)
