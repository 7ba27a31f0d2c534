"""Pure conversions between LangChain messages and documents and zep_core records.

A session keeps every message the way LangChain gave it, as
``InMemoryChatMessageHistory`` does: tool calls and tool results, content blocks,
``additional_kwargs`` and the rest of the message's fields. The stored row's
``content`` is the message's text — what extraction reads — and what a row of text
alone cannot say goes into the message's ``extra`` under ``"langchain"``
(:data:`EXTRA_KEY`): the message class, its content when that is not the plain text
(blocks), and every field that is not at its default (``tool_calls``,
``tool_call_id``, ``status``, ``artifact``, ``additional_kwargs``,
``response_metadata``, ``usage_metadata``, …).

A tool result, and a message with no text (an AI message that only calls tools, an
image alone), is stored as a ``tool`` row: kept for the history, never learned from
(:mod:`zep_core.sessions`). Such a row's text is the result, or a readable stand-in
(``tool call: search_memory({"query": "home"})``), cut at the memory's
``max_message_chars`` (the whole content stays in ``extra``).

Media is kept by reference: a content block with a URL or a file id is kept as it
is; one with inline data (a ``data:`` URL, base64 ``data``) becomes a text block
saying what was there (``[image not kept: image/png, about 5120 bytes]``). Inline
data elsewhere (``additional_kwargs``, ``response_metadata``, ``artifact``) is
replaced the same way, and ``response_metadata`` larger than a few kilobytes keeps
only its short scalar entries. An ``artifact`` that is not JSON is kept as a note
naming its type; other fields that are not JSON are refused with a clear error.

Names: a human message without a ``name`` is stored with the history's ``user_name``
as its speaker (what extraction reads: "Ada Lovelace lives in London"), and comes back
without a name, as it was given — a provider such as OpenAI refuses a message name
with a space. A row stored by another API whose speaker is no valid provider name
(letters, digits, ``_`` and ``-``) comes back without one too; the speaker stays in the
stored row (``Memory.get_messages``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
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
from pydantic import ValidationError as PydanticValidationError
from pydantic_core import PydanticSerializationError, to_jsonable_python
from zep_core import Fact, Message, ValidationError
from zep_core.serialize import fact_metadata

__all__ = ["EXTRA_KEY", "fact_to_document", "new_only", "now_of", "role_of", "to_core_message", "to_core_messages",
           "to_langchain_message", "to_langchain_messages"]

#: The key of a stored message's ``extra`` that holds what LangChain needs to rebuild it.
EXTRA_KEY = "langchain"


def now_of(memory: Any) -> datetime:
    """Now, by the memory's own clock, so stored turns and facts share one timeline."""
    return memory.now()


#: Message classes, the core role and the stored kind of each, most specific first. Chunks
#: are subclasses (``AIMessageChunk`` is an ``AIMessage``), so a streamed reply keeps its role.
_CLASSES: tuple[tuple[type[BaseMessage], str, str], ...] = (
    (HumanMessage, "user", "human"),
    (AIMessage, "assistant", "ai"),
    (SystemMessage, "system", "system"),
    (ToolMessage, "tool", "tool"),
    (FunctionMessage, "tool", "function"),
)
_CLASS_OF_KIND: dict[str, type[BaseMessage]] = {kind: cls for cls, _, kind in _CLASSES} | {"chat": ChatMessage}
#: What a row without ``extra`` is read back as.
_KIND_OF_ROLE = {"user": "human", "assistant": "ai", "system": "system"}
#: Fields the row itself holds.
_ROW_FIELDS = frozenset({"type", "content", "name", "id"})
#: Marks a message stored without a name of its own (the row's name is the speaker, ``user_name``).
_UNNAMED = "unnamed"
#: A name OpenAI (and the providers that follow it) accept on a message.
_PROVIDER_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")

_MEDIA_TYPES = {"image": "image", "image_url": "image", "audio": "audio", "input_audio": "audio", "video": "video",
                "file": "file", "document": "document", "media": "media"}
_MIME_KEYS = ("mime_type", "media_type", "mimetype", "format")
_INLINE_KEYS = frozenset({"data", "base64", "b64_json"})
_MIN_INLINE = 256  # characters of base64 under a data key that are inline media, not a short value
_BASE64 = re.compile(r"[A-Za-z0-9+/=_\-\r\n]+")
_MAX_METADATA = 4_000  # JSON characters of response_metadata kept whole
_MAX_SCALAR = 200  # characters of one entry kept from a larger response_metadata
_MAX_RENDERED = 2_000  # characters of a text-less message's readable stand-in (tool calls)
_CUT = " … [cut here; the whole text is kept with the message]"


def role_of(message: BaseMessage) -> str:
    """The core role of a LangChain message, by its class (chunks included).

    ``HumanMessage`` → ``user``, ``AIMessage`` → ``assistant``, ``SystemMessage`` →
    ``system``, ``ToolMessage``/``FunctionMessage`` → ``tool``, ``ChatMessage`` → its
    own ``role`` (``human``/``ai`` accepted).

    Raises:
        zep_core.ValidationError: not a message, or a message class or role the core does not know.

    """
    return _role_and_kind(message)[0]


