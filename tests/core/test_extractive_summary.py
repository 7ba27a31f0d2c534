"""The offline summarizer: extractive episode summaries and fact-built entity summaries."""

from datetime import datetime, timedelta, timezone

import pytest
from zep_core.models import Entity, Fact, Message
from zep_core.providers.base import Summarizer
from zep_core.providers.extractive import (
    ExtractiveSummarizer,
    predicate_phrase,
    split_sentences,
    summarize_messages,
)

UTC = timezone.utc
T0 = datetime(2024, 1, 1, tzinfo=UTC)

EPISODE = [
    Message("Hi Bob!", name="Alice"),
    Message("I moved to Berlin in March for a new job at Siemens.", name="Alice"),
    Message("Wow, congrats! How is Berlin treating you?", name="Bob"),
    Message("Berlin is great. The Siemens office is close to my flat in Kreuzberg.", name="Alice"),
    Message("My daughter Mia starts school in Berlin in September, so we are busy.", name="Bob"),
    Message("ok", name="Alice"),
    Message("You are a helpful assistant.", role="system"),
]


def fact(predicate, obj, *, subject="Alice", days=0, until=None, superseded_by=None, content=None):
    return Fact(
        content=content or f"{subject} {predicate_phrase(predicate, obj)}.",
        subject=subject,
        predicate=predicate,
        object=obj,
        valid_from=T0 + timedelta(days=days),
        valid_until=until,
        superseded_by=superseded_by,
    )


# --- episode summaries ----------------------------------------------------------------------


def test_summary_prefixes_each_sentence_with_its_speaker():
    summary = summarize_messages(EPISODE)
    parts = [p for p in summary.split(" ") if p.endswith(":")]
    assert parts and set(parts) <= {"Alice:", "Bob:"}


def test_summary_keeps_the_conversation_order():
    summary = summarize_messages(EPISODE, max_sentences=5, max_chars=1000)
    positions = [summary.find(s) for s in ("I moved to Berlin", "The Siemens office", "My daughter Mia")]
    assert -1 not in positions
    assert positions == sorted(positions)


def test_summary_prefers_informative_sentences_over_pleasantries():
    summary = summarize_messages(EPISODE, max_sentences=2)
    assert "Hi Bob" not in summary
    assert "Alice: ok" not in summary


def test_summary_ignores_system_messages():
    assert "helpful assistant" not in summarize_messages(EPISODE, max_sentences=10, max_chars=2000)


@pytest.mark.parametrize(("max_sentences", "max_chars"), [(1, 400), (2, 120), (3, 400), (10, 60)])
def test_summary_is_bounded_in_sentences_and_characters(max_sentences, max_chars):
    summary = summarize_messages(EPISODE, max_sentences=max_sentences, max_chars=max_chars)
    assert 0 < len(summary) <= max_chars
    assert summary.count("Alice: ") + summary.count("Bob: ") <= max_sentences


def test_summary_is_deterministic():
    assert len({summarize_messages(EPISODE) for _ in range(5)}) == 1


def test_one_overlong_sentence_is_clipped_with_an_ellipsis():
    text = " ".join(f"word{i} festival" for i in range(100))
    summary = summarize_messages([Message(text, name="Alice")], max_chars=80)
    assert summary.startswith("Alice: word0")
    assert summary.endswith("…")
    assert len(summary) <= 80


def test_unnamed_user_is_shown_as_the_default_speaker():
    summary = summarize_messages([Message("I adopted a puppy named Rex last week.")], default_speaker="Dana")
    assert summary == "Dana: I adopted a puppy named Rex last week."


@pytest.mark.parametrize("messages", [[], [Message("ok", name="A"), Message("thanks!", name="B")]])
def test_nothing_informative_gives_an_empty_summary(messages):
    assert summarize_messages(messages) == ""


def test_split_sentences_splits_on_terminal_punctuation_and_line_breaks():
    assert split_sentences("Hi! I live in Rome. Do you?\nYes") == ["Hi!", "I live in Rome.", "Do you?", "Yes"]


# --- fact phrasing ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("predicate", "obj", "phrase"),
    [
        ("lives_in", "Berlin", "lives in Berlin"),
        ("works_as", "engineer", "works as an engineer"),
        ("has", "dog", "has a dog"),
        ("has", "two kids", "has two kids"),
        ("age", "34", "is 34 years old"),
        ("has_sister", "Anna", "has a sister, Anna"),
        ("plays_instrument", "piano", "plays instrument piano"),
    ],
)
def test_predicate_phrase_reads_as_english(predicate, obj, phrase):
    assert predicate_phrase(predicate, obj) == phrase


# --- entity summaries -------------------------------------------------------------------------


ALICE = Entity(name="Alice", entity_type="person", aliases=("Ali",))


def alice_facts():
    return [
        fact("lives_in", "Paris", days=0, until=T0 + timedelta(days=60), superseded_by="f2"),
        fact("lives_in", "Berlin", days=60),
        fact("works_at", "Acme", days=10),
        fact("likes", "jazz", days=20, subject="Ali"),
        fact("statement", "I moved to Berlin and I finally feel at home here after all this time.", days=61),
        fact("statement", "Jazz bars in Kreuzberg are the best.", days=62),
        fact("statement", "I also started learning German, it is hard.", days=63),
    ]


def test_entity_summary_states_current_facts_first():
    [summary] = ExtractiveSummarizer().summarize_entities([(ALICE, alice_facts())])
    assert summary.startswith("Alice lives in Berlin; works at Acme; likes jazz.")


def test_entity_summary_mentions_what_used_to_be_true_with_its_end_date():
    [summary] = ExtractiveSummarizer().summarize_entities([(ALICE, alice_facts())])
    assert "Previously: lives in Paris (until 2024-03-01)." in summary
    assert summary.index("Berlin") < summary.index("Paris")


def test_statements_contribute_at_most_two_short_snippets():
    [summary] = ExtractiveSummarizer(max_chars=1000).summarize_entities([(ALICE, alice_facts())])
    said = summary.split("Said: ", 1)[1]
    assert said.count('"') == 4
    assert "German" in said and "Jazz bars" in said
    assert "finally feel at home" not in said


def test_entity_summary_is_bounded():
    many = [fact("likes", f"thing number {i}", days=i) for i in range(100)]
    [summary] = ExtractiveSummarizer().summarize_entities([(ALICE, many)])
    assert 0 < len(summary) <= 300


def test_entity_summary_does_not_depend_on_fact_order():
    facts = alice_facts()
    summarizer = ExtractiveSummarizer()
    assert summarizer.summarize_entities([(ALICE, facts)]) == summarizer.summarize_entities([(ALICE, facts[::-1])])


def test_entity_that_is_only_an_object_is_summarized_from_related_facts():
    berlin = Entity(name="Berlin", entity_type="place")
    [summary] = ExtractiveSummarizer().summarize_entities([(berlin, [fact("lives_in", "Berlin")])])
    assert summary == "Related: Alice lives in Berlin."


def test_entity_without_facts_has_an_empty_summary():
    assert ExtractiveSummarizer().summarize_entities([(ALICE, [])]) == [""]


def test_one_summary_per_entity_in_order():
    bob = Entity(name="Bob")
    summaries = ExtractiveSummarizer().summarize_entities(
        [(bob, [fact("age", "40", subject="Bob")]), (ALICE, alice_facts())]
    )
    assert summaries[0] == "Bob is 40 years old."
    assert summaries[1].startswith("Alice ")


def test_summarizer_satisfies_the_summarizer_seam():
    assert isinstance(ExtractiveSummarizer(), Summarizer)
