"""Every read of a tenant's rows seeks a key led by ``user_id``, and the hot paths read only what they need.

Two rules, checked on every statement the memory runs on its record store's connection
while a workload runs (captured with their parameters and planned again with
``EXPLAIN QUERY PLAN``):

* **Keys led by the tenant** (issue 33): each step of a plan on a tenant table (facts,
  episodes, messages, entities, aliases, chat turns, the lexical tables, the vector
  tiers) must search an index or key whose first column is ``user_id``. A scan, or a
  search by ``id``, ``episode_id`` or ``entity_id`` alone, fails: it could reach other
  tenants' rows, and a tenant's rows would not be one range of the index. Allowed beside
  it: a fact reached by its rowid from the same user's lexical row in the same statement
  (the lexical tables key facts by rowid), and the id namespace: reading only *which
  user* holds an id (``SELECT user_id ... WHERE id``), how an id from outside is checked.
  The index-write queue (``outbox``), ``meta`` and the connection's ``temp`` tables hold
  no tenant's records.
* **No walk of a user's facts** on the hot paths: a fact row is ~2 kB with its vector, and
  a long-lived user has thousands: a plan that reads every fact of the user and filters
  costs milliseconds per call at 100k facts (bench/findings.md).
"""

from __future__ import annotations

import io
import itertools
import re
import sqlite3
from datetime import timedelta

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
#: The tables that hold tenants' rows.
TENANT_TABLES = {"facts", "episodes", "messages", "entities", "aliases", "session_messages", "lexical_docs",
                 "lexical_postings", "lexical_stats", "vector_tiers"}
_STEP = re.compile(r"^(SCAN|SEARCH) (\w+)\b")
_BY_USER = re.compile(r"^SEARCH \w+ USING (COVERING |PRIMARY )?(INDEX \w+ |KEY )?\(user_id=\?")
_BY_ROWID = re.compile(r"^SEARCH \w+ USING INTEGER PRIMARY KEY \(rowid=\?\)$")
#: Which user holds an id: the id namespace (ids are unique across tenants).
_OWNER_OF_ID = re.compile(r"^\s*SELECT (id, )?user_id FROM (episodes|facts|entities) WHERE id (=|IN) ", re.I)
_SQL_WORDS = {"where", "on", "join", "indexed", "not", "left", "inner", "cross", "using", "group", "order", "limit",
              "union", "set", "values", "as", "natural"}


def _tables(sql: str) -> dict[str, str]:
    """``{name or alias: table}`` of the tables a statement names (``temp.`` ones as ``temp``)."""
    names: dict[str, str] = {}
    # a lookahead: "FROM q JOIN lexical_postings lp" names both (the first match does not take the JOIN)
    for schema, table, alias in re.findall(r"(?=\b(?:FROM|JOIN|UPDATE|INTO)\s+(temp\.)?(\w+)(?:\s+(?:AS\s+)?(\w+))?)",
                                           sql, re.I):
        real = "temp" if schema else table
        names[table] = real
        if alias and alias.lower() not in _SQL_WORDS:
            names[alias] = real
    return names

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


def _plans(memory, statements) -> list[tuple[str, list[str]]]:
    """``(statement, plan steps)`` of each distinct statement on the record store's tables."""
    plans = sqlite3.connect(f"file:{memory.data_dir / 'zep.db'}?mode=ro", uri=True)
    plans.executescript(fts.SCRATCH)  # the store's connection has its scratch tables
    out = []
    try:
        for sql in dict.fromkeys(statements):
            if re.match(r"\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b", sql, re.I) and _tables(sql).keys() & (
                    TENANT_TABLES | {"outbox", "outbox_quarantine", "meta"}):
                out.append((sql, [step[3] for step in plans.execute("EXPLAIN QUERY PLAN " + sql).fetchall()]))
    finally:
        plans.close()
    return out


def _whole_user_reads(memory, statements) -> list[tuple[str, str]]:
    """``(statement, plan step)`` for every plan step that walks a user's facts."""
    return [(" ".join(sql.split())[:300], step) for sql, steps in _plans(memory, statements) for step in steps
            if _WHOLE_USER.match(step)]


def test_a_read_counts_only_its_own_users_queued_index_writes(grown):
    """``get_context``'s catch-up asks whether its user has index writes queued: by ``outbox_user``, not a scan."""
    memory, users, _ = grown
    statements = _statements(memory, lambda: memory.get_context("Where do I live?", user_id=users[0].id))
    counts = [(sql, steps) for sql, steps in _plans(memory, statements) if re.search(r"FROM outbox WHERE user_id", sql)]
    assert counts
    for sql, steps in counts:
        assert steps == ["SEARCH outbox USING COVERING INDEX outbox_user (user_id=?)"], sql


