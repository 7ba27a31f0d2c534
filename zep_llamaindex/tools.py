"""Memory tools for LlamaIndex agents: search, entity history, related entities.

The tools, their descriptions and their arguments are the core's table
(:mod:`zep_core.tools`), from which the LangChain tools and the MCP server are built
too, and :class:`zep_core.tools.MemoryTools` writes their answers: plain text an LLM
can read. A question about something memory does not know, or a bad argument, gets a
sentence saying so, not an exception.

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

from typing import Any, Optional

from llama_index.core.tools import FunctionTool
from llama_index.core.workflow import Context
from zep_core import ValidationError
from zep_core.sessions import check_memory
from zep_core.tools import READ_TOOLS, SEARCH_MEMORY, MemoryTools, ToolSpec

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
        top_k: how many facts a search returns when the model gives no ``limit`` (1-50;
            default: the tools' table, 5).

    Returns:
        ``search_memory(query, limit, as_of)``, ``entity_history(entity_name)`` and
        ``related_entities(entity_name, limit)``: the tools of :data:`zep_core.tools.READ_TOOLS`.

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
    search = SEARCH_MEMORY
    if top_k is not None:
        try:
            search = SEARCH_MEMORY.with_default("limit", top_k)
        except ValidationError as exc:
            raise ValidationError(f"top_k is search_memory's default limit: {exc}, got {top_k!r}") from None
    specs = [search if spec is SEARCH_MEMORY else spec for spec in READ_TOOLS]
    return [_tool(spec, memory, user_id, user_name) for spec in specs]


def _tool(spec: ToolSpec, memory: Any, user_id: Optional[str], user_name: Optional[str]) -> FunctionTool:
    """One tool of the core's table: its schema from the table, its answer from ``MemoryTools``.

    LlamaIndex calls a tool with the arguments the model gave, as they are (its schema
    checks nothing): ``MemoryTools`` checks them and fills in the defaults of ``spec``.
    """
    if user_id is not None:  # one user's memory; the tools work outside an agent too
        answers = MemoryTools(memory, user_id=user_id, user_name=user_name)

        def answer(**arguments: Any) -> str:
            return answers.answer(spec, arguments)

        async def aanswer(**arguments: Any) -> str:
            return await answers.aanswer(spec, arguments)

        return FunctionTool.from_defaults(fn=answer, async_fn=aanswer, name=spec.name, description=spec.description,
                                          fn_schema=spec.arguments_model())

    async def answer_for(ctx: Context, **arguments: Any) -> str:
        user, found_name = await user_from_context(ctx)
        answers = MemoryTools(memory, user_id=user, user_name=user_name or found_name)
        return await answers.aanswer(spec, arguments)

    return FunctionTool.from_defaults(async_fn=answer_for, name=spec.name, description=spec.description,
                                      fn_schema=spec.arguments_model())
