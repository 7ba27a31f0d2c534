"""The offline rule extractor: canonical facts, statement facts, entities, summary."""

from dataclasses import replace
from datetime import datetime, timezone

import pytest
from zep_core.models import Fact, Message
from zep_core.providers.base import Extraction, ExtractionContext, Extractor
from zep_core.providers.rules import RuleExtractor, is_informative

UTC = timezone.utc
SAID_AT = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # a Monday
NOW = datetime(2024, 1, 1, tzinfo=UTC)  # the ingest time; only a fallback


@pytest.fixture
def context():
    return ExtractionContext(user_id="u1", session_id="s1", now=NOW, default_speaker="Dana")


def extract(context, *messages):
    """What the core stores of the extraction when the rules discard nothing: covered quotes left out."""
    return replace(extract_all(context, *messages), facts=tuple(
        f for f in extract_all(context, *messages).facts if not f.covered))


def extract_all(context, *messages):
    return RuleExtractor().extract(list(messages), context)


def said(text, name="Alice", role="user", id=None, timestamp=SAID_AT):
    return Message(text, role=role, name=name, id=id, timestamp=timestamp)


def canonical(extraction: Extraction):
    return [f for f in extraction.facts if f.predicate != "statement"]


def triples(extraction: Extraction):
    return {(f.subject, f.predicate, f.object) for f in canonical(extraction)}


def day(year, month, d):
    return datetime(year, month, d, tzinfo=UTC)


# --- canonical predicates ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I live in Berlin.", ("Alice", "lives_in", "Berlin")),
        ("I'm based in San Francisco, California.", ("Alice", "lives_in", "San Francisco")),
        ("My home is in Lisbon now.", ("Alice", "lives_in", "Lisbon")),
        ("I've been living in New York City for a while.", ("Alice", "lives_in", "New York City")),
        ("I relocated to Oslo.", ("Alice", "lives_in", "Oslo")),
        ("I moved from Chicago to Austin.", ("Alice", "lives_in", "Austin")),
        ("I'm originally from Brazil.", ("Alice", "is_from", "Brazil")),
        ("I'm into rock climbing these days.", ("Alice", "likes", "rock climbing")),
        ("I work at Google.", ("Alice", "works_at", "Google")),
        ("I work for the Red Cross.", ("Alice", "works_at", "Red Cross")),
        ("I joined Acme Corp as an engineer.", ("Alice", "works_at", "Acme Corp")),
        ("I got a job at the University of Michigan.", ("Alice", "works_at", "University of Michigan")),
        ("I work as a software engineer at Spotify.", ("Alice", "works_as", "software engineer")),
        ("I'm a nurse.", ("Alice", "works_as", "nurse")),
        ("I am a high school teacher.", ("Alice", "works_as", "high school teacher")),
        ("I study at MIT.", ("Alice", "studies_at", "MIT")),
        ("I'm a student at Stanford.", ("Alice", "studies_at", "Stanford")),
        ("I was born in Sweden.", ("Alice", "born_in", "Sweden")),
        ("I was born in 1985.", ("Alice", "birth_year", "1985")),
        ("I'm from Norway.", ("Alice", "is_from", "Norway")),
        ("I married Tom.", ("Alice", "married_to", "Tom")),
        ("I'm married to Sarah Jones.", ("Alice", "married_to", "Sarah Jones")),
        ("I love jazz.", ("Alice", "likes", "jazz")),
        ("I enjoy long walks.", ("Alice", "likes", "long walks")),
        ("I'm a big fan of Taylor Swift.", ("Alice", "likes", "Taylor Swift")),
        ("I love to paint with my kids.", ("Alice", "likes", "painting")),
        ("I hate mushrooms.", ("Alice", "dislikes", "mushrooms")),
        ("I can't stand traffic.", ("Alice", "dislikes", "traffic")),
        ("I don't like horror movies.", ("Alice", "dislikes", "horror movies")),
        ("I have a dog.", ("Alice", "has", "dog")),
        ("I've got two kids.", ("Alice", "has", "two kids")),
        ("I adopted a black cat.", ("Alice", "has", "black cat")),
        ("My name is Alicia.", ("Alice", "is_named", "Alicia")),
        ("Please call me Ali.", ("Alice", "is_named", "Ali")),
        ("I am 34.", ("Alice", "age", "34")),
        ("I'm 34 years old.", ("Alice", "age", "34")),
        ("I just turned 40!", ("Alice", "age", "40")),
    ],
)
def test_first_person_statement_becomes_a_canonical_fact_about_the_speaker(context, text, expected):
    assert expected in triples(extract(context, said(text)))


