"""ScriptedChatModel: a tool-calling chat model that plays a script, for tests and offline examples."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

__all__ = ["Reply", "ScriptedChatModel"]

#: A scripted reply: a fixed message, or a function of the messages the model received.
Reply = AIMessage | Callable[[list[BaseMessage]], AIMessage]


class ScriptedChatModel(BaseChatModel):
    """Plays ``replies`` in order and records every list of messages it was given.

    It supports ``bind_tools`` (the tools are recorded, the script decides the
    calls), so it can drive ``create_agent``. Running past the end of the script
    is an error that says so.

    Example:
        >>> model = ScriptedChatModel(replies=[
        ...     AIMessage("", tool_calls=[{"name": "search_memory", "args": {"query": "home"}, "id": "1"}]),
        ...     AIMessage("You live in Berlin."),
        ... ])
        >>> model.invoke("Where do I live?").tool_calls[0]["name"]
        'search_memory'
        >>> model.calls[0][0].content
        'Where do I live?'

    """

    replies: list[Any] = Field(default_factory=list)
    calls: list[list[BaseMessage]] = Field(default_factory=list)
    bound_tools: list[Any] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "zep-scripted"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        self.calls.append(list(messages))
        step = len(self.calls) - 1
        if step >= len(self.replies):
            raise RuntimeError(f"ScriptedChatModel ran out of replies: call {step + 1}, script has "
                               f"{len(self.replies)}; add replies for every model call the test makes")
        reply = self.replies[step]
        message = reply(list(messages)) if callable(reply) else reply
        return ChatResult(generations=[ChatGeneration(message=message.model_copy())])

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any) -> ScriptedChatModel:
        """Record the tools; the script decides which ones are called."""
        self.bound_tools = list(tools)
        return self

    def system_prompts(self) -> list[str]:
        """The system message text of every call so far (``""`` where there was none)."""
        return [next((m.text for m in call if m.type == "system"), "") for call in self.calls]
