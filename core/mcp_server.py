"""An MCP server over one user's memory: ``zep-memory mcp``, on the official ``mcp`` SDK (extra ``[mcp]``).

An MCP host (Claude Desktop, an IDE, any agent speaking the Model Context Protocol)
starts it over stdio, or reaches it over streamable HTTP, and gets these tools:

* ``search_memory(query, limit=5, as_of=None)`` — the user's facts that are true now
  (or were true at ``as_of``), most relevant first, with the date each became true;
* ``entity_history(entity)`` — every fact about an entity, oldest first, superseded ones marked;
* ``related_entities(entity, limit=10)`` — entities within two hops in the graph;
* ``add_conversation(messages, session_id=None)`` — store a finished conversation
  (the ``conversation_end`` handler: facts learned, older ones superseded);
* ``forget()`` — delete everything memory holds about the user; registered only when
  the server is started with ``allow_forget`` (an administrator's choice, never the model's).

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

from typing import TYPE_CHECKING, Any

from .errors import ConfigError, NotFoundError, ValidationError, ZepMemoryError, install_hint
from .models import new_id
from .render import facts_answer, history_answer, related_answer
from .resolve import speaker_of
from .validation import check_id

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

__all__ = ["Unavailable", "create_mcp_server"]

_SELF_WORDS = frozenset({"i", "me", "myself", "user", "the user"})


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
    speaker = speaker_of(user_name, default=memory.config.default_speaker)
    server = MCPServer(name, instructions=(
        f"Long-term memory of the user {speaker!r}: facts learned from earlier conversations, each with when it "
        "became true and what replaced it. Search before answering questions about the user; store finished "
        "conversations with add_conversation."))

    def fail(exc: ZepMemoryError) -> Exception:
        return ToolError(" ".join(str(exc).split()) or type(exc).__name__)

    def entity(name_: str) -> str:
        return speaker if name_.strip().casefold() in _SELF_WORDS else name_

    def about(target: str, action: str, query: Any, **options: Any) -> Any:
        """``query(target, user_id=…)``; an unknown entity or bad input comes back as the sentence to return."""
        try:
            return query(target, user_id=user_id, **options)
        except NotFoundError:
            return f"No entity named {target!r} in memory. Check the spelling, or use search_memory."
        except ValidationError as exc:
            return f"Could not {action}: {exc}"
        except ZepMemoryError as exc:
            raise fail(exc) from None

    @server.tool()
    def search_memory(query: str, limit: int = 5, as_of: str | None = None) -> str:
        """Search long-term memory for facts about the user that are true now, most relevant first.

        Args:
            query: what to look for, e.g. "Where does the user live?".
            limit: how many facts at most (1-50).
            as_of: an ISO date or time (e.g. "2024-01-31") to ask what was true then instead of now.

        """
        if not 1 <= limit <= 50:
            return "limit must be between 1 and 50."
        try:
            if not memory.has_user(user_id):
                return "Nothing is stored in memory for this user yet."
            facts = memory.get_context(query, user_id=user_id, limit=limit, as_of=as_of, speaker=speaker)
        except ValidationError as exc:
            return f"Could not search memory: {exc}"
        except ZepMemoryError as exc:
            raise fail(exc) from None
        if not facts:
            return f"No facts in memory match {query!r}. Try other words, or entity_history with a name."
        return facts_answer(query, facts, as_of=as_of or None)

    @server.tool()
    def entity_history(entity_name: str) -> str:
        """Every fact memory ever held about a person, place or thing, oldest first, superseded ones marked.

        Args:
            entity_name: a name, e.g. "Alice"; "me" means the user.

        """
        target = entity(entity_name)
        facts = about(target, "read the history", memory.entity_history)
        if isinstance(facts, str):
            return facts
        if not facts:
            return f"Memory knows the name {target!r} but holds no facts about it."
        return history_answer(target, facts)

    @server.tool()
    def related_entities(entity_name: str, limit: int = 10) -> str:
        """Entities connected to a person, place or thing within two hops in memory's graph.

        Args:
            entity_name: a name, e.g. "Alice"; "me" means the user.
            limit: how many entities at most (1-100).

        """
        target = entity(entity_name)
        if not 1 <= limit <= 100:
            return "limit must be between 1 and 100."
        found = about(target, "find related entities", memory.related_entities, limit=limit)
        if isinstance(found, str):
            return found
        if not found:
            return f"Nothing in memory is connected to {target}."
        return related_answer(target, found)

    @server.tool()
    def add_conversation(messages: list[dict[str, Any]], session_id: str | None = None) -> str:
        """Store a finished conversation in long-term memory: its facts are learned, older ones superseded.

        Args:
            messages: the turns in order, each {"role": "user" | "assistant", "content": "...",
                optional "name" and ISO "timestamp"}; user turns without a name are the user's.
            session_id: the conversation's id (default: a new one).

        """
        turns = []
        for m in messages:
            if isinstance(m, dict) and m.get("role", "user") == "user" and not m.get("name"):
                m = {**m, "name": speaker}
            turns.append(m)
        session = session_id or f"mcp-{new_id()}"
        try:
            result = memory.conversation_end(session, turns, user_id=user_id)
        except ValidationError as exc:
            return f"Nothing was stored: {exc}"
        except ZepMemoryError as exc:
            raise fail(exc) from None
        if result.status == "duplicate":
            return f"Already stored (episode {result.episode_id}); nothing changed."
        lines = [f"Stored episode {result.episode_id} of session {session!r}: {len(result.added)} facts learned, "
                 f"{len(result.superseded)} superseded."]
        lines += [f"- learned: {f.content}" for f in result.added if f.predicate != "statement"]
        lines += [f"- no longer true: {f.content}" for f in result.superseded]
        return "\n".join(lines)

    if allow_forget:
        @server.tool()
        def forget(confirm_user_id: str) -> str:
            """Delete everything memory holds about the user. Irreversible.

            Args:
                confirm_user_id: the user's id, typed again to confirm.

            """
            if confirm_user_id != user_id:
                return "Not deleted: confirm_user_id does not match this server's user."
            try:
                memory.forget_user(user_id)
            except NotFoundError:
                return "Nothing is stored in memory for this user."
            except ZepMemoryError as exc:
                raise fail(exc) from None
            return f"Deleted every fact, entity, episode and message of user {user_id!r}."

    return server
