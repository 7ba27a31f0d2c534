"""Records validate themselves: the spec's invariant and ranges."""

from __future__ import annotations

import math
from datetime import datetime, timezone

import pytest
from zep_core import Fact, InvariantError, Message, ValidationError

UTC = timezone.utc


def make(**kw):
    base = dict(content="Alice lives in Paris.", subject="Alice", predicate="lives_in", object="Paris",
                valid_from=datetime(2024, 1, 1, tzinfo=UTC))
    base.update(kw)
    return Fact(**base)


def test_valid_until_before_valid_from_is_rejected_with_the_spec_rule():
    with pytest.raises(InvariantError, match="valid_from <= valid_until"):
        make(valid_until=datetime(2023, 1, 1, tzinfo=UTC))


def test_valid_until_equal_or_null_is_accepted():
    assert make(valid_until=datetime(2024, 1, 1, tzinfo=UTC)).valid_until is not None
    assert make().valid_until is None


@pytest.mark.parametrize("confidence", [-0.1, 1.01, math.nan, math.inf, "0.5", True])
def test_confidence_outside_unit_interval_is_rejected(confidence):
    with pytest.raises(ValidationError, match="confidence"):
        make(confidence=confidence)


def test_naive_datetimes_are_read_as_utc():
    assert make(valid_from=datetime(2024, 1, 1)).valid_from.tzinfo == UTC


def test_other_timezones_are_converted_to_utc():
    from datetime import timedelta
    tz = timezone(timedelta(hours=2))
    assert make(valid_from=datetime(2024, 1, 1, 2, tzinfo=tz)).valid_from == datetime(2024, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize("content", ["", "   ", "a\x00b", "bad \ud800 surrogate"])
def test_malformed_message_content_is_rejected(content):
    with pytest.raises(ValidationError):
        Message(content)


def test_message_coerce_names_the_bad_message():
    with pytest.raises(ValidationError, match="message 2"):
        from zep_core.models import coerce_messages
        coerce_messages([("user", "hi"), {"role": "user", "content": "ok"}, {"role": "user"}])


def test_unknown_role_is_rejected_and_aliases_are_mapped():
    assert Message("hi", role="human").role == "user"
    with pytest.raises(ValidationError, match="role"):
        Message("hi", role="wizard")
