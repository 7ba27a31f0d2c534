"""Resource bounds: message size, messages per episode and facts per episode are configurable.

Past a bound the caller gets a clear error naming the setting (message size and
count), or, for facts — which come from the extractor, not the caller — the episode
is kept, the first ``max_facts_per_episode`` facts are stored and the rest are
reported as dropped. Nothing is stored by a refused call.
"""

from __future__ import annotations

import pytest
from zep_core import ConfigError, MemoryConfig, Message, QueryError, ValidationError

from tests.core.fakes import ScriptedExtractor, said
from tests.reliability.figures import record
from tests.stores.state import snapshot

FIGURES: dict[str, str] = {}


@pytest.fixture(scope="module", autouse=True)
def _figures():
    yield
    record("limits", FIGURES, ".venv/bin/python -m pytest -q tests/reliability/test_limits.py")


def refused(memory, call, *names):
    before = snapshot(memory)
    with pytest.raises(ValidationError) as caught:
        call()
    assert all(n in str(caught.value) for n in names), caught.value
    assert snapshot(memory) == before
    return str(caught.value)


def test_message_size_is_bounded_everywhere_text_comes_in(make_memory):
    memory = make_memory(max_message_chars=50)
    memory.conversation_end("s", [Message("x" * 50, name="Ann")], user_id="ann")  # at the limit: fine
    FIGURES["max_message_chars"] = refused(
        memory, lambda: memory.conversation_end("s", [Message("ok", name="Ann"), Message("x" * 51, name="Ann")],
                                                user_id="ann"), "message 1", "51", "max_message_chars=50")
    refused(memory, lambda: memory.add_messages("chat", [Message("y" * 51)], user_id="ann"), "max_message_chars")
    refused(memory, lambda: memory.get_context("z" * 51, user_id="ann"), "max_message_chars")


def test_messages_per_episode_are_bounded(make_memory):
    memory = make_memory(max_messages_per_episode=3)
    memory.conversation_end("s", [Message(f"line {i}", name="Ann") for i in range(3)], user_id="ann")
    FIGURES["max_messages_per_episode"] = refused(
        memory, lambda: memory.conversation_end("s", [Message(f"line {i}") for i in range(4)], user_id="ann"),
        "4 messages", "max_messages_per_episode=3")
    refused(memory, lambda: memory.add_messages("chat", [Message("a")] * 4, user_id="ann"), "max_messages_per_episode")


def test_facts_per_episode_are_bounded_and_the_excess_reported(make_memory):
    extractor = ScriptedExtractor()
    memory = make_memory(max_facts_per_episode=2, extractor=extractor)
    extractor.push(*(said("Ann", "likes", f"fruit{i}") for i in range(5)))
    result = memory.conversation_end("s", [Message("I like many fruits.", name="Ann")], user_id="ann")
    assert result.status == "done" and len(result.added) == 2
    assert result.invalid == ("3 facts over max_facts_per_episode=2 dropped",)
    assert len(memory.entity_history("Ann", user_id="ann")) == 2
    assert len(memory.get_episode(result.episode_id).messages) == 1  # the episode itself is kept whole
    FIGURES["max_facts_per_episode"] = "reported in IngestResult.invalid: " + result.invalid[0]


def test_the_rule_extractor_respects_the_facts_bound_on_a_long_episode(make_memory):
    memory = make_memory(max_facts_per_episode=10)
    lines = [Message(f"I like thing{i}.", name="Ann") for i in range(30)]
    result = memory.conversation_end("s", lines, user_id="ann")
    assert len(result.added) == 10 and "max_facts_per_episode=10" in result.invalid[-1]


def test_ids_and_cypher_queries_are_bounded(make_memory):
    memory = make_memory()
    memory.conversation_end("s", [Message("I live in Rome.", name="Ann")], user_id="ann")
    FIGURES["id_length"] = refused(memory, lambda: memory.conversation_end("s" * 257, [Message("hi")], user_id="ann"),
                                   "session_id", "257", "256")
    with pytest.raises(QueryError, match="too long"):
        memory.cypher("MATCH (e:Entity) RETURN e.name" + " " * 20_001, user_id="ann")


@pytest.mark.parametrize("name", ["max_message_chars", "max_messages_per_episode", "max_facts_per_episode"])
@pytest.mark.parametrize("value", [0, -1, 2.5, "100", None, True, float("nan")])
def test_bounds_must_be_positive_integers(tmp_path, name, value):
    with pytest.raises(ConfigError, match=name):
        MemoryConfig(data_dir=tmp_path, **{name: value})


def test_default_bounds_refuse_a_megabyte_message_and_keep_the_figures(make_memory):
    memory = make_memory()
    cfg = memory.config
    refused(memory, lambda: memory.conversation_end("s", [Message("a" * 1_000_000)], user_id="ann"),
            "1000000", "max_message_chars")
    FIGURES["defaults"] = (f"max_message_chars={cfg.max_message_chars}, max_messages_per_episode="
                           f"{cfg.max_messages_per_episode}, max_facts_per_episode={cfg.max_facts_per_episode}")
