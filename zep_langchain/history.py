"""ZepChatMessageHistory: a LangChain chat history kept in the core's record store."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage, ToolMessage
from zep_core import IngestResult, Memory, ValidationError
from zep_core.aio import in_thread

from ._convert import new_only, now_of, to_core_messages, to_langchain_messages
from ._memory import check_memory

__all__ = ["ZepChatMessageHistory"]


class ZepChatMessageHistory(BaseChatMessageHistory):
    """The turns of one chat session, stored at once in the memory's record store.

    Messages survive a restart: open a :class:`zep_core.Memory` on the same folder and
    the session's messages are there. Human messages are stored with ``user_name`` as
    their speaker (so "I live in Paris" becomes a fact about that name); AI messages
    (streamed ``AIMessageChunk`` replies too) as ``assistant``: roles follow the
    message class, so the assistant's words never become facts about the user.

    Every message comes back as it was added, as from LangChain's
    ``InMemoryChatMessageHistory``: an ``AIMessage`` with its ``tool_calls``, a
    ``ToolMessage`` with its ``tool_call_id``, ``status`` and ``artifact``, content
    blocks, ``additional_kwargs`` and ``response_metadata``. Images and other media
    are kept by reference (a URL); inline data is replaced by a note saying what was
    there (see :mod:`zep_langchain._convert`). Only text is learned from: tool
    results and messages without text (pure tool calls) are kept as ``tool`` rows,
    which never become facts. Adding a message whose id is already stored in the
    session does nothing, so retries never duplicate a turn.

    The turns become an episode (facts extracted) only at :meth:`end_conversation`.

    Args:
        memory: the :class:`zep_core.Memory` (or a ``RemoteMemory``) to store in.
        session_id: the conversation.
        user_id: the tenant (required: there is no shared default user).
        user_name: the speaker's name for human messages without a ``name``.

    Example:
        >>> history = ZepChatMessageHistory(memory, "s1", user_id="alice",   # doctest: +SKIP
        ...                                 user_name="Alice")
        >>> history.add_messages([HumanMessage("I live in Paris"), AIMessage("Nice!")])
        >>> [m.content for m in history.messages]
        ['I live in Paris', 'Nice!']

    """

    def __init__(self, memory: Memory, session_id: str, *, user_id: str, user_name: str | None = None) -> None:
        for what, value in (("session_id", session_id), ("user_id", user_id)):
            if not isinstance(value, str) or not value.strip():
                raise ValidationError(f"{what} must be a non-empty string, got {value!r}")
        self.memory = check_memory(memory)
        self.session_id = session_id
        self.user_id = user_id
        self.user_name = user_name

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """Every stored message of the session, oldest first."""
        return self.recent()

    def recent(self, limit: int | None = None) -> list[BaseMessage]:
        """The last ``limit`` messages of the session (all if None), oldest first.

        A window never starts with a tool result whose call it cut off (chat models
        refuse a ``ToolMessage`` without the ``AIMessage`` that called the tool), so it
        may hold fewer than ``limit`` messages.
        """
        found = to_langchain_messages(self.memory.get_messages(self.session_id, user_id=self.user_id, limit=limit))
        if limit is not None:
            while found and isinstance(found[0], ToolMessage):
                found.pop(0)
        return found

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Store messages at once (a message whose id is already stored is skipped).

        Raises:
            zep_core.ValidationError: a message class the memory has no role for, a
                field that cannot be stored as JSON, or text over the memory's limits;
                nothing of the batch is stored then.

        """
        core = to_core_messages(messages, user_name=self.user_name, timestamp=now_of(self.memory),
                                max_chars=self.memory.config.max_message_chars)
        if any(m.id is not None for m in core):
            stored = self.memory.get_messages(self.session_id, user_id=self.user_id)
            core = new_only(core, {m.id for m in stored if m.id is not None})
        if core:
            self.memory.add_messages(self.session_id, core, user_id=self.user_id)

    def clear(self) -> None:
        """Forget the session's messages; facts already learned from them stay."""
        self.memory.clear_messages(self.session_id, user_id=self.user_id)

    def end_conversation(self) -> IngestResult | None:
        """Run ``conversation_end`` on the turns not yet ingested; None if there were none."""
        return self.memory.end_session(self.session_id, user_id=self.user_id)

    async def aget_messages(self) -> list[BaseMessage]:
        """Async :attr:`messages`."""
        return await in_thread(self.recent)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Async :meth:`add_messages`."""
        await in_thread(self.add_messages, list(messages))

    async def aclear(self) -> None:
        """Async :meth:`clear`."""
        await in_thread(self.clear)

    async def aend_conversation(self) -> IngestResult | None:
        """Async :meth:`end_conversation`."""
        return await in_thread(self.end_conversation)

    def __repr__(self) -> str:
        return f"ZepChatMessageHistory(session_id={self.session_id!r}, user_id={self.user_id!r})"
