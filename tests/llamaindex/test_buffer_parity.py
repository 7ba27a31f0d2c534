"""ZepMemory is a drop-in for ChatMemoryBuffer: the same puts give the same gets.

Each case runs one sequence of ``put``/``put_messages``/``set``/``reset`` and
``get``/``get_all`` calls through LlamaIndex's own ``ChatMemoryBuffer`` and through a
ZepMemory, and compares every answer: roles, blocks (tool calls, images, thinking),
``additional_kwargs``, and which turns ``token_limit`` keeps. The ZepMemory ends
conversations only when told (``end_policy="explicit"``), so that what it adds — the
context message — stays out of a comparison of buffers.
"""

from __future__ import annotations

import pytest
from llama_index.core.base.llms.types import (
    ChatMessage,
    ImageBlock,
    MessageRole,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)
from llama_index.core.memory import ChatMemoryBuffer

from zep_llamaindex import ZepMemory

U, A, S, T = MessageRole.USER, MessageRole.ASSISTANT, MessageRole.SYSTEM, MessageRole.TOOL


def msg(role, text=None, *, blocks=None, **kwargs):
    return ChatMessage(role=role, content=text, blocks=blocks or [], additional_kwargs=kwargs)


def call(name, **tool_kwargs):
    return ToolCallBlock(tool_call_id=f"call-{name}", tool_name=name, tool_kwargs=tool_kwargs)


TALK = [msg(U, "Hi, I am planning a trip to Lisbon next spring with my sister."),
        msg(A, "Lisbon in spring is lovely. How long will you stay?"),
        msg(U, "A week."), msg(A, "Then take a day trip to Sintra."), msg(U, "Thanks!")]
TOOLS = [msg(U, "What's the weather in Lisbon?"),
         msg(A, blocks=[call("weather", city="Lisbon")]),
         msg(T, "Sunny, 24 degrees.", tool_call_id="call-weather", name="weather"),
         msg(A, blocks=[TextBlock(text="Let me check Porto too."), call("weather", city="Porto")]),
         msg(T, "Cloudy, 18 degrees.", tool_call_id="call-weather"),
         msg(A, "Lisbon is sunny and 24 degrees; Porto is cloudy."),
         msg(U, "Great.")]
BLOCKS = [msg(S, "You are a travel assistant."),
          msg(U, blocks=[TextBlock(text="Where was this photo taken?"),
                         ImageBlock(url="https://example.org/tram.jpg", image_mimetype="image/jpeg")]),
          msg(A, blocks=[ThinkingBlock(content="A yellow tram: Lisbon's line 28."), TextBlock(text="In Lisbon.")],
              model="mock", usage={"input_tokens": 12, "output_tokens": 3}),
          msg(U, blocks=[ImageBlock(url="https://example.org/bridge.png")]),
          msg(MessageRole.CHATBOT, "That is the 25 de Abril bridge.", response_id="r-9")]

SEQUENCES = {
    "talk": [("put", m) for m in TALK] + [("get",), ("get_all",)],
    "tools": [("put_messages", TOOLS), ("get",), ("get_all",)],
    "blocks": [("put", BLOCKS[0]), ("put_messages", BLOCKS[1:]), ("get",), ("get_all",)],
    "set_and_reset": [("put_messages", TALK[:2]), ("set", TOOLS[:3]), ("get",), ("get_all",), ("reset",),
                      ("get",), ("get_all",), ("put", TALK[2]), ("get",)],
    "initial_tokens": [("put_messages", TALK + TOOLS), ("get", 0), ("get", 7), ("get", 25), ("get_all",)],
}


def dump(messages):
    return [m.model_dump(mode="json") for m in messages]


def run(chat_memory, steps, token_limit):
    answers = []
    for op, *args in steps:
        if op == "put":
            chat_memory.put(args[0])
        elif op == "put_messages":
            chat_memory.put_messages(list(args[0]))
        elif op == "set":
            chat_memory.set(list(args[0]))
        elif op == "reset":
            chat_memory.reset()
        elif op == "get_all":
            answers.append(("get_all", dump(chat_memory.get_all())))
        else:
            initial = min(args[0] if args else 0, token_limit)
            answers.append((f"get({initial})", dump(chat_memory.get(initial_token_count=initial))))
    return answers


@pytest.mark.parametrize("token_limit", [3000, 40, 12, 1])
@pytest.mark.parametrize("sequence", sorted(SEQUENCES))
def test_the_same_puts_give_what_chat_memory_buffer_gives(make_memory, sequence, token_limit):
    core = make_memory()
    buffer = ChatMemoryBuffer.from_defaults(token_limit=token_limit)
    zep = ZepMemory(memory=core, user_id=f"parity-{sequence}", session_id="s1", token_limit=token_limit,
                    end_policy="explicit")

    expected = run(buffer, SEQUENCES[sequence], token_limit)
    got = run(zep, SEQUENCES[sequence], token_limit)

    assert got == expected
    assert any(answer for _, answer in expected)  # the case compares something


def test_a_limit_below_one_message_returns_the_last_message_as_the_buffer_does(make_memory):
    zep = ZepMemory(memory=make_memory(), user_id="ada", session_id="s1", token_limit=2, end_policy="explicit")
    zep.put_messages(TALK)

    assert [m.content for m in zep.get()] == ["Thanks!"]  # not [], so the LLM sees the question
    zep.put(TOOLS[2])
    assert [(m.role, m.content) for m in zep.get()] == [(T, "Sunny, 24 degrees.")]


def test_inline_image_bytes_are_kept_as_a_placeholder_and_files_by_reference(make_memory, tmp_path):
    png = tmp_path / "photo.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
    zep = ZepMemory(memory=make_memory(), user_id="ada", session_id="s1", end_policy="explicit")

    zep.put_messages([msg(U, blocks=[TextBlock(text="Look:"), ImageBlock(image=png.read_bytes())]),
                      msg(U, blocks=[ImageBlock(path=png)])])
    inline, by_path = zep.get_all()

    assert inline.content.startswith("Look:\n[image not kept: image/png, about ")
    assert by_path.blocks[0].path == png and by_path.blocks[0].image is None
    png.unlink()
    assert zep.get_all()[1].blocks[0].text == f"[image no longer available: {png}]"  # a moved file, not a crash
