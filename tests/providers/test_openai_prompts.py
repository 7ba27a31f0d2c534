"""The extraction prompt and the tolerant reading of replies (pure functions, no server)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from zep_core.models import Fact, Message
from zep_core.providers.base import ExtractionContext
from zep_core.providers.openai_prompts import (
    EpisodeExtraction,
    ExtractionPrompt,
    decode_json,
    parse_time,
    strict_schema,
)

UTC = timezone.utc
NOW = datetime(2024, 5, 1, 12, tzinfo=UTC)


def prompt(known=()):
    messages = [Message("I moved to Berlin.", name="Alice", id="real-1"), Message("Nice!", role="assistant")]
    return ExtractionPrompt(messages, ExtractionContext("u", "s", now=NOW, known_facts=tuple(known)))


def test_decode_json_reads_fenced_and_wrapped_objects():
    assert decode_json('```json\n{"a": 1}\n```') == {"a": 1}
    assert decode_json('Sure! Here it is: {"a": {"b": 2}} Hope this helps.') == {"a": {"b": 2}}
    for bad, reason in [("no braces", "no JSON object"), ('{"a": ', "not valid JSON"), ("[1, 2]", "no JSON object")]:
        with pytest.raises(ValueError, match=reason):
            decode_json(bad)


@pytest.mark.parametrize(("text", "expected"), [
    ("2024-03-05", datetime(2024, 3, 5, tzinfo=UTC)),
    ("2024-03-05T10:00:00Z", datetime(2024, 3, 5, 10, tzinfo=UTC)),
    ("2024-03-05T12:00:00+02:00", datetime(2024, 3, 5, 10, tzinfo=UTC)),
    ("2019", datetime(2019, 1, 1, tzinfo=UTC)),
    ("2019-07", datetime(2019, 7, 1, tzinfo=UTC)),
    ("2019-13", "2019-13"), ("0000", "0000"), ("last summer", "last summer"), (None, None),
])
def test_times_are_read_as_utc_or_left_for_the_core_to_reject(text, expected):
    assert parse_time(text) == expected


def test_the_schema_is_strict_mode_compatible():
    schema = strict_schema(EpisodeExtraction)
    fact = schema["$defs"]["FactItem"]
    assert fact["additionalProperties"] is False and set(fact["required"]) == set(fact["properties"])
    assert "default" not in str(schema) and "title" not in str(schema)


def test_refs_map_back_to_real_ids_in_any_spelling():
    known = Fact(content="Alice lives in Paris.", subject="Alice", predicate="lives_in", object="Paris",
                 valid_from=datetime(2023, 1, 1, tzinfo=UTC))
    p = prompt([known])
    extraction = p.parse({"facts": [{"subject": "Alice", "predicate": "lives_in", "object": "Berlin",
                                     "content": "Alice lives in Berlin.", "sources": ["M1", 2, "real-1", "m9"]}],
                          "contradicted": ["K1", 1, known.id, "k2"]})
    assert extraction.contradicted_fact_ids == (known.id,)
    assert extraction.facts[0].source_message_ids == ("real-1",)  # m2 has no id; m9 does not exist


def test_nulls_and_odd_types_are_tolerated():
    extraction = prompt().parse({"summary": None, "entities": None, "contradicted": None, "facts": [
        {"subject": "Alice", "predicate": "age", "object": 31, "object_is_entity": "false", "content": "Alice is 31.",
         "confidence": "0.7", "sources": "m1", "valid_from": "null", "unexpected": True}]})
    (f,) = extraction.facts
    assert (f.object, f.object_is_entity, f.confidence, f.source_message_ids, f.valid_from) == (
        "31", False, 0.7, ("real-1",), None)
    assert extraction.summary is None and extraction.entities == ()


def test_an_answer_without_facts_is_invalid():
    with pytest.raises(ValueError, match="facts"):
        prompt().parse({"summary": "hello"})