def test_lists_of_likes_become_one_fact_each(context):
    found = triples(extract(context, said("I love hiking, camping and fishing.")))
    assert {o for _, p, o in found if p == "likes"} == {"hiking", "camping", "fishing"}


def test_lists_of_possessions_become_one_fact_each(context):
    found = triples(extract(context, said("I have a dog and two cats.")))
    assert {o for _, p, o in found if p == "has"} == {"dog", "two cats"}


def test_moved_to_becomes_lives_in_for_the_speaker_from_the_time_of_the_move(context):
    [fact] = canonical(extract(context, said("I moved to Berlin two years ago.")))
    assert (fact.subject, fact.predicate, fact.object) == ("Alice", "lives_in", "Berlin")
    assert fact.valid_from == day(2021, 5, 8)
    assert fact.content == "Alice lives in Berlin."


def test_named_third_person_subject_gets_the_fact(context):
    found = triples(extract(context, said("Caroline lives in Boston.", name="Melanie")))
    assert found == {("Caroline", "lives_in", "Boston")}


def test_my_sister_named_yields_the_relation_and_her_own_fact(context):
    found = triples(extract(context, said("My sister Anna lives in Rome.")))
    assert found == {("Anna", "lives_in", "Rome"), ("Alice", "has_sister", "Anna")}


def test_my_husband_named_means_married_to(context):
    assert ("Alice", "married_to", "Tom") in triples(extract(context, said("My husband Tom is a chef.")))


def test_content_is_one_readable_sentence(context):
    contents = {f.content for f in canonical(extract(context, said("I have a dog. I work as a nurse.")))}
    assert contents == {"Alice has a dog.", "Alice works as a nurse."}


@pytest.mark.parametrize(
    ("text", "predicate", "is_entity", "object_type"),
    [
        ("I live in Berlin.", "lives_in", True, "place"),
        ("I work at Acme.", "works_at", True, "organization"),
        ("I married Tom.", "married_to", True, "person"),
        ("I love jazz.", "likes", True, "thing"),
        ("I'm a nurse.", "works_as", True, "profession"),
        ("I am 34.", "age", False, "thing"),
    ],
)
def test_objects_are_typed_and_marked_as_entities_or_values(context, text, predicate, is_entity, object_type):
    [fact] = [f for f in canonical(extract(context, said(text))) if f.predicate == predicate]
    assert fact.object_is_entity is is_entity
    assert fact.object_type == object_type


# --- speakers ---------------------------------------------------------------------------


def test_unnamed_user_is_the_default_speaker(context):
    found = triples(extract(context, Message("I live in Paris.", role="user")))
    assert found == {("Dana", "lives_in", "Paris")}


def test_assistant_without_a_name_speaks_as_the_assistant(context):
    out = extract(context, Message("I recommend the Louvre on a Wednesday evening.", role="assistant", id="m1"))
    assert [(f.subject, f.predicate) for f in out.facts] == [("Assistant", "statement")]
    assert out.facts[0].content == "Assistant: I recommend the Louvre on a Wednesday evening."


def test_assistant_turns_can_be_left_out(context):
    quiet = replace(context, assistant_speaker=None)
    assert extract(quiet, Message("I recommend the Louvre on a Wednesday evening.", role="assistant")).facts == ()


