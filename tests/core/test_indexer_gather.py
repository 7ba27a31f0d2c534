"""The background indexer gathers: no pass while an episode is being processed, one soon after.

Timings here are only ever waited for (with a generous limit), never asserted as speeds.
"""

from __future__ import annotations

import time

import pytest
from zep_core import sync
from zep_core.tenant import Tenant

from tests.core.waiting import LIMIT_S, until

T = Tenant.of  # a checked user id: what the stores take


@pytest.fixture
def long_gather(monkeypatch):
    """A gathering limit longer than any test: only the writers' quiet can start a pass."""
    monkeypatch.setattr(sync, "GATHER_S", 3600.0)


def _current(memory) -> int:
    return memory.stats()["facts"]["current"]


def _episode(memory, session, text, user="ann"):
    result = memory.conversation_end(session, [{"role": "user", "name": "Ann", "content": text}], user_id=user)
    assert result.status == "done", result.error


def test_no_pass_while_an_episode_is_processed_and_one_once_writers_are_quiet(make_memory, long_gather):
    memory = make_memory(index_writes="background")
    records = memory._stores.records
    with memory._sync.writing():  # as if the next episode of a stream were being extracted
        _episode(memory, "s1", "I live in Oslo.")
        assert records.outbox_size(T("ann"))
        time.sleep(0.3)  # far longer than QUIET_S: the indexer is awake and waiting
        assert records.outbox_size(T("ann")), "the indexer ran a pass beside a writer"
        assert not memory._stores.vectors.collection_ids()  # nothing written to Chroma yet
    assert until(lambda: records.outbox_size() == 0), "the indexer never ran once the writers were quiet"
    assert memory._stores.vectors.count(T("ann"), "current") == _current(memory) > 0
    assert memory.check_consistency() == {}


def test_a_lone_episode_is_indexed_without_a_read(make_memory, long_gather):
    memory = make_memory(index_writes="background")
    _episode(memory, "s1", "I live in Oslo.")
    assert until(lambda: memory._stores.records.outbox_size() == 0)
    assert memory._stores.vectors.count(T("ann"), "current") == _current(memory) > 0
    assert [e.name for e in memory.related_entities("Ann", user_id="ann")] == ["Oslo"]


def test_a_stream_is_indexed_in_fewer_passes_than_episodes(make_memory, monkeypatch):
    memory = make_memory(index_writes="background")
    passes = []
    drain = memory._sync.drain

    def counted() -> int:
        done = drain()
        if done:
            passes.append(done)
        return done

    monkeypatch.setattr(memory._sync, "drain", counted)
    monkeypatch.setattr(sync, "GATHER_S", 3600.0)  # a stream that never pauses is gathered whole
    with memory._sync.writing():
        for i in range(12):
            _episode(memory, f"s{i}", f"I visited Town{i} last week.")
    assert until(lambda: memory._stores.records.outbox_size() == 0)
    assert len(passes) == 1, passes
    assert memory.check_consistency() == {}


def test_close_does_not_wait_out_the_gathering(make_memory, long_gather):
    memory = make_memory(index_writes="background")
    with memory._sync.writing():
        _episode(memory, "s1", "I live in Oslo.")
        time.sleep(0.05)  # the indexer is gathering now, and would until the writer ends
        start = time.monotonic()
        memory.close()
        assert time.monotonic() - start < LIMIT_S
    reopened = make_memory(index_writes="sync")
    assert reopened._stores.records.outbox_size() == 0  # close applied what was queued
    assert reopened._stores.vectors.count(T("ann"), "current") == _current(reopened) > 0
