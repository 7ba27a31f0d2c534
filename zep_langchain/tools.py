"""Memory tools for agents: search_memory, entity_history, related_entities.

Each tool answers with text for the model. An unknown entity, a user with no
memory yet, or bad arguments come back as a helpful sentence, never an exception,
so the agent can try something else.

Whose memory a tool reads: the ``user_id`` it was built with, or else the user of
the run that calls it, from the ``ToolRuntime`` LangGraph's tool node injects
(``runtime.context.user_id``; see :mod:`zep_langchain.context`). The model never
sees or sets that argument. A call with no user at all raises
:class:`zep_core.ValidationError`: that is a wiring mistake, not something the
model can fix.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from langchain_core.tools import ArgsSchema, BaseTool, InjectedToolArg
from pydantic import BaseModel, Field, PlainSerializer, SkipValidation
from zep_core import Fact, NotFoundError, ValidationError
from zep_core.aio import in_thread
from zep_core.render import facts_answer, history_answer, related_answer
from zep_core.resolve import speaker_of
from zep_core.sessions import afacts_for, facts_for

from ._memory import MemoryLike
from .context import Scope, ScopeRule

__all__ = [
    "EntityInput",
    "InjectedRuntime",
    "SearchMemoryInput",
    "ZepEntityHistoryTool",
    "ZepRelatedEntitiesTool",
    "ZepSearchMemoryTool",
    "create_memory_tools",
]

_SELF_WORDS = frozenset({"i", "me", "myself", "user", "the user"})


#: The ``runtime`` argument of the tools: LangGraph's tool node fills it with the
#: run's ``ToolRuntime`` (by its name, ``runtime``); it is hidden from the model, and a
#: value the model sends for it is dropped.
InjectedRuntime = Annotated[Any, SkipValidation, InjectedToolArg, PlainSerializer(lambda _: None)]


class SearchMemoryInput(BaseModel):
    """Arguments of ``search_memory``."""

    query: str = Field(description="What to look for, e.g. 'Where does the user live?'")
    k: int = Field(default=5, ge=1, le=50, description="How many facts at most")
    runtime: InjectedRuntime = None


class EntityInput(BaseModel):
    """Arguments of ``entity_history`` and ``related_entities``."""

    entity: str = Field(description="The name of a person, place or thing, e.g. 'Alice'; 'me' means the user")
    runtime: InjectedRuntime = None


class _MemoryTool(BaseTool):
    """Common fields: the memory, the tenant and the user's name (fixed, or from the run)."""

    memory: MemoryLike = Field(exclude=True)
    user_id: str | None = Field(default=None, min_length=1)
    user_name: str | None = None

    def _scope(self, runtime: Any) -> Scope:
        """The user this call is for: the fixed one, or the run's (``ToolRuntime.context``)."""
        rule = ScopeRule(f"the {self.name} tool", user_id=self.user_id, user_name=self.user_name)
        return rule.scope(runtime, session=False)

    def _entity(self, name: str, scope: Scope) -> str:
        if name.strip().casefold() in _SELF_WORDS:
            return speaker_of(scope.user_name, default=self.memory.config.default_speaker)
        return name

    def _lookup(self, query: Callable[..., list], name: str, action: str, scope: Scope) -> list | str:
        """Run an entity query for the user; a missing entity or bad input becomes a message."""
        try:
            return query(name, user_id=scope.user_id)
        except NotFoundError:
            return f"No entity named {name!r} in memory. Check the spelling, or use search_memory to look by topic."
        except ValidationError as exc:
            return f"Could not {action}: {exc}"

    def _no_memory(self, scope: Scope) -> str | None:
        if self.memory.has_user(scope.user_id):
            return None
        return "Nothing is stored in memory for this user yet."


class ZepSearchMemoryTool(_MemoryTool):
    """``search_memory``: the user's current facts most relevant to a query.

    Example:
        >>> tool = ZepSearchMemoryTool(memory=memory, user_id="alice")      # doctest: +SKIP
        >>> print(tool.invoke({"query": "Where does Alice live?"}))
        Facts in memory for "Where does Alice live?" (true now, most relevant first):
        - Alice lives in Berlin. (valid from 2024-01-31)

    """

    name: str = "search_memory"
    description: str = (
        "Search long-term memory for facts about the user and what they said in earlier conversations. "
        "Returns the facts that are true now, most relevant first, with the date each became true.")
    args_schema: ArgsSchema | None = SearchMemoryInput

    def _run(self, query: str, k: int = 5, runtime: Any = None) -> str:
        scope = self._scope(runtime)
        if (empty := self._no_memory(scope)) is not None:
            return empty
        try:
            facts = facts_for(self.memory, query, user_id=scope.user_id, user_name=scope.user_name, limit=k)
        except ValidationError as exc:
            return f"Could not search memory: {exc}"
        return self._found(query, facts)

    async def _arun(self, query: str, k: int = 5, runtime: Any = None) -> str:
        scope = self._scope(runtime)
        if (empty := await in_thread(self._no_memory, scope)) is not None:
            return empty
        try:  # the search itself is native on a RemoteMemory
            facts = await afacts_for(self.memory, query, user_id=scope.user_id, user_name=scope.user_name, limit=k)
        except ValidationError as exc:
            return f"Could not search memory: {exc}"
        return self._found(query, facts)

    @staticmethod
    def _found(query: str, facts: list[Fact]) -> str:
        if not facts:
            return f"No facts in memory match {query!r}. Try other words, or entity_history with a name."
        return facts_answer(query, facts)


