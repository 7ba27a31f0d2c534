"""The record contract, continued: the reads and upkeep that retrieval, ingest, sync, maintenance and transfer call.

Same implementations, same fixtures as :mod:`tests.stores.test_record_contract`; with it, every
method of every record Protocol is called on every backend (:func:`test_every_protocol_method_is_called`).
"""

from __future__ import annotations

import inspect
import re
from datetime import timedelta
from pathlib import Path

import numpy as np
from zep_core.models import Entity, Fact, Message
from zep_core.stores import record_protocols
from zep_core.stores.records import iso

from tests.stores import test_record_contract as contract
from tests.stores.test_record_contract import ANN, BOB, T0, _episode, _fact, _vector

#: The contract's store fixture and its parametrization over every implementation.
store, pytest_generate_tests = contract.store, contract.pytest_generate_tests


def _entities(store, user, *names):
    with store.transaction():
        store.insert_entities([(Entity(id=f"{user}:{n}", user_id=user, name=n, entity_type="thing"), _vector(i))
                               for i, n in enumerate(names)], iso(T0))


def test_retrieval_reads_facts_by_id_hops_and_the_graph_of_one_tenant(store):
    _entities(store, ANN, "Ann", "Paris", "Tea")
    paris = _fact(store, ANN, _episode(store, ANN, "e1", "I live in Paris."), "Ann lives in Paris.", "Ann",
                  "lives_in", "Paris", seed=1)
    tea = _fact(store, ANN, _episode(store, ANN, "e2", "I like tea."), "Ann likes tea.", "Ann", "likes", "Tea",
                seed=2)
    ranked = store.lexical_ranking(ANN, "Paris", limit=5, context_weight=0)
    assert [fid for fid, _ in ranked] == [paris.id] and ranked[0][1] > 0  # fact ids, not rows
    assert store.lexical_ranking(BOB, "Paris", limit=5) == []
    rows = store.ranking_rows(ANN, [paris.id, tea.id, "nope"])
    assert sorted(r.fact.id for r in rows) == sorted([paris.id, tea.id])
    assert np.allclose(next(r.vector for r in rows if r.fact.id == paris.id), _vector(1))
    assert store.ranking_rows(BOB, [paris.id]) == [] and store.ranking_rows(ANN, []) == []
    assert store.neighbours(ANN, ["ann:Ann"]) == {"ann:Paris", "ann:Tea"}
    assert store.neighbours(BOB, ["ann:Ann"]) == set()
    assert store.neighbours(ANN, ["ann:Paris"], as_of=iso(T0)) == {"ann:Ann"}
    assert sorted(store.facts_touching(ANN, ["ann:Paris"])) == [paris.id]
    assert store.facts_touching(ANN, ["ann:Ann"], among=[tea.id]) == [tea.id]
    assert store.facts_touching(BOB, ["ann:Ann"]) == []
    entities, edges = store.graph_rows(ANN)
    assert [e[0] for e in entities] == ["ann:Ann", "ann:Paris", "ann:Tea"]  # as stored
    assert [(e[0], e[1], e[2], e[7]) for e in edges] == [("ann:Ann", "ann:Paris", paris.id, 1),
                                                        ("ann:Ann", "ann:Tea", tea.id, 1)]
    assert store.graph_rows(BOB) == ([], [])
    assert [f.id for f in store.entity_history(ANN, "ann:Ann")] == [tea.id, paris.id]  # one instant: by content
    assert store.entity_history(BOB, "ann:Ann") == []


