"""A chat turn's ``extra``: adapter data kept with it in the session buffer, never learned from."""

from __future__ import annotations

import io
import sqlite3

import pytest
from zep_core import Message, ValidationError
from zep_core.serialize import message_from_dict, message_to_dict
from zep_core.stores.records import RecordStore
from zep_core.tenant import Tenant

T = Tenant.of  # a checked user id: what the stores take

EXTRA = {"llamaindex": {"role": "assistant", "blocks": [{"block_type": "tool_call", "tool_name": "weather",
                                                         "tool_kwargs": {"city": "Oslo"}}]}}


def test_extra_must_be_a_json_ready_mapping():
    assert Message("x", extra=EXTRA).extra == EXTRA
    with pytest.raises(ValidationError, match="mapping"):
        Message("x", extra=["not", "a", "mapping"])
    with pytest.raises(ValidationError, match="JSON-ready"):
        Message("x", extra={"when": object()})
    assert hash(Message("x", extra=EXTRA)) == hash(Message("x"))  # still hashable; extra is not hashed


def test_the_session_buffer_keeps_extra_and_episodes_do_not(memory):
    memory.add_messages("chat", [Message("I live in Oslo.", name="Ann"),
                                 Message("weather(Oslo)", role="tool", extra=EXTRA)], user_id="ann")

    plain, tool = memory.get_messages("chat", user_id="ann")
    assert (plain.extra, tool.extra) == (None, EXTRA)
    result = memory.end_session("chat", user_id="ann")
    assert [m.extra for m in memory.get_episode(result.episode_id).messages] == [None]


def test_export_and_import_carry_extra(memory, make_memory, tmp_path):
    memory.add_messages("chat", [Message("Hi.", name="Ann", extra={"langchain": {"id": "m1"}})], user_id="ann")
    out = io.StringIO()
    memory.export_user("ann", out)

    other = make_memory(tmp_path / "other")
    other.import_user(out.getvalue().splitlines())

    assert other.get_messages("chat", user_id="ann")[0].extra == {"langchain": {"id": "m1"}}


def test_serialize_writes_extra_only_when_there_is_one():
    assert "extra" not in message_to_dict(Message("x"))
    assert message_from_dict(message_to_dict(Message("x", extra=EXTRA))).extra == EXTRA


def test_a_record_store_from_before_extra_gets_the_column(tmp_path):
    path = tmp_path / "zep.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE session_messages (seq INTEGER PRIMARY KEY AUTOINCREMENT, user_id TEXT NOT NULL, "
                 "session_id TEXT NOT NULL, role TEXT NOT NULL, name TEXT, content TEXT NOT NULL, "
                 "message_id TEXT, timestamp TEXT, episode_id TEXT)")
    conn.execute("INSERT INTO session_messages(user_id, session_id, role, content) VALUES ('ann', 'chat', 'user', "
                 "'Hi.')")
    conn.commit()
    conn.close()

    records = RecordStore(path)
    try:
        assert [m.content for _, m in records.session_messages(T("ann"), "chat")] == ["Hi."]
        records.add_session_messages(T("ann"), "chat", [Message("Hello.", role="assistant", extra=EXTRA)])
        assert records.session_messages(T("ann"), "chat")[-1][1].extra == EXTRA
    finally:
        records.close()