def _unkeyed_reads(memory, statements) -> list[tuple[str, str]]:
    """``(statement, plan step)`` for every step on a tenant table that does not seek a key led by ``user_id``."""
    found = []
    for sql, steps in _plans(memory, statements):
        if _OWNER_OF_ID.match(sql):
            continue
        tables = _tables(sql)
        lexical_by_user = any(_BY_USER.match(step) and tables.get(_STEP.match(step)[2], "").startswith("lexical_")
                              for step in steps)
        for step in steps:
            named = _STEP.match(step)
            if not named or tables.get(named[2], named[2]) not in TENANT_TABLES:
                continue
            if _BY_USER.match(step) or (lexical_by_user and _BY_ROWID.match(step)):
                continue
            found.append((" ".join(sql.split())[:300], step))
    return found


def test_the_patterns_catch_a_walk_of_a_user_and_a_read_not_led_by_the_user(grown):
    """The checks themselves, on statements the store does not run.

    A filter no index serves walks the user's facts through an index on ``user_id``; the
    same read by key does not. A read by id alone (the primary key) or by rowid, by
    episode without the user, or of the shared lexical tables by term, is not led by the
    tenant.
    """
    memory, users, _ = grown
    user = users[0].id
    ids = ", ".join(f"'{f.id}'" for f in list(memory.facts(user))[:50])
    walk = f"SELECT content FROM facts WHERE user_id = '{user}' AND content LIKE '%Paris%'"
    assert _whole_user_reads(memory, [walk]), "SQLite no longer plans this on user_id: the check needs a new example"
    keyed = f"SELECT content FROM facts INDEXED BY facts_key WHERE user_id = '{user}' AND id IN ({ids})"
    assert _whole_user_reads(memory, [keyed]) == []
    everyone = "SELECT lp.doc FROM lexical_postings lp WHERE lp.term = 'paris' AND lp.live = 1"
    by_id = f"SELECT content FROM facts WHERE id IN ({ids})"
    by_rowid = "SELECT content FROM facts WHERE rowid IN (1, 2, 3)"
    messages = "SELECT content FROM messages m WHERE m.episode_id = 'e1' AND +m.user_id = 'u'"
    for sql in (everyone, by_id, by_rowid, messages, walk.replace("WHERE user_id", "WHERE +user_id")):
        assert _unkeyed_reads(memory, [sql]), sql
    for sql in (everyone.replace("WHERE", f"WHERE lp.user_id = '{user}' AND"), keyed,
                "SELECT user_id FROM episodes WHERE id = 'e1'",  # which user holds an id: the id namespace
                f"SELECT content FROM facts WHERE rowid IN (SELECT doc FROM lexical_docs WHERE user_id = '{user}' "
                "AND doc IN (1, 2)) AND +user_id = 'u'"):  # by rowid from the user's own lexical rows
        assert _unkeyed_reads(memory, [sql]) == [], sql


def test_queries_read_by_key(grown):
    memory, users, _ = grown
    asked = queries(users, 24, seed=8)  # named people, first-person questions, "you"

    def ask():
        for user, text in asked:
            memory.get_context(text, user_id=user.id, speaker=user.name)
            memory.context_block(text, user_id=user.id, speaker=user.name)

    def ask_then():  # as of a past moment: superseded facts are searched in SQLite (by the user's key)
        for user, text in asked:
            memory.get_context(text, user_id=user.id, speaker=user.name, as_of="2024-03-01T00:00:00Z")

    statements = _statements(memory, ask)
    assert len(statements) > len(asked)
    assert _whole_user_reads(memory, statements) == []
    assert _unkeyed_reads(memory, statements + _statements(memory, ask_then)) == []


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
    assert _unkeyed_reads(memory, statements) == []


def test_every_tenant_operation_reads_by_key(grown, tmp_path):
    """The rest of the API on one tenant: its records, entities, sessions, episodes, export and import,
    the graph for Cypher, a check of its stores, its entities' refresh, and forgetting it.

    ``maintain()`` and ``stats()`` are the folder's own work over every tenant (pending
    episodes, waiting sessions, stale entities, counts) and are not among them.
    """
    memory, users, stream = grown
    user, other = users[0], users[1]

    def work():
        facts = memory.facts(user.id)
        memory.entity_history(user.name, user_id=user.id)
        memory.related_entities(user.name, user_id=user.id)
        memory.get_entity(user.name, user_id=user.id)
        memory.cypher("MATCH (e:Entity) RETURN count(e) AS n", user_id=user.id)
        memory.get_episode(facts[0].episode_id, user_id=user.id)
        memory.episode_ids(user_id=user.id)
        memory.add_messages("chat", [{"role": "user", "content": "I started learning the cello."}], user_id=user.id)
        memory.get_messages("chat", user_id=user.id)
        memory.end_session("chat", user_id=user.id)
        out = io.StringIO()
        memory.export_user(user.id, out, embeddings=True)
        memory.check_consistency(user.id)
        memory.refresh_entities(user_id=user.id, max_age=timedelta(0))
        memory.get_messages("chat", user_id=user.id)
        memory.forget_user(other.id)
        memory.import_user(out.getvalue().splitlines(), replace=True)

    statements = _statements(memory, work)
    assert any("session_messages" in s for s in statements) and any("DELETE FROM facts" in s for s in statements)
    unkeyed = _unkeyed_reads(memory, statements)
    assert unkeyed == [], "\n".join(f"{step}: {sql}" for sql, step in unkeyed)