class ZepEntityHistoryTool(_MemoryTool):
    """``entity_history``: every fact about an entity, superseded ones too, oldest first.

    Example:
        >>> tool = ZepEntityHistoryTool(memory=memory, user_id="alice")     # doctest: +SKIP
        >>> print(tool.invoke({"entity": "Alice"}))
        History of Alice (oldest first, including facts no longer true):
        - Alice lives in Paris. (valid 2024-01-01 to 2024-03-01; superseded)
        - Alice lives in Berlin. (valid 2024-03-01 to now; current)

    """

    name: str = "entity_history"
    description: str = (
        "The timeline of a person, place or thing: every fact ever learned about it, including facts that "
        "are no longer true, oldest first, with the dates each was valid. Use it for 'where did I live "
        "before?' or 'what changed?'.")
    args_schema: ArgsSchema | None = EntityInput

    def _run(self, entity: str, runtime: Any = None) -> str:
        scope = self._scope(runtime)
        if (empty := self._no_memory(scope)) is not None:
            return empty
        name = self._entity(entity, scope)
        facts = self._lookup(self.memory.entity_history, name, "read the history", scope)
        if isinstance(facts, str):
            return facts
        if not facts:
            return f"Memory knows the name {name!r} but holds no facts about it."
        return history_answer(name, facts)

    async def _arun(self, entity: str, runtime: Any = None) -> str:
        return await in_thread(self._run, entity, runtime)


class ZepRelatedEntitiesTool(_MemoryTool):
    """``related_entities``: entities within two hops of an entity in the knowledge graph.

    Example:
        >>> ZepRelatedEntitiesTool(memory=memory, user_id="alice").invoke({"entity": "Alice"})  # doctest: +SKIP
        'Entities connected to Alice (within 2 hops): Berlin (place), Acme (organization)'

    """

    name: str = "related_entities"
    description: str = (
        "People, places and things connected to an entity in the memory's knowledge graph (up to two hops "
        "away). Use it to explore what memory knows around a name.")
    args_schema: ArgsSchema | None = EntityInput

    def _run(self, entity: str, runtime: Any = None) -> str:
        scope = self._scope(runtime)
        if (empty := self._no_memory(scope)) is not None:
            return empty
        name = self._entity(entity, scope)
        related = self._lookup(self.memory.related_entities, name, "look up related entities", scope)
        if isinstance(related, str):
            return related
        if not related:
            return f"Nothing in memory is connected to {name}."
        return related_answer(name, related)

    async def _arun(self, entity: str, runtime: Any = None) -> str:
        return await in_thread(self._run, entity, runtime)


def create_memory_tools(memory: Any, *, user_id: str | None = None, user_name: str | None = None) -> list[BaseTool]:
    """The three memory tools, ready for ``create_agent(model, tools=...)``.

    Without ``user_id`` each call uses the user of the run that makes it (the
    ``ToolRuntime``'s context: ``create_agent(..., context_schema=ZepContext)`` and
    ``invoke(..., context=ZepContext(user_id=...))``), so one agent serves every user.
    With ``user_id`` the tools are bound to that user (and refuse a run for another).

    Args:
        memory: the :class:`zep_core.Memory` (or a ``RemoteMemory``).
        user_id: a fixed user, or None to take it from each run.
        user_name: a fixed user name, or None to take it from each run's context.

    Example:
        >>> tools = create_memory_tools(memory)                              # doctest: +SKIP
        >>> [t.name for t in tools]
        ['search_memory', 'entity_history', 'related_entities']

    """
    fields = {"memory": memory, "user_id": user_id, "user_name": user_name}
    return [ZepSearchMemoryTool(**fields), ZepEntityHistoryTool(**fields), ZepRelatedEntitiesTool(**fields)]
