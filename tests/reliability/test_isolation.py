"""Tenant isolation, as properties over random multi-user workloads (hypothesis).

Users in one example share speaker names, places, session ids and even message
texts, so a query that leaked across tenants would have something to find. Each user
also says one *marker* nobody else says. For every user, every read — get_context,
context_block, entity_history, related_entities, get_messages, cypher — must hold only
that user's records and none of the other users' markers. Then some users are
forgotten: nothing of theirs may remain in SQLite, Chroma or Kùzu (read directly), and
the others' views must not change. One memory serves every example; each example
draws fresh user ids, so earlier examples are bystanders too.
"""

from __future__ import annotations

import itertools
import os
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zep_core import Memory, MemoryConfig, Message, NotFoundError

from tests.reliability.figures import record
from tests.stores.state import snapshot, traces

UTC = timezone.utc
T0 = datetime(2023, 6, 1, tzinfo=UTC)
EXAMPLES = int(os.environ.get("ZEP_ISOLATION_EXAMPLES", "25"))
NAMES = ("Alex", "Sam", "Robin")
PLACES = ("Paris", "Berlin", "Rome")
FIRMS = ("Acme", "Globex")
TEMPLATES = ("I live in {place}.", "I moved to {place}.", "I work at {firm}.", "My sister Ana lives in {place}.",
             "I like {marker}.", "{other} works at {firm}.")
_counter = itertools.count()

# a user id: a readable prefix keeps it fresh per example; the drawn tail may hold quotes, Cypher, paths
ID_TAIL = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=0, max_size=12)
EPISODE = st.tuples(st.integers(0, 3), st.lists(st.tuples(st.sampled_from(TEMPLATES), st.sampled_from(PLACES),
                                                          st.sampled_from(FIRMS), st.sampled_from(NAMES)),
                                                min_size=1, max_size=3))
WORKLOAD = st.tuples(st.lists(ID_TAIL, min_size=2, max_size=4), st.lists(EPISODE, min_size=2, max_size=8),
                     st.lists(st.booleans(), min_size=4, max_size=4))


@dataclass
class Tally:
    examples: int = 0
    users: int = 0
    episodes: int = 0
    reads_checked: int = 0
    forgotten: int = 0


TALLY = Tally()


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.full_matrix)])
def memory(request, tmp_path_factory, embedder):
    options = {}
    if request.param == "postgres":  # the same workload with row-level security under every statement
        from tests.pg import fresh_database

        options["database_url"] = fresh_database(request.getfixturevalue("pg_server"))
    memory = Memory(MemoryConfig(data_dir=tmp_path_factory.mktemp("isolation") / "data", embedder=embedder,
                                 **options))
    TALLY.__init__()  # each backend's figures are its own
    yield memory
    memory.close()
    name = "isolation" if request.param == "sqlite" else "isolation-postgres"
    record(name, {"examples_generated": TALLY.examples, "users": TALLY.users, "episodes": TALLY.episodes,
                         "reads_checked": TALLY.reads_checked, "users_forgotten": TALLY.forgotten,
                         "max_examples": EXAMPLES},
           ".venv/bin/python -m pytest -q tests/reliability/test_isolation.py")


def own_fact_ids(memory: Memory, user: str) -> set[str]:
    if memory.config.database_url:  # read around our code, as the tables' owner
        import psycopg

        with psycopg.connect(memory.config.database_url) as conn:
            return {r[0] for r in conn.execute("SELECT id FROM zep.facts WHERE user_id = %s", [user])}
    conn = sqlite3.connect(f"file:{memory.data_dir / 'zep.db'}?mode=ro", uri=True)
    try:
        return {r[0] for r in conn.execute("SELECT id FROM facts WHERE user_id = ?", [user])}
    finally:
        conn.close()


