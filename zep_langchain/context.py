"""Whose memory a call uses: fixed values, or the LangGraph run's own thread and context.

One compiled agent serves many conversations. LangGraph says which one a run
belongs to in two places, and the adapters read both:

- the **thread**: ``config={"configurable": {"thread_id": "..."}}``, which the
  checkpointer keys the conversation by, becomes the zep **session**;
- the **run context**: ``invoke(..., context=ZepContext(user_id="alice"))`` with
  ``create_agent(..., context_schema=ZepContext)`` names the **user** (the tenant)
  and, optionally, their name. Any context with a ``user_id`` attribute or key
  works (a dataclass, a TypedDict, a pydantic model): your own schema can carry
  more fields.

``ZepMemoryMiddleware`` reads the thread and the context from the ``Runtime``
LangGraph hands it; the memory tools read the context from their ``ToolRuntime``.
A ``user_id=``/``session_id=`` given when the adapter is built is used instead
(the explicit option). A call with no user at all is an error that says what to
pass; there is no shared default user. A context naming another user than the
one the adapter was built for is refused, never silently overridden.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from zep_core import ValidationError
from zep_core.validation import check_id

__all__ = ["Scope", "ScopeRule", "ZepContext", "thread_id_of"]


@dataclass(frozen=True)
class ZepContext:
    """The run context the LangChain adapters read: who the user is.

    Pass it as ``create_agent(..., context_schema=ZepContext)`` and give each run
    its user with ``agent.invoke(inputs, config=..., context=ZepContext(user_id="alice"))``
    (a plain ``{"user_id": "alice"}`` works too; LangGraph turns it into a ``ZepContext``).

    Args:
        user_id: the tenant whose memory the run reads and writes.
        user_name: the user's name: "I" in their messages resolves to it (optional).

    Example:
        >>> ZepContext(user_id="alice", user_name="Alice")
        ZepContext(user_id='alice', user_name='Alice')

    """

    user_id: str
    user_name: str | None = None


@dataclass(frozen=True)
class Scope:
    """The user (and the session, where one is needed) one call works for."""

    user_id: str
    user_name: str | None = None
    session_id: str | None = None


def _field(context: Any, name: str) -> Any:
    if context is None:
        return None
    if isinstance(context, Mapping):
        return context.get(name)
    return getattr(context, name, None)


def _current_runtime() -> Any:
    """The LangGraph runtime of the run this code is part of, or None outside a run."""
    try:
        from langgraph.runtime import get_runtime

        return get_runtime()
    except (RuntimeError, KeyError, ImportError):
        return None


def _current_config() -> Mapping[str, Any] | None:
    try:
        from langgraph.config import get_config

        return get_config()
    except (RuntimeError, ImportError):
        return None


def thread_id_of(runtime: Any = None) -> str | None:
    """The LangGraph thread id of the current run (``config["configurable"]["thread_id"]``), or None.

    Looks at the runtime's execution info, then at a ``ToolRuntime``'s ``config``,
    then at the run's config.
    """
    info = getattr(runtime, "execution_info", None)
    thread = getattr(info, "thread_id", None)
    if thread is None:
        config = getattr(runtime, "config", None)
        if not isinstance(config, Mapping):
            config = _current_config()
        configurable = (config or {}).get("configurable") or {}
        thread = configurable.get("thread_id") if isinstance(configurable, Mapping) else None
    if thread is None:
        return None
    return thread if isinstance(thread, str) else str(thread)


@dataclass(frozen=True)
class ScopeRule:
    """The fixed values an adapter was built with; what is left out comes from each run.

    Args:
        owner: the adapter's name, for error messages.
        user_id: a fixed user, or None to take it from the run context.
        user_name: a fixed user name, or None to take it from the run context.
        session_id: a fixed session, or None to take the run's thread id.

    Raises:
        zep_core.ValidationError: a fixed id that is not a non-empty string.

    """

    owner: str
    user_id: str | None = None
    user_name: str | None = None
    session_id: str | None = None

    def __post_init__(self) -> None:
        for what in ("user_id", "session_id"):
            value = getattr(self, what)
            if value is not None:
                try:
                    check_id(value, what)
                except ValidationError as exc:
                    raise ValidationError(f"{self.owner}: {exc} (or leave it out to take it from the run)") from None

    def _user(self, context: Any) -> str:
        given = _field(context, "user_id")
        if given is not None:
            try:
                check_id(given, "user_id")
            except ValidationError as exc:
                raise ValidationError(f"{self.owner}: the run context's {exc}") from None
        if self.user_id is not None:
            if given is not None and given != self.user_id:
                raise ValidationError(
                    f"{self.owner} was built for user_id={self.user_id!r} but the run context names "
                    f"user_id={given!r}; build it without user_id= to take the user from the context")
            return self.user_id
        if given is None:
            raise ValidationError(
                f"{self.owner} has no user for this call: build the agent with create_agent(..., "
                "context_schema=ZepContext) and run it with invoke(..., context=ZepContext(user_id='alice')) "
                "(any context with a user_id works), or pass user_id= when you build it")
        return given

    def _session(self, runtime: Any) -> str:
        if self.session_id is not None:
            return self.session_id
        thread = thread_id_of(runtime)
        if thread is None or not thread.strip():
            raise ValidationError(
                f"{self.owner} has no session for this call: run the agent with a checkpointer and "
                "config={'configurable': {'thread_id': '...'}} (the thread is the session), or pass "
                "session_id= when you build it")
        return check_id(thread, "thread_id")

    def scope(self, runtime: Any = None, *, session: bool = True) -> Scope:
        """The scope of a call made under ``runtime`` (a ``Runtime``/``ToolRuntime``; None: the current run).

        Args:
            runtime: what LangGraph handed the hook or tool; None looks up the current run.
            session: whether the call needs a session (the tools only need the user).

        Raises:
            zep_core.ValidationError: no user, a user other than the fixed one, or no session.

        """
        if runtime is None:
            runtime = _current_runtime()
        context = getattr(runtime, "context", None)
        user_id = self._user(context)
        user_name = self.user_name if self.user_name is not None else _field(context, "user_name")
        if user_name is not None and not isinstance(user_name, str):
            raise ValidationError(f"{self.owner}: the run context's user_name must be a string, got {user_name!r}")
        return Scope(user_id, user_name, self._session(runtime) if session else None)

    def fixed(self, *, session_id: str | None = None, user_id: str | None = None,
              user_name: str | None = None) -> Scope:
        """The scope for a call made outside a run (``end_conversation()``, ``clear()``): given or fixed values.

        Raises:
            zep_core.ValidationError: naming the value to pass.

        """
        for what, given, bound in (("user_id", user_id, self.user_id), ("session_id", session_id, self.session_id)):
            if given is not None and bound is not None and given != bound:
                raise ValidationError(f"{self.owner} was built for {what}={bound!r}, not {given!r}")
        user = user_id or self.user_id
        session = session_id or self.session_id
        if user is None or session is None:
            missing = " and ".join(n for n, v in (("session_id", session), ("user_id", user)) if v is None)
            raise ValidationError(f"{self.owner} takes its session and user from each run; outside a run pass "
                                  f"{missing}= (the thread id and the user of the conversation)")
        return Scope(check_id(user, "user_id"), user_name or self.user_name, check_id(session, "session_id"))
