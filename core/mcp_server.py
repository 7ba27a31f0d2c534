"""An MCP server over one user's memory: ``zep-memory mcp``, on the official ``mcp`` SDK (extra ``[mcp]``).

An MCP host (Claude Desktop, an IDE, any agent speaking the Model Context Protocol)
starts it over stdio, or reaches it over streamable HTTP with an API key
(:mod:`zep_core.mcp_http`), and gets these tools:

* ``search_memory(query, limit=5, as_of=None)`` — the user's facts that are true now
  (or were true at ``as_of``), most relevant first, with the date each became true;
* ``entity_history(entity_name)`` — every fact about an entity, oldest first, superseded ones marked;
* ``related_entities(entity_name, limit=10)`` — entities within two hops in the graph;
* ``add_conversation(messages, session_id=None)`` — store a finished conversation
  (the ``conversation_end`` handler: facts learned, older ones superseded);
* ``forget(confirm_user_id)`` — delete everything memory holds about the user; registered only
  when the server is started with ``allow_forget`` (an administrator's choice, never the model's).

The tools, their descriptions and arguments are the table of :mod:`zep_core.tools`, which the
LangChain and LlamaIndex tools are built from too, and :class:`~zep_core.tools.MemoryTools`
answers them.

The server is scoped to **one user**, fixed when it starts: no tool takes a user id, so a
model can reach no other tenant's memory. It runs over a :class:`~zep_core.Memory` on a
data folder, or over a :class:`~zep_core.server.RemoteMemory` client of ``zep-memory
serve`` (anything with the same verbs). Bad arguments and unknown entities come back as
a sentence the model can act on; other failures as an MCP tool error with the library's
message, never a traceback.

Example:
    >>> server = create_mcp_server(memory, user_id="alice", user_name="Alice")   # doctest: +SKIP
    >>> server.run("stdio")                                                      # doctest: +SKIP

"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .errors import ConfigError, ZepMemoryError, install_hint
from .tools import MEMORY_TOOLS, MemoryTools, ToolSpec
from .validation import check_id

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

__all__ = ["Unavailable", "create_mcp_server"]


def _import_sdk() -> Any:
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError as exc:  # the extra is missing, or mcp 1.x (FastMCP) is installed
        raise ConfigError(f"the MCP server needs the official mcp SDK 2.x: {install_hint('mcp')}; "
                          f"import failed: {exc}") from None
    return MCPServer, ToolError


class Unavailable:
    """A memory that cannot serve (the service refused the key, or cannot be reached): every call raises why.

    ``zep-memory mcp --url`` serves its tools over one when the service refuses it at start, so
    that the host's client reads what is wrong in each tool's answer instead of a closed
    connection.
    """

    def __init__(self, error: ZepMemoryError) -> None:
        from .config import MemoryConfig

        self.error, self.config = error, MemoryConfig()

    def __getattr__(self, name: str) -> Any:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise self.error

        return refuse


def create_mcp_server(memory: Any, *, user_id: str, user_name: str | None = None, allow_forget: bool = False,
                      name: str = "zep-memory") -> MCPServer:
    """An MCP server whose tools read and write ``user_id``'s memory only.

    Args:
        memory: an open :class:`~zep_core.Memory`, or a ``RemoteMemory`` client.
        user_id: the one tenant every tool is scoped to.
        user_name: who "I"/"me" is in searches and in stored user messages
            (default: the memory's ``default_speaker``).
        allow_forget: register the ``forget`` tool (it deletes the user's whole memory).
        name: the server name the host sees.

    Raises:
        ConfigError: the ``mcp`` extra is not installed.
        ValidationError: ``user_id`` is not a valid id.

    """
    check_id(user_id, "user_id")
    MCPServer, ToolError = _import_sdk()
    tools = MemoryTools(memory, user_id=user_id, user_name=user_name)
    server = MCPServer(name, instructions=(
        f"Long-term memory of the user {tools.speaker!r}: facts learned from earlier conversations, each with when "
        "it became true and what replaced it. Search before answering questions about the user; store finished "
        "conversations with add_conversation."))

    def serve(spec: ToolSpec) -> Callable[..., str]:
        def tool(**arguments: Any) -> str:
            try:
                return tools.answer(spec.name, arguments)
            except ZepMemoryError as exc:  # not the model's to fix: an MCP tool error with the library's message
                raise ToolError(" ".join(str(exc).split()) or type(exc).__name__) from None

        tool.__name__ = tool.__qualname__ = spec.name
        tool.__signature__ = spec.signature()  # type: ignore[attr-defined]  # the SDK reads the arguments here
        return tool

    for spec in MEMORY_TOOLS:
        if allow_forget or not spec.destructive:
            server.add_tool(serve(spec), name=spec.name, description=spec.description)
    return server
