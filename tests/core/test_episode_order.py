"""Order inside an episode is time; the ingest result says what the episode retired; quotes stay while true."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from zep_core import Message
from zep_core.cli import main
from zep_core.temporal import message_times

from tests.core.fakes import HashEmbedder, ScriptedExtractor, said

UTC = timezone.utc
T1 = datetime(2023, 1, 1, tzinfo=UTC)
T2 = datetime(2023, 2, 1, tzinfo=UTC)


@pytest.fixture
def mem(make_memory):
    return make_memory(embedder=HashEmbedder())  # the offline rule extractor, a fast embedder


def lives(memory, who="Ann", user="u"):
    return {f.object: f for f in memory.entity_history(who, user_id=user) if f.predicate == "lives_in"}


def test_a_later_correction_in_the_same_episode_supersedes_the_earlier_one(mem):
    result = mem.conversation_end("s", [Message("now I live in Berlin", name="Ann"),
                                        Message("Nice!", role="assistant"),
                                        Message("Actually I live in Madrid.", name="Ann")], user_id="u")
    assert result.status == "done" and result.discarded == ()
    by_city = lives(mem)
    assert by_city["Madrid"].is_current
    berlin = by_city["Berlin"]
    assert berlin.superseded_by == by_city["Madrid"].id and berlin.valid_until == by_city["Madrid"].valid_from
    assert berlin.id in {f.id for f in result.superseded}
    block = mem.context_block("Where does Ann live?", user_id="u")
    assert "Madrid" in block and "Berlin" not in block.split("ENTITIES")[0]


def test_messages_sharing_one_timestamp_are_ordered_by_position(mem):
    t = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # LoCoMo dates every message of a session alike
    mem.conversation_end("s", [Message("I live in Berlin.", name="Ann", timestamp=t),
                               Message("Sorry, I live in Madrid.", name="Ann", timestamp=t)], user_id="u")
    by_city = lives(mem)
    assert by_city["Madrid"].is_current and not by_city["Berlin"].is_current
    assert by_city["Berlin"].valid_from == t  # the first message keeps its own time exactly


def test_distinct_message_timestamps_are_kept_as_given(mem):
    result = mem.conversation_end("s", [Message("I live in Berlin.", name="Ann", timestamp=T2),
                                        Message("I live in Madrid.", name="Ann", timestamp=T1)], user_id="u")
    by_city = lives(mem)
    assert by_city["Berlin"].valid_from == T2 and by_city["Berlin"].is_current  # dated later, though said first
    assert by_city["Madrid"].valid_from == T1 and by_city["Madrid"].valid_until == T2
    assert result.discarded == () and by_city["Madrid"].id in {f.id for f in result.superseded}


def test_message_times_spread_ties_by_position_and_keep_distinct_times():
    msgs = [Message("a", id="a"), Message("b", id="b", timestamp=T1), Message("c", id="c"),
            Message("d", id="d", timestamp=T1)]
    times = message_times(msgs, T2)  # a, c: no timestamp, so the episode's time T2
    one = timedelta(microseconds=1)
    assert times == {"a": T2, "b": T1, "c": T2 + one, "d": T1 + one}
    last = datetime.max.replace(tzinfo=UTC)
    assert message_times([Message("x", id="x", timestamp=last), Message("y", id="y", timestamp=last)], T1) == {
        "x": last, "y": last}  # no overflow at the very end of year 9999


def test_ingest_result_counts_supersessions_within_the_episode(mem):
    result = mem.conversation_end("s", [Message("I live in Berlin", name="Ann", timestamp=T1),
                                        Message("I live in Madrid now.", name="Ann", timestamp=T2)], user_id="u")
    history = [f for f in mem.entity_history("Ann", user_id="u") if f.superseded_by]
    assert len(history) == 1  # the canonical fact (its quote says nothing more, so it is not stored beside it)
    assert {f.id for f in result.superseded} == {f.id for f in history}
    assert all(f.valid_until == T2 for f in result.superseded)


def test_every_discarded_fact_comes_with_its_reason(make_memory):
    scripted = ScriptedExtractor()
    memory = make_memory(embedder=HashEmbedder(), extractor=scripted)
    scripted.push(said("Ann", "lives_in", "Berlin", valid_from=T2))
    memory.conversation_end("s1", [Message("hello there", name="Ann")], user_id="u")
    scripted.push(said("Ann", "lives_in", "Paris", valid_from=T1), said("Ann", "likes", "tea", confidence=7))
    result = memory.conversation_end("s2", [Message("hello again", name="Ann")], user_id="u")
    (discarded,) = result.discarded
    assert discarded.fact.object == "Paris" and "Ann lives in Berlin." in discarded.reason
    assert "not older" in discarded.reason
    assert len(result.invalid) == 1 and "confidence" in result.invalid[0]


def test_a_quote_stays_current_while_anything_it_said_is_still_true(mem):
    mem.conversation_end("s1", [Message("Hi, I'm Bob. I live in London near the river, and I work at Initech.",
                                        name="Bob", timestamp=T1)], user_id="u")
    mem.conversation_end("s2", [Message("I work at Globex now.", name="Bob", timestamp=T2)], user_id="u")
    facts = mem.get_context("where does Bob live", user_id="u")
    assert any("London" in f.content for f in facts)
    current = {(f.predicate, f.object) for f in mem.entity_history("Bob", user_id="u") if f.is_current}
    assert ("works_at", "Initech") not in current and ("works_at", "Globex") in current
    assert ("lives_in", "London") in current
    assert any("London" in o for p, o in current if p == "statement")  # the quote is still in view
    # when the last thing it said is retired, the quote goes too
    mem.conversation_end("s3", [Message("I moved to Paris.", name="Bob", timestamp=datetime(2024, 1, 1,
                                                                                              tzinfo=UTC))],
                         user_id="u")
    current = [f for f in mem.entity_history("Bob", user_id="u") if f.is_current]
    assert not any("London" in f.content or "Initech" in f.content for f in current)
    assert "London" not in mem.context_block("Where does Bob live?", user_id="u").split("ENTITIES")[0]


def test_cli_ingest_prints_each_discarded_fact_with_its_reason(tmp_path, capsys):
    talk = {"conversations": [
        {"session_id": "s1", "user_id": "u", "messages": [
            {"role": "user", "name": "Ann", "content": "I live in Berlin.", "timestamp": "2023-02-01T00:00:00Z"}]},
        {"session_id": "s2", "user_id": "u", "messages": [  # told later about an older home
            {"role": "user", "name": "Ann", "content": "I live in Madrid.", "timestamp": "2023-01-01T00:00:00Z"}]}]}
    path = tmp_path / "talk.json"
    path.write_text(json.dumps(talk), encoding="utf-8")
    assert main(["ingest", str(path), "--data", str(tmp_path / "data")]) == 0
    out = capsys.readouterr().out
    assert "1 discarded" in out
    assert "s2: discarded 'Ann lives in Madrid.': conflicts with the current fact 'Ann lives in Berlin.'" in out
    assert main(["ingest", str(path), "--data", str(tmp_path / "again"), "--json"]) == 0
    (dropped,) = json.loads(capsys.readouterr().out)["dropped"]
    assert dropped["fact"] == "Ann lives in Madrid." and "not older" in dropped["reason"]


def test_a_covered_quote_is_stored_when_the_fact_it_backs_is_discarded(make_memory):
    """Said out of order ("in 2019" while the current fact is from 2020): the fact is discarded, the words stay."""
    memory = make_memory()
    t0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
    memory.conversation_end("s1", [Message("I moved to Paris in 2020.", name="Ann", timestamp=t0)], user_id="ann")
    result = memory.conversation_end("s2", [Message("I moved to Lisbon in 2019.", name="Ann",
                                                    timestamp=t0 + timedelta(days=1))], user_id="ann")
    assert [d.fact.content for d in result.discarded] == ["Ann lives in Lisbon."]
    assert [f.content for f in result.added] == ["Ann: I moved to Lisbon in 2019."]
    current = [f.content for f in memory.facts("ann") if f.is_current]
    assert "Ann lives in Paris." in current and "Ann: I moved to Paris in 2020." not in current
