"""An episode sent again without an ``episode_id`` is a duplicate: its default id comes from what was sent.

The id is ``episode_key(user, session, messages)``: a hash of the user, the session and each
message's role, name, id, content and timestamp. A message without a timestamp is hashed
without one, so the same words sent again in the same session are the same episode whatever
the memory's clock says; a timestamp, another session or another user makes another episode.
Every test runs on both backends, and on the double of the store seam (:data:`tests.backends.DOUBLE`).
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from zep_core import Message
from zep_core.episodes import episode_key

from tests.backends import BACKENDS, DOUBLE
from tests.core.fakes import ScriptedExtractor, said

pytestmark = pytest.mark.parametrize("backend", [*BACKENDS, DOUBLE])

UTC = timezone.utc
PARIS = [Message("I live in Paris.", name="Alice")]
BERLIN = [Message("I moved to Berlin.", name="Alice")]


def _cities(memory, user="alice"):
    return [f.object for f in memory.entity_history("Alice", user_id=user) if f.predicate == "lives_in"]


def _run_script(memory, clock):
    """What the README's use_it.py does: Paris, then Berlin a day later (by the memory's clock)."""
    results = [memory.conversation_end("s1", PARIS, user_id="alice")]
    clock.advance(days=1)
    return results + [memory.conversation_end("s2", BERLIN, user_id="alice")]


def test_the_same_episode_sent_again_later_is_a_duplicate_and_stored_once(memory, clock):
    first = _run_script(memory, clock)
    clock.advance(days=3)  # a second run of the same script, days later: the clock is not part of the id
    again = _run_script(memory, clock)

    assert [r.status for r in first] == ["done", "done"] and [r.status for r in again] == ["duplicate", "duplicate"]
    assert [r.episode_id for r in again] == [r.episode_id for r in first]
    assert first[0].episode_id == episode_key("alice", "s1", PARIS) and first[0].episode_id.startswith("f-")
    assert _cities(memory) == ["Paris", "Berlin"]
    assert len(memory.episode_ids(user_id="alice")) == 2


def test_another_timestamp_session_or_user_is_another_episode(memory):
    said_at = [Message("I live in Paris.", name="Alice", timestamp=datetime(2024, 1, 1, tzinfo=UTC))]
    said_again_at = [Message("I live in Paris.", name="Alice", timestamp=datetime(2024, 2, 1, tzinfo=UTC))]

    results = [memory.conversation_end("s1", said_at, user_id="alice"),
               memory.conversation_end("s1", said_again_at, user_id="alice"),
               memory.conversation_end("s2", said_at, user_id="alice"),
               memory.conversation_end("s1", said_at, user_id="bob")]

    assert [r.status for r in results] == ["done"] * 4
    assert len({r.episode_id for r in results}) == 4
    assert memory.conversation_end("s1", said_at, user_id="bob").status == "duplicate"


def test_bulk_gives_the_same_ids_and_stores_a_repeated_episode_once(memory, clock):
    one = memory.conversation_end("s1", PARIS, user_id="alice")
    clock.advance(days=1)
    results = memory.conversation_end_many([
        {"session_id": "s1", "user_id": "alice", "messages": PARIS},     # sent before, one by one
        {"session_id": "s2", "user_id": "alice", "messages": BERLIN},
        {"session_id": "s2", "user_id": "alice", "messages": BERLIN},    # the same episode twice in the call
    ])

    assert [r.status for r in results] == ["duplicate", "done", "duplicate"]
    assert results[0].episode_id == one.episode_id and results[1].episode_id == results[2].episode_id
    assert [r.status for r in memory.conversation_end_many([{"session_id": "s2", "user_id": "alice",
                                                             "messages": BERLIN}])] == ["duplicate"]
    assert _cities(memory) == ["Paris", "Berlin"]


def test_a_pending_episode_sent_again_without_an_id_is_extracted_then(make_memory):
    scripted = ScriptedExtractor()
    scripted.fail(RuntimeError("model overloaded"))
    memory = make_memory(extractor=scripted)
    assert memory.conversation_end("s1", PARIS, user_id="alice").status == "pending"

    scripted.push(said("Alice", "lives_in", "Paris"))
    again = memory.conversation_end("s1", PARIS, user_id="alice")  # a client that got no reply sends it again

    assert again.status == "done" and [f.content for f in again.added] == ["Alice lives in Paris."]
    assert memory.conversation_end("s1", PARIS, user_id="alice").status == "duplicate"
    assert memory.maintain().retried == 0 and _cities(memory) == ["Paris"]
