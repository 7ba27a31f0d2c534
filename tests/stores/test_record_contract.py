"""One contract for the record store, run against every implementation: SQLite, PostgreSQL and a double in dicts.

Each test goes through the methods the Protocols of :mod:`zep_core.stores.record_protocols`
list, on a fresh store, and asserts on what a consumer reads back: episodes and their
messages, facts and their supersession, the lexical ranking, entities and aliases, the
outbox, chat sessions, and that nothing of one tenant is reachable under another.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from zep_core.errors import RecordStoreError
from zep_core.models import Entity, Episode, Fact, Message
from zep_core.stores.records import RecordStore, StoredFact, iso
from zep_core.tenant import Tenant

from tests.backends import BACKENDS, DOUBLE, OPENERS

T0 = datetime(2024, 5, 1, tzinfo=timezone.utc)
ANN, BOB = Tenant.of("ann"), Tenant.of("bob")


#: Each implementation and the jobs of the record store it does: every backend of :data:`tests.backends.BACKENDS`
#: does them all. A test runs on every implementation that does all the jobs it names (:func:`jobs`), and
#: :func:`test_postgres_does_the_jobs_it_claims` keeps the claim honest.
ALL_JOBS = frozenset({"episodes", "sessions", "facts", "lexical", "entities", "outbox"})


#: ... and the double in dicts (:mod:`tests.stores.memory_records`): the proof that the Protocols are the whole seam.
IMPLEMENTATIONS = {name: (OPENERS[name], ALL_JOBS) for name in (*BACKENDS, DOUBLE)}


def jobs(*names):
    """The record store's jobs a test goes through."""
    return pytest.mark.jobs(*names)


def pytest_generate_tests(metafunc):
    if "store" in metafunc.fixturenames:
        marker = metafunc.definition.get_closest_marker("jobs")
        needed = set(marker.args) if marker else set(IMPLEMENTATIONS["sqlite"][1])
        metafunc.parametrize("store", [name for name, (_, done) in IMPLEMENTATIONS.items() if needed <= done],
                             indirect=True)


@pytest.fixture
def store(request, tmp_path):
    opened = IMPLEMENTATIONS[request.param][0](request, tmp_path)
    yield opened
    opened.close()