def test_named_assistant_in_a_multi_party_log_produces_facts_about_itself_only(context):
    out = extract(context, said("I live in Paris with my two cats.", name="Melanie", role="assistant"))
    assert ("Melanie", "lives_in", "Paris") in triples(out)
    assert any(f.predicate == "statement" and f.subject == "Melanie" for f in out.facts)
    out = extract(context, said("Maya works at Shopify. Ana lives in Rome.", name="Melanie", role="assistant"))
    assert not [f for f in out.facts if f.predicate != "statement"]  # what it says of others is only its words


@pytest.mark.parametrize("role", ["system", "tool"])
def test_system_and_tool_messages_produce_nothing(context, role):
    out = extract(context, Message("I live in Paris and work at Acme.", role=role, name="Ops"))
    assert out.facts == ()
    assert out.entities == ()


def test_second_person_statements_are_not_facts_about_anyone(context):
    assert triples(extract(context, said("You live in Paris, right."))) == set()


# --- precision ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "I don't live in Paris.",
        "I'm not married to him.",
        "I never lived in Rome.",
        "I do not have a dog.",
        "I'm not a nurse.",
    ],
)
def test_negated_sentences_produce_no_canonical_fact(context, text):
    assert triples(extract(context, said(text))) == set()


@pytest.mark.parametrize("text", ["I don't live in Paris anymore.", "I no longer work at Google."])
def test_a_state_said_to_be_over_is_an_ended_fact_never_a_current_one(context, text):
    [fact] = canonical(extract(context, said(text)))
    assert fact.valid_until == SAID_AT and fact.valid_from == SAID_AT


@pytest.mark.parametrize(
    "text",
    [
        "Do you live in Paris?",
        "If I moved to Rome, I would be happy.",
        "I wish I lived in Rome.",
        "I want to work at Google.",
        "I would like a dog.",
        "I'm creating a library for when I have kids.",
        "When I turned 10, dad signed me up.",
        "Sounds like a great plan, Jon!",
        "I love it when you do that.",
        "I love the color and texture.",
        "I'm 5 minutes away.",
        "I'm 100% sure.",
        "I joined Mel at the park.",
        "I have a lot of kids' books.",
        "Connecting with the things I love makes writing fun.",
        "i live in paris",
        "I'm a good dancer.",
        "I'm a former teacher.",
        "I have always liked turtles.",
        "I love holding them.",
        "I like to think I'm a good person.",
    ],
)
def test_questions_conditionals_and_idioms_produce_no_canonical_fact(context, text):
    assert triples(extract(context, said(text))) == set()


@pytest.mark.parametrize("text", ["I think I live in Berlin now.", "Maybe I'm a teacher.", "I probably love jazz."])
def test_hedged_statements_get_lower_confidence(context, text):
    [fact] = canonical(extract(context, said(text)))
    assert fact.confidence == 0.7


def test_plain_statements_get_high_confidence(context):
    [fact] = canonical(extract(context, said("I live in Berlin.")))
    assert fact.confidence == 0.9


# --- time ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I moved to Berlin yesterday.", day(2023, 5, 7)),
        ("I moved to Berlin last year.", day(2022, 1, 1)),
        ("Last month I moved to Berlin.", day(2023, 4, 1)),
        ("I moved to Berlin three weeks ago.", day(2023, 4, 17)),
        ("I've lived in Berlin since 2019.", day(2019, 1, 1)),
        ("I've lived in Berlin since May 2020.", day(2020, 5, 1)),
        ("I moved to Berlin in 2019.", day(2019, 1, 1)),
        ("I moved to Berlin on 8 May 2021.", day(2021, 5, 8)),
        ("I moved to Berlin on May 8, 2021.", day(2021, 5, 8)),
        ("I moved to Berlin on 2021-05-08.", day(2021, 5, 8)),
        ("I moved to Berlin last Friday.", day(2023, 5, 5)),
        ("I have lived in Berlin for three years.", day(2020, 5, 8)),
    ],
)
def test_stated_time_becomes_valid_from_read_against_the_message_time(context, text, expected):
    [fact] = canonical(extract(context, said(text)))
    assert fact.object == "Berlin"
    assert fact.valid_from == expected


