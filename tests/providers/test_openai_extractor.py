"""The LLM extractor against a real HTTP endpoint (the fake server): one call per episode."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from zep_core import Message
from zep_core.providers.fake_openai import FakeOpenAI, Reply, count_tokens, rate_limited
from zep_core.providers.openai import OpenAIExtractor

from tests.core.fakes import ScriptedExtractor, said
from tests.providers.conftest import answer, fact, known_ref, prompt_of, summaries_for

UTC = timezone.utc


def alice(*lines, day=1):
    return [Message(text, name="Alice", id=f"d{day}-{i}", timestamp=datetime(2024, 3, day, 9, i, tzinfo=UTC))
            for i, text in enumerate(lines)]


def test_each_episode_costs_exactly_one_chat_request(openai_memory, fake):
    memory = openai_memory()
    fake.push_chat(answer(fact("Alice", "lives_in", "Paris")), answer(fact("Alice", "works_at", "Acme")),
                   answer(fact("Alice", "likes", "tea")))
    for day, line in enumerate(["I live in Paris.", "I work at Acme.", "I like tea."], start=1):
        result = memory.conversation_end("s", alice(line, day=day), user_id="alice")
        assert result.status == "done" and len(result.added) == 1
    assert len(fake.log("chat")) == 3
    assert {f.content for f in memory.get_context("Alice", user_id="alice")} >= {
        "Alice lives in Paris.", "Alice works at Acme.", "Alice likes tea."}


def test_the_request_carries_speakers_refs_times_known_facts_and_a_json_schema(openai_memory, fake, clock):
    memory = openai_memory()
    fake.push_chat(answer(fact("Alice", "lives_in", "Paris")))
    memory.conversation_end("s", alice("I live in Paris."), user_id="alice")
    fake.push_chat(answer())
    memory.conversation_end("s", [Message("Hi Alice, how is Paris?", role="assistant", name="Bot", id="x1"),
                                  Message("Still lovely.", name="Alice", id="x2")], user_id="alice")
    body = fake.log("chat")[-1].body
    prompt = prompt_of(body)
    assert "Known facts:\nk1: Alice lives in Paris. (since 2024-03-01)" in prompt
    assert f"[{clock.now:%Y-%m-%d %H:%M}]" in prompt  # messages without a timestamp: the ingest time
    assert "m1 Bot (assistant): Hi Alice, how is Paris?" in prompt and "m2 Alice: Still lovely." in prompt
    assert body["response_format"]["type"] == "json_schema"
    schema = body["response_format"]["json_schema"]["schema"]
    assert set(schema["required"]) == {"summary", "entities", "facts", "contradicted", "mistaken"}
    assert body["max_tokens"] == 4096 and body["temperature"] == 0


def test_facts_cite_the_real_message_ids_and_stated_times(openai_memory, fake):
    memory = openai_memory()
    fake.push_chat(answer(fact("Alice", "works_at", "Acme", sources=["m2"], valid_from="2019")))
    result = memory.conversation_end("s", alice("Hello!", "I have worked at Acme since 2019."), user_id="alice")
    (added,) = result.added
    assert added.source_message_ids == ("d1-1",)
    assert added.valid_from == datetime(2019, 1, 1, tzinfo=UTC)


def test_token_usage_is_reported_in_the_ingest_result(openai_memory, fake):
    memory = openai_memory()
    reply = answer(fact("Alice", "likes", "tea"))
    fake.push_chat(reply)
    result = memory.conversation_end("s", alice("I like tea."), user_id="alice")
    completion = count_tokens(json.dumps(reply))
    assert result.usage["requests"] == 1
    assert result.usage["completion_tokens"] == completion
    assert result.usage["prompt_tokens"] > count_tokens(prompt_of(fake.log("chat")[0].body))
    assert result.usage["total_tokens"] == result.usage["prompt_tokens"] + completion


def test_a_reported_contradiction_supersedes_that_fact_and_only_that_one(openai_memory, fake, clock):
    memory = openai_memory()
    fake.push_chat(answer(fact("Alice", "likes", "coffee"), fact("Alice", "likes", "tea")))
    memory.conversation_end("s", alice("I like coffee and tea.", day=1), user_id="alice")
    clock.advance(days=5)
    fake.push_chat(lambda body: answer(fact("Alice", "likes", "juice"),
                                       contradicted=[known_ref(body, "coffee")]))
    result = memory.conversation_end("s", alice("I gave up coffee, I drink juice now.", day=6), user_id="alice")
    assert [f.object for f in result.superseded] == ["coffee"]
    (juice,) = result.added
    assert result.superseded[0].superseded_by == juice.id
    assert result.superseded[0].valid_until == juice.valid_from
    current = {f.object for f in memory.entity_history("Alice", user_id="alice") if f.is_current}
    assert current == {"tea", "juice"}


def test_a_hallucinated_fact_id_is_ignored(openai_memory, fake, clock):
    memory = openai_memory()
    fake.push_chat(answer(fact("Alice", "likes", "tea"), fact("Bob", "likes", "golf", sources=["m1"])))
    first = memory.conversation_end("s", alice("I like tea. Bob likes golf.", day=1), user_id="alice")
    golf = next(f for f in first.added if f.object == "golf")
    clock.advance(days=2)
    # k9 was never shown; the golf fact exists but was not among the known facts of this episode
    fake.push_chat(answer(fact("Alice", "likes", "juice"), contradicted=["k9", golf.id, "not-an-id"]))
    result = memory.conversation_end("s", alice("I like juice too.", day=3), user_id="alice")
    assert "golf" not in prompt_of(fake.log("chat")[-1].body)
    assert result.superseded == ()
    assert {f.object for f in memory.entity_history("Alice", user_id="alice") if f.is_current} == {"tea", "juice"}


def test_the_core_itself_ignores_contradicted_ids_it_did_not_show(make_memory, clock):
    extractor = ScriptedExtractor()
    memory = make_memory(extractor=extractor)
    extractor.push(said("Alice", "likes", "tea"), said("Bob", "likes", "golf"))
    first = memory.conversation_end("s", [Message("I like tea. Bob likes golf.", name="Alice")], user_id="alice")
    golf = next(f for f in first.added if f.object == "golf")
    clock.advance(days=1)
    extractor.push(said("Bob", "likes", "tennis"), contradicted=[golf.id])
    result = memory.conversation_end("s", [Message("I like juice.", name="Alice")], user_id="alice")
    assert golf.id not in {f.id for f in extractor.calls[-1][1].known_facts}
    assert result.superseded == ()


def test_malformed_json_is_repaired_once_with_the_error_sent_back(openai_memory, fake):
    memory = openai_memory()
    fake.push_chat('{"summary": "cut off", "facts": [', answer(fact("Alice", "likes", "tea")))
    result = memory.conversation_end("s", alice("I like tea."), user_id="alice")
    assert result.status == "done" and [f.object for f in result.added] == ["tea"]
    first, repair = fake.log("chat")
    assert len(repair.body["messages"]) == len(first.body["messages"]) + 2
    assert repair.body["messages"][-2] == {"role": "assistant", "content": '{"summary": "cut off", "facts": ['}
    assert "not valid JSON" in repair.body["messages"][-1]["content"]
    assert result.usage["requests"] == 2


def test_persistent_garbage_leaves_the_episode_pending_and_maintain_completes_it(openai_memory, fake):
    memory = openai_memory()
    fake.push_chat("I am sorry, I cannot help with that.", "Still no JSON here.")
    result = memory.conversation_end("s", alice("I live in Paris.", "And I like tea."), user_id="alice")
    assert result.status == "pending" and "unusable output twice" in result.error
    stored = memory.get_episode(result.episode_id)
    assert stored.status == "pending" and stored.texts == ["I live in Paris.", "And I like tea."]
    assert len(fake.log("chat")) == 2

    fake.push_chat(answer(fact("Alice", "lives_in", "Paris"), fact("Alice", "likes", "tea", sources=["m2"])),
                   summaries_for)
    report = memory.maintain()
    assert (report.retried, report.completed, report.still_pending) == (1, 1, ())
    assert memory.get_episode(result.episode_id).status == "done"
    assert {f.object for f in memory.entity_history("Alice", user_id="alice")} == {"Paris", "tea"}
    assert memory.get_entity("Alice", user_id="alice").summary == "Alice is summarized."


def test_an_endpoint_down_after_retries_leaves_the_episode_pending(openai_memory, make_client, fake):
    memory = openai_memory(extractor=OpenAIExtractor(client=make_client(max_retries=1)))
    fake.push_chat(Reply(503), Reply(503))
    result = memory.conversation_end("s", alice("I live in Paris."), user_id="alice")
    assert result.status == "pending" and "HTTP 503" in result.error and "after 2 attempts" in result.error
    assert memory.get_episode(result.episode_id).texts == ["I live in Paris."]


def test_a_rate_limit_with_retry_after_is_waited_out(openai_memory, fake, sleeps):
    memory = openai_memory()
    fake.push_chat(rate_limited(retry_after=2), answer(fact("Alice", "likes", "tea")))
    result = memory.conversation_end("s", alice("I like tea."), user_id="alice")
    assert result.status == "done" and len(result.added) == 1
    assert [r.status for r in fake.log("chat")] == [429, 200]
    assert sleeps == [2.0]


def test_one_bad_fact_does_not_sink_the_episode(openai_memory, fake):
    memory = openai_memory()
    fake.push_chat(answer(
        fact("Alice", "likes", "tea"),
        fact("Alice", "likes", "cake", confidence="high"),                 # a word: read as the default
        fact("Alice", "likes", "jazz", confidence=1.7),                    # out of range: dropped
        fact("Alice", "lived_in", "Rome", valid_from="2020-05-01", valid_until="2019-01-01"),  # invariant
        fact("", "likes", "chess"),                                        # no subject
        fact("Alice", "visited", "Oslo", valid_from="next spring"),        # no date
        "Alice likes hiking",                                              # not an object
    ))
    result = memory.conversation_end("s", alice("Lots of things."), user_id="alice")
    assert result.status == "done"
    assert sorted(f.object for f in result.added) == ["cake", "tea"]
    assert len(result.invalid) == 5
    reasons = " | ".join(result.invalid)
    assert "confidence" in reasons and "valid_until" in reasons and "subject is empty" in reasons
    assert "'next spring' is not an ISO-8601 date" in reasons


def test_past_facts_with_only_an_end_date_are_kept(openai_memory, fake):
    memory = openai_memory()
    fake.push_chat(answer(fact("Alice", "lived_in", "Rome", valid_until="2020-06")))
    result = memory.conversation_end("s", alice("I lived in Rome until mid 2020."), user_id="alice")
    (rome,) = result.added
    assert rome.valid_until == datetime(2020, 6, 1, tzinfo=UTC) and not rome.is_current


def test_a_server_without_json_schema_gets_json_mode_and_it_is_remembered(openai_memory, make_client):
    with FakeOpenAI(json_schema=False) as server:
        extractor = OpenAIExtractor(client=make_client(server))
        memory = openai_memory(extractor=extractor)
        server.push_chat(answer(fact("Alice", "likes", "tea")), answer(fact("Alice", "likes", "juice")))
        first = memory.conversation_end("s", alice("I like tea."), user_id="alice")
        second = memory.conversation_end("s", alice("I like juice.", day=2), user_id="alice")
        formats = [(r.body.get("response_format") or {}).get("type") for r in server.log("chat")]
        statuses = [r.status for r in server.log("chat")]
    assert first.status == second.status == "done"
    assert formats == ["json_schema", "json_object", "json_object"] and statuses == [400, 200, 200]
    assert extractor.output_format == "json_object"
    assert "JSON object" in server.log("chat")[-1].body["messages"][0]["content"]


def test_a_server_with_no_response_format_at_all_gets_plain_text_and_fenced_json_is_read(make_client):
    with FakeOpenAI(json_schema=False, json_object=False) as server:
        extractor = OpenAIExtractor(client=make_client(server))
        server.push_chat("```json\n" + json.dumps(answer(fact("Alice", "likes", "tea"))) + "\n```")
        from zep_core.providers.base import ExtractionContext

        result = extractor.extract(alice("I like tea."), ExtractionContext("u", "s", now=datetime.now(UTC)))
        assert [f.object for f in result.facts] == ["tea"]
        assert [r.status for r in server.log("chat")] == [400, 400, 200]
        assert "response_format" not in server.log("chat")[-1].body
        assert extractor.output_format == "text"


def test_a_reply_cut_off_at_the_token_cap_is_asked_again_briefly(openai_memory, fake):
    memory = openai_memory()
    fake.push_chat(Reply(content='{"summary": "x", "facts": [{"subject": "Ali', finish_reason="length"),
                   answer(fact("Alice", "likes", "tea")))
    result = memory.conversation_end("s", alice("I like tea."), user_id="alice")
    assert result.status == "done"
    assert "max_output_tokens=4096" in fake.log("chat")[-1].body["messages"][-1]["content"]


def test_known_facts_shown_are_capped(fake, client):
    from zep_core.models import Fact
    from zep_core.providers.base import ExtractionContext

    now = datetime(2024, 1, 1, tzinfo=UTC)
    known = tuple(Fact(content=f"Alice likes thing {i}.", subject="Alice", predicate="likes", object=f"thing {i}",
                       valid_from=now) for i in range(80))
    extractor = OpenAIExtractor(client=client, max_known_facts=50)
    extractor.extract(alice("Hi"), ExtractionContext("u", "s", now=now, known_facts=known))
    prompt = prompt_of(fake.log("chat")[0].body)
    assert "k50: Alice likes thing 49." in prompt and "k51:" not in prompt


# -- what is true now: the prompt's classes, and what the core does with the answer ------------------


def test_the_prompt_marks_the_assistants_turns_and_asks_for_corrections(openai_memory, fake):
    memory = openai_memory()
    fake.push_chat(answer())
    memory.conversation_end("s", [Message("Nice to meet you!", role="assistant", id="a1"),
                                  Message("Sorry, I meant Victoria, not Vancouver.", name="Maya", id="u1")],
                            user_id="maya")
    body = fake.log("chat")[-1].body
    assert "m1 Assistant (assistant): Nice to meet you!" in prompt_of(body)
    system = body["messages"][0]["content"]
    for rule in ("(assistant) are the assistant's words", "mistaken:", "scratch that", "small talk",
                 "an activity stopped", "a number that changed"):
        assert rule in system
    assert "mistaken" in body["response_format"]["json_schema"]["schema"]["required"]


def test_a_known_fact_the_user_corrects_is_taken_back_not_made_past(openai_memory, fake, clock):
    memory = openai_memory()
    fake.push_chat(answer(fact("Maya", "has_pet", "dog", content="Maya has a dog called Biscuit.")))
    memory.conversation_end("s1", [Message("I have a dog called Biscuit.", name="Maya", id="u1")], user_id="maya")
    clock.advance(days=3)
    fake.push_chat(lambda body: answer(fact("Maya", "has_pet", "cat", content="Maya has a cat called Biscuit."),
                                       mistaken=[known_ref(body, "dog")], contradicted=[known_ref(body, "dog")]))
    result = memory.conversation_end("s2", [Message("Biscuit is actually a cat, sorry.", name="Maya", id="u2")],
                                     user_id="maya")
    (dog,) = result.superseded
    (cat,) = result.added
    assert dog.valid_until == dog.valid_from and dog.superseded_by == cat.id  # never held: a correction
    assert [f.content for f in memory.get_context("What pet does Maya have?", user_id="maya")][:1] == [
        "Maya has a cat called Biscuit."]
    assert "dog" not in memory.context_block("What pet does Maya have?", user_id="maya")


def test_the_assistants_echo_never_brings_back_what_the_user_replaced(openai_memory, fake, clock):
    memory = openai_memory()
    fake.push_chat(answer(fact("Maya", "lives_in", "Paris")))
    memory.conversation_end("s1", [Message("I live in Paris.", name="Maya", id="u1")], user_id="maya")
    clock.advance(days=30)
    fake.push_chat(lambda body: answer(fact("Maya", "lives_in", "Berlin"), contradicted=[known_ref(body, "Paris")]))
    memory.conversation_end("s2", [Message("I moved to Berlin last week.", name="Maya", id="u2")], user_id="maya")
    clock.advance(days=30)
    # a model that takes the echo for a fact: the core still keeps Berlin
    fake.push_chat(answer(fact("Maya", "lives_in", "Paris", sources=["m1"]),
                          fact("Maya", "has_booking", "Nopa", content="Maya has a table booked at Nopa.",
                               sources=["m2"])))
    result = memory.conversation_end("s3", [
        Message("From what I remember, you live in Paris.", role="assistant", id="a1"),
        Message("I booked you a table at Nopa for Friday.", role="assistant", id="a2")], user_id="maya")
    assert [d.fact.object for d in result.discarded] == ["Paris"]
    assert "only the assistant said it" in result.discarded[0].reason
    assert [f.object for f in result.added] == ["Nopa"]  # hearsay that contradicts nothing is kept
    current = {f.object for f in memory.entity_history("Maya", user_id="maya") if f.is_current}
    assert "Berlin" in current and "Paris" not in current