def test_the_facts_touching_an_entity_are_counted_once_each_and_only_the_tenants_own(store):
    """``count_facts_touching`` agrees with ``facts_touching``: Ann about Ann counts once, a retired fact not."""
    _entities(store, ANN, "Ann", "Paris", "Tea", "Rome")
    episode = _episode(store, ANN, "e1", "I live in Paris.")
    paris = _fact(store, ANN, episode, "Ann lives in Paris.", "Ann", "lives_in", "Paris", seed=1)
    _fact(store, ANN, episode, "Ann likes tea.", "Ann", "likes", "Tea", seed=2)
    _fact(store, ANN, episode, "Ann trusts Ann.", "Ann", "trusts", "Ann", seed=3)
    _fact(store, ANN, episode, "Rome is near Paris.", "Rome", "near", "Paris", seed=4)
    later = T0 + timedelta(days=1)
    with store.transaction():
        store.update_facts([Fact(**{**paris.__dict__, "valid_until": later, "expired_at": later})])
    for ids in (["ann:Ann"], ["ann:Paris"], ["ann:Rome", "ann:Ann"], ["ann:Nobody"]):
        found = len(store.facts_touching(ANN, ids))
        assert store.count_facts_touching(ANN, ids, upto=10) == found, ids
        assert store.count_facts_touching(ANN, ids, upto=1) >= min(found, 1)
        assert store.count_facts_touching(BOB, ids, upto=10) == 0
    assert store.count_facts_touching(ANN, ["ann:Ann"], upto=10) == 2  # tea, and Ann about Ann once
    assert store.count_facts_touching(ANN, ["ann:Paris"], upto=10, as_of=iso(T0)) == 2  # Ann lived there then
    assert store.count_facts_touching(ANN, [], upto=10) == 0 == store.count_facts_touching(ANN, ["ann:Ann"], upto=0)


def test_ingest_reads_the_rivals_quotes_and_owners_it_needs_and_claims_an_episode(store):
    episode = _episode(store, ANN, "e1", "I live in Paris.", "I like tea.")
    paris = _fact(store, ANN, episode, "Ann lives in Paris.", "Ann", "lives_in", "Paris")
    tea = _fact(store, ANN, episode, "Ann likes tea.", "Ann", "likes", "tea")
    assert [f.id for f in store.rule_candidates(ANN, ["ann:Ann"], rivals=["lives_in"], restated=[])] == [paris.id]
    again = store.rule_candidates(ANN, ["ann:Ann"], rivals=[], restated=[("LIKES", "Tea!")])
    assert [f.id for f in again] == [tea.id]  # said again: by predicate and object key
    assert [f.id for f in store.rule_candidates(ANN, [], rivals=[], restated=[], ids=[tea.id])] == [tea.id]
    assert store.rule_candidates(BOB, ["ann:Ann"], rivals=["lives_in"], restated=[], ids=[tea.id]) == []
    assert sorted(f.id for f in store.current_facts_about(ANN, ["ann:Ann"])) == sorted([paris.id, tea.id])
    assert store.current_facts_about(BOB, ["ann:Ann"]) == []
    quoted = store.facts_from_messages(ANN, ["ann:Ann"], {episode.messages[0].id}, exclude={tea.id})
    assert [f.id for f in quoted] == [paris.id]
    assert store.record_owners("facts", [paris.id, "nope"]) == {paris.id: ANN}
    assert store.record_owners("episodes", ["e1"]) == {"e1": ANN} and store.episode_status(ANN, "e1") == "pending"
    assert store.episode_status(BOB, "e1") is None
    assert store.claim_episode(ANN, "e1")
    store.release_episode(ANN, "e1")
    with store.transaction():
        store.lock_tenants([BOB, ANN])
        store.mark_entities_changed(ANN, ["ann:Ann"], iso(T0))


def test_entities_due_for_a_summary_are_found_and_their_texts_and_vectors_rewritten(store):
    _entities(store, ANN, "Ann")
    _entities(store, BOB, "Bob")
    later = iso(T0 + timedelta(hours=7))
    with store.transaction():
        store.mark_entities_changed(ANN, ["ann:Ann"], iso(T0 + timedelta(hours=1)))
    assert store.stale_entities(ANN, later) == [(ANN, "ann:Ann")]
    assert sorted(store.stale_entities(None, later)) == [(ANN, "ann:Ann"), (BOB, "bob:Bob")]
    assert store.entity_changed_at(ANN, ["ann:Ann"]) == {"ann:Ann": iso(T0 + timedelta(hours=1))}
    assert store.entity_changed_at(BOB, ["ann:Ann"]) == {}
    assert store.texts(ANN, "entities", ["ann:Ann", "bob:Bob"]) == {"ann:Ann": "Ann"}
    with store.transaction():
        store.set_embeddings(ANN, "entities", [("ann:Ann", _vector(9))])
    assert np.allclose(store.entity_rows(ANN, ["ann:Ann"])[0][1], _vector(9))
    assert [i for ids in store.iter_entity_ids(ANN) for i in ids] == ["ann:Ann"]


