"""The hot paths read what they need by key, never by walking all of a user's facts.

A fact row is ~2 kB with its vector, and a long-lived user has thousands: a read that
SQLite plans as "every fact of this user, then filter" costs milliseconds per call at
100k facts (bench/findings.md). Every statement ``get_context``, ``context_block``,
``conversation_end`` and ``conversation_end_many`` run on the record store's connection
is captured here, with its parameters, and planned again with ``EXPLAIN QUERY PLAN``. A
plan that scans the facts table, or searches it on ``user_id`` alone, fails the test and
names the statement.
"""

from __future__ import annotations

import itertools
import re
import sqlite3

import pytest
from zep_core.stores import fts

from bench.synth import episodes, make_users, queries

#: A plan step that reads every fact of a user (or of everyone): a scan, or an index search on user_id
#: alone; or every current fact of a speaker (the subject of nearly all of a user's facts): a search of
#: the rules' index that stops before the predicate.
#: ``facts_current`` is the exception: the exact vector search of a user below ``vector_exact_below``
#: reads all their current vectors by design (bounded by that threshold; larger users have a Chroma
#: collection), and counting them reads the index alone.
_WHOLE_USER = re.compile(r"^(SCAN (facts|f)\b|SEARCH (facts|f) USING (COVERING )?INDEX (?!facts_current )\w+ "
                         r"\(user_id=\?\)$"
                         r"|SEARCH (facts|f) USING INDEX facts_rule_keys \(user_id=\? AND subject_id=\?\)$)")
#: A plan step on the shared lexical tables that is not a search of a key led by ``user_id``: it could
#: read other tenants' rows (the tables hold every user's).
_LEXICAL = re.compile(r"^(SCAN|SEARCH) (lexical_\w+|lp|ld)\b")
_BY_USER = re.compile(r"^SEARCH \w+ USING (COVERING |PRIMARY )?(INDEX \w+ |KEY )?\(user_id=\?")


@pytest.fixture(scope="module")
def grown(tmp_path_factory, embedder):
    """Four synthetic users, 160 short episodes: moves and job changes retire facts, people link entities."""
    from zep_core import Memory, MemoryConfig

    users = make_users(4, seed=5)
    memory = Memory(MemoryConfig(data_dir=tmp_path_factory.mktemp("plans") / "data", embedder=embedder))
    stream = episodes(users, seed=5)
    memory.conversation_end_many([{"session_id": s, "user_id": u.id, "messages": m}
                                  for u, s, m in itertools.islice(stream, 160)], batch_size=64)
    memory.flush()
    yield memory, users, stream
    memory.close()


def _statements(memory, work) -> list[str]:
    """The statements ``work()`` runs on the record store's connection, parameters filled in."""
    conn = memory._stores.records.db.conn
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        work()
        memory.flush()
    finally:
        conn.set_trace_callback(None)
    return seen


def _whole_user_reads(memory, statements) -> list[tuple[str, str]]:
    """``(statement, plan step)`` for every plan step that walks a user's facts."""
    plans = sqlite3.connect(f"file:{memory.data_dir / 'zep.db'}?mode=ro", uri=True)
    plans.executescript(fts.SCRATCH)  # the store's connection has its scratch tables
    found = []
    try:
        for sql in dict.fromkeys(statements):
            if not re.match(r"\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b", sql, re.I) or not re.search(
                    r"\b(facts|lexical_(docs|postings|stats))\b", sql):
                continue
            for step in plans.execute("EXPLAIN QUERY PLAN " + sql).fetchall():
                lexical = _LEXICAL.match(step[3]) and "temp." not in step[3]
                if _WHOLE_USER.match(step[3]) or (lexical and not _BY_USER.match(step[3])):
                    found.append((" ".join(sql.split())[:300], step[3]))
    finally:
        plans.close()
    return found


def test_the_pattern_catches_a_read_by_user_alone(grown):
    """The check itself: the planner's choice for ``user_id = ? AND id IN (50 ids)`` without the guard is caught.

    With no statistics SQLite guesses ten rows per ``user_id``, fewer than fifty ids,
    and walks the user's facts: what ``get_facts`` did before its ``+user_id``.
    """
    memory, users, _ = grown
    ids = ", ".join(f"'{f.id}'" for f in list(memory.facts(users[0].id))[:50])
    sql = f"SELECT content FROM facts WHERE user_id = '{users[0].id}' AND id IN ({ids})"
    assert _whole_user_reads(memory, [sql]), "SQLite no longer plans this on user_id: the check needs a new example"
    assert _whole_user_reads(memory, [sql.replace("WHERE user_id", "WHERE +user_id")]) == []
    everyone = "SELECT lp.doc FROM lexical_postings lp WHERE lp.term = 'paris' AND lp.live = 1"
    assert _whole_user_reads(memory, [everyone])  # the shared lexical tables: a read not led by user_id
    assert _whole_user_reads(memory, [everyone.replace("WHERE", f"WHERE lp.user_id = '{users[0].id}' AND")]) == []


def test_queries_read_by_key(grown):
    memory, users, _ = grown
    asked = queries(users, 24, seed=8)  # named people, first-person questions, "you"

    def ask():
        for user, text in asked:
            memory.get_context(text, user_id=user.id, speaker=user.name)
            memory.context_block(text, user_id=user.id, speaker=user.name)

    statements = _statements(memory, ask)
    assert len(statements) > len(asked)
    assert _whole_user_reads(memory, statements) == []


def test_ingest_reads_by_key(grown):
    memory, users, stream = grown

    def ingest():
        for user, session, msgs in itertools.islice(stream, 12):
            assert memory.conversation_end(session, msgs, user_id=user.id).status == "done"
        results = memory.conversation_end_many([{"session_id": s, "user_id": u.id, "messages": m}
                                                for u, s, m in itertools.islice(stream, 24)], batch_size=8)
        assert {r.status for r in results} == {"done"}

    statements = _statements(memory, ingest)
    assert any("facts_rule_keys" in s for s in statements)  # the rules' candidates were read
    assert _whole_user_reads(memory, statements) == []
