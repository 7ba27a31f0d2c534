from __future__ import annotations

from datetime import timedelta

import pytest
from zep_core import ValidationError

from zep_langchain import EndPolicy, ZepMemoryMiddleware

IDLE = timedelta(minutes=30)


@pytest.mark.parametrize(("value", "expected"), [
    ("auto", EndPolicy(on_clear=True, every_n_turns=10, idle_after=IDLE)),
    ("clear", EndPolicy(on_clear=True, every_n_turns=None, idle_after=None)),
    ("explicit", EndPolicy(on_clear=False, every_n_turns=None, idle_after=None)),
    (3, EndPolicy(on_clear=True, every_n_turns=3, idle_after=IDLE)),
    (EndPolicy(on_clear=False, every_n_turns=2), EndPolicy(on_clear=False, every_n_turns=2)),
])
def test_policy_shorthands(value, expected):
    assert EndPolicy.of(value) == expected


@pytest.mark.parametrize("value", [0, -1, True, "sometimes", None, 2.5])
def test_bad_policies_are_refused_with_the_choices(value):
    with pytest.raises(ValidationError, match="clear|every_n_turns"):
        EndPolicy.of(value)


def test_the_middleware_learns_by_default(memory):
    assert ZepMemoryMiddleware(memory=memory).end_policy == EndPolicy()
