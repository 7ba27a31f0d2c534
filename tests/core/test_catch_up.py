"""Read-your-writes per user: a read applies its own user's queued index writes, and waits for no one else's."""

from __future__ import annotations

from zep_core.tenant import Tenant

T = Tenant.of  # a checked user id: what the stores take


def test_a_read_applies_its_users_queued_writes_and_leaves_the_others(make_memory):
    memory = make_memory(index_writes="sync")
    records = memory._stores.records
    with memory._sync.deferred():  # commits reach SQLite; the indexes wait, as behind a busy indexer
        memory.conversation_end("a", [{"role": "user", "name": "Ann", "content": "I live in Oslo."}], user_id="ann")
        memory.conversation_end("b", [{"role": "user", "name": "Bob", "content": "I live in Rome."}], user_id="bob")
        assert records.outbox_size(T("ann")) and records.outbox_size(T("bob"))

        bob = memory.get_context("Where does Bob live?", user_id="bob")
        assert [f.content for f in bob][:1] == ["Bob lives in Rome."]  # his own writes were applied first
        assert records.outbox_size() == 0  # the drain it waited for applied every queued row, Ann's too

    assert records.outbox_size() == 0
    assert memory.check_consistency() == {}


def test_a_user_with_nothing_queued_does_not_drain_the_others(make_memory):
    memory = make_memory(index_writes="sync")
    records = memory._stores.records
    memory.conversation_end("b0", [{"role": "user", "name": "Bob", "content": "I live in Rome."}], user_id="bob")
    with memory._sync.deferred():
        memory.conversation_end("a", [{"role": "user", "name": "Ann", "content": "I live in Oslo."}], user_id="ann")
        queued = records.outbox_size(T("ann"))
        assert queued and records.outbox_size(T("bob")) == 0
        assert [f.content for f in memory.get_context("Where does Bob live?", user_id="bob")][:1] == [
            "Bob lives in Rome."]
        assert records.outbox_size(T("ann")) == queued  # Bob's read did not wait for Ann's index writes
        assert [f.content for f in memory.get_context("Where does Ann live?", user_id="ann")][:1] == [
            "Ann lives in Oslo."]
        assert records.outbox_size(T("ann")) == 0
        assert [e.name for e in memory.related_entities("Ann", user_id="ann")] == ["Oslo"]