def view(memory: Memory, user: str, markers: dict[str, str]) -> tuple:
    """Run every read for ``user``; fail on anything of another user; return what was seen."""
    others = [m for u, m in markers.items() if u != user]
    mine = own_fact_ids(memory, user)
    seen: list = []

    def clean(text: str, what: str) -> None:
        TALLY.reads_checked += 1
        leaked = [m for m in others if m in text]
        assert not leaked, f"{what} for {user!r} shows another user's marker {leaked}"

    questions = [f"What does {n} like and where does {n} live?" for n in NAMES] + others + [markers[user]]
    for q in questions:
        facts = memory.get_context(q, user_id=user, threshold=0.0)
        assert all(f.user_id == user and f.id in mine for f in facts), f"get_context({q!r}) for {user!r}"
        clean(" ".join(f.content for f in facts), "get_context")
        seen.append(sorted((f.id, f.lexical_score) for f in facts))
    for q in others:  # by words alone: another tenant's marker is in none of this user's facts
        assert memory.get_context(q, user_id=user, threshold=1.0) == [], f"lexical candidates for {user!r}"
    own = memory.get_context(markers[user], user_id=user, threshold=1.0)
    assert any(markers[user] in f.content and f.lexical_score > 0 for f in own), f"own marker for {user!r}"
    block = memory.context_block("Where does everyone live and work?", user_id=user)
    clean(block, "context_block")
    seen.append(block)
    for name in NAMES + PLACES + FIRMS + ("Ana",):
        try:
            history = memory.entity_history(name, user_id=user)
            related = memory.related_entities(name, user_id=user)
        except NotFoundError:
            seen.append((name, None))
            continue
        assert all(f.user_id == user and f.id in mine for f in history), f"entity_history({name!r})"
        assert all(e.user_id == user for e in related), f"related_entities({name!r})"
        clean(" ".join(f.content for f in history) + " ".join(e.name for e in related), "history/related")
        seen.append((name, [f.id for f in history], sorted(e.id for e in related)))
    chat = memory.get_messages("chat", user_id=user)
    clean(" ".join(m.content for m in chat), "get_messages")
    seen.append([m.content for m in chat])
    for query, owners in (("MATCH (e:Entity)-[r:FACT]-(x) RETURN e, r, x",
                           lambda row: [row["e"]["user_id"], row["r"]["user_id"], row["x"]["user_id"]]),
                          ("MATCH (e:Entity)-[r:FACT*1..3]-(x) RETURN e.user_id AS u, x.user_id AS xu, x.name AS n",
                           lambda row: [row["u"], row["xu"]]),
                          ("MATCH (e:Entity) RETURN e.name AS n, e.user_id AS u", lambda row: [row["u"]])):
        rows = memory.cypher(query, user_id=user)
        assert all(owner == user for row in rows for owner in owners(row)), f"cypher {query!r} for {user!r}"
        clean(repr(rows), "cypher")
        seen.append(sorted(map(repr, rows)))
    return tuple(map(repr, seen))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          print_blob=True)
@given(workload=WORKLOAD)
def test_no_read_for_one_user_returns_anything_of_another_and_forget_user_leaves_no_trace(memory, workload):
    tails, episodes, forget = workload
    example = next(_counter)
    users = [f"iso{example}-{i}:{tail}" for i, tail in enumerate(tails)]
    markers = {u: f"zq{example}x{i}marker" for i, u in enumerate(users)}
    for i, user in enumerate(users):  # everyone says their marker once, and chats in a session called "chat"
        memory.conversation_end("s1", [Message(f"I like {markers[user]}.", name=NAMES[i % 3])], user_id=user)
        memory.add_messages("chat", [Message(f"note {markers[user]}", name=NAMES[i % 3])], user_id=user)
    for n, (who, lines) in enumerate(episodes):
        user = users[who % len(users)]
        messages = [Message(t.format(place=p, firm=f, other=o, marker=markers[user]), name=name,
                            timestamp=T0 + timedelta(days=n, seconds=j))
                    for j, (t, p, f, o) in enumerate(lines) for name in [NAMES[who % 3]]]
        memory.conversation_end("s1", messages, user_id=user)
    TALLY.examples += 1
    TALLY.users += len(users)
    TALLY.episodes += len(users) + len(episodes)

    views = {u: view(memory, u, markers) for u in users}

    gone = [u for u, f in zip(users, forget) if f]
    for user in gone:
        memory.forget_user(user)
    state = snapshot(memory)
    for user in gone:
        left = traces(state, user)
        assert not left, f"forget_user({user!r}) left {left}"
        assert not memory.has_user(user)
        assert memory.get_context("anything", user_id=user) == []
        with pytest.raises(NotFoundError):
            memory.facts(user)
        assert not any(markers[user] in repr(rows) for rows in state.rows.values())
    TALLY.forgotten += len(gone)
    for user in users:
        if user not in gone:
            assert view(memory, user, markers) == views[user], f"forgetting others changed {user!r}'s view"
    assert memory.check_consistency() == {}
