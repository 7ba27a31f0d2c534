"""When an adapter runs ``conversation_end``: on an explicit end, on ``clear()``, every N turns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

from zep_core import IngestResult, Memory, ValidationError

__all__ = ["EndPolicy", "EndPolicyLike"]

#: What adapters accept for ``end_policy``: an :class:`EndPolicy`, ``"clear"``, ``"explicit"`` or N.
EndPolicyLike = Union["EndPolicy", str, int]


@dataclass(frozen=True)
class EndPolicy:
    """When the turns of a session go through ``Memory.conversation_end``.

    An explicit ``end_conversation()`` always ends the conversation. Every turn is
    stored at once either way, so nothing said is lost before the end.

    Args:
        on_clear: ``clear()`` ends the conversation before forgetting its turns
            (otherwise the turns are dropped unlearned — "forget this chat").
        every_n_turns: also end it after every N turns (a turn is the user's
            message and the reply: 2N stored messages); ``None`` for never.

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
        """End the conversation if N turns are waiting; the result, or None if it did not end."""
        if self.every_n_turns is None:
            return None
        if memory.unended_count(session_id, user_id=user_id) < 2 * self.every_n_turns:
            return None
        return memory.end_session(session_id, user_id=user_id)

    def before_clear(self, memory: Memory, session_id: str, user_id: str) -> IngestResult | None:
        """End the conversation if ``clear()`` should; the result, or None."""
        return memory.end_session(session_id, user_id=user_id) if self.on_clear else None
