"""The update rules read only the facts they can touch, and decide as if they had read them all.

``RuleApplier._plan`` reads a subject's facts with the proposed single-valued predicates, the
facts said again (same predicate and object key: statements word for word) and the flagged
ids, and, only when something retires, the facts of the same messages (the quotes that
retire with it, and the facts that keep a quote current). The oracle here is the rules
over every current fact of the subjects: each episode's plan must be the same.
"""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta, timezone

import pytest
from zep_core import Message
from zep_core.temporal import normalize_name, plan_updates

from bench.synth import episodes, make_users

UTC = timezone.utc


def _summary(plan):
    return (sorted(f.id for f in plan.added), sorted(f.id for f in plan.reinforced),
            sorted((f.id, f.valid_until, f.superseded_by, f.source_message_ids) for f in plan.superseded),
            sorted((d.fact.content, d.conflicting_fact_id) for d in plan.discarded))


def _compared(memory):
    """Wrap the memory's planner: every plan is checked against the rules over all current facts of the subjects."""
    rules, records = memory._ingest.rules, memory._stores.records
    plan = rules._plan
    checked = []

    def checking(user, subjects, proposals, contradicted, now, **corrections):
        got = plan(user, subjects, proposals, contradicted, now, **corrections)
        everything = records.current_facts_about(user, subjects, limit=1_000_000)
        said_at = {**records.told_at(user, everything), **(corrections.get("said_at") or {})}
        want = plan_updates(everything, proposals, single_valued=memory.config.single_valued_predicates,
                            contradicted=contradicted, taken_back=corrections.get("taken_back"),
                            hearsay=corrections.get("hearsay", ()), said_at=said_at, at=corrections.get("at"),
                            replaced=corrections.get("replaced"), retiring=corrections.get("retiring"), now=now)
        assert _summary(got) == _summary(want), [f.content for f in proposals]
        checked.append(bool(want.superseded))
        return got

    rules._plan = checking
    return checked


def test_a_stream_of_moves_job_changes_and_likes_plans_as_over_everything(make_memory):
    memory = make_memory()
    checked = _compared(memory)
    users = make_users(3, seed=4)
    for user, session, msgs in itertools.islice(episodes(users, seed=4), 150):
        memory.conversation_end(session, msgs, user_id=user.id)
    memory.conversation_end_many([{"session_id": s, "user_id": u.id, "messages": m}
                                  for u, s, m in itertools.islice(episodes(users, seed=9), 60)], batch_size=16)
    assert len(checked) >= 200 and sum(checked) >= 10  # episodes that retired facts were among them


def test_quotes_retire_only_when_every_fact_of_their_message_has(make_memory):
    memory = make_memory()
    checked = _compared(memory)
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    said = [("I live in London and I work at Initech.", 0), ("I work at Globex now.", 30),
            ("I like jazz and I live in London.", 40), ("I moved to Paris.", 60),
            ("I no longer work at Globex.", 90), ("I live in Paris and I like jazz.", 100)]
    for n, (text, days) in enumerate(said):
        memory.conversation_end(f"s{n}", [Message(text, name="Dana", timestamp=t0 + timedelta(days=days))],
                                user_id="dana")
    assert len(checked) == len(said) and sum(checked) >= 3
    current = {f.content for f in memory.facts("dana") if f.is_current}
    assert "Dana: I live in London and I work at Initech." not in current  # both of its facts are gone
    assert any("Paris" in c for c in current) and not any("London" in c for c in current)


def test_a_predicate_of_many_values_reads_only_the_values_said_again(make_memory):
    memory = make_memory()
    checked = _compared(memory)
    reads = []
    candidates = memory._stores.records.rule_candidates

    def counted(*args, **kwargs):
        found = candidates(*args, **kwargs)
        reads.append(len(found))
        return found

    memory._stores.records.rule_candidates = counted
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    said = [f"I like {thing}." for thing in ("jazz", "hiking", "chess", "tea", "opera", "golf")]
    said += ["I no longer like jazz.", "I like Hiking!", "I live in Oslo.", "I moved to Bergen."]
    for n, text in enumerate(said):
        memory.conversation_end(f"s{n}", [Message(text, name="Dana", timestamp=t0 + timedelta(days=n))],
                                user_id="dana")
    assert len(checked) == len(said)  # every plan is the plan over all of Dana's facts
    # "I no longer like jazz" and "I like Hiking!" read one "likes" fact each (and its quote), not six
    assert reads[6] <= 2 and reads[7] <= 2, reads
    current = {f.content for f in memory.facts("dana") if f.is_current and f.predicate != "statement"}
    assert not any("jazz" in c for c in current) and any("hiking" in c.casefold() for c in current)
    assert any("Bergen" in c for c in current) and not any("Oslo" in c for c in current)


@pytest.mark.data_folder  # a SQLite file of schema version 2
def test_a_folder_from_before_the_object_key_gets_it_on_open(make_memory, tmp_path):
    import sqlite3

    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    data = tmp_path / "old"
    memory = make_memory(data)
    memory.conversation_end("s1", [Message("I live in London and I work at Initech.", name="Dana", timestamp=t0)],
                           user_id="dana")
    memory.close()
    db = sqlite3.connect(data / "zep.db")  # the facts table as schema version 2 had it
    db.execute("DROP INDEX facts_rule_keys")
    db.execute("ALTER TABLE facts DROP COLUMN object_key")
    db.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    db.commit()
    db.close()

    memory = make_memory(data)
    checked = _compared(memory)
    keys = memory._stores.records.db.execute("SELECT object, object_key FROM facts").fetchall()
    assert keys and all(key == normalize_name(obj) for obj, key in keys)
    memory.conversation_end("s2", [Message("I live in London!", name="Dana", timestamp=t0 + timedelta(days=3))],
                            user_id="dana")
    assert checked == [False]
    london = [f for f in memory.facts("dana") if f.object == "London"]
    assert len(london) == 1 and london[0].is_current  # said again: the same fact, reinforced, not a second one
    assert london[0].confidence > 0.9 and len(london[0].source_message_ids) == 2