def _role_and_kind(message: Any) -> tuple[str, str]:
    for cls, role, kind in _CLASSES:
        if isinstance(message, cls):
            return role, kind
    if isinstance(message, ChatMessage):
        return Message("-", role=message.role).role, "chat"  # the core's own aliases and its clear error
    if isinstance(message, BaseMessage):
        raise ValidationError(f"cannot store a {type(message).__name__}: only human, AI, system, tool and chat "
                              "messages have a role in the memory")
    raise ValidationError(f"expected LangChain messages, got {type(message).__name__}")


def to_core_message(message: BaseMessage, *, user_name: str | None = None, timestamp: datetime | None = None,
                    max_chars: int | None = None, index: int = 0) -> Message:
    """Convert a LangChain message into the core :class:`~zep_core.Message` to store.

    Args:
        message: the LangChain message (a streamed chunk too).
        user_name: the speaker of a human message without a ``name``.
        timestamp: when it was said.
        max_chars: the memory's ``max_message_chars``: a tool row's text longer than
            that is cut in ``content`` (the whole content stays in ``extra``).
        index: the message's position, for error messages.

    Raises:
        zep_core.ValidationError: a message class or role the core does not know, or a
            field (other than ``artifact``) that cannot be stored as JSON.

    Example:
        >>> call = AIMessage("", tool_calls=[{"name": "search_memory", "args": {"query": "home"}, "id": "c1"}])
        >>> stored = to_core_message(call)
        >>> stored.role, stored.content
        ('tool', 'tool call: search_memory({"query": "home"})')
        >>> to_langchain_message(stored).tool_calls[0]["id"]
        'c1'

    """
    role, kind = _role_and_kind(message)
    text = message.text
    if role == "tool" or not text.strip():
        role, text = "tool", text if text.strip() else _render(message)
        if max_chars is not None and len(text) > max_chars:
            text = text[: max(max_chars - len(_CUT), 0)] + _CUT
    name = message.name or (user_name if kind == "human" else None)
    extra = _extra(message, kind, role, text, index)
    if message.name is None and name is not None:  # the speaker is the row's; the message itself had no name
        extra = {**(extra or {"type": kind}), _UNNAMED: True}
    return Message(text, role=role, name=name, id=message.id, timestamp=timestamp,
                   extra={EXTRA_KEY: extra} if extra else None)


def to_core_messages(messages: Iterable[BaseMessage], *, user_name: str | None = None,
                     timestamp: datetime | None = None, max_chars: int | None = None) -> list[Message]:
    """Convert LangChain messages into core messages, in order, every one kept (see the module docstring).

    Human messages get ``user_name`` as their speaker unless they carry a ``name``;
    AI messages (streamed chunks too) become ``assistant``; tool results and messages
    without text become ``tool`` rows, which are never learned from.

    Raises:
        zep_core.ValidationError: as :func:`to_core_message`, naming the message's position.

    """
    return [to_core_message(m, user_name=user_name, timestamp=timestamp, max_chars=max_chars, index=i)
            for i, m in enumerate(messages)]


def to_langchain_message(message: Message) -> BaseMessage:
    """Convert a stored core message back into the LangChain message it was stored from.

    A row stored without LangChain's ``extra`` (by the core API or another adapter)
    comes back by its role: ``HumanMessage``, ``AIMessage``, ``SystemMessage``, or a
    ``ChatMessage`` with the role. Stored data that no longer loads (a message class
    that changed) comes back the same way, with the row's text.
    """
    fields: dict[str, Any] = {"content": message.content, "name": message.name, "id": message.id}
    extra = (message.extra or {}).get(EXTRA_KEY)
    if isinstance(extra, Mapping) and extra.get("type") in _CLASS_OF_KIND:
        if extra.get(_UNNAMED):
            fields["name"] = None  # given without a name: the speaker stays in the row, not in the message
        data = {k: v for k, v in extra.items() if k not in ("type", _UNNAMED)}
        try:
            return _CLASS_OF_KIND[extra["type"]](**{**fields, **data})
        except (PydanticValidationError, TypeError, ValueError):
            pass
    if fields["name"] is not None and not _PROVIDER_NAME.fullmatch(fields["name"]):
        fields["name"] = None  # a speaker such as "Ada Lovelace" is no name a provider accepts
    kind = _KIND_OF_ROLE.get(message.role)
    if kind is None:
        return ChatMessage(role=message.role, **fields)
    return _CLASS_OF_KIND[kind](**fields)


def to_langchain_messages(messages: Iterable[Message]) -> list[BaseMessage]:
    """Convert stored core messages back into LangChain messages, in order (ids and names kept)."""
    return [to_langchain_message(m) for m in messages]


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


