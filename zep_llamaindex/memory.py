"""ZepMemory: a LlamaIndex ``BaseMemory`` backed by a zep-memory session.

Every turn is stored at once (SQLite, through :meth:`zep_core.Memory.add_messages`),
so nothing said is lost if the process stops. ``get`` returns the session's recent
turns with what memory knows about the input placed in a system message in front.
The turns become an episode — facts extracted, old ones superseded — when the
conversation ends: on :meth:`ZepMemory.end_session`, on ``reset()`` (by default),
or every ``end_every`` user turns.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.bridge.pydantic import ConfigDict, Field, field_validator
from llama_index.core.memory.types import BaseMemory
from llama_index.core.utils import get_tokenizer
from zep_core import IngestResult, Memory
from zep_core.sessions import EndPolicy, context_for

from .convert import last_user_text, to_chat_messages, to_zep_messages

__all__ = ["DEFAULT_CONTEXT_TEMPLATE", "ZepMemory"]

DEFAULT_CONTEXT_TEMPLATE = (
    "Long-term memory about the user, from earlier conversations. Each fact says since when "
    "it holds; it replaces anything older that contradicts it.\n{context}"
)
DEFAULT_TOKEN_LIMIT = 3000
_MIN_WINDOW = 20  # turns read to find the last user message even when no history fits


class ZepMemory(BaseMemory):
    """Chat memory for LlamaIndex chat engines and agents, backed by zep-memory.

    Args:
        memory: an open :class:`zep_core.Memory`.
        session_id: the conversation; its turns are stored under it.
        user_id: the tenant whose facts are searched and written.
        user_name: the user's name, set on their messages so "I" resolves to it
            (default: the memory's ``default_speaker``).
        token_limit: how many tokens of recent turns ``get`` returns.
        context_limit: how many facts go into the context (default: the memory's).
        end_on_reset: run ``conversation_end`` on the session's turns in ``reset()``.
        end_every: also run it every N user turns (after the assistant's reply).
        context_template: the system message; ``{context}`` is the context block.

    Example:
        >>> from llama_index.core.chat_engine import SimpleChatEngine
        >>> chat_memory = ZepMemory(memory=memory, session_id="s1", user_id="ada", user_name="Ada")
        >>> engine = SimpleChatEngine.from_defaults(llm=llm, memory=chat_memory)   # doctest: +SKIP
        >>> engine.chat("I moved to Berlin.")                                      # doctest: +SKIP
        >>> engine.reset()            # the session becomes an episode: Ada lives_in Berlin

    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Any = Field(exclude=True, description="The zep_core.Memory holding the session and the facts.")
    session_id: str = Field(default_factory=lambda: uuid.uuid4().hex, min_length=1)
    user_id: str = Field(default="default", min_length=1)
    user_name: Optional[str] = Field(default=None, min_length=1)
    token_limit: int = Field(default=DEFAULT_TOKEN_LIMIT, gt=0)
    context_limit: Optional[int] = Field(default=None, ge=1)
    end_on_reset: bool = True
    end_every: Optional[int] = Field(default=None, ge=1)
    context_template: str = DEFAULT_CONTEXT_TEMPLATE
    tokenizer_fn: Callable[[str], list] = Field(default_factory=get_tokenizer, exclude=True)

    @field_validator("memory")
    @classmethod
    def _is_memory(cls, value: Any) -> Memory:
        if not isinstance(value, Memory):
            raise ValueError(f"memory must be an open zep_core.Memory, got {type(value).__name__}")
        return value

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
    def from_defaults(cls, memory: Memory | None = None, session_id: str | None = None, user_id: str = "default",
                      chat_history: list[ChatMessage] | None = None, data_dir: str | Path | None = None,
                      **kwargs: Any) -> ZepMemory:
        """Create a memory for a session, opening ``Memory.open(data_dir)`` when no ``memory`` is given.

        Args:
            memory: an open :class:`zep_core.Memory`.
            session_id: the conversation (default: a new random id).
            user_id: the tenant.
            chat_history: turns to store as the session's history.
            data_dir: where to open a memory when ``memory`` is None (default ``./data``).
            **kwargs: any other field (``user_name``, ``token_limit``, ``end_every``, …).

        """
        if memory is None:
            memory = Memory.open(data_dir or "./data")
        if session_id is not None:
            kwargs["session_id"] = session_id
        chat_memory = cls(memory=memory, user_id=user_id, **kwargs)
        if chat_history is not None:
            chat_memory.set(chat_history)
        return chat_memory

    # -- reading ------------------------------------------------------------------------

    def get(self, input: Optional[str] = None, **kwargs: Any) -> list[ChatMessage]:
        """The recent turns, behind a system message with what memory knows about ``input``.

        Args:
            input: the text to find facts for; the last user message when omitted.
            **kwargs: ``initial_token_count`` (tokens already spent by the caller's prompt).

        """
        budget = self.token_limit - int(kwargs.get("initial_token_count", 0) or 0)
        # Every stored turn has text, so at most `budget` turns can fit: read no more than that.
        window = max(budget, _MIN_WINDOW)
        history = to_chat_messages(self.memory.get_messages(self.session_id, user_id=self.user_id, limit=window))
        query = input.content if isinstance(input, ChatMessage) else input
        context = self.context_for(query or last_user_text(history))
        recent = self._trim(history, budget)
        if not context:
            return recent
        system = self.context_template.replace("{context}", context)
        return [ChatMessage(role=MessageRole.SYSTEM, content=system), *recent]

    def context_for(self, input: str | None) -> str:
        """The context block memory supplies for ``input`` (``""`` when it knows nothing)."""
        return context_for(self.memory, input, user_id=self.user_id, user_name=self.user_name,
                           limit=self.context_limit)

    def get_all(self) -> list[ChatMessage]:
        """Every stored turn of the session, oldest first."""
        return to_chat_messages(self.memory.get_messages(self.session_id, user_id=self.user_id))

    def _trim(self, history: list[ChatMessage], budget: int) -> list[ChatMessage]:
        kept: list[ChatMessage] = []
        for message in reversed(history):
            budget -= len(self.tokenizer_fn(message.content or ""))
            if budget < 0:
                break
            kept.append(message)
        kept.reverse()
        while kept and kept[0].role == MessageRole.ASSISTANT:
            kept.pop(0)
        return kept

    # -- writing ------------------------------------------------------------------------

    def put(self, message: ChatMessage) -> None:
        """Store one turn at once (tool calls and tool results are not kept)."""
        self.put_messages([message])

    def put_messages(self, messages: list[ChatMessage]) -> None:
        """Store turns at once, then end the conversation if ``end_every`` turns are waiting."""
        converted = to_zep_messages(messages, user_name=self.user_name)
        if not converted:
            return
        self.memory.add_messages(self.session_id, converted, user_id=self.user_id)
        self.end_policy.after_turn(self.memory, self.session_id, self.user_id)

    @property
    def end_policy(self) -> EndPolicy:
        """When the session's turns go through ``conversation_end`` (from ``end_on_reset``, ``end_every``)."""
        return EndPolicy(on_clear=self.end_on_reset, every_n_turns=self.end_every)

    def set(self, messages: list[ChatMessage]) -> None:
        """Replace the session's stored turns with ``messages`` (nothing is ingested)."""
        self.memory.clear_messages(self.session_id, user_id=self.user_id)
        converted = to_zep_messages(messages, user_name=self.user_name)
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
        return await asyncio.to_thread(self.end_session)
