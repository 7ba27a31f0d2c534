"""Memory tools for LlamaIndex agents: search, entity history, related entities.

Each tool answers in plain text an LLM can read; a question about something memory
does not know gets a sentence saying so, not an exception.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from llama_index.core.tools import FunctionTool
from zep_core import Fact, Memory, NotFoundError
from zep_core.sessions import context_for

__all__ = ["create_memory_tools"]


def _span(fact: Fact) -> str:
    until = fact.valid_until.date().isoformat() if fact.valid_until else "now"
    return f"{fact.valid_from.date().isoformat()} .. {until}"


def _history_lines(facts: list[Fact]) -> str:
    canonical = [f for f in facts if f.predicate != "statement"] or facts
    return "\n".join(f"- {_span(f)}: {f.content}{' (superseded)' if f.superseded_by else ''}" for f in canonical)


def _asyncified(fn: Callable[[str], str]) -> Callable[..., Any]:
    async def run(*args: Any, **kwargs: Any) -> str:
        return await asyncio.to_thread(fn, *args, **kwargs)

    return run


def create_memory_tools(memory: Memory, *, user_id: str = "default", user_name: str | None = None,
                        top_k: int | None = None) -> list[FunctionTool]:
    """Tools that let an agent query a user's memory.

    Args:
        memory: an open :class:`zep_core.Memory`.
        user_id: the tenant the tools read (and only that one).
        user_name: who "I" is in a search (default: the memory's ``default_speaker``).
        top_k: how many facts a search returns (default: the memory's ``context_limit``).

    Returns:
        ``search_memory(query)``, ``entity_history(entity)`` and ``related_entities(entity)``.

    Example:
        >>> from llama_index.core.agent.workflow import FunctionAgent
        >>> tools = create_memory_tools(memory, user_id="ada", user_name="Ada")
        >>> agent = FunctionAgent(tools=tools, llm=llm)                            # doctest: +SKIP

    """
    if not isinstance(memory, Memory):
        raise TypeError(f"memory must be an open zep_core.Memory, got {type(memory).__name__}")

    def search_memory(query: str) -> str:
        """Search long-term memory for facts about the user that are true now, with the dates they became true."""
        block = context_for(memory, query, user_id=user_id, user_name=user_name, limit=top_k)
        return block or "Memory holds nothing relevant to that."

    def entity_history(entity: str) -> str:
        """Every fact memory ever held about an entity, oldest first, superseded ones marked."""
        try:
            facts = memory.entity_history(entity, user_id=user_id)
        except NotFoundError:
            return f"Memory knows nothing about {entity!r}."
        return _history_lines(facts) or f"Memory holds no facts about {entity!r}."

    def related_entities(entity: str) -> str:
        """Entities connected to an entity within two hops in memory's knowledge graph."""
        try:
            found = memory.related_entities(entity, user_id=user_id)
        except NotFoundError:
            return f"Memory knows nothing about {entity!r}."
        return ", ".join(f"{e.name} ({e.entity_type})" for e in found) or f"Nothing is related to {entity!r}."

    return [FunctionTool.from_defaults(fn=fn, async_fn=_asyncified(fn), name=fn.__name__, description=fn.__doc__)
            for fn in (search_memory, entity_history, related_entities)]