def test_no_stated_time_leaves_valid_from_to_the_core(context):
    [fact] = canonical(extract(context, said("I live in Berlin.")))
    assert fact.valid_from is None


def test_message_without_timestamp_reads_relative_time_against_context_now(context):
    [fact] = canonical(extract(context, said("I moved to Berlin yesterday.", timestamp=None)))
    assert fact.valid_from == day(2023, 12, 31)


def test_each_fact_takes_the_time_nearest_to_it(context):
    out = extract(context, said("Last year I moved to Berlin and yesterday I got a puppy."))
    when = {f.predicate: f.valid_from for f in canonical(out)}
    assert when == {"lives_in": day(2022, 1, 1), "has": day(2023, 5, 7)}


def test_valid_from_is_timezone_aware_utc(context):
    [fact] = canonical(extract(context, said("I turned 30 last week.")))
    assert fact.valid_from.utcoffset().total_seconds() == 0
    assert fact.valid_from == day(2023, 5, 1)


# --- statement facts -----------------------------------------------------------------------


def test_informative_message_becomes_a_statement_fact_with_the_full_utterance(context):
    text = "I went to a LGBTQ support group yesterday and it was so powerful."
    [fact] = extract(context, said(text, name="Caroline", id="D1:3")).facts
    assert (fact.subject, fact.predicate, fact.object) == ("Caroline", "statement", text)
    assert fact.content == f"Caroline: {text}"
    assert fact.confidence == 0.6
    assert fact.object_is_entity is False
    assert fact.source_message_ids == ("D1:3",)


def test_a_quote_is_kept_beside_its_canonical_facts_only_when_it_says_more(context):
    out = extract(context, said("I moved to Berlin last year."))  # all of it is in "Alice lives in Berlin." (dated)
    assert [f.predicate for f in out.facts] == ["lives_in"]
    # the quote is still proposed, marked covered: stored only if the rules discard the fact it backs
    assert [(f.predicate, f.covered) for f in extract_all(context, said("I moved to Berlin last year.")).facts] == [
        ("lives_in", False), ("statement", True)]
    out = extract(context, said("I moved to Berlin last year for the techno scene."))
    assert [f.predicate for f in out.facts] == ["lives_in", "statement"]


@pytest.mark.parametrize(
    "text",
    [
        "ok thanks",
        "Thanks!",
        "haha",
        "lol",
        "sounds good",
        "bye",
        "you too",
        "hi",
        "Hello there!",
        "Thank you so much!",
        "Ok, sounds good to me",
        "Yeah, see you later!",
    ],
)
def test_pleasantries_are_not_statements(context, text):
    assert extract(context, said(text)).facts == ()
    assert not is_informative(text)


def test_statement_text_is_whitespace_collapsed_and_bounded(context):
    text = "I   went\n\nhiking  today. " + "We walked along the river for hours and hours. " * 20
    [fact] = extract(context, said(text)).facts
    assert fact.object.startswith("I went hiking today. We walked")
    assert len(fact.object) <= 500
    assert fact.content == f"Alice: {fact.object}"


# --- provenance, validity, entities --------------------------------------------------------


def test_message_ids_are_carried_into_source_message_ids(context):
    out = extract(context, said("I live in Berlin.", id="m1"), said("I have a dog named Rex.", id="m2"))
    by_object = {f.object: f.source_message_ids for f in canonical(out)}
    assert by_object == {"Berlin": ("m1",), "dog": ("m2",)}


def test_messages_without_ids_leave_source_message_ids_empty(context):
    out = extract(context, said("I live in Berlin."))
    assert all(f.source_message_ids == () for f in out.facts)


