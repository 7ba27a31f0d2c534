"""Mock LLMs that record what they were sent, and a retriever that finds nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.types import ChatMessage, CompletionResponse, CompletionResponseGen, ToolCallBlock
from llama_index.core.bridge.pydantic import Field
from llama_index.core.llms import MockLLM
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode


class RecordingLLM(MockLLM):
    """A MockLLM that records every prompt it receives and answers with a fixed reply.

    Chat calls reach ``complete`` through CustomLLM, so recording there sees them all.
    """

    prompts: list[str] = Field(default_factory=list, exclude=True)
    reply: str = "Noted."

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.prompts.append(prompt)
        return CompletionResponse(text=self.reply)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        self.prompts.append(prompt)

        def gen() -> CompletionResponseGen:
            yield CompletionResponse(text=self.reply, delta=self.reply)

        return gen()


class RecordingFunctionLLM(MockFunctionCallingLLM):
    """A MockFunctionCallingLLM that records each call's messages and plays a script.

    ``script`` items are answers (str) or tool calls (``(tool_name, kwargs)``); once
    it runs out, the LLM answers ``reply``.
    """

    calls: list[list[ChatMessage]] = Field(default_factory=list, exclude=True)
    script: list[Any] = Field(default_factory=list, exclude=True)
    reply: str = "Noted."

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.response_generator = self._respond

    def _respond(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        self.calls.append(list(messages))
        step = self.script.pop(0) if self.script else self.reply
        if isinstance(step, str):
            return ChatMessage(role="assistant", content=step)
        name, tool_kwargs = step
        return ChatMessage(role="assistant", blocks=[
            ToolCallBlock(tool_call_id=f"call-{len(self.calls)}", tool_name=name, tool_kwargs=tool_kwargs)])

    def seen(self) -> list[str]:
        """Every message text of every call, one string per call."""
        return ["\n".join(str(m.content or "") for m in call) for call in self.calls]


class NoteRetriever(BaseRetriever):
    """A retriever that always returns one neutral note, so only the memory can put facts into a prompt.

    (A retriever that finds nothing would make the context engines answer "Empty
    Response" without calling the LLM at all.)
    """

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [NodeWithScore(node=TextNode(text="House style: answer in one sentence."), score=1.0)]
