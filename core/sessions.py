"""Chat sessions for the adapters: every turn stored at once, learned from when the conversation ends.

An agent framework hands memory one turn at a time; the spec's handler wants a whole
conversation. :class:`SessionBuffer` keeps the turns of each ``(user, session)`` in
the record store the moment they are said (nothing is lost if the process stops) and turns the
ones not yet learned from into an episode on :meth:`SessionBuffer.end_session`. Rows
with the ``tool`` role (tool calls and their results, kept so that a history replays
as it happened) stay in the buffer but are never learned from: only what the user
and the assistant said goes to extraction.

:class:`EndPolicy` says when the adapters end a conversation. By default a session
**learns as it goes**:

- every :data:`DEFAULT_EVERY_N_TURNS` (10) user turns, once the last one is answered;
- when a turn comes after an idle gap of :data:`DEFAULT_IDLE_AFTER` (30 minutes): the
  turns before the gap were a conversation of their own;
- on ``clear()``/``reset()``, before the turns are forgotten;
- and on an explicit ``end_session()``, always.

Whatever the policy, the memory itself ends a session that is left waiting
(``MemoryConfig.end_left_sessions``, on by default): when the same user starts another
session (:meth:`SessionBuffer.add`), when ``maintain()`` finds its last turn
``session_idle_after`` old (30 minutes by default), and when the memory closes. So a
short thread the user leaves is learned, not kept unlearned for ever.

``EndPolicy.of("explicit")`` ends only on the explicit call, ``"clear"`` also on
``clear()``, and a number N every N user turns (with the idle gap and ``clear()``).

:func:`facts_for` and :func:`context_for` are what an adapter puts in front of a model:
the GetContext facts, or the context block, for the user's text. :func:`check_memory`
is how an adapter accepts a memory: a :class:`zep_core.Memory`, or anything with its
methods (``zep_core.server.RemoteMemory``).

Both the LangChain and the LlamaIndex adapters use this module; neither keeps its
own copy of these rules.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Protocol, Union

from . import aio
from .config import MemoryConfig
from .errors import ValidationError
from .ingest import Ingestor, validate_messages
from .models import Fact, IngestResult, Message
from .resolve import speaker_of
from .stores.backends import backend_for
from .stores.record_protocols import SessionRecords

__all__ = ["DEFAULT_EVERY_N_TURNS", "DEFAULT_IDLE_AFTER", "MEMORY_METHODS", "AdapterMemory", "EndPolicy",
           "EndPolicyLike", "SessionBuffer", "acontext_for", "afacts_for", "check_memory", "context_for", "facts_for",
           "memory_reference"]

#: The default end policy ends a conversation every this many user turns.
DEFAULT_EVERY_N_TURNS = 10
#: ... and when a turn comes after this long without one.
DEFAULT_IDLE_AFTER = timedelta(minutes=30)
#: Roles a session keeps but never learns from: tool calls and their results.
UNLEARNED_ROLES = frozenset({"tool"})


class SessionBuffer:
    """The chat turns of every session, kept in the record store until they become an episode."""

    def __init__(self, config: MemoryConfig, records: SessionRecords, ingest: Ingestor,
                 clock: Callable[[], datetime]) -> None:
        self.config, self.records, self.ingest, self._now = config, records, ingest, clock

    def add(self, session_id: str, user_id: str, messages: Sequence[Any]) -> list[IngestResult]:
        """Store turns at once, each stamped with when it was said (now, unless it carries a time).

        The first turn a user says in a new session ends the user's other sessions that
        have turns waiting: a user who starts a new conversation has left the others, and
        what was said there is learned now instead of never. Returns their results.
        """
        msgs = validate_messages(messages, self.config)
        now = self._now()
        ended: list[IngestResult] = []
        if (self.config.end_left_sessions and any(m.role not in UNLEARNED_ROLES for m in msgs)
                and not self.records.has_session(user_id, session_id)):
            ended = self.end_waiting(user_id=user_id)
        self.records.add_session_messages(user_id, session_id,
                                          [m if m.timestamp else replace(m, timestamp=now) for m in msgs])
        return ended

    def end_waiting(self, *, user_id: str | None = None, idle_for: timedelta | None = None) -> list[IngestResult]:
        """End every session with turns waiting to be learned from (of ``user_id``, if given).

        With ``idle_for``, only those whose last waiting turn is at least that old: what
        ``maintain()`` sweeps. Closing the memory ends them all.
        """
        cutoff = None if idle_for is None else self._now() - idle_for
        results = []
        for user, session, last in self.records.waiting_sessions(user_id):
            if cutoff is not None and last is not None and last > cutoff:
                continue
            result = self.end_session(session, user)
            if result is not None:
                results.append(result)
        return results

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
        twice (a retry after a crash) stores the episode once. ``tool`` rows are left
        out of the episode; when there is nothing else, nothing ends (None).
        """
        turns = self.records.session_messages(user_id, session_id, unended=True)
        said = [m for _, m in turns if m.role not in UNLEARNED_ROLES]
        if not said:
            return None
        first, last = turns[0][0], turns[-1][0]
        key = f"{user_id}\x1f{session_id}\x1f{first}\x1f{last}".encode()
        episode_id = "s-" + hashlib.sha256(key).hexdigest()[:30]
        result = self.ingest.conversation_end(session_id, said, user_id=user_id, episode_id=episode_id)
        self.records.mark_session_ended(user_id, session_id, last, episode_id)
        return result


