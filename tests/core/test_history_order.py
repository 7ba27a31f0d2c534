"""``entity_history`` gives facts of the same instant in one order whatever their ids: the demo prints the same twice.

Facts are ordered by ``valid_from``, then by when they were stored, then by what they say;
their random ids came before what they say, so two runs of the demo listed Alice's facts of
2023-05-08 in different orders.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from zep_core import Message

from tests.backends import BACKENDS, DOUBLE


@pytest.mark.parametrize("backend", [*BACKENDS, DOUBLE])
def test_facts_of_the_same_instant_come_by_what_they_say(memory):
    memory.conversation_end("s1", [Message("I work at Acme as a designer. I live in Paris. I like jazz.",
                                           name="Alice")], user_id="alice")

    history = [f.content for f in memory.entity_history("Alice", user_id="alice")]

    assert len(history) >= 3 and len({f.valid_from for f in memory.entity_history("Alice", user_id="alice")}) == 1
    assert history == sorted(history)


def test_the_demo_prints_the_same_thing_twice(tmp_path):
    runs = [subprocess.Popen([sys.executable, "-m", "zep_core.demo", str(tmp_path / name)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for name in ("one", "two")]
    (first, err), (second, _) = (run.communicate(timeout=240) for run in runs)

    assert [run.returncode for run in runs] == [0, 0], err[-2000:]
    assert first == second
    history = first.split("== entity_history('Alice')")[1].split("\n== ")[0]
    assert "replaced by 'Alice lives in Berlin.'" in first
    assert history.index("Alice lives in Paris.") < history.index("Alice works as a designer.") \
        < history.index("Alice works at Acme.")
