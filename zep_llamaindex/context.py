"""What memory knows about an input: the facts and the context block, for one user.

Two rules shared by every adapter in this package:

* a user with no stored data has no context (an empty result, not an error);
* a first-person input ("Where do I live?") is asked on behalf of its speaker, so
  that "I" finds the facts the extractor filed under the speaker's name.
"""

from __future__ import annotations

import re
from datetime import datetime

from zep_core import Fact, Memory
from zep_core.resolve import FIRST_PERSON

__all__ = ["current_context", "current_facts", "speaker_name", "speaker_query"]

_WORD = re.compile(r"[\w'’]+", re.UNICODE)


def speaker_name(memory: Memory, user_name: str | None) -> str:
    """Who "I" is: ``user_name``, else the memory's ``default_speaker``."""
    return user_name or memory.config.default_speaker


def speaker_query(text: str, speaker: str) -> str:
    """Prefix a first-person input with its speaker (``"Ada: Where do I live?"``).

    The prefix names the speaker's entity in the input, which is how GetContext's
    graph match finds the speaker's facts; other inputs are returned unchanged.

    Example:
        >>> speaker_query("Where do I live?", "Ada")
        'Ada: Where do I live?'
        >>> speaker_query("Where does Bob live?", "Ada")
        'Where does Bob live?'

    """
    words = {w.casefold().replace("’", "'") for w in _WORD.findall(text)}
    return f"{speaker}: {text}" if words & FIRST_PERSON else text


def _query(memory: Memory, text: str | None, speaker: str) -> str:
    if not text or not text.strip():
        return ""
    query = speaker_query(text, speaker)
    return query[: memory.config.max_message_chars]


def current_facts(memory: Memory, text: str | None, *, user_id: str, speaker: str,
                  limit: int | None = None, as_of: datetime | str | None = None) -> list[Fact]:
    """GetContext for ``text`` on behalf of ``speaker``; ``[]`` for empty input or an unknown user."""
    query = _query(memory, text, speaker)
    if not query or not memory.has_user(user_id):
        return []
    return memory.get_context(query, user_id=user_id, limit=limit, as_of=as_of)


def current_context(memory: Memory, text: str | None, *, user_id: str, speaker: str,
                    limit: int | None = None) -> str:
    """The prompt-ready context block for ``text``; ``""`` for empty input or an unknown user."""
    query = _query(memory, text, speaker)
    if not query or not memory.has_user(user_id):
        return ""
    return memory.context_block(query, user_id=user_id, limit=limit)