#: What adapters accept for ``end_policy``: an EndPolicy, ``"auto"``, ``"clear"``, ``"explicit"`` or N.
EndPolicyLike = Union["EndPolicy", str, int]


@dataclass(frozen=True)
class EndPolicy:
    """When the turns of a session go through ``Memory.conversation_end``.

    An explicit end (``end_conversation()``/``end_session()``) always ends the
    conversation. Every turn is stored at once either way, so nothing said is lost
    before the end. The default learns as the session goes (see the module docstring).

    Args:
        on_clear: ``clear()``/``reset()`` ends the conversation before forgetting its
            turns (otherwise they are dropped unlearned — "forget this chat").
        every_n_turns: also end it once N turns are waiting. A turn is a user message
            and the reply to it: the conversation ends when the Nth user message not
            yet learned from has been answered. ``None`` for never.
        idle_after: also end it when a new turn comes this long after the last one
            waiting (the turns before the gap become the episode, the new turn starts
            the next). ``None`` for never.

    Example:
        >>> EndPolicy.of(3)
        EndPolicy(on_clear=True, every_n_turns=3, idle_after=datetime.timedelta(seconds=1800))
        >>> EndPolicy.of("explicit")
        EndPolicy(on_clear=False, every_n_turns=None, idle_after=None)

    """

    on_clear: bool = True
    every_n_turns: int | None = DEFAULT_EVERY_N_TURNS
    idle_after: timedelta | None = DEFAULT_IDLE_AFTER

    def __post_init__(self) -> None:
        n = self.every_n_turns
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise ValidationError(f"every_n_turns must be a whole number >= 1 or None, got {n!r}")
        idle = self.idle_after
        if idle is not None and (not isinstance(idle, timedelta) or idle <= timedelta(0)):
            raise ValidationError(f"idle_after must be a positive timedelta or None, got {idle!r}")
        if not isinstance(self.on_clear, bool):
            raise ValidationError(f"on_clear must be True or False, got {self.on_clear!r}")

    @classmethod
    def of(cls, value: Any) -> EndPolicy:
        """Read ``"auto"`` (the default), ``"clear"``, ``"explicit"``, a number of turns, or an EndPolicy.

        ``"auto"`` is ``EndPolicy()``: every 10 user turns, after a 30-minute gap and on
        ``clear()``. ``"clear"`` ends on ``clear()`` only, ``"explicit"`` never by itself,
        and a number N every N user turns (with the idle gap and ``clear()``).

        Raises:
            zep_core.ValidationError: anything else.

        """
        if isinstance(value, EndPolicy):
            return value
        if value == "auto":
            return cls()
        if value == "clear":
            return cls(every_n_turns=None, idle_after=None)
        if value == "explicit":
            return cls(on_clear=False, every_n_turns=None, idle_after=None)
        if isinstance(value, int) and not isinstance(value, bool):
            return cls(every_n_turns=value)
        raise ValidationError(f"end_policy must be 'auto', 'clear', 'explicit', a number of turns or an EndPolicy, "
                              f"got {value!r}")

    def add_turns(self, memory: AdapterMemory, session_id: str, user_id: str,
                  messages: Sequence[Any]) -> list[IngestResult]:
        """Store turns the way an adapter should: end after an idle gap, store, end after N turns.

        Returns:
            The results of the conversations this ended (none, one or two).

        """
        ended = [self.before_turn(memory, session_id, user_id)]
        memory.add_messages(session_id, messages, user_id=user_id)
        ended.append(self.after_turn(memory, session_id, user_id))
        return [r for r in ended if r is not None]

    def before_turn(self, memory: AdapterMemory, session_id: str, user_id: str) -> IngestResult | None:
        """End the waiting turns if the last of them is ``idle_after`` old; call it before storing a new turn."""
        if self.idle_after is None or not memory.unended_count(session_id, user_id=user_id):
            return None
        last = memory.get_messages(session_id, user_id=user_id, limit=1)[-1]
        if last.timestamp is None or memory.now() - last.timestamp < self.idle_after:
            return None
        return memory.end_session(session_id, user_id=user_id)

    def after_turn(self, memory: AdapterMemory, session_id: str, user_id: str) -> IngestResult | None:
        """End the conversation if N answered turns are waiting; the result, or None if it did not end."""
        if self.every_n_turns is None:
            return None
        waiting = memory.unended_count(session_id, user_id=user_id)
        if waiting < self.every_n_turns:
            return None
        tail = memory.get_messages(session_id, user_id=user_id, limit=waiting)
        if tail[-1].role in ("user", *UNLEARNED_ROLES) or sum(m.role == "user" for m in tail) < self.every_n_turns:
            return None  # the last question is not answered yet (or a tool is still at work), or too few turns
        return memory.end_session(session_id, user_id=user_id)

    def before_clear(self, memory: AdapterMemory, session_id: str, user_id: str) -> IngestResult | None:
        """End the conversation if ``clear()`` should; the result, or None."""
        return memory.end_session(session_id, user_id=user_id) if self.on_clear else None


