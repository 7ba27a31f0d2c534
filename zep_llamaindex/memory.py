"""ZepMemory: a LlamaIndex ``BaseMemory`` backed by a zep-memory session.

A drop-in for ``ChatMemoryBuffer``: ``put``/``get``/``get_all``/``set``/``reset`` keep and
return the same messages — tool calls, tool results, content blocks and
``additional_kwargs`` included (media by reference, see :mod:`zep_llamaindex.convert`)
— and ``get`` trims to ``token_limit`` exactly as ``ChatMemoryBuffer.get`` does. What it
adds is long-term memory: when the session has history and memory knows something
about the input, ``get`` puts the context block in a system message in front. With no
history, or nothing to add, it adds nothing (so ``CondensePlusContextChatEngine`` makes
no condense call on a first turn).

Every turn is stored at once (in the record store, through :meth:`zep_core.Memory.add_messages`),
so nothing said is lost if the process stops. The turns become an episode — facts
extracted, old ones superseded — as the end policy says (:mod:`zep_core.sessions`): by
default every 10 user turns, after a 30-minute gap, and on ``reset()``; and always on
:meth:`ZepMemory.end_session`. Only the text of user and assistant messages is learned
from.

A workflow ``Context`` holding a ZepMemory round-trips (``ctx.to_dict()`` →
``Context.from_dict(...)``): the memory is saved as a reference — the data folder, or
the URL of a ``zep-memory serve`` service — with the user and the session, and opened
again from it (a folder already open in the process is shared, not opened twice).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any, Optional

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.bridge.pydantic import ConfigDict, Field, PrivateAttr, field_validator, model_validator
from llama_index.core.memory.types import BaseMemory
from llama_index.core.utils import get_tokenizer
from zep_core import IngestResult, Memory, ValidationError
from zep_core.aio import in_thread
from zep_core.sessions import (
    DEFAULT_EVERY_N_TURNS,
    DEFAULT_IDLE_AFTER,
    EndPolicy,
    check_memory,
    context_for,
    memory_reference,
)

from .convert import STORES_EXTRA, last_user_text, to_chat_messages, to_zep_messages

__all__ = ["API_KEY_ENV", "DEFAULT_CONTEXT_TEMPLATE", "ZepMemory"]

DEFAULT_CONTEXT_TEMPLATE = (
    "Long-term memory about the user, from earlier conversations. Each fact says since when "
    "it holds; it replaces anything older that contradicts it.\n{context}"
)
DEFAULT_TOKEN_LIMIT = 3000
#: The environment variable a ZepMemory restored from a service reference reads its API key from.
API_KEY_ENV = "ZEP_MEMORY_API_KEY"
_MIN_WINDOW = 20  # turns read to find the last user message even when little history fits
_POLICY_FIELDS = ("end_on_reset", "end_every", "end_after_idle")
_NO_USER = ("user_id is required: the user whose facts this memory searches and writes (there is no shared "
            "default user); pass user_id='...'")


class ZepMemory(BaseMemory):
    """Chat memory for LlamaIndex chat engines and agents, backed by zep-memory.

    Args:
        memory: an open :class:`zep_core.Memory` (or a ``zep_core.server.RemoteMemory``).
        user_id: the tenant whose facts are searched and written; required — there is
            no shared default user.
        session_id: the conversation; its turns are stored under it (default: a new id).
        user_name: the user's name, set on their messages so "I" resolves to it
            (default: the memory's ``default_speaker``).
        token_limit: how many tokens ``get`` returns, counted and trimmed as
            ``ChatMemoryBuffer`` does; the context message counts too.
        context_limit: how many facts go into the context (default: the memory's).
        end_on_reset: run ``conversation_end`` on the session's turns in ``reset()``.
        end_every: also run it every N user turns (after the reply); None for never.
        end_after_idle: also run it when a turn comes this long after the last one
            (a timedelta or seconds); None for never.
        end_policy: instead of the three above: ``"auto"`` (the default), ``"clear"``,
            ``"explicit"`` (only :meth:`end_session`), N, or a
            :class:`zep_core.sessions.EndPolicy`.
        context_template: the system message; ``{context}`` is the context block.

    Raises:
        pydantic.ValidationError: a missing ``user_id``, a memory that is not one, or a
            setting out of range; the message names it.

    Example:
        >>> from llama_index.core.chat_engine import SimpleChatEngine
        >>> chat_memory = ZepMemory(memory=memory, session_id="s1", user_id="ada", user_name="Ada")
        >>> engine = SimpleChatEngine.from_defaults(llm=llm, memory=chat_memory)   # doctest: +SKIP
        >>> engine.chat("I moved to Berlin.")                                      # doctest: +SKIP
        >>> engine.reset()            # the session becomes an episode: Ada lives_in Berlin

    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Any = Field(exclude=True, description="The zep_core.Memory holding the session and the facts.")
    user_id: str = Field(min_length=1)
    session_id: str = Field(default_factory=lambda: uuid.uuid4().hex, min_length=1)
    user_name: Optional[str] = Field(default=None, min_length=1)
    token_limit: int = Field(default=DEFAULT_TOKEN_LIMIT, gt=0)
    context_limit: Optional[int] = Field(default=None, ge=1)
    end_on_reset: bool = True
    end_every: Optional[int] = Field(default=DEFAULT_EVERY_N_TURNS, ge=1)
    end_after_idle: Optional[timedelta] = Field(default=DEFAULT_IDLE_AFTER, gt=timedelta(0))
    context_template: str = DEFAULT_CONTEXT_TEMPLATE
    tokenizer_fn: Callable[[str], list] = Field(default_factory=get_tokenizer, exclude=True)
    _owns_memory: bool = PrivateAttr(default=False)

    @model_validator(mode="before")
    @classmethod
    def _read_settings(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        if data.get("user_id") is None:
            raise ValueError(_NO_USER)
        if "end_policy" not in data:
            return data
        data = dict(data)
        given = [name for name in _POLICY_FIELDS if name in data]
        if given:
            raise ValueError(f"end_policy and {', '.join(given)} were both given; pass one or the other")
        policy = EndPolicy.of(data.pop("end_policy"))
        data.update(end_on_reset=policy.on_clear, end_every=policy.every_n_turns, end_after_idle=policy.idle_after)
        return data

    @field_validator("memory")
    @classmethod
    def _is_memory(cls, value: Any) -> Any:
        return check_memory(value)

    @field_validator("context_template")
    @classmethod
    def _has_slot(cls, value: str) -> str:
        if "{context}" not in value:
            raise ValueError("context_template must contain '{context}'")
        return value

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this memory under."""
        return "ZepMemory"

    @classmethod
    def from_defaults(cls, memory: Any = None, session_id: str | None = None, user_id: str | None = None,
                      chat_history: list[ChatMessage] | None = None, data_dir: str | Path | None = None,
                      **kwargs: Any) -> ZepMemory:
        """Create a memory for a session, opening ``Memory.open(data_dir)`` when no ``memory`` is given.

        A folder this process already has open is shared, not opened again, so any
        number of ZepMemory objects can be made on one folder; :meth:`close` closes
        what this one opened.

        Args:
            memory: an open :class:`zep_core.Memory` (or ``RemoteMemory``).
            session_id: the conversation (default: a new random id).
            user_id: the tenant (required).
            chat_history: turns to store as the session's history.
            data_dir: where to open a memory when ``memory`` is None (default ``./data``).
            **kwargs: any other field (``user_name``, ``token_limit``, ``end_policy``, …).

        """
        if session_id is not None:
            kwargs["session_id"] = session_id
        owned = memory is None
        if owned:
            if user_id is None:  # refused before anything is opened
                raise ValidationError(_NO_USER)
            memory = Memory.open(data_dir or "./data")
        try:
            chat_memory = cls(memory=memory, user_id=user_id, **kwargs)
        except BaseException:
            if owned:
                memory.close()
            raise
        chat_memory._owns_memory = owned
        if chat_history is not None:
            chat_memory.set(chat_history)
        return chat_memory

    def close(self) -> None:
        """Close the memory if this object opened it (``from_defaults`` without ``memory``, or a restore)."""
        if self._owns_memory:
            self._owns_memory = False
            self.memory.close()

    # -- saving as a reference (workflow Context, to_dict/from_dict) ----------------------------

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        """The settings as JSON, with a reference to the memory: its data folder, or its service URL.

        The API key of a service is not saved; a restore reads it from ``ZEP_MEMORY_API_KEY``.
        """
        data = self.model_dump(mode="json", **kwargs)
        data["memory_ref"] = _reference(self.memory)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], **kwargs: Any) -> ZepMemory:
        """Rebuild a ZepMemory that :meth:`to_dict` wrote, opening the memory it refers to.

        Pass ``memory=`` to use an open memory instead of the reference.

        Raises:
            ValueError: the data holds no reference and no ``memory`` is given.
            zep_core.ZepMemoryError: the referenced memory cannot be opened.

        """
        data = {**data, **kwargs}
        data.pop("class_name", None)
        ref = data.pop("memory_ref", None)
        if data.get("memory") is not None:
            return cls(**data)
        memory = _open_reference(ref)
        try:
            chat_memory = cls(memory=memory, **data)
        except BaseException:
            memory.close()
            raise
        chat_memory._owns_memory = True
        return chat_memory

    # -- reading ------------------------------------------------------------------------

    def get(self, input: Optional[str] = None, initial_token_count: int = 0, **kwargs: Any) -> list[ChatMessage]:
        """The recent turns, behind a system message with what memory knows about ``input``.

        The turns are chosen as ``ChatMemoryBuffer.get`` chooses them, within
        ``token_limit`` less ``initial_token_count`` and the context message. There is
        no system message when the session has no history or memory has nothing to add.

        Args:
            input: the text to find facts for; the last user message when omitted.
            initial_token_count: tokens already spent by the caller's prompt.
            **kwargs: ignored (the chat engines pass nothing else).

        Raises:
            ValueError: ``initial_token_count`` is over ``token_limit`` (as ChatMemoryBuffer).

        """
        initial = int(initial_token_count or 0)
        if initial > self.token_limit:
            raise ValueError("Initial token count exceeds token limit")
        # Every stored turn counts at least one token, so no more than this many can fit.
        window = max(self.token_limit - initial + 1, _MIN_WINDOW)
        history = to_chat_messages(self.memory.get_messages(self.session_id, user_id=self.user_id, limit=window))
        if not history:
            return []
        query = input.content if isinstance(input, ChatMessage) else input
        context = self.context_for(query or last_user_text(history))
        system = [ChatMessage(role=MessageRole.SYSTEM, content=self.context_template.replace("{context}", context))
                  ] if context else []
        spent = min(initial + _token_count(system, self.tokenizer_fn), self.token_limit)
        return [*system, *_buffer_window(history, self.token_limit, spent, self.tokenizer_fn)]

    def context_for(self, input: str | None) -> str:
        """The context block memory supplies for ``input`` (``""`` when it knows nothing)."""
        return context_for(self.memory, input, user_id=self.user_id, user_name=self.user_name,
                           limit=self.context_limit)

    def get_all(self) -> list[ChatMessage]:
        """Every stored turn of the session, oldest first, as it was put."""
        return to_chat_messages(self.memory.get_messages(self.session_id, user_id=self.user_id))

    # -- writing ------------------------------------------------------------------------

    def put(self, message: ChatMessage) -> None:
        """Store one message at once."""
        self.put_messages([message])

    def put_messages(self, messages: list[ChatMessage]) -> None:
        """Store messages at once; the conversation ends first if it was idle, after if N turns are waiting."""
        converted = self._convert(messages)
        if converted:
            self.end_policy.add_turns(self.memory, self.session_id, self.user_id, converted)

    @property
    def end_policy(self) -> EndPolicy:
        """When the session's turns go through ``conversation_end`` (from the ``end_*`` fields)."""
        return EndPolicy(on_clear=self.end_on_reset, every_n_turns=self.end_every, idle_after=self.end_after_idle)

    def set(self, messages: list[ChatMessage]) -> None:
        """Replace the session's stored turns with ``messages`` (nothing is ingested)."""
        self.memory.clear_messages(self.session_id, user_id=self.user_id)
        converted = self._convert(messages)
        if converted:
            self.memory.add_messages(self.session_id, converted, user_id=self.user_id)

    def reset(self) -> None:
        """End the conversation (if ``end_on_reset``) and clear the session's turns."""
        self.end_policy.before_clear(self.memory, self.session_id, self.user_id)
        self.memory.clear_messages(self.session_id, user_id=self.user_id)

    def end_session(self) -> IngestResult | None:
        """Run ``conversation_end`` on the turns not yet ingested; None when there are none.

        The turns stay in the session's history; only facts are learned from them.
        """
        return self.memory.end_session(self.session_id, user_id=self.user_id)

    async def aend_session(self) -> IngestResult | None:
        """Async :meth:`end_session`."""
        return await in_thread(self.end_session)

    def _convert(self, messages: list[ChatMessage]) -> list[Any]:
        return to_zep_messages(messages, user_name=self.user_name, faithful=STORES_EXTRA,
                               max_chars=self.memory.config.max_message_chars)


def _token_count(messages: list[ChatMessage], tokenizer: Callable[[str], list]) -> int:
    """Tokens of messages, counted as ``ChatMemoryBuffer`` counts them."""
    if not messages:
        return 0
    return len(tokenizer(" ".join(str(m.content) for m in messages)))


def _buffer_window(history: list[ChatMessage], token_limit: int, initial: int,
                   tokenizer: Callable[[str], list]) -> list[ChatMessage]:
    """The turns ``ChatMemoryBuffer.get`` returns from ``history`` (llama-index-core 0.14, the same steps).

    Drop the oldest turn until the rest fits, then any assistant or tool turns that
    would start the window; when not even one turn fits, the last turn alone (so the
    LLM, not the memory, says the message is too long).
    """
    count = len(history)
    tokens = _token_count(history, tokenizer) + initial
    while tokens > token_limit and count > 1:
        count -= 1
        while count > 1 and history[-count].role in (MessageRole.TOOL, MessageRole.ASSISTANT):
            count -= 1
        tokens = _token_count(history[-count:], tokenizer) + initial
    if tokens > token_limit or count <= 0:
        return history[-1:]
    return history[-count:]


def _reference(memory: Any) -> dict[str, str]:
    """Where ``memory`` lives: ``{"url": ...}`` for a service, ``{"data_dir": ...}`` for a folder.

    A memory on a database is ``{"database_url": ..., "data_dir": ...}``, the URL without its
    password: the restoring process gives it as PostgreSQL's clients do (``PGPASSWORD``, ``~/.pgpass``).
    """
    reference = memory_reference(memory)
    if reference is None:
        raise ValueError(f"a ZepMemory on a {type(memory).__name__} cannot be saved: it is saved as a reference "
                         "to a data folder (zep_core.Memory) or a service URL (zep_core.server.RemoteMemory)")
    return reference


def _open_reference(ref: Any) -> Any:
    """Open the memory a reference names: the folder (shared if open here), or the service."""
    if isinstance(ref, Mapping) and isinstance(ref.get("url"), str):
        from zep_core.server import RemoteMemory

        return RemoteMemory(ref["url"], api_key=os.environ.get(API_KEY_ENV) or None)
    if isinstance(ref, Mapping) and isinstance(ref.get("database_url"), str):
        return Memory.open(ref.get("data_dir") or "./data", database_url=ref["database_url"])
    if isinstance(ref, Mapping) and isinstance(ref.get("data_dir"), str):
        return Memory.open(ref["data_dir"])
    raise ValueError("this ZepMemory data has no 'memory_ref' (a data folder or a service URL) and no memory= "
                     f"was given, so there is no memory to open; got memory_ref={ref!r}")
