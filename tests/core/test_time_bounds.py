"""Stated time bounds and verb forms: what the rule extractor reads, and what memory then shows.

Sentences marked "LoCoMo" or "LongMemEval" are quoted from the dev conversations in
/work/shared/data (test data only).
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from zep_core import Message
from zep_core.models import Fact
from zep_core.providers.base import ExtractionContext
from zep_core.providers.rules import RuleExtractor
from zep_core.temporal import plan_updates

from tests.core.fakes import HashEmbedder

UTC = timezone.utc
SAID = datetime(2024, 5, 8, 10, 0, tzinfo=UTC)  # a Wednesday
CTX = ExtractionContext(user_id="u1", session_id="s1", now=datetime(2024, 6, 1, tzinfo=UTC))


def day(year, month, d=1):
    return datetime(year, month, d, tzinfo=UTC)


def canonical(text, name="Alice"):
    out = RuleExtractor().extract([Message(text, name=name, timestamp=SAID)], CTX)
    return {(f.subject, f.predicate, f.object): f for f in out.facts if f.predicate != "statement"}


# --- the table: sentence -> (subject, predicate, object) and its time bounds -----------------
# ("current", valid_from) — valid_from None means "the message time", left to the core;
# ("ended", valid_from, valid_until) — valid_from None means unknown: equal to valid_until.

ENDED = [
    ("I lived in Rome until 2020.", ("Alice", "lives_in", "Rome"), None, day(2020, 1)),
    ("I lived in Rome.", ("Alice", "lives_in", "Rome"), None, SAID),
    ("I lived in Rome in 2010.", ("Alice", "lives_in", "Rome"), day(2010, 1), SAID),
    ("I lived in Rome until last week.", ("Alice", "lives_in", "Rome"), None, day(2024, 4, 29)),
    ("I used to work at Initech.", ("Alice", "works_at", "Initech"), None, SAID),
    ("I no longer live in Paris.", ("Alice", "lives_in", "Paris"), None, SAID),
    ("I don't live in Paris anymore.", ("Alice", "lives_in", "Paris"), None, SAID),
    ("I no longer work at Google.", ("Alice", "works_at", "Google"), None, SAID),
    ("I quit my job at Acme.", ("Alice", "works_at", "Acme"), None, SAID),
    ("I left Google in 2021.", ("Alice", "works_at", "Google"), None, day(2021, 1)),
    ("I worked at Google from 2015 to 2019.", ("Alice", "works_at", "Google"), day(2015, 1), day(2019, 1)),
    ("I lived in Lyon between May 2018 and June 2020.", ("Alice", "lives_in", "Lyon"), day(2018, 5), day(2020, 6)),
    ("I've lived in Rome since 2010 until last year.", ("Alice", "lives_in", "Rome"), day(2010, 1), day(2023, 1)),
    ("I'm no longer a nurse.", ("Alice", "works_as", "nurse"), None, SAID),
    ("I was a teacher for ten years.", ("Alice", "works_as", "teacher"), None, SAID),
    ("I used to be a designer at Acme.", ("Alice", "works_at", "Acme"), None, SAID),
    ("I used to be a designer at Acme.", ("Alice", "works_as", "designer"), None, SAID),
    ("I moved out of Paris last year.", ("Alice", "lives_in", "Paris"), None, day(2023, 1)),
    ("I left London last year to move back home.", ("Alice", "lives_in", "London"), None, day(2023, 1)),
    ("I don't like jazz anymore.", ("Alice", "likes", "jazz"), None, SAID),
    ("Anna used to live in Oslo.", ("Anna", "lives_in", "Oslo"), None, SAID),
    ("Anna lived in Oslo until 2019.", ("Anna", "lives_in", "Oslo"), None, day(2019, 1)),
    ("Anna no longer works at Initech.", ("Anna", "works_at", "Initech"), None, SAID),
    # LoCoMo (conv-30)
    ("I used to have a dog back in Michigan with that name, but then I got allergic and we had to get rid of her.",
     ("Alice", "has", "dog"), None, SAID),
    # LongMemEval
    ("I used to enjoy drawing when I was younger, and it might be a great way to express myself creatively and relax.",
     ("Alice", "likes", "drawing"), None, SAID),
]

CURRENT = [
    ("I've lived in Berlin since March.", ("Alice", "lives_in", "Berlin"), day(2024, 3)),
    ("I have lived in Berlin since 2019.", ("Alice", "lives_in", "Berlin"), day(2019, 1)),
    ("I have worked at Acme for three years.", ("Alice", "works_at", "Acme"), day(2021, 5, 8)),
    ("I'm living in Rome until June.", ("Alice", "lives_in", "Rome"), None),  # a future end: it still holds
    ("I love jazz.", ("Alice", "likes", "jazz"), None),
    ("Hi, I'm Bob. I love jazz and I work at Initech.", ("Alice", "likes", "jazz"), None),
    ("I really enjoy hiking.", ("Alice", "likes", "hiking"), None),
    ("I'm into chess.", ("Alice", "likes", "chess"), None),
    ("Caroline loves pottery.", ("Caroline", "likes", "pottery"), None),
    ("I work at Acme as a designer.", ("Alice", "works_at", "Acme"), None),
    ("I work at Acme as a designer.", ("Alice", "works_as", "designer"), None),
    ("I'm a designer at Acme.", ("Alice", "works_as", "designer"), None),
    ("I'm a designer at Acme.", ("Alice", "works_at", "Acme"), None),
    ("I joined Acme Corp as an engineer.", ("Alice", "works_as", "engineer"), None),
    ("Anna works at Initech as a data analyst.", ("Anna", "works_as", "data analyst"), None),
    ("Anna is a nurse at Mercy Hospital.", ("Anna", "works_at", "Mercy Hospital"), None),
    # LongMemEval
    ("I've been working at NovaTech for about 4 years and 3 months now.",
     ("Alice", "works_at", "NovaTech"), day(2020, 2, 8)),
    ("By the way, I've been living in Harajuku for 3 months now, and I'm still discovering new hidden gems in the "
     "neighborhood.", ("Alice", "lives_in", "Harajuku"), day(2024, 2, 8)),
    ("I'm currently working as a Digital Marketing Specialist at TechSavvy Inc., and I'm looking to advance my "
     "career in the industry.", ("Alice", "works_as", "Digital Marketing Specialist"), None),
    ("I'm currently working as a Digital Marketing Specialist at TechSavvy Inc., and I'm looking to advance my "
     "career in the industry.", ("Alice", "works_at", "TechSavvy Inc"), None),
    ("I'm really into indie and alternative rock right now, so Arctic Monkeys and The Neighbourhood sound great.",
     ("Alice", "likes", "alternative rock"), None),
    ("I'm really into historical fiction and stories with strong female leads, so any suggestions would be great!",
     ("Alice", "likes", "historical fiction"), None),
]

DENIED = [
    "I don't live in Paris.",
    "I do not work at Acme.",
    "I never worked at Google.",
    "I'm not a designer at Acme.",
    "I do not love jazz.",
    "I didn't quit my job at Acme.",
    "I want to quit my job at Acme.",
    "If I left Google, I would be sad.",
    "I be a nurse.",
    "I worked at Acme yesterday.",  # an event: it says nothing about whether Alice still works there
]


@pytest.mark.parametrize(("text", "triple", "valid_from", "valid_until"), ENDED)
def test_a_stated_end_becomes_valid_until_and_the_fact_is_not_current(text, triple, valid_from, valid_until):
    found = canonical(text)
    assert triple in found, sorted(found)
    fact = found[triple]
    assert fact.valid_until == valid_until
    assert fact.valid_from == (valid_from or valid_until)
    assert fact.content.startswith(f"{triple[0]} used to ")


@pytest.mark.parametrize(("text", "triple", "valid_from"), CURRENT)
def test_current_verb_forms_and_stated_starts(text, triple, valid_from):
    found = canonical(text)
    assert triple in found, sorted(found)
    assert found[triple].valid_until is None
    assert found[triple].valid_from == valid_from


@pytest.mark.parametrize("text", DENIED)
def test_negations_and_wishes_are_not_facts(text):
    assert canonical(text) == {}


def test_each_clause_keeps_its_own_bounds():
    found = canonical("I used to live in Paris but now I live in Berlin.")
    assert found[("Alice", "lives_in", "Paris")].valid_until == SAID
    assert found[("Alice", "lives_in", "Berlin")].valid_until is None


def test_a_start_stated_after_the_end_belongs_to_another_clause():
    fact = canonical("I lived in Rome until 2020 and then in 2021 I got a dog.")[("Alice", "lives_in", "Rome")]
    assert (fact.valid_from, fact.valid_until) == (day(2020, 1), day(2020, 1))


def test_every_extracted_fact_is_a_valid_record():
    for text, *_ in ENDED + CURRENT:
        for f in canonical(text).values():
            Fact(content=f.content, subject=f.subject, predicate=f.predicate, object=f.object,
                 valid_from=f.valid_from or SAID, valid_until=f.valid_until)


# --- the update rules: a stated end closes the current fact -------------------------------


def _fact(obj, when, **kw):
    return Fact(content=f"Alice lives in {obj}.", subject="Alice", predicate="lives_in", object=obj,
                valid_from=when, **kw)


def test_a_stated_end_closes_the_same_current_fact_instead_of_reinforcing_it():
    paris = _fact("Paris", day(2020, 1))
    ended = _fact("Paris", day(2024, 5), valid_until=day(2024, 5))
    plan = plan_updates([paris], [ended], single_valued={"lives_in"}, now=SAID)
    assert plan.reinforced == () and plan.added == ()
    [closed] = plan.superseded
    assert closed.id == paris.id and closed.valid_until == day(2024, 5) and not closed.is_current


def test_an_end_before_the_current_fact_began_is_an_earlier_stint_kept_in_history():
    paris = _fact("Paris", day(2022, 1))
    earlier = _fact("Paris", day(2015, 1), valid_until=day(2019, 1))
    plan = plan_updates([paris], [earlier], single_valued={"lives_in"}, now=SAID)
    assert plan.superseded == () and [f.id for f in plan.added] == [earlier.id]


# --- end to end: conversation_end, then get_context and entity_history ---------------------


@pytest.fixture
def memory(make_memory):
    return make_memory(embedder=HashEmbedder())  # the offline rule extractor, a fast embedder


def _say(memory, text, when, episode):
    return memory.conversation_end("s1", [Message(text, name="Alice", timestamp=when)], user_id="alice",
                                   episode_id=episode)


def _canonical_in(facts, predicate, obj):
    return [f for f in facts if f.predicate == predicate and f.object == obj]


def test_lived_in_rome_until_2020_is_history_not_current(memory):
    _say(memory, "I lived in Rome until 2020.", SAID, "e1")
    history = _canonical_in(memory.entity_history("Rome", user_id="alice"), "lives_in", "Rome")
    assert [(f.valid_until, f.is_current) for f in history] == [(day(2020, 1), False)]
    context = memory.get_context("Where does Alice live? Rome?", user_id="alice")
    assert _canonical_in(context, "lives_in", "Rome") == []
    assert all(f.is_current for f in context)


def test_since_2019_gives_valid_from_2019_and_stays_current(memory):
    _say(memory, "I have lived in Berlin since 2019.", SAID, "e1")
    [fact] = _canonical_in(memory.entity_history("Berlin", user_id="alice"), "lives_in", "Berlin")
    assert fact.valid_from == day(2019, 1) and fact.is_current
    context = memory.get_context("Where does Alice live? Berlin?", user_id="alice")
    assert [f.valid_from for f in _canonical_in(context, "lives_in", "Berlin")] == [day(2019, 1)]


def test_no_longer_ends_what_an_earlier_conversation_said(memory):
    _say(memory, "I live in Paris.", day(2023, 1, 10), "e1")
    result = _say(memory, "I no longer live in Paris.", SAID, "e2")
    assert [f.object for f in result.superseded if f.predicate == "lives_in"] == ["Paris"]
    [paris] = _canonical_in(memory.entity_history("Paris", user_id="alice"), "lives_in", "Paris")
    assert (paris.valid_from, paris.valid_until) == (day(2023, 1, 10), SAID)
    context = memory.get_context("Where does Alice live? Paris?", user_id="alice")
    assert _canonical_in(context, "lives_in", "Paris") == []
    assert not any(f.object == "I live in Paris." for f in context)  # its quote retired with it


def test_quitting_ends_the_job_and_the_role_kept_with_it(memory):
    _say(memory, "I work at Acme as a designer.", day(2023, 1, 10), "e1")
    current = {(f.predicate, f.object) for f in memory.entity_history("Alice", user_id="alice") if f.is_current}
    assert {("works_at", "Acme"), ("works_as", "designer")} <= current
    _say(memory, "I quit my job at Acme.", SAID, "e2")
    [acme] = _canonical_in(memory.entity_history("Acme", user_id="alice"), "works_at", "Acme")
    assert acme.valid_until == SAID and not acme.is_current
