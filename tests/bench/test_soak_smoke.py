"""The soak run (bench/soak.py) in miniature: five SIGKILL trials, and a check that can fail.

The full soak (1,000 trials) is not a test; this keeps the script working and shows
that its check notices what it is there to notice: a lost episode, a forgotten user
with data left, a move that did not take.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

from zep_core import Memory, MemoryConfig, Message

from bench.soak import OPS, Ledger, check_folder, digest, run

WHEN = "2020-01-01T00:00:00+00:00"


def test_a_five_trial_soak_loses_nothing_and_writes_its_figures(tmp_path, embedder):
    # after_episodes=1: each trial not killed while it opens (seed 11: none is) acknowledges an episode
    # before its kill delay starts, so the check has something to check however loaded the machine
    # is (a CI run once acknowledged none: every child spent its window on its first operation)
    result = run(5, seed=11, out=tmp_path / "soak.json", work=tmp_path / "work", embedder=embedder,
                 after_episodes=1, quiet=True)
    assert (result["trials"], result["lost"], result["inconsistent"], result["failures"]) == (5, 0, 0, [])
    assert result["episodes_acknowledged"] >= 5
    assert "open" not in result["kills"]
    # every acknowledgement was looked up by a check, or an acknowledged forget took it away first
    # (episodes_checked, a sum over checks, may be smaller when a trial forgets what it wrote)
    assert (result["episodes_first_checked"] + result["episodes_forgotten_before_a_check"]
            == result["episodes_acknowledged"])
    assert sum(result["kills"].values()) == 5
    assert set(result["ops"]) == set(OPS)
    assert result["zygote_threads_at_fork"] == 1
    assert result["seconds_per_trial"]["mean"] > 0
    written = json.loads((tmp_path / "soak.json").read_text())
    assert written["benchmark"] == "soak"
    assert written["command"] == "python -m bench.soak --trials 5 --seed 11 --after-episodes 1"
    assert written["kill_delay"]["after_episodes"] == 1


def _ingest(begin: dict) -> list[dict]:
    return [begin, {"ev": "done", "op": begin["op"], "status": "done", "superseded": [], "seconds": 0.01}]


def _episode(user: str, episode_id: str, text: str, op: str = "ingest", **extra) -> dict:
    return {"ev": "begin", "op": op, "user": user, "episode_id": episode_id, "messages": [[text, WHEN]], **extra}


def _stored(tmp_path, embedder, *texts: str) -> None:
    with Memory(MemoryConfig(data_dir=tmp_path, embedder=embedder)) as memory:
        for i, text in enumerate(texts):
            memory.conversation_end("soak", [Message(text, name="Alice", timestamp=datetime(2020, 1, 1 + i,
                                                                                            tzinfo=timezone.utc))],
                                    user_id="u0", episode_id=f"e{i}")


def test_the_check_counts_an_acknowledged_episode_that_is_not_stored_as_lost(tmp_path, embedder):
    _stored(tmp_path, embedder, "I like tea.")
    ledger = Ledger()
    ledger.apply([{"ev": "open"}, *_ingest(_episode("u0", "e0", "I like tea.")),
                  *_ingest(_episode("u0", "e9", "I like jazz."))])
    verdict = check_folder(tmp_path, embedder, ledger)
    assert verdict.lost == 1 and not verdict.inconsistent
    assert "e9" in verdict.problems[0][1]


def test_the_check_notices_a_forgotten_user_with_data_and_a_move_that_did_not_take(tmp_path, embedder):
    _stored(tmp_path, embedder, "I live in Paris.")
    forgot = Ledger()
    forgot.apply([{"ev": "begin", "op": "forget", "user": "u0"}, {"ev": "done", "op": "forget", "seconds": 0.01}])
    assert check_folder(tmp_path, embedder, forgot).inconsistent
    moved = Ledger()
    moved.apply(_ingest(_episode("u0", "e0", "I live in Paris.", "supersede", city="Berlin", was=None)))
    verdict = check_folder(tmp_path, embedder, moved)
    assert verdict.inconsistent and "['Paris']" in verdict.problems[0][1]


def test_a_kill_during_an_operation_accepts_the_user_before_or_after_it(tmp_path, embedder):
    _stored(tmp_path, embedder, "I live in Paris.", "I moved to Berlin.")
    ledger = Ledger()
    running = ledger.apply([*_ingest(_episode("u0", "e0", "I live in Paris.", "supersede", city="Paris", was=None)),
                            _episode("u0", "e1", "I moved to Berlin.", "supersede", city="Berlin", was="Paris")])
    verdict = check_folder(tmp_path, embedder, ledger, running)
    assert verdict.problems == []
    assert ledger.user("u0").city == "Berlin"  # the move the kill interrupted had taken effect
    assert ledger.user("u0").episodes == {"e0": (digest(["I live in Paris."]), "done"),
                                          "e1": (digest(["I moved to Berlin."]), "done")}  # adopted, as stored


class _Down:
    """An extractor that is down: the episode is stored and stays pending."""

    needs_known_facts = False

    def extract(self, messages, context):
        raise ConnectionError("the extractor is down")


def test_a_move_a_kill_left_pending_is_not_assumed_undone(tmp_path, embedder):
    """The kill hit after the move was stored, before it was extracted: ``maintain`` makes it
    later. The check adopts the stored episode and stops promising the old city."""
    _stored(tmp_path, embedder, "I live in Paris.")
    with Memory(MemoryConfig(data_dir=tmp_path, embedder=embedder, extractor=_Down())) as memory:
        result = memory.conversation_end("soak", [Message("I moved to Berlin.", name="Alice",
                                                          timestamp=datetime(2020, 2, 1, tzinfo=timezone.utc))],
                                         user_id="u0", episode_id="e1")
        assert result.status == "pending"
    ledger = Ledger()
    running = ledger.apply([*_ingest(_episode("u0", "e0", "I live in Paris.", "supersede", city="Paris", was=None)),
                            _episode("u0", "e1", "I moved to Berlin.", "supersede", city="Berlin", was="Paris")])
    assert check_folder(tmp_path, embedder, ledger, running).problems == []
    assert ledger.user("u0").episodes["e1"] == (digest(["I moved to Berlin."]), "pending")
    with Memory(MemoryConfig(data_dir=tmp_path, embedder=embedder)) as memory:
        assert memory.maintain().completed == 1  # Alice now lives in Berlin
    assert check_folder(tmp_path, embedder, ledger).problems == []


def test_an_episode_forgotten_before_any_check_is_counted_as_such_not_as_checked(tmp_path, embedder):
    """The case that failed CI once: a trial acknowledged episodes, then a forget of their user;
    the check after it cannot look them up, and the run's accounting must still add up."""
    _stored(tmp_path, embedder, "I like tea.")
    ledger = Ledger()
    ledger.apply([*_ingest(_episode("u0", "e0", "I like tea.")), *_ingest(_episode("u1", "e5", "I like jazz.")),
                  {"ev": "begin", "op": "forget", "user": "u1"}, {"ev": "done", "op": "forget", "seconds": 0.01}])
    verdict = check_folder(tmp_path, embedder, ledger)
    assert verdict.problems == []
    assert (verdict.episodes_first_checked, ledger.dropped_unchecked) == (1, 1)
    assert check_folder(tmp_path, embedder, ledger).episodes_first_checked == 0  # looked up once already
