"""Pure conversions between LlamaIndex's records and zep-memory's.

``ChatMessage`` ⇄ :class:`zep_core.Message` for chat turns, and
:class:`zep_core.Fact` → ``NodeWithScore`` for retrieval. Nothing here touches a store.

A session keeps every message the way LlamaIndex gave it, as ``ChatMemoryBuffer``
does: tool calls and tool results, content blocks and ``additional_kwargs``. The
stored row's ``content`` is the message's text — what extraction reads — and what a
row of text alone cannot say goes into the message's ``extra`` under ``"llamaindex"``
(the role, the blocks, the kwargs). A message with no text (an assistant's tool
call, an image alone) and a tool's result are stored as ``tool`` rows: kept for the
history, never learned from (:mod:`zep_core.sessions`). Media is kept by reference:
an image, audio, video or document block keeps its ``url`` or ``path``; inline bytes
are not stored, a text placeholder saying what was there takes their place.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import fields
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, ContentBlock, MessageRole, TextBlock
from llama_index.core.bridge.pydantic import TypeAdapter
from llama_index.core.bridge.pydantic import ValidationError as PydanticValidationError
from llama_index.core.schema import NodeWithScore, TextNode
from zep_core import Fact, Message
from zep_core.serialize import fact_metadata

__all__ = ["EXTRA_KEY", "STORES_EXTRA", "fact_to_node", "last_user_text", "to_chat_message", "to_chat_messages",
           "to_zep_message", "to_zep_messages"]

#: The key of a stored message's ``extra`` that holds what LlamaIndex needs to rebuild it.
EXTRA_KEY = "llamaindex"
#: Whether this zep_core keeps a message's ``extra`` in the session buffer. Without it a
#: faithful conversion cannot be stored, and ZepMemory keeps only what is said (as before).
STORES_EXTRA = "extra" in {f.name for f in fields(Message)}

_ROLES = {
    MessageRole.USER: "user",
    MessageRole.ASSISTANT: "assistant",
    MessageRole.CHATBOT: "assistant",
    MessageRole.MODEL: "assistant",
    MessageRole.SYSTEM: "system",
    MessageRole.DEVELOPER: "system",
    MessageRole.TOOL: "tool",
    MessageRole.FUNCTION: "tool",
}
#: Media blocks and the field that holds their inline bytes.
_MEDIA = {"image": "image", "audio": "audio", "video": "video", "document": "data"}
_BLOCK = TypeAdapter(ContentBlock)
_MAX_RENDERED = 2_000  # characters of a text-less message's readable stand-in (tool calls)
_CUT = " … [cut here; the whole text is kept with the message]"

#: Metadata the LLM sees next to a fact's text (the rest is for code: ids, scores, parts).
LLM_METADATA_KEYS = ("valid_from", "valid_until")


def to_zep_message(message: ChatMessage, *, user_name: str | None = None, faithful: bool = True,
                   max_chars: int | None = None) -> Message | None:
    """Convert a ``ChatMessage`` to a :class:`zep_core.Message` to store.

    Args:
        message: the LlamaIndex message.
        user_name: the speaker's name, set on user messages so that "I" resolves to it.
        faithful: keep everything (see the module docstring); ``False`` keeps only what
            is learned from — the text of user, assistant and system messages — and
            returns None for anything else.
        max_chars: the memory's ``max_message_chars``: a tool row's text longer than
            that is cut in ``content`` (the whole text stays in ``extra``).

    Example:
        >>> to_zep_message(ChatMessage(role="user", content="I live in Paris"), user_name="Ada").name
        'Ada'

    """
    role = _ROLES.get(message.role, "tool")
    text = message.content or ""
    if role == "tool" or not text.strip():
        if not faithful:
            return None
        role, text = "tool", text if text.strip() else _render(message)
        if max_chars is not None and len(text) > max_chars:
            text = text[: max_chars - len(_CUT)] + _CUT
    extra = _extra(message, role, text) if faithful else None
    return Message(content=text, role=role, name=user_name if role == "user" else None,
                   **({"extra": {EXTRA_KEY: extra}} if extra else {}))


def to_zep_messages(messages: Iterable[ChatMessage], *, user_name: str | None = None, faithful: bool = True,
                    max_chars: int | None = None) -> list[Message]:
    """Convert messages in order (with ``faithful=False``, only those there is text to learn from)."""
    converted = (to_zep_message(m, user_name=user_name, faithful=faithful, max_chars=max_chars) for m in messages)
    return [m for m in converted if m is not None]


def to_chat_message(message: Message) -> ChatMessage:
    """Convert a stored :class:`zep_core.Message` back to the ``ChatMessage`` it was stored from."""
    extra = (getattr(message, "extra", None) or {}).get(EXTRA_KEY)
    if not isinstance(extra, dict):
        return ChatMessage(role=MessageRole(message.role), content=message.content)
    blocks = [_block(b) for b in extra.get("blocks", ())] if "blocks" in extra else [TextBlock(text=message.content)]
    return ChatMessage(role=MessageRole(extra.get("role", message.role)), blocks=blocks,
                       additional_kwargs=extra.get("additional_kwargs", {}))


def to_chat_messages(messages: Iterable[Message]) -> list[ChatMessage]:
    """Convert stored messages back to ``ChatMessage`` objects, in order."""
    return [to_chat_message(m) for m in messages]


def last_user_text(messages: Sequence[ChatMessage], window: int = 1) -> str:
    """The text of the last ``window`` user messages, oldest first, joined by newlines."""
    texts = [m.content for m in messages if m.role == MessageRole.USER and (m.content or "").strip()]
    return "\n".join(texts[-window:]) if texts and window > 0 else ""


def fact_to_node(fact: Fact) -> NodeWithScore:
    """A fact as a ``NodeWithScore``: text is the fact, score its GetContext score.

    Only the validity dates (when set) are shown to the LLM with the text; every other
    metadata key is for code (and none is embedded).
    """
    metadata = fact_metadata(fact)
    hidden = [k for k, v in metadata.items() if k not in LLM_METADATA_KEYS or v is None]
    node = TextNode(id_=fact.id, text=fact.content, metadata=metadata,
                    excluded_llm_metadata_keys=hidden, excluded_embed_metadata_keys=list(metadata))
    return NodeWithScore(node=node, score=fact.score)


# -- what a row of text cannot say -------------------------------------------------------------


def _extra(message: ChatMessage, role: str, text: str) -> dict[str, Any] | None:
    """The role, blocks and kwargs needed to rebuild ``message``; None when role and text say it all."""
    blocks = message.blocks
    plain = len(blocks) == 1 and isinstance(blocks[0], TextBlock) and blocks[0].text == text
    extra: dict[str, Any] = {}
    if message.role.value != role:  # a role the stored one does not map back to (a text-less user message)
        extra["role"] = message.role.value
    if not plain:
        extra["blocks"] = [_stored_block(b) for b in blocks]
    if message.additional_kwargs:
        dumped = message.model_dump(mode="json", include={"additional_kwargs"})["additional_kwargs"]
        json.dumps(dumped)  # what LlamaIndex's own serializer cannot write is refused here, not at the store
        extra["additional_kwargs"] = dumped
    return extra or None


def _stored_block(block: Any) -> dict[str, Any]:
    """A block as JSON: media by reference, inline bytes replaced by a placeholder."""
    field = _MEDIA.get(getattr(block, "block_type", ""))
    if field is None or getattr(block, field, None) is None:
        return block.model_dump(mode="json")
    if getattr(block, "url", None) or getattr(block, "path", None):
        return block.model_dump(mode="json", exclude={field})
    kind = block.block_type
    mimetype = next((getattr(block, a) for a in (f"{kind}_mimetype", "format") if getattr(block, a, None)), None)
    size = len(block.model_dump(mode="json", include={field})[field] or "") * 3 // 4
    return {"block_type": "text", "text": f"[{kind} not kept: {mimetype or 'unknown type'}, about {size} bytes]"}


def _block(data: Any) -> Any:
    """A stored block back as a LlamaIndex block; one that no longer loads (a moved file) becomes a note."""
    try:
        return _BLOCK.validate_python(data)
    except PydanticValidationError:
        kind = data.get("block_type", "block") if isinstance(data, dict) else "block"
        where = (data.get("url") or data.get("path")) if isinstance(data, dict) else None
        return TextBlock(text=f"[{kind} no longer available{f': {where}' if where else ''}]")


def _render(message: ChatMessage) -> str:
    """A readable stand-in for a message without text: its tool calls, else what its blocks are."""
    calls = [f"{b.tool_name}({json.dumps(b.tool_kwargs, ensure_ascii=False, default=str)})"
             for b in message.blocks if getattr(b, "block_type", None) == "tool_call"]
    calls += [f"{c.get('function', {}).get('name', '?')}({c.get('function', {}).get('arguments', '')})"
              for c in message.additional_kwargs.get("tool_calls", ()) if isinstance(c, dict)]
    if calls:
        return ("tool call: " + "; ".join(calls))[:_MAX_RENDERED]
    kinds = [getattr(b, "block_type", "block") for b in message.blocks]
    return f"[{', '.join(kinds)}]" if kinds else "[empty message]"
