"""The memory tools a model can call: one table of their names and arguments, and one set of answers.

:data:`MEMORY_TOOLS` says what each tool is called, what it is for and which
arguments it takes (name, type, default, bounds, description). The LangChain tools
(:mod:`zep_langchain.tools`), the LlamaIndex tools (:mod:`zep_llamaindex.tools`) and
the MCP server (:mod:`zep_core.mcp_server`) are built from it, and
:class:`MemoryTools` answers them all, so a model sees the same tools, the same
arguments and the same answers through any of them:

==================  =========================================  ===========================
tool                arguments                                  served by
==================  =========================================  ===========================
search_memory       query, limit=5 (1-50), as_of=None          LangChain, LlamaIndex, MCP
entity_history      entity_name                                LangChain, LlamaIndex, MCP
related_entities    entity_name, limit=10 (1-100)              LangChain, LlamaIndex, MCP
add_conversation    messages, session_id=None                  MCP
forget              confirm_user_id                            MCP, with ``allow_forget``
==================  =========================================  ===========================

The argument names are the core API's (``Memory.get_context(limit=, as_of=)``,
``related_entities(limit=)``); an entity is ``entity_name``: the core's ``name``,
said in full where a tool's arguments stand alone. The framework adapters serve the
tools that read; writing a conversation is their middleware's or memory class's job.

The answers are text: an unknown entity, a user with no memory, or a bad argument is
a sentence the model can act on; any other failure is raised
(:class:`~zep_core.ZepMemoryError`).

Example:
    >>> tools = MemoryTools(memory, user_id="alice", user_name="Alice")    # doctest: +SKIP
    >>> print(tools.answer("entity_history", {"entity_name": "me"}))
    History of Alice (oldest first, including facts no longer true):
    - Alice lives in Paris. (valid 2024-01-01 to 2024-03-01; superseded)
    - Alice lives in Berlin. (valid 2024-03-01 to now; current)

"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, get_origin

from . import aio
from .errors import NotFoundError, ValidationError
from .models import new_id
from .render import facts_answer, history_answer, related_answer
from .resolve import speaker_of
from .sessions import afacts_for, facts_for

__all__ = ["ADD_CONVERSATION", "ENTITY_HISTORY", "FORGET", "MEMORY_TOOLS", "READ_TOOLS", "RELATED_ENTITIES", "REQUIRED",
           "SEARCH_MEMORY", "MemoryTools", "ToolArg", "ToolSpec", "tool_spec"]


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: The default of an argument the caller must give.
REQUIRED: Any = _Required()

_SELF_WORDS = frozenset({"i", "me", "myself", "user", "the user"})
_JSON_TYPES = {str: "text", int: "a whole number", list: "a list"}


@dataclass(frozen=True)
class ToolArg:
    """One argument of a memory tool.

    Attributes:
        name: the argument's name.
        type: its Python type (``str``, ``int``, ``list[dict[str, Any]]``); with a
            ``None`` default, ``None`` is allowed too.
        description: what the model reads about it.
        default: its value when not given; :data:`REQUIRED` when it must be given.
        minimum, maximum: the bounds of a number (inclusive), or None.
        formerly: names an adapter took it by before (still accepted, with a
            ``DeprecationWarning`` naming the new one).

    """

    name: str
    type: Any
    description: str
    default: Any = REQUIRED
    minimum: int | None = None
    maximum: int | None = None
    formerly: tuple[str, ...] = ()

    @property
    def required(self) -> bool:
        """Whether a call must give it."""
        return self.default is REQUIRED

    @property
    def annotation(self) -> Any:
        """The type a framework's schema gives it (``str | None`` for an optional text)."""
        return self.type | None if self.default is None else self.type

    def check(self, value: Any) -> Any:
        """``value`` if it has the argument's type and bounds, else a :class:`ValidationError` saying why."""
        if value is None and self.default is None:
            return None
        base = get_origin(self.type) or self.type
        if isinstance(value, bool) or not isinstance(value, base):
            raise ValidationError(f"{self.name} must be {_JSON_TYPES.get(base, base.__name__)}, got {value!r}")
        low, high = self.minimum, self.maximum
        if (low is not None and value < low) or (high is not None and value > high):
            bounds = f"between {low} and {high}" if low is not None and high is not None else (
                f"at least {low}" if low is not None else f"at most {high}")
            raise ValidationError(f"{self.name} must be {bounds}")
        return value