def test_sync_and_maintenance_walk_every_user_and_keep_the_outbox_and_the_lexical_index_whole(store):
    episode = _episode(store, ANN, "e1", "I live in Paris.")
    paris = _fact(store, ANN, episode, "Ann lives in Paris.", "Ann", "lives_in", "Paris")
    _entities(store, BOB, "Bob")
    store.add_session_messages(BOB, "chat", [Message("hello", name="Bob")])
    assert store.users() == [ANN, BOB] and store.record_users() == [ANN, BOB]
    assert store.episodes_with_status("pending") == [("e1", ANN)]
    assert store.table_counts()["facts"] == 1 and store.table_counts()["session_messages"] == 1
    assert store.current_fact_keys(ANN) == [(paris.id, "ann:Ann", "lives_in", "Paris", iso(T0))]
    with store.transaction():
        store.add_outbox([("fact", ANN, paris.id, None), ("entity", BOB, "bob:Bob", None)])
    assert store.last_outbox_seq() > 0
    assert store.indexed_fact_sample() is None and store.indexed_entity_sample() is None  # still queued
    store.clear_outbox_rows([store.pending_outbox(users={"ann"})[0][0]])
    assert store.indexed_fact_sample() == (ANN, paris.id) and store.indexed_edge_sample() == (ANN, "ann:Ann")
    assert [ref for _, _, _, ref, _ in store.pending_outbox()] == ["bob:Bob"]
    with store.transaction():
        store.quarantine_outbox([(None, "entity", BOB, "bob:Bob", None, "refused"),
                                 (None, "fact", ANN, paris.id, None, "refused")])
    store.release_quarantined([("fact", paris.id)])
    assert store.quarantine_size() == 1
    store.clear_quarantine(BOB)
    assert store.quarantine_size() == 0
    with store.transaction():
        assert store.rebuild_lexical() == 1
    assert store.lexical_problems() == {} and store.lexical_problems(ANN) == {}
    assert [fid for fid, _ in store.lexical_ranking(ANN, "Paris", limit=5, context_weight=0)] == [paris.id]


def test_a_users_vector_tier_is_marked_read_and_forgotten(store):
    store.set_vector_tier(ANN, "building")
    store.set_vector_tier(BOB, "ready")
    store.set_vector_tier(ANN, "ready")
    assert store.vector_tiers() == {ANN: "ready", BOB: "ready"}
    store.clear_vector_tier(ANN)
    assert store.vector_tiers() == {BOB: "ready"}
    store.clear_vector_tier()
    assert store.vector_tiers() == {}


def test_chat_turns_go_out_and_come_back_in_with_their_episode_marks(store):
    store.add_session_messages(ANN, "chat", [Message("hello", name="Ann", extra={"k": 1}), Message("hi")])
    [(first, _), _] = store.session_messages(ANN, "chat")
    store.mark_session_ended(ANN, "chat", first, "ep1")
    rows = store.session_rows(ANN)
    assert [(s, m.content, m.extra, ep) for s, m, ep in rows] == [("chat", "hello", {"k": 1}, "ep1"),
                                                                  ("chat", "hi", None, None)]
    assert store.session_rows(BOB) == []
    store.insert_session_rows(BOB, rows)
    assert [(s, m.content, ep) for s, m, ep in store.session_rows(BOB)] == [("chat", "hello", "ep1"),
                                                                           ("chat", "hi", None)]


def test_a_checkpoint_may_be_asked_for_at_any_time_and_keeps_what_was_written(store):
    store.checkpoint_in_background()
    _episode(store, ANN, "e1", "I live in Paris.")
    assert store.checkpoint() >= 0 and store.checkpoint() >= 0
    assert [m.content for m in store.get_episode(ANN, "e1").messages] == ["I live in Paris."]


def test_every_protocol_method_is_called():
    """Every method of every record Protocol is called by the contract suite, so every backend is held to it."""
    here = Path(__file__).parent
    source = "".join((here / name).read_text() for name in ("test_record_contract.py", "test_record_contract_reads.py"))
    called = set(re.findall(r"store\.(\w+)\(", source))
    methods = {name for protocol in map(lambda n: getattr(record_protocols, n), record_protocols.__all__)
               for name, value in inspect.getmembers(protocol, inspect.isfunction) if not name.startswith("_")}
    assert sorted(methods - called) == []
