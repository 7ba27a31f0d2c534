"""Pure conversions between LangChain messages and documents and zep_core records."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from zep_core import Fact, Message, ValidationError
from zep_core.serialize import fact_metadata

__all__ = ["fact_to_document", "new_only", "now_of", "role_of", "to_core_messages", "to_langchain_messages"]

def now_of(memory: Any) -> datetime:
    """Now, by the memory's own clock, so stored turns and facts share one timeline."""
    return memory.now()


#: Message classes and the core role each maps to, most specific first. Chunks are
#: subclasses (``AIMessageChunk`` is an ``AIMessage``), so a streamed reply keeps its role.
_ROLE_OF_CLASS: tuple[tuple[type[BaseMessage], str], ...] = (
    (HumanMessage, "user"),
    (AIMessage, "assistant"),
    (SystemMessage, "system"),
    (ToolMessage, "tool"),
    (FunctionMessage, "tool"),
)


def role_of(message: BaseMessage) -> str:
    """The core role of a LangChain message, by its class (chunks included).

    ``HumanMessage`` → ``user``, ``AIMessage`` → ``assistant``, ``SystemMessage`` →
    ``system``, ``ToolMessage``/``FunctionMessage`` → ``tool``, ``ChatMessage`` → its
    own ``role`` (``human``/``ai`` accepted).

    Raises:
        zep_core.ValidationError: not a message, or a message class or role the core does not know.

    """
    for kind, role in _ROLE_OF_CLASS:
        if isinstance(message, kind):
            return role
    if isinstance(message, ChatMessage):
        return Message("-", role=message.role).role  # the core's own aliases and its clear error
    if isinstance(message, BaseMessage):
        raise ValidationError(f"cannot store a {type(message).__name__}: only human, AI, system, tool and chat "
                              "messages have a role in the memory")
    raise ValidationError(f"expected LangChain messages, got {type(message).__name__}")


def to_core_messages(messages: Iterable[BaseMessage], *, user_name: str | None = None,
                     timestamp: datetime | None = None) -> list[Message]:
    """Convert LangChain messages into core :class:`~zep_core.Message` records.

    Human messages get ``user_name`` as their speaker unless they carry a ``name``;
    AI messages (streamed chunks too) become ``assistant``. Tool results and AI
    messages without text (pure tool calls) are left out: the core keeps the text
    of a conversation.

    Raises:
        zep_core.ValidationError: a message with a class or role the core does not know.

    """
    out: list[Message] = []
    for m in messages:
        role = role_of(m)
        text = m.text
        if role == "tool" or not text.strip():
            continue
        name = m.name or (user_name if role == "user" else None)
        out.append(Message(text, role=role, name=name, id=m.id, timestamp=timestamp))
    return out


def to_langchain_messages(messages: Iterable[Message]) -> list[BaseMessage]:
    """Convert core messages back into LangChain messages (ids and names kept)."""
    out: list[BaseMessage] = []
    for m in messages:
        fields: dict[str, Any] = {"content": m.content, "name": m.name, "id": m.id}
        if m.role == "user":
            out.append(HumanMessage(**fields))
        elif m.role == "assistant":
            out.append(AIMessage(**fields))
        elif m.role == "system":
            out.append(SystemMessage(**fields))
        else:
            out.append(ChatMessage(role=m.role, **fields))
    return out


def fact_to_document(fact: Fact) -> Document:
    """A fact as a LangChain Document: its text, with every other field and the score parts as metadata."""
    return Document(page_content=fact.content, id=fact.id, metadata=fact_metadata(fact))


def new_only(messages: Sequence[Message], stored_ids: set[str]) -> list[Message]:
    """Drop messages whose id is already stored (or repeated in the batch): adds are idempotent."""
    seen = set(stored_ids)
    out = []
    for m in messages:
        if m.id is not None:
            if m.id in seen:
                continue
            seen.add(m.id)
        out.append(m)
    return out