# -- what a row of text cannot say -------------------------------------------------------------


def _extra(message: BaseMessage, kind: str, role: str, text: str, index: int) -> dict[str, Any] | None:
    """The class, content and fields needed to rebuild ``message``; None when its row says it all."""
    cls = _CLASS_OF_KIND[kind]
    extra: dict[str, Any] = {}
    if message.content != text:
        extra["content"] = _json(index, kind, "content", _stored_content(message.content))
    for field, info in cls.model_fields.items():
        value = getattr(message, field, None)
        if field in _ROW_FIELDS or value == info.get_default(call_default_factory=True):
            continue
        extra[field] = _field(index, kind, field, value)
    for field, value in (message.model_extra or {}).items():
        if field not in _ROW_FIELDS:
            extra[field] = _field(index, kind, field, value)
    if not extra and _KIND_OF_ROLE.get(role) == kind:
        return None
    return {"type": kind, **extra}


def _field(index: int, kind: str, field: str, value: Any) -> Any:
    """One field as JSON: inline data replaced, response_metadata bounded, an artifact that is not JSON noted."""
    value = _scrub(value)
    if field == "artifact":
        try:
            return _json(index, kind, field, value)
        except ValidationError:
            return f"[artifact not kept: a {type(value).__name__} is not JSON]"
    value = _json(index, kind, field, value)
    if field == "response_metadata" and len(json.dumps(value, ensure_ascii=False)) > _MAX_METADATA:
        value = {k: v for k, v in value.items()
                 if isinstance(v, (str, int, float, bool, type(None))) and len(str(v)) <= _MAX_SCALAR}
    return value


def _json(index: int, kind: str, field: str, value: Any) -> Any:
    """``value`` as plain JSON data, or a clear error naming the message and the field."""
    try:
        data = to_jsonable_python(value)
        json.dumps(data, allow_nan=False)
    except (PydanticSerializationError, TypeError, ValueError) as exc:
        raise ValidationError(f"message {index} ({kind}): its {field} cannot be stored as JSON ({exc}); "
                              "pass dicts, lists, strings, numbers and booleans") from None
    return data


def _stored_content(content: Any) -> Any:
    """A message's content as stored: text kept, media blocks kept by reference, inline data as a note."""
    if not isinstance(content, list):
        return _scrub(content)
    return [_stored_block(b) for b in content]


def _stored_block(block: Any) -> Any:
    if not isinstance(block, Mapping):
        return _scrub(block)
    kind = _MEDIA_TYPES.get(str(block.get("type", "")))
    found = _inline_data(block) if kind else None
    if found is None:
        return _scrub(block)
    mime, size = found
    return {"type": "text", "text": f"[{kind} not kept: {mime or 'unknown type'}, about {size} bytes]"}


def _scrub(value: Any, key: str | None = None) -> Any:
    """``value`` with inline data (data: URLs, long base64 under a data key, bytes) replaced by a note."""
    if isinstance(value, Mapping):
        return {k: _scrub(v, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return f"[inline data not kept: about {len(value)} bytes]"
    if isinstance(value, str) and _is_inline(value, key):
        return f"[inline data not kept: about {len(value) * 3 // 4} bytes]"
    return value


def _is_inline(text: str, key: str | None) -> bool:
    if text.startswith("data:") and ";base64," in text[:200]:
        return True
    return key in _INLINE_KEYS and len(text) >= _MIN_INLINE and _BASE64.fullmatch(text) is not None


def _inline_data(value: Any, key: str | None = None) -> tuple[str | None, int] | None:
    """The mime type (if said) and the size in bytes of the first inline data in a block."""
    if isinstance(value, Mapping):
        mime = next((str(value[k]) for k in _MIME_KEYS if isinstance(value.get(k), str)), None)
        for k, v in value.items():
            found = _inline_data(v, str(k))
            if found:
                return found[0] or mime, found[1]
        return None
    if isinstance(value, (list, tuple)):
        return next((f for f in (_inline_data(v) for v in value) if f), None)
    if isinstance(value, (bytes, bytearray)):
        return None, len(value)
    if isinstance(value, str) and _is_inline(value, key):
        if value.startswith("data:"):
            head, _, data = value.partition(",")
            return head[5:].split(";")[0] or None, len(data) * 3 // 4
        return None, len(value) * 3 // 4
    return None


def _render(message: BaseMessage) -> str:
    """A readable stand-in for a message without text: its tool calls, else what its blocks are."""
    calls = [f"{c['name']}({json.dumps(c.get('args', {}), ensure_ascii=False, default=str)})"
             for c in getattr(message, "tool_calls", None) or ()]
    if calls:
        return ("tool call: " + "; ".join(calls))[:_MAX_RENDERED]
    content = message.content
    kinds = [str(b.get("type", "block")) if isinstance(b, Mapping) else "text" for b in content] \
        if isinstance(content, list) else []
    return f"[{', '.join(kinds)}]" if kinds else "[empty message]"