def _vector(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(8).astype(np.float32)
    return v / np.linalg.norm(v)


def _episode(store, user, episode_id, *texts, at=T0):
    messages = tuple(Message(t, name=user.capitalize(), id=f"{episode_id}:{i}", timestamp=at)
                     for i, t in enumerate(texts))
    episode = Episode(id=episode_id, user_id=user, session_id="s", created_at=at, messages=messages, status="pending")
    with store.transaction():
        store.insert_episode(episode, [m.id for m in messages])
    return episode


def _fact(store, user, episode, content, subject, predicate, obj, *, at=T0, seed=0, **fields):
    fact = Fact(content=content, subject=subject, predicate=predicate, object=obj, valid_from=at, user_id=user,
                episode_id=episode.id, source_message_ids=(episode.messages[0].id,), created_at=at, **fields)
    with store.transaction():
        store.write_facts([StoredFact(fact, f"{user}:{subject}", f"{user}:{obj}", _vector(seed))])
    return fact


@jobs("episodes")
def test_an_episode_comes_back_with_its_messages_and_status(store):
    _episode(store, ANN, "e1", "I live in Paris.", "I like tea.")
    assert store.episode_owner("e1") == ANN and store.has_user(ANN) and not store.has_user(BOB)
    got = store.get_episode(ANN, "e1")
    assert [m.content for m in got.messages] == ["I live in Paris.", "I like tea."] and got.status == "pending"
    store.set_episode_status(ANN, "e1", "done", summary="Ann lives in Paris.")
    assert store.get_episode(ANN, "e1").status == "done" and store.episode_ids(ANN) == ["e1"]
    assert store.get_episode(BOB, "e1") is None  # another tenant's episode is not found under bob
    assert store.episode_ids(BOB) == [] and store.episode_ids() == ["e1"]
    assert store.episode_ids(status="pending") == [] and store.episode_attempts(ANN, "e1") == 1
    assert store.episode_attempts(BOB, "e1") == 0
    store.mark_episode_failed(BOB, "e1", "not bob's")  # another tenant's episode: nothing changes
    assert store.get_episode(ANN, "e1").status == "done"
    with store.transaction():
        store.delete_user(ANN)
    assert store.get_episode(ANN, "e1") is None and store.episode_owner("e1") is None and not store.has_user(ANN)


@jobs("episodes", "facts")
def test_facts_are_read_by_id_only_under_their_tenant(store):
    episode = _episode(store, ANN, "e1", "I live in Paris.", "I like tea.")
    fact = _fact(store, ANN, episode, "Ann lives in Paris.", "Ann", "lives_in", "Paris")
    assert store.get_facts(ANN, [fact.id])[fact.id].content == "Ann lives in Paris."
    assert store.get_facts(BOB, [fact.id]) == {} and store.stored_facts(BOB, [fact.id]) == {}
    stored = store.stored_facts(ANN, [fact.id])[fact.id]
    assert stored.subject_id == "ann:Ann" and np.allclose(stored.embedding, _vector(0))
    assert [i for ids in store.iter_fact_ids(ANN) for i in ids] == [fact.id]
    assert store.known_ids(ANN, "facts", [fact.id, "nope"]) == {fact.id}
    assert store.known_ids(BOB, "facts", [fact.id]) == set()
    assert store.told_at(ANN, [Fact(content="x", subject="Ann", predicate="p", object="o", valid_from=T0,
                                    user_id=ANN, episode_id=episode.id,
                                    source_message_ids=(episode.messages[1].id,))])


@jobs("episodes", "facts", "lexical")
def test_a_superseded_fact_leaves_the_current_ranking_and_stays_as_of_then(store):
    first = _episode(store, ANN, "e1", "I live in Paris.")
    paris = _fact(store, ANN, first, "Ann lives in Paris.", "Ann", "lives_in", "Paris", seed=1)
    later = T0 + timedelta(days=30)
    second = _episode(store, ANN, "e2", "I moved to Berlin.", at=later)
    berlin = _fact(store, ANN, second, "Ann lives in Berlin.", "Ann", "lives_in", "Berlin", at=later, seed=2)
    with store.transaction():
        store.update_facts([Fact(**{**paris.__dict__, "valid_until": later, "superseded_by": berlin.id})])
    now = store.lexical_search(ANN, "where does Ann live Paris Berlin", limit=10)
    assert list(now) == [berlin.id]
    then = store.lexical_search(ANN, "Paris", limit=10, as_of=iso(T0 + timedelta(days=1)))
    assert list(then) == [paris.id]
    assert store.current_fact_count(ANN) == 1 and [i for i, _ in store.current_vectors(ANN)] == [berlin.id]
    assert [i for i, _ in store.history_search(ANN, _vector(1), 5, iso(T0 + timedelta(days=1)))] == [paris.id]
    assert store.count_facts(ANN) == {"current": 1, "superseded": 1}


@jobs("episodes", "facts", "lexical")
def test_the_lexical_ranking_of_a_tenant_is_moved_by_no_other_tenant(store):
    for user, n in ((ANN, 3), (BOB, 40)):
        for i in range(n):
            episode = _episode(store, user, f"{user}-{i}", f"I like chess number {i}.")
            _fact(store, user, episode, f"{user} likes chess {i}.", user, "likes", f"chess {i}", seed=i)
    alone = store.lexical_search(ANN, "chess", limit=10)
    with store.transaction():
        store.delete_user(BOB)
    assert store.lexical_search(ANN, "chess", limit=10) == alone and len(alone) == 3
    assert store.lexical_search(BOB, "chess", limit=10) == {} and not store.has_records(BOB)


@jobs("entities")
def test_entities_and_aliases_are_the_tenants_own(store):
    ann = Entity(id="ann:Ann", user_id=ANN, name="Ann", entity_type="person")
    with store.transaction():
        store.insert_entities([(ann, _vector(3))], iso(T0))
        store.add_aliases([(ANN, "ann", "ann:Ann"), (ANN, "annie", "ann:Ann")])
    assert store.entity_ids_for_aliases(ANN, ["annie", "zed"]) == {"annie": "ann:Ann"}
    assert store.entity_ids_for_aliases(BOB, ["annie"]) == {} and store.get_entities(BOB, ["ann:Ann"]) == {}
    got = store.get_entities(ANN, ["ann:Ann"])["ann:Ann"]
    assert got.name == "Ann" and got.aliases == ("ann", "annie")
    store.set_entity_summaries([(ANN, "ann:Ann", "Ann lives in Paris.", 1, iso(T0))])
    store.set_entity_summaries([(BOB, "ann:Ann", "overwritten?", 9, iso(T0))])  # not bob's: nothing changes
    assert store.get_entities(ANN, ["ann:Ann"])["ann:Ann"].summary == "Ann lives in Paris."
    assert [e.id for e, _ in store.entity_rows(ANN, ["ann:Ann"])] == ["ann:Ann"]
    assert store.entity_rows(BOB, ["ann:Ann"]) == []


@jobs("outbox")
def test_the_outbox_keeps_each_write_with_its_user_until_cleared(store):
    with store.transaction():
        store.add_outbox([("fact", ANN, "f1", {"change": "add"}), ("fact", BOB, "f2", None)])
    pending = store.pending_outbox()
    assert [(op, user, ref) for _, op, user, ref, _ in pending] == [("fact", "ann", "f1"), ("fact", "bob", "f2")]
    assert store.outbox_size(ANN) == 1 and store.outbox_size() == 2
    assert [ref for _, _, _, ref, _ in store.pending_outbox(users={"bob"})] == ["f2"]
    store.clear_outbox(pending[0][0])
    assert store.outbox_size() == 1 and store.outbox_size(ANN) == 0
    with store.transaction():
        store.quarantine_outbox([(pending[1][0], "fact", BOB, "f2", None, "refused")])
    assert store.quarantine_size(BOB) == 1 and store.quarantined(ANN) == []


@jobs("sessions")
def test_chat_sessions_are_kept_in_order_per_tenant(store):
    store.add_session_messages(ANN, "chat", [Message("hello", name="Ann"), Message("hi", role="assistant")])
    store.add_session_messages(BOB, "chat", [Message("bob here", name="Bob")])
    assert [m.content for _, m in store.session_messages(ANN, "chat")] == ["hello", "hi"]
    assert store.has_session(ANN, "chat") and not store.has_session(ANN, "other")
    [(seq, _)] = store.session_messages(ANN, "chat", limit=1)
    store.mark_session_ended(ANN, "chat", seq, "ep")
    assert store.session_messages(ANN, "chat", unended=True) == []
    assert [(u, s) for u, s, _ in store.waiting_sessions()] == [("bob", "chat")]
    store.clear_session(ANN, "chat")
    assert store.session_messages(ANN, "chat") == [] and len(store.session_messages(BOB, "chat")) == 1


@jobs("sessions")
def test_every_tenant_method_refuses_an_unchecked_user_id(store):
    with pytest.raises(TypeError, match="Tenant"):
        store.get_episode("ann", "e1")
    with pytest.raises(TypeError, match="Tenant"):
        store.session_messages("ann", "chat")


def test_a_statement_the_database_refuses_is_our_record_store_error_not_the_drivers(store):
    """What the code above the store catches is ours whatever the backend: the store wraps its database's errors."""
    with pytest.raises(RecordStoreError, match="NOT NULL|not-null"):
        store.set_meta("refused", None)  # the meta table's NOT NULL
    assert store.get_meta("refused") is None  # and the store still answers


def test_postgres_does_the_jobs_it_claims():
    """The PostgreSQL store has every method of the record Protocols its jobs cover, and the SQLite store all."""
    from zep_core.stores.postgres import PgRecordStore

    covered = {name for job in IMPLEMENTATIONS["postgres"][1] for name in JOB_METHODS[job]}
    assert covered <= set(dir(PgRecordStore))
    assert set().union(*JOB_METHODS.values()) <= set(dir(RecordStore))


#: The record methods of each job (the Protocols of zep_core.stores.record_protocols, by job).
JOB_METHODS = {
    "episodes": {"has_user", "has_records", "users", "delete_user", "episode_owner", "insert_episode",
                 "set_episode_status", "get_episode", "episode_ids", "episodes_with_status", "episode_attempts",
                 "mark_episode_failed"},
    "sessions": {"add_session_messages", "session_messages", "waiting_sessions", "has_session",
                 "mark_session_ended", "clear_session", "session_rows", "insert_session_rows"},
    "facts": {"write_facts", "update_facts", "get_facts", "stored_facts", "iter_fact_ids", "known_ids", "told_at"},
    "lexical": {"lexical_search", "lexical_ranking", "rebuild_lexical", "lexical_problems"},
    "entities": {"insert_entities", "add_aliases", "entity_ids_for_aliases", "get_entities", "entity_rows",
                 "set_entity_summaries"},
    "outbox": {"add_outbox", "pending_outbox", "clear_outbox", "outbox_size", "quarantine_outbox", "quarantine_size"},
}