def test_same_fact_twice_in_an_episode_is_one_fact_citing_both_messages(context):
    out = extract(context, said("I live in Berlin.", id="m1"), said("Yes, I live in Berlin!", id="m2"))
    [fact] = [f for f in out.facts if f.predicate == "lives_in"]
    assert fact.source_message_ids == ("m1", "m2")


def test_every_fact_is_a_valid_record_with_confidence_in_range(context):
    out = extract(
        context,
        said("I think I live in Berlin and I love jazz.", id="a"),
        said("I'm 34 and I have a dog. My sister Anna works at Siemens.", name="Bob", id="b"),
        said("We had such a lovely dinner at the new place downtown.", id="c"),
    )
    assert out.facts
    for f in out.facts:
        assert 0.0 <= f.confidence <= 1.0
        Fact(
            content=f.content,
            subject=f.subject,
            predicate=f.predicate,
            object=f.object,
            confidence=f.confidence,
            valid_from=f.valid_from or SAID_AT,
        )


def test_entities_include_speakers_subjects_and_entity_objects_once(context):
    out = extract(
        context,
        said("I live in Berlin. My sister Anna lives in berlin too.", id="a"),
        said("I am 34 and I love jazz.", name="bob"),
        said("Nice, Bob!", name="Bob"),
    )
    names = {e.name.casefold(): e.entity_type for e in out.entities}
    assert names == {"alice": "person", "bob": "person", "berlin": "place", "anna": "person", "jazz": "thing"}
    assert len(out.entities) == len(names)


def test_extractor_satisfies_the_extractor_seam():
    extractor = RuleExtractor()
    assert isinstance(extractor, Extractor)
    assert extractor.needs_known_facts is False


# --- summary and speed --------------------------------------------------------------------------


def test_summary_is_deterministic_and_bounded(context):
    messages = [
        said("I moved to Berlin last year for a job at Siemens.", id="1"),
        said("Oh nice! How do you like the city so far?", name="Bob", id="2"),
        said("I love it, the parks and the museums are wonderful, and the food scene is great.", id="3"),
        said("I have been thinking about visiting Berlin next spring with my wife Clara.", name="Bob", id="4"),
    ]
    first = extract(context, *messages).summary
    assert first == extract(context, *messages).summary
    assert first and len(first) <= 400
    assert first.startswith(("Alice: ", "Bob: "))


def test_episode_of_only_pleasantries_has_no_summary(context):
    assert extract(context, said("hi"), said("ok thanks", name="Bob")).summary is None


@pytest.mark.parametrize("text", ["Where do I live now?", "What is my name?", "Do you remember my dog?"])
def test_short_questions_are_not_kept_as_statements(text):
    assert not is_informative(text)


def test_a_long_question_that_tells_something_is_kept():
    assert is_informative("Hey Mel, what do you think about the pottery class I signed up for?")


@pytest.mark.parametrize(("text", "quotes"), [
    ("I live in Paris and I work at Acme.", []),  # each clause is said by its fact
    ("Hi! I'm Alice. I live in Paris and I work at Acme.", []),
    ("I live in Rome, and I work at Acme with my friend Jo.", []),  # the friend is a fact of its own too
    ("I live in Rome, and I work at Acme with Jo from college.", ["I work at Acme with Jo from college."]),
    ("I live in Rome; my sister Ana works at Globex. We talked a lot.",
     ["my sister Ana works at Globex. We talked a lot."]),
    ("I live in Paris. It is lovely in spring.", ["I live in Paris. It is lovely in spring."]),  # one fact: whole
    ("We talked about the weather today and it was nice.", ["We talked about the weather today and it was nice."]),
])
def test_a_message_is_quoted_clause_by_clause_only_when_its_clauses_state_different_facts(context, text, quotes):
    """So a move retires the quote of one clause and keeps the other's current; a clause its fact says is not quoted."""
    found = [f.object for f in extract(context, said(text, id="m1")).facts if f.predicate == "statement"]
    assert found == quotes
