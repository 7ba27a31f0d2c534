"""ZepChatMemory: a classic-chain memory (``BaseChatMemory``) backed by zep_core."""

from __future__ import annotations

from typing import Any

from langchain_classic.memory.chat_memory import BaseChatMemory
from langchain_classic.memory.utils import get_prompt_input_key
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, get_buffer_string
from pydantic import Field, field_validator, model_validator
from zep_core import IngestResult, ValidationError
from zep_core.aio import in_thread
from zep_core.sessions import EndPolicy, context_for

from ._memory import MemoryLike, check_memory
from .history import ZepChatMessageHistory

__all__ = ["ZepChatMemory"]


class ZepChatMemory(BaseChatMemory):
    """Recent turns plus what the memory knows, for LangChain's classic chains.

    By default ``load_memory_variables`` returns one variable, ``history``, as
    LangChain's own chat memories do, so the default prompts of the classic chains
    (``ConversationChain``: ``history`` and ``input``) work unchanged: the memory's
    context block for the current input (current facts with their dates; superseded
    facts never appear) comes first, as a system message, then the session's last
    ``recent_turns`` turns. With ``context_key="context"`` the context is a variable
    of its own instead, for prompts that place it themselves. With
    ``return_messages=True`` the variables are message lists (the context as one
    ``SystemMessage``), otherwise strings (the context as a ``System:`` line).
    ``save_context`` stores the turn at once; ``conversation_end`` runs as
    ``end_policy`` says.

    Args:
        memory: the :class:`zep_core.Memory` (or a ``RemoteMemory``).
        session_id: the conversation.
        user_id: the tenant (required: there is no shared default user).
        user_name: the user's name: "I" in their messages resolves to it.
        end_policy: when the session's turns are learned from: the default
            :class:`EndPolicy` (every 10 user turns, after a 30-minute gap, on
            ``clear()`` and on an explicit end), ``"clear"``, ``"explicit"``, a number
            of turns, or an :class:`EndPolicy`.
        recent_turns: how many recent turns ``history`` holds (0 for none).
        context_limit: how many facts the context holds (default: the memory's).
        context_key: None (default) to put the context into ``history``; a name to
            give it its own variable.

    Example:
        >>> chat_memory = ZepChatMemory(memory=memory, session_id="s1",      # doctest: +SKIP
        ...                             user_id="alice", user_name="Alice", end_policy=1,
        ...                             context_key="context")
        >>> chat_memory.save_context({"input": "I live in Paris"}, {"output": "Nice!"})
        >>> print(chat_memory.load_memory_variables({"input": "Where do I live?"})["context"])
        FACTS (what is true now; dates say since when):
        - Alice lives in Paris. (valid from 2024-01-01)
        ...

    """

    memory: MemoryLike = Field(exclude=True)
    session_id: str = Field(min_length=1)
    user_id: str = Field(min_length=1)
    user_name: str | None = None
    end_policy: EndPolicy = Field(default_factory=EndPolicy)
    memory_key: str = "history"
    context_key: str | None = None
    recent_turns: int = Field(default=10, ge=0)
    context_limit: int | None = Field(default=None, ge=1)
    human_prefix: str = "Human"
    ai_prefix: str = "AI"

    @model_validator(mode="before")
    @classmethod
    def _build_history(cls, data: Any) -> Any:
        """Give the parent our own history, so its in-memory default is never built."""
        if not isinstance(data, dict) or data.get("chat_memory") is not None:
            return data
        if data.get("user_id") is None:
            raise ValidationError("ZepChatMemory needs user_id= (the tenant whose memory it uses); "
                                  "there is no shared default user")
        if isinstance(data.get("session_id"), str) and isinstance(data.get("user_id"), str):
            history = ZepChatMessageHistory(check_memory(data.get("memory")), data["session_id"],
                                            user_id=data["user_id"], user_name=data.get("user_name"))
            data = {**data, "chat_memory": history}
        return data

    @model_validator(mode="after")
    def _check_history(self) -> ZepChatMemory:
        h = self.chat_memory
        if not (isinstance(h, ZepChatMessageHistory) and h.memory is self.memory
                and (h.session_id, h.user_id) == (self.session_id, self.user_id)):
            raise ValueError("chat_memory must be the ZepChatMessageHistory of this memory, session and user; "
                             "leave it out and ZepChatMemory builds it")
        return self

    @field_validator("end_policy", mode="before")
    @classmethod
    def _read_policy(cls, value: Any) -> EndPolicy:
        return EndPolicy.of(value)

    @property
    def history(self) -> ZepChatMessageHistory:
        """The session's chat history (``chat_memory``)."""
        return self.chat_memory  # type: ignore[return-value]

    @property
    def memory_variables(self) -> list[str]:
        """The keys this memory adds to chain inputs: ``history`` (and the context key, if it has one)."""
        return [self.memory_key] if self.context_key is None else [self.memory_key, self.context_key]

    def _input_text(self, inputs: dict[str, Any]) -> str:
        if self.input_key is not None:
            value = inputs.get(self.input_key, "")
        elif set(inputs) - {*self.memory_variables, "stop"}:
            value = inputs[get_prompt_input_key(inputs, self.memory_variables)]
        else:
            value = ""
        return value if isinstance(value, str) else HumanMessage(content=value).text

    def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """The session's recent turns and the memory context for the current input."""
        turns = self.history.recent(2 * self.recent_turns) if self.recent_turns else []
        block = context_for(self.memory, self._input_text(inputs), user_id=self.user_id, user_name=self.user_name,
                            limit=self.context_limit)
        context = [SystemMessage(content=block)] if block else []
        if self.context_key is None:
            history = [*context, *turns]
            return {self.memory_key: history if self.return_messages else self._text(history)}
        if self.return_messages:
            return {self.memory_key: turns, self.context_key: context}
        return {self.memory_key: self._text(turns), self.context_key: block}

    def _text(self, messages: list[Any]) -> str:
        return get_buffer_string(messages, human_prefix=self.human_prefix, ai_prefix=self.ai_prefix)

    def save_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        """Store the turn at once; end the conversation if the policy says so."""
        input_value, output_value = self._get_input_output(inputs, outputs)
        self.end_policy.before_turn(self.memory, self.session_id, self.user_id)
        self.history.add_messages([HumanMessage(content=input_value), AIMessage(content=output_value)])
        self.end_policy.after_turn(self.memory, self.session_id, self.user_id)

    def clear(self) -> None:
        """End the conversation (unless the policy is ``explicit``) and forget its turns."""
        self.end_policy.before_clear(self.memory, self.session_id, self.user_id)
        self.history.clear()

    def end_conversation(self) -> IngestResult | None:
        """Run ``conversation_end`` on the turns not yet ingested; None if there were none."""
        return self.history.end_conversation()

    async def aload_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Async :meth:`load_memory_variables`."""
        return await in_thread(self.load_memory_variables, inputs)

    async def asave_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        """Async :meth:`save_context`."""
        await in_thread(self.save_context, inputs, outputs)

    async def aclear(self) -> None:
        """Async :meth:`clear`."""
        await in_thread(self.clear)

    async def aend_conversation(self) -> IngestResult | None:
        """Async :meth:`end_conversation`."""
        return await in_thread(self.end_conversation)
