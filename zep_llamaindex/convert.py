"""Pure conversions between LlamaIndex's records and zep-memory's.

``ChatMessage`` ⇄ :class:`zep_core.Message` for chat turns, and
:class:`zep_core.Fact` → ``NodeWithScore`` for retrieval. Nothing here touches a store.

Tool-call plumbing (``tool``/``function`` messages, and assistant messages that
carry only tool calls) has no text a person said, so it is not stored: what a
session keeps is what the user and the assistant said to each other.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.schema import NodeWithScore, TextNode
from zep_core import Fact, Message
from zep_core.serialize import fact_metadata

__all__ = ["fact_to_node", "last_user_text", "to_chat_message", "to_chat_messages",
           "to_zep_message", "to_zep_messages"]

_ROLES = {
    MessageRole.USER: "user",
    MessageRole.ASSISTANT: "assistant",
    MessageRole.CHATBOT: "assistant",
    MessageRole.MODEL: "assistant",
    MessageRole.SYSTEM: "system",
    MessageRole.DEVELOPER: "system",
}

#: Metadata the LLM sees next to a fact's text (the rest is for code: ids, scores, parts).
LLM_METADATA_KEYS = ("valid_from", "valid_until")


def to_zep_message(message: ChatMessage, *, user_name: str | None = None) -> Message | None:
    """Convert a ``ChatMessage`` to a :class:`zep_core.Message`; None if it carries no text to keep.

    Args:
        message: the LlamaIndex message.
        user_name: the speaker's name, set on user messages so that "I" resolves to it.

    Example:
        >>> to_zep_message(ChatMessage(role="user", content="I live in Paris"), user_name="Ada").name
        'Ada'

    """
    role = _ROLES.get(message.role)
    text = message.content or ""
    if role is None or not text.strip():
        return None
    return Message(content=text, role=role, name=user_name if role == "user" else None)


def to_zep_messages(messages: Iterable[ChatMessage], *, user_name: str | None = None) -> list[Message]:
    """Convert messages, leaving out those with no text to keep (tool calls and results)."""
    converted = (to_zep_message(m, user_name=user_name) for m in messages)
    return [m for m in converted if m is not None]


def to_chat_message(message: Message) -> ChatMessage:
    """Convert a stored :class:`zep_core.Message` back to a ``ChatMessage``."""
    return ChatMessage(role=MessageRole(message.role), content=message.content)


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