@dataclass(frozen=True)
class ToolSpec:
    """One memory tool: its name, what it does, and its arguments (in order).

    Attributes:
        name: the tool's name.
        description: what the model reads about it.
        args: its arguments.
        writes: it changes memory (served by the MCP server only).
        destructive: it deletes memory (served only when an administrator allows it).

    """

    name: str
    description: str
    args: tuple[ToolArg, ...]
    writes: bool = False
    destructive: bool = False

    def arg(self, name: str) -> ToolArg:
        """The argument called ``name``."""
        return next(a for a in self.args if a.name == name)

    def with_default(self, name: str, value: Any) -> ToolSpec:
        """The same tool with another default for one argument (checked against its type and bounds)."""
        arg = self.arg(name)
        arg.check(value)
        return replace(self, args=tuple(replace(a, default=value) if a is arg else a for a in self.args))

    def renamed(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """``given`` with each argument's former name replaced by its name (and a ``DeprecationWarning``).

        Raises:
            ValidationError: an argument was given by both names.

        """
        out = dict(given)
        for arg in self.args:
            for old in arg.formerly:
                if old not in out:
                    continue
                if arg.name in out:
                    raise ValidationError(f"{self.name}: give {arg.name} only ({old} is its former name)")
                warnings.warn(f"the {self.name} tool's argument {old!r} is now called {arg.name!r}",
                              DeprecationWarning, stacklevel=3)
                out[arg.name] = out.pop(old)
        return out

    def bind(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """Every argument of a call: former names renamed, defaults filled in, types and bounds checked.

        Raises:
            ValidationError: an unknown or missing argument, or a value of the wrong type or out of bounds.

        """
        given = self.renamed(given)
        unknown = sorted(set(given) - {a.name for a in self.args})
        if unknown:
            raise ValidationError(f"{self.name} has no argument {unknown[0]!r}; its arguments are "
                                  f"{', '.join(a.name for a in self.args)}")
        missing = [a.name for a in self.args if a.required and a.name not in given]
        if missing:
            raise ValidationError(f"{self.name} needs {missing[0]}")
        return {a.name: a.check(given[a.name]) if a.name in given else a.default for a in self.args}

    def arguments_model(self, name: str | None = None) -> type:
        """The arguments as a pydantic model (for a framework's tool schema); former names are accepted.

        Needs pydantic, which every framework adapter brings.
        """
        from pydantic import Field, create_model, model_validator

        spec = self

        def rename(cls: type, data: Any) -> Any:
            return spec.renamed(data) if isinstance(data, Mapping) else data

        fields = {a.name: (a.annotation, Field(... if a.required else a.default, description=a.description,
                                               ge=a.minimum, le=a.maximum)) for a in self.args}
        title = name or "".join(part.title() for part in self.name.split("_")) + "Arguments"
        return create_model(title, __doc__=f"Arguments of ``{self.name}``.",
                            __validators__={"former_names": model_validator(mode="before")(rename)}, **fields)

    def signature(self) -> inspect.Signature:
        """The arguments as a function signature (for a framework that reads one, as the MCP SDK does).

        Each parameter is ``Annotated[type, Field(description=...)]``; the bounds are in
        the JSON schema only, so that :meth:`bind` answers an out-of-range value with a
        sentence. Needs pydantic.
        """
        from typing import Annotated

        from pydantic import Field

        def bounds(a: ToolArg) -> dict[str, int]:
            return {k: v for k, v in (("minimum", a.minimum), ("maximum", a.maximum)) if v is not None}

        return inspect.Signature([
            inspect.Parameter(a.name, inspect.Parameter.KEYWORD_ONLY,
                              default=inspect.Parameter.empty if a.required else a.default,
                              annotation=Annotated[a.annotation, Field(description=a.description,
                                                                       json_schema_extra=bounds(a) or None)])
            for a in self.args], return_annotation=str)


_ENTITY_NAME = ToolArg("entity_name", str, "The name of a person, place or thing, e.g. 'Alice'; 'me' means the user",
                       formerly=("entity",))

SEARCH_MEMORY = ToolSpec(
    "search_memory",
    "Search long-term memory for facts about the user and what they said in earlier conversations. Returns the "
    "facts that are true now (or were true at as_of), most relevant first, with the date each became true.",
    (ToolArg("query", str, "What to look for, e.g. 'Where does the user live?'"),
     ToolArg("limit", int, "How many facts at most", 5, minimum=1, maximum=50, formerly=("k",)),
     ToolArg("as_of", str, "An ISO date or time, e.g. '2024-01-31', to ask what was true then instead of now",
             None)))

ENTITY_HISTORY = ToolSpec(
    "entity_history",
    "The timeline of a person, place or thing: every fact ever learned about it, including facts that are no "
    "longer true, oldest first, with the dates each was valid. Use it for 'where did I live before?' or "
    "'what changed?'.",
    (_ENTITY_NAME,))

RELATED_ENTITIES = ToolSpec(
    "related_entities",
    "People, places and things connected to an entity in the memory's knowledge graph (up to two hops away). "
    "Use it to explore what memory knows around a name.",
    (_ENTITY_NAME, ToolArg("limit", int, "How many entities at most", 10, minimum=1, maximum=100)))

ADD_CONVERSATION = ToolSpec(
    "add_conversation",
    "Store a finished conversation in long-term memory: its facts are learned, older ones superseded.",
    (ToolArg("messages", list[dict[str, Any]],
             'The turns in order, each {"role": "user" | "assistant", "content": "...", optional "name" and ISO '
             '"timestamp"}; user turns without a name are the user\'s'),
     ToolArg("session_id", str, "The conversation's id (default: a new one)", None)),
    writes=True)

FORGET = ToolSpec(
    "forget",
    "Delete everything memory holds about the user. Irreversible.",
    (ToolArg("confirm_user_id", str, "The user's id, typed again to confirm"),),
    writes=True, destructive=True)

#: Every memory tool, in the order they are offered.
MEMORY_TOOLS: tuple[ToolSpec, ...] = (SEARCH_MEMORY, ENTITY_HISTORY, RELATED_ENTITIES, ADD_CONVERSATION, FORGET)
#: The tools that only read: what the LangChain and LlamaIndex adapters serve.
READ_TOOLS: tuple[ToolSpec, ...] = tuple(t for t in MEMORY_TOOLS if not t.writes)


def tool_spec(name: str) -> ToolSpec:
    """The tool called ``name``.

    Raises:
        ValidationError: there is no such tool.

    """
    for spec in MEMORY_TOOLS:
        if spec.name == name:
            return spec
    raise ValidationError(f"no memory tool is called {name!r}; the tools are "
                          f"{', '.join(t.name for t in MEMORY_TOOLS)}")


class MemoryTools:
    """The answers of the memory tools for one user of one memory.

    Args:
        memory: a :class:`~zep_core.Memory`, or anything with its verbs (a ``RemoteMemory``).
        user_id: the one user every answer reads or changes.
        user_name: who "I"/"me" is (default: the memory's ``default_speaker``).

    """

    def __init__(self, memory: Any, *, user_id: str, user_name: str | None = None) -> None:
        self.memory, self.user_id, self.user_name = memory, user_id, user_name

    @property
    def speaker(self) -> str:
        """The user's name as memory knows them."""
        return speaker_of(self.user_name, default=self.memory.config.default_speaker)

    def answer(self, tool: str | ToolSpec, arguments: Mapping[str, Any]) -> str:
        """Run a tool (its name, or its spec with the defaults an adapter gave it) with a model's arguments.

        The arguments are checked by :meth:`ToolSpec.bind`; what is wrong with them is the answer.
        """
        spec = tool if isinstance(tool, ToolSpec) else tool_spec(tool)
        try:
            bound = spec.bind(arguments)
        except ValidationError as exc:
            return f"{exc}."
        handler: Callable[..., str] = getattr(self, spec.name)
        return handler(**bound)

    async def aanswer(self, tool: str | ToolSpec, arguments: Mapping[str, Any]) -> str:
        """:meth:`answer`, awaited: a search is one native call on a ``RemoteMemory``, the rest run in a thread."""
        spec = tool if isinstance(tool, ToolSpec) else tool_spec(tool)
        if spec.name != SEARCH_MEMORY.name:
            return await aio.in_thread(self.answer, spec, arguments)
        try:
            bound = spec.bind(arguments)
        except ValidationError as exc:
            return f"{exc}."
        return await self.asearch_memory(**bound)

    # -- the tools ---------------------------------------------------------------------------

    def search_memory(self, query: str, limit: int = 5, as_of: str | None = None) -> str:
        """The user's facts most relevant to ``query``, true now or at ``as_of``."""
        if (empty := self._no_memory()) is not None:
            return empty
        try:
            facts = facts_for(self.memory, query, user_id=self.user_id, user_name=self.user_name, limit=limit,
                              as_of=as_of)
        except ValidationError as exc:
            return f"Could not search memory: {exc}"
        return self._found(query, facts, as_of)

    async def asearch_memory(self, query: str, limit: int = 5, as_of: str | None = None) -> str:
        """:meth:`search_memory`, awaited (the search itself native on a ``RemoteMemory``)."""
        if (empty := await aio.in_thread(self._no_memory)) is not None:
            return empty
        try:
            facts = await afacts_for(self.memory, query, user_id=self.user_id, user_name=self.user_name,
                                     limit=limit, as_of=as_of)
        except ValidationError as exc:
            return f"Could not search memory: {exc}"
        return self._found(query, facts, as_of)

    def entity_history(self, entity_name: str) -> str:
        """Every fact about an entity, superseded ones too, oldest first."""
        if (empty := self._no_memory()) is not None:
            return empty
        name = self._entity(entity_name)
        facts = self._about(name, "read the history", self.memory.entity_history)
        if isinstance(facts, str):
            return facts
        return history_answer(name, facts) if facts else f"Memory knows the name {name!r} but holds no facts about it."

    def related_entities(self, entity_name: str, limit: int = 10) -> str:
        """The entities within two hops of an entity, nearest first."""
        if (empty := self._no_memory()) is not None:
            return empty
        name = self._entity(entity_name)
        found = self._about(name, "look up related entities", self.memory.related_entities, limit=limit)
        if isinstance(found, str):
            return found
        return related_answer(name, found) if found else f"Nothing in memory is connected to {name}."

    def add_conversation(self, messages: list[dict[str, Any]], session_id: str | None = None) -> str:
        """Store a finished conversation (``conversation_end``); unnamed user turns are the user's."""
        speaker = self.speaker
        turns = [{**m, "name": speaker}
                 if isinstance(m, dict) and m.get("role", "user") == "user" and not m.get("name") else m
                 for m in messages]
        session = session_id or f"mcp-{new_id()}"
        try:
            result = self.memory.conversation_end(session, turns, user_id=self.user_id)
        except ValidationError as exc:
            return f"Nothing was stored: {exc}"
        if result.status == "duplicate":
            return f"Already stored (episode {result.episode_id}); nothing changed."
        lines = [f"Stored episode {result.episode_id} of session {session!r}: {len(result.added)} facts learned, "
                 f"{len(result.superseded)} superseded."]
        lines += [f"- learned: {f.content}" for f in result.added if f.predicate != "statement"]
        lines += [f"- no longer true: {f.content}" for f in result.superseded]
        return "\n".join(lines)

    def forget(self, confirm_user_id: str) -> str:
        """Delete the user's whole memory, once ``confirm_user_id`` names them."""
        if confirm_user_id != self.user_id:
            return "Not deleted: confirm_user_id does not match this server's user."
        try:
            self.memory.forget_user(self.user_id)
        except NotFoundError:
            return "Nothing is stored in memory for this user."
        return f"Deleted every fact, entity, episode and message of user {self.user_id!r}."

    # -- shared steps ------------------------------------------------------------------------

    def _no_memory(self) -> str | None:
        return None if self.memory.has_user(self.user_id) else "Nothing is stored in memory for this user yet."

    def _entity(self, name: str) -> str:
        """The entity a model means: "me" and its kin are the user."""
        return self.speaker if isinstance(name, str) and name.strip().casefold() in _SELF_WORDS else name

    def _about(self, name: str, action: str, query: Callable[..., list], **options: Any) -> list | str:
        """``query(name, user_id=…)``; an unknown entity or bad input comes back as the sentence to answer."""
        try:
            return query(name, user_id=self.user_id, **options)
        except NotFoundError:
            return f"No entity named {name!r} in memory. Check the spelling, or use search_memory to look by topic."
        except ValidationError as exc:
            return f"Could not {action}: {exc}"

    @staticmethod
    def _found(query: str, facts: list, as_of: str | None) -> str:
        if not facts:
            return f"No facts in memory match {query!r}. Try other words, or entity_history with a name."
        return facts_answer(query, facts, as_of=as_of or None)
