"""ZepMemoryBlock: zep-memory as a block of LlamaIndex's ``Memory``.

LlamaIndex's ``Memory`` keeps recent turns in a FIFO queue; when the queue passes
``token_limit * chat_history_token_ratio`` it flushes the oldest turns to its
memory blocks. This block turns each flush into an episode (facts extracted, old
ones superseded) and, on every ``get``, renders what memory knows about the latest
user message into the ``<memory>`` part of the system message.
"""

from __future__ import annotations

from typing import Any, Optional

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import Field, field_validator
from llama_index.core.memory.memory import BaseMemoryBlock
from zep_core import Message
from zep_core.aio import in_thread
from zep_core.sessions import acontext_for, check_memory

from .convert import last_user_text, to_zep_message

__all__ = ["ZepMemoryBlock"]


class ZepMemoryBlock(BaseMemoryBlock[str]):
    """A memory block that supplies current facts and learns from flushed turns.

    Args:
        memory: an open :class:`zep_core.Memory` (or a ``zep_core.server.RemoteMemory``).
        user_id: the tenant whose facts are searched and written (required).
        name: the block's name (its tag in the system message).
        user_name: the user's name, set on their messages so "I" resolves to it.
        session_id: the session flushed turns are filed under when LlamaIndex gives none.
        context_limit: how many facts go into the block (default: the memory's).
        context_window: how many of the latest user messages form the query.

    Example:
        >>> from llama_index.core.memory import Memory as ChatMemory
        >>> block = ZepMemoryBlock(memory=memory, user_id="ada", name="zep")
        >>> chat_memory = ChatMemory.from_defaults(session_id="s1", memory_blocks=[block])  # doctest: +SKIP

    """

    name: str = Field(default="zep_memory", min_length=1, description="The name of the memory block.")
    memory: Any = Field(exclude=True, description="The zep_core.Memory holding the facts.")
    user_id: str = Field(min_length=1, description="The user whose facts are searched and written.")
    user_name: Optional[str] = Field(default=None, min_length=1)
    session_id: str = Field(default="llamaindex", min_length=1)
    context_limit: Optional[int] = Field(default=None, ge=1)
    context_window: int = Field(default=1, ge=1)

    @field_validator("memory")
    @classmethod
    def _is_memory(cls, value: Any) -> Any:
        return check_memory(value)

    async def _aget(self, messages: Optional[list[ChatMessage]] = None, **block_kwargs: Any) -> str:
        """The context block for the latest user message(s); ``""`` when memory knows nothing."""
        query = last_user_text(messages or [], self.context_window)
        if not query:
            return ""
        return await acontext_for(self.memory, query, user_id=self.user_id, user_name=self.user_name,
                                  limit=self.context_limit)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Ingest flushed turns: store them and run ``conversation_end``, one episode per session."""
        sessions: dict[str, list[Message]] = {}
        for chat_message in messages:
            message = to_zep_message(chat_message, user_name=self.user_name, faithful=False)
            if message is not None:
                session = chat_message.additional_kwargs.get("session_id") or self.session_id
                sessions.setdefault(str(session), []).append(message)
        if sessions:
            await in_thread(self._ingest, sessions)

    def _ingest(self, sessions: dict[str, list[Message]]) -> None:
        for session_id, turns in sessions.items():
            self.memory.add_messages(session_id, turns, user_id=self.user_id)
            self.memory.end_session(session_id, user_id=self.user_id)
