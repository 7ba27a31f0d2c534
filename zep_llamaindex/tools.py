"""Memory tools for LlamaIndex agents: search, entity history, related entities.

Each tool answers in plain text an LLM can read; a question about something memory
does not know gets a sentence saying so, not an exception.

Whose memory a tool reads is fixed (``create_memory_tools(memory, user_id="ada")``) or,
with no ``user_id``, taken from the run's workflow ``Context`` — so one agent serves
many users, each run with its own Context. The user is, in this order:

1. ``user_id`` in the Context's store (``await ctx.store.set("user_id", "ada")``);
2. ``user_id`` in the agent's state (``initial_state={"user_id": "ada"}``, or
   ``ctx.store["state"]``);
3. the ``user_id`` of the :class:`~zep_llamaindex.ZepMemory` the run uses
   (``agent.run(..., memory=ZepMemory(..., user_id="ada"))``).

``user_name`` is looked up the same way. A run with none of them gets a tool error
saying what to set — never another user's memory, never a shared default.
"""

# No ``from __future__ import annotations`` here: LlamaIndex finds the ``ctx: Context``
# parameter of a tool by comparing the annotation with the class itself.

from collections.abc import Awaitable, Callable
from typing import Any, Optional

from llama_index.core.tools import FunctionTool
from llama_index.core.workflow import Context
from zep_core import NotFoundError, ValidationError
from zep_core.aio import in_thread
from zep_core.render import history_answer, related_answer
from zep_core.sessions import acontext_for, check_memory, context_for

__all__ = ["create_memory_tools", "user_from_context"]


async def user_from_context(ctx: Context) -> tuple[str, Optional[str]]:
    """The ``(user_id, user_name)`` a run's Context names (see the module docstring for the order).

    Raises:
        zep_core.ValidationError: the Context names no user.

    """
    store = ctx.store
    state = await store.get("state", default=None)
    state = state if isinstance(state, dict) else {}
    memory = await store.get("memory", default=None)
    found: dict[str, Any] = {}
    for key in ("user_id", "user_name"):
        found[key] = await store.get(key, default=None) or state.get(key) or getattr(memory, key, None)
    user_id = found["user_id"]
    if not isinstance(user_id, str) or not user_id.strip():
        raise ValidationError("the memory tools do not know whose memory to read: pass user_id= to "
                              "create_memory_tools, or name the user in the run's Context "
                              "(await ctx.store.set('user_id', ...), the agent state's 'user_id', or a ZepMemory)")
    name = found["user_name"]
    return user_id, name if isinstance(name, str) and name.strip() else None


def create_memory_tools(memory: Any, *, user_id: Optional[str] = None, user_name: Optional[str] = None,
                        top_k: Optional[int] = None) -> list[FunctionTool]:
    """Tools that let an agent query a user's memory.

    Args:
        memory: an open :class:`zep_core.Memory` (or a ``zep_core.server.RemoteMemory``).
        user_id: the tenant the tools read (and only that one); None takes it from each
            run's workflow Context (see the module docstring).
        user_name: who "I" is in a search (default: from the Context, else the memory's
            ``default_speaker``).
        top_k: how many facts a search returns (default: the memory's ``context_limit``).

    Returns:
        ``search_memory(query)``, ``entity_history(entity)`` and ``related_entities(entity)``.

    Example:
        >>> from llama_index.core.agent.workflow import FunctionAgent
        >>> tools = create_memory_tools(memory)          # each run's Context says whose memory
        >>> agent = FunctionAgent(tools=tools, llm=llm)                            # doctest: +SKIP
        >>> ctx = Context(agent)                                                   # doctest: +SKIP
        >>> await ctx.store.set("user_id", "ada")                                  # doctest: +SKIP
        >>> await agent.run(user_msg="Where do I live?", ctx=ctx)                  # doctest: +SKIP

    """
    check_memory(memory)
    if user_id is not None and (not isinstance(user_id, str) or not user_id.strip()):
        raise ValidationError(f"user_id must be a non-empty string (or None: from the run's Context), got {user_id!r}")

    def search(user: str, name: Optional[str], query: str) -> str:
        block = context_for(memory, query, user_id=user, user_name=name, limit=top_k)
        return block or "Memory holds nothing relevant to that."

    async def asearch(user: str, name: Optional[str], query: str) -> str:  # native on a RemoteMemory
        block = await acontext_for(memory, query, user_id=user, user_name=name, limit=top_k)
        return block or "Memory holds nothing relevant to that."

    def history(user: str, name: Optional[str], entity: str) -> str:
        try:
            facts = memory.entity_history(entity, user_id=user)
        except NotFoundError:
            return f"Memory knows nothing about {entity!r}."
        return history_answer(entity, facts) if facts else f"Memory holds no facts about {entity!r}."

    def related(user: str, name: Optional[str], entity: str) -> str:
        try:
            found = memory.related_entities(entity, user_id=user)
        except NotFoundError:
            return f"Memory knows nothing about {entity!r}."
        return related_answer(entity, found) if found else f"Nothing is related to {entity!r}."

    if user_id is not None:  # one user's memory; the tools work outside an agent too
        def search_memory(query: str) -> str:
            return search(user_id, user_name, query)

        async def asearch_memory(query: str) -> str:
            return await asearch(user_id, user_name, query)

        def entity_history(entity: str) -> str:
            return history(user_id, user_name, entity)

        def related_entities(entity: str) -> str:
            return related(user_id, user_name, entity)

        return [FunctionTool.from_defaults(fn=fn, async_fn=afn or _asyncified(fn), name=fn.__name__,
                                           description=_DESCRIPTIONS[fn.__name__])
                for fn, afn in ((search_memory, asearch_memory), (entity_history, None), (related_entities, None))]

    async def in_context(ctx: Context, answer: Callable[[str, Optional[str], str], str], text: str) -> str:
        user, found_name = await user_from_context(ctx)
        return await in_thread(answer, user, user_name or found_name, text)

    async def search_memory_for(ctx: Context, query: str) -> str:
        user, found_name = await user_from_context(ctx)
        return await asearch(user, user_name or found_name, query)

    async def entity_history_for(ctx: Context, entity: str) -> str:
        return await in_context(ctx, history, entity)

    async def related_entities_for(ctx: Context, entity: str) -> str:
        return await in_context(ctx, related, entity)

    return [FunctionTool.from_defaults(async_fn=fn, name=name, description=_DESCRIPTIONS[name])
            for name, fn in (("search_memory", search_memory_for), ("entity_history", entity_history_for),
                             ("related_entities", related_entities_for))]


_DESCRIPTIONS = {
    "search_memory": "Search long-term memory for facts about the user that are true now, with the dates they "
                     "became true.",
    "entity_history": "Every fact memory ever held about an entity, oldest first, superseded ones marked.",
    "related_entities": "Entities connected to an entity within two hops in memory's knowledge graph.",
}


def _asyncified(fn: Callable[[str], str]) -> Callable[..., Awaitable[str]]:
    async def run(*args: Any, **kwargs: Any) -> str:
        return await in_thread(fn, *args, **kwargs)

    return run
