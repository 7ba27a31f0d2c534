"""Chat sessions for the adapters: every turn stored at once, learned from when the conversation ends.

An agent framework hands memory one turn at a time; the spec's handler wants a whole
conversation. :class:`SessionBuffer` keeps the turns of each ``(user, session)`` in
SQLite the moment they are said (nothing is lost if the process stops) and turns the
ones not yet learned from into an episode on :meth:`SessionBuffer.end_session`.
:class:`EndPolicy` says when the adapters do that: on an explicit end, on ``clear()``,
or every N turns. :func:`facts_for` and :func:`context_for` are what an adapter puts
in front of a model: the GetContext facts, or the context block, for the user's text.

Both the LangChain and the LlamaIndex adapters use this module; neither keeps its
own copy of these rules.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Union

from .config import MemoryConfig
from .errors import ValidationError
from .ingest import Ingestor, validate_messages
from .models import Fact, IngestResult, Message
from .resolve import speaker_of
from .stores.records import RecordStore

if TYPE_CHECKING:
    from .memory import Memory

__all__ = ["EndPolicy", "EndPolicyLike", "SessionBuffer", "context_for", "facts_for"]


class SessionBuffer:
    """The chat turns of every session, kept in the record store until they become an episode."""

    def __init__(self, config: MemoryConfig, records: RecordStore, ingest: Ingestor,
                 clock: Callable[[], datetime]) -> None:
        self.config, self.records, self.ingest, self._now = config, records, ingest, clock

    def add(self, session_id: str, user_id: str, messages: Sequence[Any]) -> None:
        """Store turns at once, each stamped with when it was said (now, unless it carries a time)."""
        msgs = validate_messages(messages, self.config)
        now = self._now()
        self.records.add_session_messages(user_id, session_id,
                                          [m if m.timestamp else replace(m, timestamp=now) for m in msgs])

    def messages(self, session_id: str, user_id: str, *, limit: int | None = None,
                 unended: bool = False) -> list[Message]:
        """A session's turns, oldest first: the last ``limit``, or only those not yet learned from."""
        return [m for _, m in self.records.session_messages(user_id, session_id, limit=limit, unended=unended)]

    def clear(self, session_id: str, user_id: str) -> None:
        """Forget a session's turns; facts already learned from them stay."""
        self.records.clear_session(user_id, session_id)

    def end_session(self, session_id: str, user_id: str) -> IngestResult | None:
        """``conversation_end`` over the turns not yet learned from; None if there are none.

        The episode id is derived from the session and the turns it covers, so ending
        twice (a retry after a crash) stores the episode once.
        """
        turns = self.records.session_messages(user_id, session_id, unended=True)
        if not turns:
            return None
        first, last = turns[0][0], turns[-1][0]
        key = f"{user_id}\x1f{session_id}\x1f{first}\x1f{last}".encode()
        episode_id = "s-" + hashlib.sha256(key).hexdigest()[:30]
        result = self.ingest.conversation_end(session_id, [m for _, m in turns], user_id=user_id,
                                              episode_id=episode_id)
        self.records.mark_session_ended(user_id, session_id, last, episode_id)
        return result


#: What adapters accept for ``end_policy``: an :class:`EndPolicy`, ``"clear"``, ``"explicit"`` or N.
EndPolicyLike = Union["EndPolicy", str, int]


@dataclass(frozen=True)
class EndPolicy:
    """When the turns of a session go through ``Memory.conversation_end``.

    An explicit end (``end_conversation()``/``end_session()``) always ends the
    conversation. Every turn is stored at once either way, so nothing said is lost
    before the end.

    Args:
        on_clear: ``clear()``/``reset()`` ends the conversation before forgetting its
            turns (otherwise they are dropped unlearned — "forget this chat").
        every_n_turns: also end it once N turns are waiting. A turn is a user message
            and the reply to it: the conversation ends when the Nth user message not
            yet learned from has been answered. ``None`` for never.

    Example:
        >>> EndPolicy.of(3)
        EndPolicy(on_clear=True, every_n_turns=3)
        >>> EndPolicy.of("explicit")
        EndPolicy(on_clear=False, every_n_turns=None)

    """

    on_clear: bool = True
    every_n_turns: int | None = None

    def __post_init__(self) -> None:
        n = self.every_n_turns
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise ValidationError(f"every_n_turns must be a whole number >= 1 or None, got {n!r}")

    @classmethod
    def of(cls, value: Any) -> EndPolicy:
        """Read ``"clear"`` (the default), ``"explicit"``, a number of turns, or an EndPolicy.

        Raises:
            zep_core.ValidationError: anything else.

        """
        if isinstance(value, EndPolicy):
            return value
        if value == "clear":
            return cls()
        if value == "explicit":
            return cls(on_clear=False)
        if isinstance(value, int) and not isinstance(value, bool):
            return cls(every_n_turns=value)
        raise ValidationError(f"end_policy must be 'clear', 'explicit', a number of turns or an EndPolicy, "
                              f"got {value!r}")

    def after_turn(self, memory: Memory, session_id: str, user_id: str) -> IngestResult | None:
        """End the conversation if N answered turns are waiting; the result, or None if it did not end."""
        if self.every_n_turns is None:
            return None
        waiting = memory.unended_count(session_id, user_id=user_id)
        if waiting < self.every_n_turns:
            return None
        tail = memory.get_messages(session_id, user_id=user_id, limit=waiting)
        if tail[-1].role == "user" or sum(m.role == "user" for m in tail) < self.every_n_turns:
            return None  # the last question is not answered yet, or too few turns
        return memory.end_session(session_id, user_id=user_id)

    def before_clear(self, memory: Memory, session_id: str, user_id: str) -> IngestResult | None:
        """End the conversation if ``clear()`` should; the result, or None."""
        return memory.end_session(session_id, user_id=user_id) if self.on_clear else None


_THE_USER = re.compile(r"\b(?:the )?user\b", re.IGNORECASE)


def _question(memory: Memory, text: str | None, speaker: str) -> str:
    """The text within the input limit, with "the user" (an agent's word for them) named.

    "I/me/my" are resolved by the core (``get_context(speaker=...)``); an agent asking
    a tool about "the user" means the same person, so the name is put in its place.
    """
    return _THE_USER.sub(speaker, text or "")[: memory.config.max_message_chars]


def facts_for(memory: Memory, text: str | None, *, user_id: str, user_name: str | None = None,
              limit: int | None = None, as_of: datetime | str | None = None) -> list[Fact]:
    """GetContext for ``text`` on behalf of the user called ``user_name``.

    A user with no stored data, or an empty text, has no facts (not an error).
    """
    if not text or not text.strip() or not memory.has_user(user_id):
        return []
    speaker = speaker_of(user_name, default=memory.config.default_speaker)
    return memory.get_context(_question(memory, text, speaker), user_id=user_id, limit=limit, as_of=as_of,
                              speaker=speaker)


def context_for(memory: Memory, text: str | None, *, user_id: str, user_name: str | None = None,
                limit: int | None = None) -> str:
    """The prompt-ready context block for ``text``; ``""`` for an empty text or an unknown user."""
    if not text or not text.strip() or not memory.has_user(user_id):
        return ""
    speaker = speaker_of(user_name, default=memory.config.default_speaker)
    return memory.context_block(_question(memory, text, speaker), user_id=user_id, limit=limit, speaker=speaker)
