"""`zep-memory ingest`: JSON, JSONL and LoCoMo files become episodes; running it again is a no-op."""

from __future__ import annotations

import io
import json
import re
from datetime import datetime, timezone
from pathlib import Path

import pytest
from zep_core.ingest_files import iter_episodes, parse_locomo_date

LOCOMO = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "locomo" / "locomo_dev.json"
UTC = timezone.utc


def write(path: Path, data) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture
def locomo_sample(tmp_path) -> Path:
    """LoCoMo's format: the first sample of the dev file, cut to three sessions (or a built one)."""
    if LOCOMO.exists():
        sample = json.loads(LOCOMO.read_text(encoding="utf-8"))[0]
        conv = sample["conversation"]
        kept = {k: v for k, v in conv.items() if k in ("speaker_a", "speaker_b")
                or k.split("_date_time")[0] in ("session_1", "session_2", "session_3")}
        sample = {"sample_id": sample["sample_id"], "conversation": kept, "qa": sample["qa"][:2]}
    else:
        sample = {"sample_id": "conv-26", "conversation": {
            "speaker_a": "Caroline", "speaker_b": "Melanie",
            **{f"session_{n}_date_time": f"1:5{n} pm on {n} May, 2023" for n in (1, 2, 3)},
            **{f"session_{n}": [{"speaker": "Caroline", "dia_id": f"D{n}:1", "text": f"I went hiking {n} times."},
                                {"speaker": "Melanie", "dia_id": f"D{n}:2", "text": "I live in Boston."}]
               for n in (1, 2, 3)}}}
    return write(tmp_path / "locomo.json", [sample])


def test_locomo_sessions_become_dated_episodes_with_dia_ids(cli, tmp_path, locomo_sample, open_memory):
    data = tmp_path / "data"
    result = cli("ingest", locomo_sample, "--data", data, "--json")
    assert result.code == 0, result.err
    summary = json.loads(result.out)
    assert summary["users"] == ["conv-26"] and summary["episodes"] == 3 and summary["done"] == 3
    assert "ingested 3/3 episodes" in result.err  # progress on stderr
    sample = json.loads(locomo_sample.read_text())[0]["conversation"]
    memory = open_memory(data)
    episodes = [memory.get_episode(i) for i in memory.episode_ids(user_id="conv-26")]
    assert [e.session_id for e in episodes] == ["conv-26:session_1", "conv-26:session_2", "conv-26:session_3"]
    first = episodes[0]
    assert [m.id for m in first.messages] == [t["dia_id"] for t in sample["session_1"]]
    assert [m.name for m in first.messages] == [t["speaker"] for t in sample["session_1"]]
    assert first.messages[0].content.startswith(sample["session_1"][0]["text"])
    assert all(m.timestamp == parse_locomo_date(sample["session_1_date_time"]) for m in first.messages)
    assert memory.stats()["facts"]["current"] > 0
    facts = {f.id: f for f in memory.facts("conv-26")}
    dia_ids = {t["dia_id"] for k in ("session_1", "session_2", "session_3") for t in sample[k]}
    assert all(set(f.source_message_ids) <= dia_ids for f in facts.values())


def test_ingesting_the_same_file_again_stores_nothing_new(cli, tmp_path, locomo_sample, open_memory):
    data = tmp_path / "data"
    assert cli("ingest", locomo_sample, "--data", data).code == 0
    again = cli("ingest", locomo_sample, "--data", data, "--json")
    assert again.code == 0
    summary = json.loads(again.out)
    assert summary["duplicate"] == 3 and summary["done"] == 0 and summary["facts_added"] == 0
    stats = open_memory(data).stats()
    assert stats["records"]["episodes"] == 3


def test_user_option_puts_everything_under_one_user(cli, tmp_path, locomo_sample, open_memory):
    data = tmp_path / "data"
    assert cli("ingest", locomo_sample, "--data", data, "--user", "eval", "--quiet").code == 0
    memory = open_memory(data)
    assert memory.users() == ["eval"]


