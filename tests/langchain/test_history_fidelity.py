"""ZepChatMessageHistory keeps what LangChain's in-memory history keeps: tool calls, tool results, blocks, kwargs.

Only the text of human and assistant messages is learned from; everything else is
kept so the history replays as it happened (issue 16, "faithful histories").
"""

from __future__ import annotations

import json

import pytest
from langchain_core.chat_history import InMemoryChatMessageHistory
from langchain_core.messages import AIMessage, ChatMessage, HumanMessage, SystemMessage, ToolMessage
from zep_core import Message, ValidationError

from zep_langchain import ZepChatMessageHistory

pytestmark = pytest.mark.filterwarnings("ignore:The class `InMemoryChatMessageHistory` was deprecated")

PHOTO = "https://example.com/photos/cat.jpg"
#: 8,000 characters of base64 (6,000 bytes): a small PNG as a model would be sent it.
PNG_DATA = "iVBORw0KGgo" + "A" * 7_989


def weather_conversation() -> list:
    """A tool-using exchange, then a photo with kwargs: what an agent's history holds."""
    return [
        SystemMessage("You are a travel assistant."),
        HumanMessage("I live in Paris. What is the weather there?"),
        AIMessage("", tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "call-1"}],
                  response_metadata={"model_name": "scripted", "finish_reason": "tool_calls"},
                  usage_metadata={"input_tokens": 12, "output_tokens": 7, "total_tokens": 19}),
        ToolMessage("Sunny, 21 °C. Bob lives in Rome.", tool_call_id="call-1", name="get_weather",
                    artifact={"temperature_c": 21, "sky": "clear"}),
        AIMessage("It is sunny in Paris, 21 °C.", response_metadata={"finish_reason": "stop"}),
        HumanMessage([{"type": "text", "text": "I work at Acme. Here is my cat."},
                      {"type": "image_url", "image_url": {"url": PHOTO}}],
                     additional_kwargs={"client": {"app": "mobile", "version": 3}}),
        AIMessage("A lovely cat!"),
    ]


def test_a_tool_using_conversation_comes_back_as_the_in_memory_history_keeps_it(make_memory, tmp_path):
    folder = tmp_path / "fidelity"
    sent = weather_conversation()
    reference = InMemoryChatMessageHistory()
    reference.add_messages(sent)
    first = make_memory(data_dir=folder)
    ZepChatMessageHistory(first, "s1", user_id="alice").add_messages(sent)
    first.close()

    got = ZepChatMessageHistory(make_memory(data_dir=folder), "s1", user_id="alice").messages  # after a restart
    assert [type(m) for m in got] == [type(m) for m in reference.messages]
    assert [m.content for m in got] == [m.content for m in reference.messages]
    assert got[2].tool_calls == [{"name": "get_weather", "args": {"city": "Paris"}, "id": "call-1",
                                  "type": "tool_call"}]
    assert (got[3].tool_call_id, got[3].name, got[3].status, got[3].artifact) == (
        "call-1", "get_weather", "success", {"temperature_c": 21, "sky": "clear"})
    assert got[5].additional_kwargs == {"client": {"app": "mobile", "version": 3}}
    assert got[5].content[1] == {"type": "image_url", "image_url": {"url": PHOTO}}
    assert got[2].usage_metadata == sent[2].usage_metadata
    assert got == reference.messages  # every field, not only the ones named above


def test_only_the_human_and_assistant_text_is_learned_from(memory):
    history = ZepChatMessageHistory(memory, "s1", user_id="alice", user_name="Alice")
    history.add_messages(weather_conversation())
    rows = memory.get_messages("s1", user_id="alice")
    assert [m.role for m in rows] == ["system", "user", "tool", "tool", "assistant", "user", "assistant"]
    assert rows[2].content == 'tool call: get_weather({"city": "Paris"})'
    assert rows[5].content == "I work at Acme. Here is my cat."  # the text of the blocks, no image

    result = history.end_conversation()
    learned = [f.content for f in result.added]
    assert "Alice lives in Paris." in learned and "Alice works at Acme." in learned
    assert not any("Rome" in f or "Sunny" in f or "get_weather" in f or PHOTO in f for f in learned)
    assert not [f for f in result.added if f.subject == "Bob"]  # what the tool said is not the user's
    assert len(history.messages) == 7  # ending keeps the whole history