class AdapterMemory(Protocol):
    """What this module's helpers call on a memory: :class:`zep_core.Memory` and ``RemoteMemory`` both fit.

    The helpers take any object with these methods (:func:`check_memory` checks it), so
    this module needs nothing of :mod:`zep_core.memory`: the façade uses sessions, never
    the other way round.
    """

    @property
    def config(self) -> MemoryConfig:
        """The settings the helpers read (speakers, input limits)."""

    def now(self) -> datetime:
        """The memory's clock."""

    def add_messages(self, session_id: str, messages: Sequence[Any], *, user_id: str = ...) -> None:
        """Store chat turns."""

    def get_messages(self, session_id: str, *, user_id: str = ..., limit: int | None = None) -> list[Message]:
        """A session's stored turns."""

    def unended_count(self, session_id: str, *, user_id: str = ...) -> int:
        """How many turns wait to be learned from."""

    def end_session(self, session_id: str, *, user_id: str = ...) -> IngestResult | None:
        """Learn from the waiting turns."""

    def has_user(self, user_id: str) -> bool:
        """Whether anything is stored for the user."""

    def get_context(self, input: str, *, user_id: str = ..., limit: int | None = None,
                    as_of: datetime | str | None = None, speaker: str | None = None) -> list[Fact]:
        """GetContext."""

    def context_block(self, input: str, *, user_id: str = ..., limit: int | None = None,
                      speaker: str | None = None) -> str:
        """The prompt-ready context block."""


#: What the adapters call on a memory; :class:`zep_core.Memory` and ``RemoteMemory`` have them all.
MEMORY_METHODS = ("add_messages", "get_messages", "unended_count", "clear_messages", "end_session", "get_context",
                  "context_block", "has_user", "entity_history", "related_entities", "now")