def test_json_conversations_of_two_users(cli, tmp_path, open_memory):
    file = write(tmp_path / "chats.json", {"conversations": [
        {"session_id": "s1", "user_id": "alice", "timestamp": "2023-05-08T10:00:00Z",
         "messages": [{"role": "user", "name": "Alice", "content": "I live in Paris."}]},
        {"session_id": "s2", "user_id": "alice", "messages": [
            {"role": "user", "name": "Alice", "content": "I moved to Berlin.", "timestamp": "2024-03-01T10:00:00Z"}]},
        {"session_id": "s1", "user_id": "bob",
         "messages": [{"role": "user", "name": "Bob", "content": "I live in Rome."}]},
    ]})
    data = tmp_path / "data"
    result = cli("ingest", file, "--data", data)
    assert result.code == 0 and "ingested 3 episodes (3 messages) for alice, bob: 3 new" in result.out
    assert re.search(r"facts: \d+ added, 0 reinforced, [1-9]\d* superseded, 0 discarded", result.out)
    memory = open_memory(data)
    alice = [f.content for f in memory.get_context("Where does Alice live?", user_id="alice")]
    assert alice[0] == "Alice lives in Berlin."
    assert not any("Rome" in c for c in alice)
    paris = next(f for f in memory.entity_history("Alice", user_id="alice") if f.content == "Alice lives in Paris.")
    assert paris.valid_from == datetime(2023, 5, 8, 10, tzinfo=UTC)
    assert paris.valid_until == datetime(2024, 3, 1, 10, tzinfo=UTC)


def test_jsonl_messages_are_grouped_by_session(cli, tmp_path, open_memory):
    lines = [{"session_id": "a", "role": "user", "name": "Ada", "content": "I work at Acme.", "id": "m1"},
             {"session_id": "b", "role": "user", "name": "Ada", "content": "I like jazz.", "id": "m3"},
             {"session_id": "a", "role": "assistant", "content": "Nice!", "id": "m2"}]
    file = tmp_path / "turns.jsonl"
    file.write_text("\n".join(json.dumps(x) for x in lines) + "\n\n", encoding="utf-8")
    data = tmp_path / "data"
    result = cli("ingest", file, "--data", data, "--user", "ada", "--json")
    assert result.code == 0 and json.loads(result.out)["episodes"] == 2
    memory = open_memory(data)
    episodes = [memory.get_episode(i) for i in memory.episode_ids(user_id="ada")]
    assert [(e.session_id, [m.id for m in e.messages]) for e in episodes] == [("a", ["m1", "m2"]), ("b", ["m3"])]


def test_standard_input_is_read_with_a_dash(cli, tmp_path, monkeypatch, open_memory):
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(
        [{"role": "user", "name": "Ada", "content": "I live in Oslo."}])))
    assert cli("ingest", "-", "--data", tmp_path / "data", "--user", "ada").code == 0
    assert open_memory(tmp_path / "data").get_context("Where does Ada live?", user_id="ada")[0].content == \
        "Ada lives in Oslo."


@pytest.mark.parametrize("content, message", [
    ("", "is empty"),
    ("{not json", "neither JSON nor JSONL"),
    ('{"session_id": "s"}\n{oops\n', "line 2 is not valid JSON"),
    ('{"hello": 1}', "without 'messages'"),
    ('[{"session_id": "s", "messages": [{"role": "robot", "content": "hi"}]}]', "role 'robot'"),
    ('[{"sample_id": "x", "conversation": {"session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}], '
     '"session_1_date_time": "yesterday"}}]', "not like '1:56 pm on 8 May, 2023'"),
])
def test_malformed_files_are_one_line_errors(cli, tmp_path, content, message):
    file = tmp_path / "bad.json"
    file.write_text(content, encoding="utf-8")
    result = cli("ingest", file, "--data", tmp_path / "data")
    assert result.code == 2 and result.err.startswith("error: ") and message in result.err
    assert result.err.count("\n") == 1


def test_a_missing_file_is_an_error(cli, tmp_path):
    result = cli("ingest", tmp_path / "nope.json", "--data", tmp_path / "data")
    assert result.code == 2 and "no such file" in result.err


def test_episode_ids_are_deterministic_and_depend_on_user_session_and_messages():
    convo = {"session_id": "s", "messages": [{"role": "user", "content": "I live in Paris."}]}
    first = next(iter_episodes(convo)).episode_id
    assert next(iter_episodes(convo)).episode_id == first
    assert next(iter_episodes(convo, user_id="bob")).episode_id != first
    changed = {"session_id": "s", "messages": [{"role": "user", "content": "I live in Rome."}]}
    assert next(iter_episodes(changed)).episode_id != first


def test_locomo_dates_are_read_as_utc():
    assert parse_locomo_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_locomo_date("12:09 am on 13 September, 2023") == datetime(2023, 9, 13, 0, 9, tzinfo=UTC)
    assert parse_locomo_date("12:30 pm on 1 January, 2024") == datetime(2024, 1, 1, 12, 30, tzinfo=UTC)