def test_inline_images_are_kept_as_a_note_not_as_their_data(history_of, memory):
    history = history_of(memory)
    history.add_messages([
        HumanMessage([{"type": "text", "text": "What breed is this?"},
                      {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_DATA}"}},
                      {"type": "image", "base64": PNG_DATA, "mime_type": "image/jpeg"}]),
        AIMessage("Here it is read aloud.", additional_kwargs={"audio": {"id": "a1", "data": PNG_DATA}}),
    ])
    stored = json.dumps([m.extra for m in memory.get_messages("s1", user_id="alice")])
    assert PNG_DATA not in stored and "AAAAAAAA" not in stored

    question, answer = history.messages
    assert question.content == [
        {"type": "text", "text": "What breed is this?"},
        {"type": "text", "text": "[image not kept: image/png, about 6000 bytes]"},
        {"type": "text", "text": "[image not kept: image/jpeg, about 6000 bytes]"},
    ]
    assert answer.additional_kwargs == {"audio": {"id": "a1", "data": "[inline data not kept: about 6000 bytes]"}}


def test_an_image_alone_is_kept_but_not_learned_from(history_of, memory):
    history = history_of(memory, user_name="Alice")
    photo = HumanMessage([{"type": "image_url", "image_url": {"url": PHOTO}}])
    history.add_messages([photo, AIMessage("That photo shows a grey cat asleep on a red sofa.")])
    assert history.messages[0] == photo  # as given: no name of its own (the speaker stays in the row)
    assert [(m.role, m.content) for m in memory.get_messages("s1", user_id="alice")] == [
        ("tool", "[image_url]"), ("assistant", "That photo shows a grey cat asleep on a red sofa.")]
    learned = [f.content for f in history.end_conversation().added]
    assert learned and not any("image" in f or "Alice" in f for f in learned)


def test_a_long_tool_result_is_cut_in_the_buffer_but_comes_back_whole(make_memory):
    memory = make_memory(max_message_chars=200)
    history = ZepChatMessageHistory(memory, "s1", user_id="alice")
    result = "line of a long search result. " * 40
    history.add_messages([HumanMessage("Search it."), ToolMessage(result, tool_call_id="c9")])
    row = memory.get_messages("s1", user_id="alice")[1]
    assert len(row.content) <= 200 and row.content.endswith("[cut here; the whole text is kept with the message]")
    assert history.messages[1].content == result


def test_kwargs_that_are_not_json_are_refused_and_nothing_of_the_batch_is_stored(history_of, memory):
    history = history_of(memory)
    with pytest.raises(ValidationError, match=r"message 1 \(ai\): its additional_kwargs cannot be stored as JSON"):
        history.add_messages([HumanMessage("Hello."), AIMessage("Hi.", additional_kwargs={"handle": object()})])
    assert history.messages == []


def test_an_artifact_that_is_not_json_is_kept_as_a_note(history_of):
    class Frame:
        pass

    history = history_of()
    history.add_messages([ToolMessage("3 rows", tool_call_id="c1", artifact=Frame())])
    assert history.messages[0].artifact == "[artifact not kept: a Frame is not JSON]"
    assert history.messages[0].tool_call_id == "c1"


def test_a_recent_window_never_starts_with_a_tool_result_cut_from_its_call(history_of):
    history = history_of()
    history.add_messages(weather_conversation()[:5])
    assert [type(m).__name__ for m in history.recent(2)] == ["AIMessage"]
    assert [type(m).__name__ for m in history.recent(3)] == ["AIMessage", "ToolMessage", "AIMessage"]


def test_rows_stored_without_langchain_data_come_back_by_role(history_of, memory):
    memory.add_messages("s1", [Message("I live in Paris.", role="user"), Message("42", role="tool"),
                               Message("ok", role="assistant", extra={"llamaindex": {"role": "assistant"}})],
                        user_id="alice")
    got = history_of(memory).messages
    assert [type(m) for m in got] == [HumanMessage, ChatMessage, AIMessage]
    assert (got[1].role, got[1].content) == ("tool", "42")


def test_a_remote_memory_keeps_the_same_history(memory):
    from zep_core.server import RemoteMemory, create_app

    from tests.server.conftest import KEYS, keyring, serving

    sent = weather_conversation()
    with serving(create_app(memory, keyring())) as url, RemoteMemory(url, api_key=KEYS["alice"]) as remote:
        ZepChatMessageHistory(remote, "s1", user_id="alice").add_messages(sent)
        over_the_wire = ZepChatMessageHistory(remote, "s1", user_id="alice").messages
    assert over_the_wire == sent
    assert ZepChatMessageHistory(memory, "s1", user_id="alice").messages == sent


@pytest.fixture
def history_of(memory):
    def make(of=None, **options):
        return ZepChatMessageHistory(of or memory, "s1", user_id="alice", **options)
    return make