def check_memory(value: Any, what: str = "memory") -> Any:
    """Return ``value`` if it can serve as an adapter's memory, else raise a clear error.

    A :class:`zep_core.Memory` qualifies, and so does any object with its methods
    (:data:`MEMORY_METHODS`) and a ``config`` — ``zep_core.server.RemoteMemory`` —
    which is checked without importing it (or calling it: ``config`` is not read).

    Raises:
        zep_core.ValidationError: naming what is missing.

    """
    missing = [name for name in MEMORY_METHODS if not callable(getattr(type(value), name, None))]
    if not (hasattr(type(value), "config") or "config" in getattr(value, "__dict__", {})):
        missing.append("config")
    if missing:
        has = f"; it has no {', '.join(missing)}" if len(missing) < len(MEMORY_METHODS) else ""
        raise ValidationError(f"{what} must be an open zep_core.Memory (or a zep_core.server.RemoteMemory), "
                              f"got {type(value).__name__}{has}: open one with Memory.open(data_dir)")
    return value


def memory_reference(memory: Any) -> dict[str, str] | None:
    """Where ``memory`` lives, as a saved context keeps it to open it again: never with a password.

    ``{"url": ...}`` for a memory service (``zep_core.server.RemoteMemory``); for a memory in
    a data folder (a :class:`zep_core.Memory`), what its backend keeps: ``data_dir``, and
    ``database_url`` without its password (:meth:`~zep_core.stores.backends.Backend.reference`);
    None for anything else. A ``config`` is read only from a memory with a ``data_dir``: on
    another object it may be a call to a server.
    """
    url = getattr(memory, "url", None)
    if isinstance(url, str):
        return {"url": url}
    data_dir = getattr(memory, "data_dir", None)
    if data_dir is None:
        return None
    config = getattr(memory, "config", None)
    return backend_for(config).reference(config) if isinstance(config, MemoryConfig) else {"data_dir": str(data_dir)}


_THE_USER = re.compile(r"\b(?:the )?user\b", re.IGNORECASE)


def _question(memory: AdapterMemory, text: str | None, speaker: str) -> str:
    """The text within the input limit, with "the user" (an agent's word for them) named.

    "I/me/my" are resolved by the core (``get_context(speaker=...)``); an agent asking
    a tool about "the user" means the same person, so the name is put in its place.
    """
    return _THE_USER.sub(speaker, text or "")[: memory.config.max_message_chars]


def facts_for(memory: AdapterMemory, text: str | None, *, user_id: str, user_name: str | None = None,
              limit: int | None = None, as_of: datetime | str | None = None) -> list[Fact]:
    """GetContext for ``text`` on behalf of the user called ``user_name``.

    A user with no stored data, or an empty text, has no facts (not an error).
    """
    if not text or not text.strip() or not memory.has_user(user_id):
        return []
    speaker = speaker_of(user_name, default=memory.config.default_speaker)
    return memory.get_context(_question(memory, text, speaker), user_id=user_id, limit=limit, as_of=as_of,
                              speaker=speaker)


async def afacts_for(memory: AdapterMemory, text: str | None, *, user_id: str, user_name: str | None = None,
                     limit: int | None = None, as_of: datetime | str | None = None) -> list[Fact]:
    """:func:`facts_for`, awaited: one ``aget_context`` (native on a ``RemoteMemory``; an unknown user has ``[]``)."""
    if not text or not text.strip():
        return []
    speaker = speaker_of(user_name, default=memory.config.default_speaker)
    return await aio.call(memory, "get_context", _question(memory, text, speaker), user_id=user_id, limit=limit,
                          as_of=as_of, speaker=speaker)


def context_for(memory: AdapterMemory, text: str | None, *, user_id: str, user_name: str | None = None,
                limit: int | None = None) -> str:
    """The prompt-ready context block for ``text``; ``""`` for an empty text or an unknown user."""
    if not text or not text.strip() or not memory.has_user(user_id):
        return ""
    speaker = speaker_of(user_name, default=memory.config.default_speaker)
    return memory.context_block(_question(memory, text, speaker), user_id=user_id, limit=limit, speaker=speaker)


async def acontext_for(memory: AdapterMemory, text: str | None, *, user_id: str, user_name: str | None = None,
                       limit: int | None = None) -> str:
    """:func:`context_for`, awaited: one ``acontext_block`` (native on a ``RemoteMemory``)."""
    if not text or not text.strip():
        return ""
    speaker = speaker_of(user_name, default=memory.config.default_speaker)
    return await aio.call(memory, "context_block", _question(memory, text, speaker), user_id=user_id, limit=limit,
                          speaker=speaker)
