"""ZepMemoryMiddleware: memory for agents built with ``langchain.agents.create_agent``."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from zep_core import IngestResult, Memory
from zep_core.sessions import EndPolicy, EndPolicyLike, context_for

from .history import ZepChatMessageHistory

__all__ = ["DEFAULT_CONTEXT_HEADER", "ZepMemoryMiddleware"]

#: The line put above the context block in the system message.
DEFAULT_CONTEXT_HEADER = "What you remember about this user from earlier conversations:"


def last_turn(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The last human message and the final AI answer after it (tool traffic left out)."""
    human = next((i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], HumanMessage)), None)
    if human is None:
        return []
    answers = [m for m in messages[human + 1:] if isinstance(m, AIMessage) and m.text.strip()]
    return [messages[human], *answers[-1:]]


def with_context(system: SystemMessage | None, text: str) -> SystemMessage:
    """The system message with ``text`` appended (a new one if there was none)."""
    if system is None:
        return SystemMessage(content=text)
    if isinstance(system.content, str):
        content: Any = f"{system.content}\n\n{text}" if system.content else text
    else:
        content = [*system.content, {"type": "text", "text": text}]
    return SystemMessage(content=content, id=system.id, name=system.name,
                         additional_kwargs=system.additional_kwargs)


class ZepMemoryMiddleware(AgentMiddleware):
    """Gives an agent the user's memory and saves what it learns.

    Before each model call it puts the memory's context block for the latest user
    message into the system message (current facts with their dates; superseded
    facts never appear). After the agent finishes it stores the turn — the user's
    message and the final answer — at once, and runs ``conversation_end`` as
    ``end_policy`` says. Sync and async agents (``invoke``/``ainvoke``) both work.

    Args:
        memory: the :class:`zep_core.Memory`.
        session_id: the conversation.
        user_id: the tenant.
        user_name: the user's name: "I" in their messages resolves to it.
        end_policy: ``"clear"`` (default: on :meth:`clear` and explicit end),
            ``"explicit"``, a number of turns, or an :class:`EndPolicy`.
        context_limit: how many facts the context holds (default: the memory's).
        context_header: the line above the context block.

    Attributes:
        last_context: the context block given to the model at its latest call
            (``""`` when memory had nothing relevant).

    Example:
        >>> from langchain.agents import create_agent                          # doctest: +SKIP
        >>> zep = ZepMemoryMiddleware(memory=memory, session_id="s1", user_id="alice",
        ...                           user_name="Alice", end_policy=1)
        >>> agent = create_agent(model, tools=create_memory_tools(memory, user_id="alice"),
        ...                      middleware=[zep])
        >>> agent.invoke({"messages": [{"role": "user", "content": "I moved to Berlin"}]})

    """

    def __init__(self, *, memory: Memory, session_id: str, user_id: str = "default", user_name: str | None = None,
                 end_policy: EndPolicyLike = "clear", context_limit: int | None = None,
                 context_header: str = DEFAULT_CONTEXT_HEADER) -> None:
        self.memory = memory
        self.history = ZepChatMessageHistory(memory, session_id, user_id=user_id, user_name=user_name)
        self.session_id = session_id
        self.user_id = user_id
        self.user_name = user_name
        self.end_policy = EndPolicy.of(end_policy)
        self.context_limit = context_limit
        self.context_header = context_header
        self.tools = []
        self.last_context = ""

    def _request_with_context(self, request: ModelRequest) -> ModelRequest:
        turn = last_turn(request.messages)
        text = turn[0].text if turn else ""
        block = context_for(self.memory, text, user_id=self.user_id, user_name=self.user_name,
                            limit=self.context_limit)
        self.last_context = block
        if not block:
            return request
        return request.override(system_message=with_context(request.system_message,
                                                            f"{self.context_header}\n{block}"))

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        """Put the memory context into the system message, then call the model."""
        return handler(self._request_with_context(request))

    async def awrap_model_call(self, request: ModelRequest,
                               handler: Callable[[ModelRequest], Awaitable[ModelResponse]]) -> ModelResponse:
        """Async :meth:`wrap_model_call`."""
        return await handler(await asyncio.to_thread(self._request_with_context, request))

    def _save(self, messages: Sequence[AnyMessage]) -> None:
        turn = last_turn(messages)
        if turn:
            self.history.add_messages(turn)
            self.end_policy.after_turn(self.memory, self.session_id, self.user_id)

    def after_agent(self, state: dict[str, Any], runtime: Runtime) -> dict[str, Any] | None:
        """Store the turn; end the conversation if the policy says so."""
        self._save(state["messages"])
        return None

    async def aafter_agent(self, state: dict[str, Any], runtime: Runtime) -> dict[str, Any] | None:
        """Async :meth:`after_agent`."""
        await asyncio.to_thread(self._save, state["messages"])
        return None

    def end_conversation(self) -> IngestResult | None:
        """Run ``conversation_end`` on the turns not yet ingested; None if there were none."""
        return self.history.end_conversation()

    async def aend_conversation(self) -> IngestResult | None:
        """Async :meth:`end_conversation`."""
        return await asyncio.to_thread(self.end_conversation)

    def clear(self) -> None:
        """End the conversation (unless the policy is ``explicit``) and forget its turns."""
        self.end_policy.before_clear(self.memory, self.session_id, self.user_id)
        self.history.clear()

    async def aclear(self) -> None:
        """Async :meth:`clear`."""
        await asyncio.to_thread(self.clear)
