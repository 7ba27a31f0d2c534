"""Entity summaries written by an LLM, many entities per request."""

from __future__ import annotations

from datetime import datetime, timezone

from zep_core import Message
from zep_core.models import Entity, Fact
from zep_core.providers.openai import OpenAISummarizer

from tests.providers.conftest import answer, fact, prompt_of, summaries_for

UTC = timezone.utc


def entity_with_facts(i: int) -> tuple[Entity, list[Fact]]:
    when = datetime(2024, 1, 1, tzinfo=UTC)
    name = f"Person {i}"
    return Entity(name=name, entity_type="person"), [
        Fact(content=f"{name} likes chess.", subject=name, predicate="likes", object="chess", valid_from=when)]


def test_refresh_entities_summarizes_many_entities_in_one_request(openai_memory, fake, clock):
    memory = openai_memory()
    fake.push_chat(answer(fact("Alice", "lives_in", "Paris"), fact("Alice", "works_at", "Acme")))
    memory.conversation_end("s", [Message("I live in Paris and work at Acme.", name="Alice")], user_id="alice")
    fake.clear_log()
    fake.push_chat(lambda body: summaries_for(body, "{name}: an LLM summary."))
    assert memory.refresh_entities(max_age=clock.now - clock.now) == 3
    (request,) = fake.log("chat")
    assert "e1: Alice (person)\n- Alice" in prompt_of(request.body)
    assert request.body["response_format"]["json_schema"]["name"] == "EntitySummaries"
    assert memory.get_entity("Alice", user_id="alice").summary == "Alice: an LLM summary."
    assert memory.get_entity("Paris", user_id="alice").summary == "Paris: an LLM summary."


def test_batches_are_split_by_batch_size(client, fake):
    fake.push_chat(summaries_for, summaries_for)
    items = [entity_with_facts(i) for i in range(30)]
    summaries = OpenAISummarizer(client=client, batch_size=25).summarize_entities(items)
    assert len(fake.log("chat")) == 2
    assert summaries[0] == "Person 0 is summarized." and summaries[29] == "Person 29 is summarized."


def test_entities_the_reply_leaves_out_get_an_extractive_summary(client, fake):
    fake.push_chat({"summaries": [{"id": "e2", "summary": "Second, from the LLM."}]})
    summaries = OpenAISummarizer(client=client).summarize_entities([entity_with_facts(1), entity_with_facts(2)])
    assert summaries == ["Person 1 likes chess.", "Second, from the LLM."]


def test_unusable_replies_fall_back_to_extractive_summaries(client, fake):
    fake.push_chat("no json", "still none")
    summaries = OpenAISummarizer(client=client).summarize_entities([entity_with_facts(1)])
    assert summaries == ["Person 1 likes chess."] and len(fake.log("chat")) == 2
