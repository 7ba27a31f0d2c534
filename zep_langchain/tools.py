"""Memory tools for agents: search_memory, entity_history, related_entities.

The tools, their descriptions and their arguments are the core's table
(:mod:`zep_core.tools`), from which the LlamaIndex tools and the MCP server are built
too, and :class:`zep_core.tools.MemoryTools` writes their answers: text for the
model. An unknown entity, a user with no memory yet, or a value memory refuses comes
back as a helpful sentence, never an exception, so the agent can try something else;
arguments the schema refuses (``limit=0``) raise LangChain's validation error, which a
tool node hands back to the model.

Whose memory a tool reads: the ``user_id`` it was built with, or else the user of
the run that calls it, from the ``ToolRuntime`` LangGraph's tool node injects
(``runtime.context.user_id``; see :mod:`zep_langchain.context`). The model never
sees or sets that argument. A call with no user at all raises
:class:`zep_core.ValidationError`: that is a wiring mistake, not something the
model can fix.
"""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.tools import ArgsSchema, BaseTool, InjectedToolArg
from pydantic import BaseModel, Field, PlainSerializer, SkipValidation, create_model
from zep_core.tools import ENTITY_HISTORY, RELATED_ENTITIES, SEARCH_MEMORY, MemoryTools, ToolSpec, tool_spec

from ._memory import MemoryLike
from .context import ScopeRule

__all__ = [
    "EntityHistoryInput",
    "EntityInput",
    "InjectedRuntime",
    "RelatedEntitiesInput",
    "SearchMemoryInput",
    "ZepEntityHistoryTool",
    "ZepRelatedEntitiesTool",
    "ZepSearchMemoryTool",
    "create_memory_tools",
]


#: The ``runtime`` argument of the tools: LangGraph's tool node fills it with the
#: run's ``ToolRuntime`` (by its name, ``runtime``); it is hidden from the model, and a
#: value the model sends for it is dropped.
InjectedRuntime = Annotated[Any, SkipValidation, InjectedToolArg, PlainSerializer(lambda _: None)]


def _input(spec: ToolSpec, name: str) -> type[BaseModel]:
    """The tool's arguments from the core's table, and the hidden ``runtime``."""
    return create_model(name, __base__=spec.arguments_model(), __doc__=f"Arguments of ``{spec.name}``.",
                        runtime=(InjectedRuntime, None))


SearchMemoryInput = _input(SEARCH_MEMORY, "SearchMemoryInput")
EntityHistoryInput = _input(ENTITY_HISTORY, "EntityHistoryInput")
RelatedEntitiesInput = _input(RELATED_ENTITIES, "RelatedEntitiesInput")
#: The former name of :data:`EntityHistoryInput` (``related_entities`` now takes a ``limit`` too).
EntityInput = EntityHistoryInput


class _MemoryTool(BaseTool):
    """Common fields: the memory, the tenant and the user's name (fixed, or from the run)."""

    memory: MemoryLike = Field(exclude=True)
    user_id: str | None = Field(default=None, min_length=1)
    user_name: str | None = None

    def _answers(self, runtime: Any) -> MemoryTools:
        """The answers for the user this call is for: the fixed one, or the run's (``ToolRuntime.context``)."""
        rule = ScopeRule(f"the {self.name} tool", user_id=self.user_id, user_name=self.user_name)
        scope = rule.scope(runtime, session=False)
        return MemoryTools(self.memory, user_id=scope.user_id, user_name=scope.user_name)

    def _arguments(self, args: tuple[Any, ...], arguments: dict[str, Any]) -> dict[str, Any]:
        """The call's arguments by name (a plain string input comes as the first one, positionally)."""
        return {**dict(zip((a.name for a in tool_spec(self.name).args), args)), **arguments}

    def _run(self, *args: Any, runtime: Any = None, **arguments: Any) -> str:
        return self._answers(runtime).answer(self.name, self._arguments(args, arguments))

    async def _arun(self, *args: Any, runtime: Any = None, **arguments: Any) -> str:
        return await self._answers(runtime).aanswer(self.name, self._arguments(args, arguments))


class ZepSearchMemoryTool(_MemoryTool):
    """``search_memory``: the user's facts most relevant to a query, true now or at ``as_of``.

    Example:
        >>> tool = ZepSearchMemoryTool(memory=memory, user_id="alice")      # doctest: +SKIP
        >>> print(tool.invoke({"query": "Where does Alice live?"}))
        Facts in memory for "Where does Alice live?" (true now, most relevant first):
        - Alice lives in Berlin. (valid from 2024-01-31)

    """

    name: str = SEARCH_MEMORY.name
    description: str = SEARCH_MEMORY.description
    args_schema: ArgsSchema | None = SearchMemoryInput


class ZepEntityHistoryTool(_MemoryTool):
    """``entity_history``: every fact about an entity, superseded ones too, oldest first.

    Example:
        >>> tool = ZepEntityHistoryTool(memory=memory, user_id="alice")     # doctest: +SKIP
        >>> print(tool.invoke({"entity_name": "Alice"}))
        History of Alice (oldest first, including facts no longer true):
        - Alice lives in Paris. (valid 2024-01-01 to 2024-03-01; superseded)
        - Alice lives in Berlin. (valid 2024-03-01 to now; current)

    """

    name: str = ENTITY_HISTORY.name
    description: str = ENTITY_HISTORY.description
    args_schema: ArgsSchema | None = EntityHistoryInput


class ZepRelatedEntitiesTool(_MemoryTool):
    """``related_entities``: entities within two hops of an entity in the knowledge graph.

    Example:
        >>> ZepRelatedEntitiesTool(memory=memory, user_id="alice").invoke({"entity_name": "Alice"})  # doctest: +SKIP
        'Entities connected to Alice (within 2 hops): Berlin (place), Acme (organization)'

    """

    name: str = RELATED_ENTITIES.name
    description: str = RELATED_ENTITIES.description
    args_schema: ArgsSchema | None = RelatedEntitiesInput


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
