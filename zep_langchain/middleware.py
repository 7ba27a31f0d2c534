"""ZepMemoryMiddleware: memory for agents built with ``langchain.agents.create_agent``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from zep_core import IngestResult
from zep_core.aio import in_thread
from zep_core.sessions import EndPolicy, EndPolicyLike, acontext_for, context_for

from ._memory import check_memory
from .context import Scope, ScopeRule
from .history import ZepChatMessageHistory

__all__ = ["DEFAULT_CONTEXT_HEADER", "ZepMemoryMiddleware"]

#: The line put above the context block in the system message.
DEFAULT_CONTEXT_HEADER = "What you remember about this user from earlier conversations:"


def last_turn(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The user's last input and the final AI answer after it (tool traffic left out).

    The input is every human message of the last run of them ("I moved." "To Oslo."
    sent together), not only its last one.
    """
    human = next((i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], HumanMessage)), None)
    if human is None:
        return []
    first = human
    while first > 0 and isinstance(messages[first - 1], HumanMessage):
        first -= 1
    answers = [m for m in messages[human + 1:] if isinstance(m, AIMessage) and m.text.strip()]
    return [*messages[first:human + 1], *answers[-1:]]


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
    """Gives an agent the user's memory and saves what it learns, per thread and per user.

    Before each model call it puts the memory's context block for the latest user
    message into the system message (current facts with their dates; superseded
    facts never appear). After the agent finishes it stores the turn — the user's
    message and the final answer — at once, and runs ``conversation_end`` as
    ``end_policy`` says. Sync and async agents (``invoke``/``ainvoke``) both work.

    One middleware serves every conversation of a compiled agent: the **session**
    is the run's LangGraph thread (``config={"configurable": {"thread_id": ...}}``)
    and the **user** comes from the run context (``create_agent(...,
    context_schema=ZepContext)``, ``invoke(..., context=ZepContext(user_id=...))``;
    see :mod:`zep_langchain.context`). ``session_id=`` and ``user_id=`` fix them
    instead. A run with no user, or for another user than the fixed one, is refused
    with a :class:`zep_core.ValidationError` before the model is called.

    Args:
        memory: the :class:`zep_core.Memory` (or a ``RemoteMemory``).
        session_id: a fixed conversation, or None for the run's thread id.
        user_id: a fixed tenant, or None for the run context's ``user_id``.
        user_name: a fixed user name (else the run context's ``user_name``): "I" in
            their messages resolves to it.
        end_policy: when the session's turns are learned from: the default
            :class:`EndPolicy` (every 10 user turns, after a 30-minute gap, on
            :meth:`clear` and on an explicit end), ``"clear"``, ``"explicit"``, a number
            of turns, or an :class:`EndPolicy`.
        context_limit: how many facts the context holds (default: the memory's).
        context_header: the line above the context block.

    Attributes:
        last_context: the context block given to the model at its latest call, in
            any thread (``""`` when memory had nothing relevant).

    Example:
        >>> from langchain.agents import create_agent                          # doctest: +SKIP
        >>> from langgraph.checkpoint.memory import InMemorySaver
        >>> agent = create_agent(model, tools=create_memory_tools(memory),
        ...                      middleware=[ZepMemoryMiddleware(memory=memory, end_policy=1)],
        ...                      context_schema=ZepContext, checkpointer=InMemorySaver())
        >>> agent.invoke({"messages": [{"role": "user", "content": "I moved to Berlin"}]},
        ...              config={"configurable": {"thread_id": "t1"}},
        ...              context=ZepContext(user_id="alice", user_name="Alice"))

    """

    def __init__(self, *, memory: Any, session_id: str | None = None, user_id: str | None = None,
                 user_name: str | None = None, end_policy: EndPolicyLike | None = None,
                 context_limit: int | None = None, context_header: str = DEFAULT_CONTEXT_HEADER) -> None:
        self.memory = check_memory(memory)
        self.rule = ScopeRule("ZepMemoryMiddleware", user_id=user_id, user_name=user_name, session_id=session_id)
        self.end_policy = EndPolicy() if end_policy is None else EndPolicy.of(end_policy)
        self.context_limit = context_limit
        self.context_header = context_header
        self.tools = []
        self.last_context = ""

    @property
    def session_id(self) -> str | None:
        """The fixed session, or None when each run's thread is its session."""
        return self.rule.session_id

    @property
    def user_id(self) -> str | None:
        """The fixed user, or None when each run's context names its user."""
        return self.rule.user_id

    @property
    def user_name(self) -> str | None:
        """The fixed user name, or None."""
        return self.rule.user_name

    def history(self, scope: Scope) -> ZepChatMessageHistory:
        """The chat history of one session of one user."""
        return ZepChatMessageHistory(self.memory, scope.session_id, user_id=scope.user_id, user_name=scope.user_name)

    @staticmethod
    def _question(request: ModelRequest) -> str:
        return " ".join(m.text for m in last_turn(request.messages) if isinstance(m, HumanMessage))

    def _request_with_context(self, request: ModelRequest, scope: Scope) -> ModelRequest:
        return self._with_block(request, context_for(self.memory, self._question(request), user_id=scope.user_id,
                                                     user_name=scope.user_name, limit=self.context_limit))

    def _with_block(self, request: ModelRequest, block: str) -> ModelRequest:
        self.last_context = block
        if not block:
            return request
        return request.override(system_message=with_context(request.system_message,
                                                            f"{self.context_header}\n{block}"))

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        """Put the memory context of the run's user into the system message, then call the model."""
        return handler(self._request_with_context(request, self.rule.scope(request.runtime)))

    async def awrap_model_call(self, request: ModelRequest,
                               handler: Callable[[ModelRequest], Awaitable[ModelResponse]]) -> ModelResponse:
        """Async :meth:`wrap_model_call`."""
        scope = self.rule.scope(request.runtime)
        block = await acontext_for(self.memory, self._question(request), user_id=scope.user_id,
                                   user_name=scope.user_name, limit=self.context_limit)  # native on a RemoteMemory
        return await handler(self._with_block(request, block))

    def _save(self, messages: Sequence[AnyMessage], scope: Scope) -> None:
        turn = last_turn(messages)
        if turn:
            self.end_policy.before_turn(self.memory, scope.session_id, scope.user_id)
            self.history(scope).add_messages(turn)
            self.end_policy.after_turn(self.memory, scope.session_id, scope.user_id)

    def after_agent(self, state: dict[str, Any], runtime: Runtime) -> dict[str, Any] | None:
        """Store the turn in the run's session; end the conversation if the policy says so."""
        self._save(state["messages"], self.rule.scope(runtime))
        return None

    async def aafter_agent(self, state: dict[str, Any], runtime: Runtime) -> dict[str, Any] | None:
        """Async :meth:`after_agent`."""
        await in_thread(self._save, state["messages"], self.rule.scope(runtime))
        return None

    def end_conversation(self, *, session_id: str | None = None, user_id: str | None = None) -> IngestResult | None:
        """Run ``conversation_end`` on the turns of a session not yet ingested; None if there were none.

        Args:
            session_id: the session (the thread id); needed unless the middleware has a fixed one.
            user_id: the user; needed unless the middleware has a fixed one.

        """
        return self.history(self.rule.fixed(session_id=session_id, user_id=user_id)).end_conversation()

    async def aend_conversation(self, *, session_id: str | None = None,
                                user_id: str | None = None) -> IngestResult | None:
        """Async :meth:`end_conversation`."""
        return await in_thread(self.end_conversation, session_id=session_id, user_id=user_id)

    def clear(self, *, session_id: str | None = None, user_id: str | None = None) -> None:
        """End a session's conversation (unless the policy is ``explicit``) and forget its turns.

        Args:
            session_id: the session (the thread id); needed unless the middleware has a fixed one.
            user_id: the user; needed unless the middleware has a fixed one.

        """
        scope = self.rule.fixed(session_id=session_id, user_id=user_id)
        self.end_policy.before_clear(self.memory, scope.session_id, scope.user_id)
        self.history(scope).clear()

    async def aclear(self, *, session_id: str | None = None, user_id: str | None = None) -> None:
        """Async :meth:`clear`."""
        await in_thread(self.clear, session_id=session_id, user_id=user_id)
