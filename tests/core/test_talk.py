"""The rules of what chat says about what is true now (zep_core.providers.talk), phrase by phrase.

Each class of talk.py gets several phrasings, and a near miss that must not be taken
for it: a rule that only knows one sentence fails here.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from zep_core import Message
from zep_core.providers.base import ExtractionContext
from zep_core.providers.rules import RuleExtractor
from zep_core.providers.talk import Cue, corrections, is_echo, is_reaction, is_small_talk

NOW = datetime(2026, 3, 2, 9, tzinfo=timezone.utc)


def extract(*turns: tuple[str, str]):
    messages = [Message(text, role="user" if who == "u" else "assistant", name="Maya" if who == "u" else None,
                        id=f"m{i}") for i, (who, text) in enumerate(turns)]
    return RuleExtractor().extract(messages, ExtractionContext("maya", "s", now=NOW))


# --- 1. small talk ---------------------------------------------------------------------------------


@pytest.mark.parametrize("sentence", [
    "Hi! Nice to meet you.", "Nice to meet you too, Maya!", "Good morning!", "Thanks so much, that was really helpful!",
    "Ok, bye for now.", "Got it, thanks.", "No worries at all!", "Haha thanks!", "See you tomorrow.",
    "Hey there, how's it going?", "Sounds good to me.", "You're welcome, happy to help.",
])
def test_greetings_thanks_and_farewells_are_small_talk(sentence):
    assert is_small_talk(sentence)


@pytest.mark.parametrize("sentence", [
    "Hi, I'm Maya.", "Thanks, the pasta was great.", "I just got a dog.", "Nice to meet you, I live in Oslo.",
    "Good morning, I start at Stripe today.",
])
def test_a_greeting_that_says_something_is_not_small_talk(sentence):
    assert not is_small_talk(sentence)


def test_a_conversation_of_small_talk_stores_nothing():
    found = extract(("u", "Hi! Nice to meet you."), ("a", "Nice to meet you too, Maya!"),
                    ("u", "Thanks, bye!"), ("a", "Take care!"))
    assert found.facts == ()


# --- 2./3. the assistant's words and its echo ----------------------------------------------------


@pytest.mark.parametrize("sentence", [
    "From what I remember, you live in Paris.", "You mentioned you work at Shopify.",
    "As you said, you study at McGill.",
    "You work at Acme, right?", "If I recall correctly, you have a dog.", "According to my notes, you are 31.",
    "- Maya lives in Madrid. (valid from 2026-03-02)", "FACTS (what is true now; dates say since when):",
    "Your team has 4 engineers.", "You told me your sister lives in Oslo.",
])
def test_the_assistant_telling_memory_back_is_an_echo(sentence):
    assert is_echo(sentence)


@pytest.mark.parametrize("sentence", [
    "You could try the museum on Sunday.", "Do you live in Paris?", "I recommend swimming twice a week.",
    "The Louvre opens at 9.", "Maybe you should ask your manager.",
])
def test_advice_questions_and_news_are_not_echoes(sentence):
    assert not is_echo(sentence)


def test_an_echo_by_name_needs_the_user_among_the_conversations_speakers():
    assert is_echo("Maya lives in Lyon, where it is sunny.", frozenset({"maya"}))
    assert not is_echo("Lyon is sunny today.", frozenset({"maya"}))


@pytest.mark.parametrize("sentence,heard", [
    ("Squash is fun!", {"squash"}), ("Oh, a cat then!", {"cat"}), ("Congrats on Biscuit!", {"biscuit"}),
    ("Paris is lovely.", {"paris"}),
])
def test_a_short_reaction_to_the_users_words_is_not_kept(sentence, heard):
    assert is_reaction(sentence, frozenset(heard))


@pytest.mark.parametrize("sentence", ["Try the Louvre at 9.", "The Musée d'Orsay has a Monet show this month."])
def test_what_the_assistant_adds_is_not_a_reaction(sentence):
    assert not is_reaction(sentence, frozenset({"paris"}))


def test_the_assistants_words_are_its_own_quotes_never_facts_about_the_user():
    found = extract(("u", "Any tips?"), ("a", "Since you live in Rome, I recommend the Vatican museums."),
                    ("a", "From what I remember, you work at Acme."))
    assert {f.subject for f in found.facts} == {"Assistant"}
    # what it assumes of the user ("since you live in Rome") is not its word either: only the advice is kept
    assert [f.object for f in found.facts] == ["I recommend the Vatican museums."]


# --- 4. corrections --------------------------------------------------------------------------------


@pytest.mark.parametrize("sentence,cue", [
    ("Sorry, I meant Victoria, not Vancouver.", Cue("Victoria", "Vancouver")),
    ("I said Austin but I meant Houston.", Cue("Houston", "Austin")),
    ("Oops, not Google but DeepMind.", Cue("DeepMind", "Google")),
    ("Actually, it's Sheffield, not Leeds.", Cue("Sheffield", "Leeds")),
    ("Typo: Microsoft, not Mircosoft.", Cue("Microsoft", "Mircosoft")),
    ("Make that 6.", Cue("6")),
    ("My bad, I meant Basel.", Cue("Basel")),
    ("Wait, no, Braga.", Cue("Braga")),
    ("Biscuit is actually a cat.", Cue("cat", about="Biscuit")),
    ("Forget what I said.", Cue(None)),
    ("I take that back.", Cue(None)),
    ("Scratch that, I'm a librarian.", Cue(None, rest="I'm a librarian.")),
])
def test_corrections_in_their_phrasings(sentence, cue):
    assert corrections(sentence) == [cue]


@pytest.mark.parametrize("sentence", [
    "I'm not a morning person but I like running.", "It's actually quite nice here.", "I said hello to Sam.",
    "No, I live in Paris.",
])
def test_sentences_that_correct_nothing(sentence):
    assert corrections(sentence) == []


def test_a_correction_in_the_same_conversation_names_the_message_it_corrects():
    found = extract(("u", "I'm moving to Vancouver next month."), ("a", "Vancouver is great in summer."),
                    ("u", "Sorry, I meant Victoria, not Vancouver."))
    fixes = {(c.speaker, c.right, c.wrong, c.in_messages) for c in found.corrections}
    # the user's statement, and the assistant's reply that repeated the mistake
    assert fixes == {("Maya", "Victoria", "Vancouver", ("m0",)), ("Assistant", None, "Vancouver", ("m1",))}
    assert not any("meant" in f.content for f in found.facts)  # the correction's sentence is no fact of its own


# --- 5./6. ended activities and changed numbers ---------------------------------------------------


@pytest.mark.parametrize("sentence,activity", [
    ("I stopped playing tennis.", "tennis"), ("I quit yoga.", "yoga"), ("I gave up the piano last year.", "piano"),
    ("I switched from football to basketball.", "football"), ("I dropped pilates.", "pilates"),
    ("I stopped swimming and took up climbing.", "swimming"),
])
def test_an_ended_activity_is_read_as_ended(sentence, activity):
    (ended,) = [f for f in extract(("u", sentence)).facts if f.predicate == "does" and f.object == activity]
    assert ended.valid_until is not None


@pytest.mark.parametrize("sentence,activity", [
    ("I play tennis every Sunday.", "tennis"), ("I've been swimming for years.", "swimming"),
    ("I took up climbing.", "climbing"), ("I switched to squash.", "squash"), ("I do yoga twice a week.", "yoga"),
])
def test_an_activity_that_goes_on(sentence, activity):
    (fact,) = [f for f in extract(("u", sentence)).facts if f.predicate == "does"]
    assert fact.object == activity and fact.valid_until is None


@pytest.mark.parametrize("sentence,content", [
    ("My team has 4 engineers.", "Maya's team has 4 engineers."),
    ("My team grew to 7 engineers.", "Maya's team has 7 engineers."),
    ("Our family now has five people.", "Maya's family has 5 people."),
    ("There are 12 people on my team.", "Maya's team has 12 people."),
    ("I now manage 8 people.", "Maya's team has 8 people."),
    ("My band shrank to 4 members.", "Maya's band has 4 members."),
])
def test_a_stated_size_is_one_single_valued_fact(sentence, content):
    sizes = [f for f in extract(("u", sentence)).facts if f.predicate == "size"]
    assert [f.content for f in sizes] == [content]


def test_i_have_a_number_alone_is_no_size():
    assert not [f for f in extract(("u", "I have 2 questions about my order.")).facts if f.predicate == "size"]


# --- 7. quotes beside their facts -------------------------------------------------------------------


def test_a_quote_that_says_nothing_more_than_its_facts_is_marked_covered():
    facts = extract(("u", "I live in Paris.")).facts
    assert [(f.predicate, f.covered) for f in facts] == [("lives_in", False), ("statement", True)]


def test_a_quote_that_says_more_is_kept():
    facts = extract(("u", "I live in Paris near the Canal Saint-Martin.")).facts
    assert [(f.predicate, f.covered) for f in facts] == [("lives_in", False), ("statement", False)]


def test_a_left_out_subject_is_read_again():
    facts = extract(("u", "I left Shopify and joined Stripe.")).facts
    work = sorted((f.object, f.valid_until is None) for f in facts if f.predicate == "works_at")
    assert work == [("Shopify", False), ("Stripe", True)]


@pytest.mark.parametrize("sentence", ["Sorry, I'm not sure.", "I meant to call you yesterday."])
def test_marker_words_that_correct_nothing(sentence):
    assert corrections(sentence) == []


def test_a_pasted_context_block_stores_nothing(memory):
    memory.conversation_end("s", [Message("I live in Madrid and I work at Acme.", name="Maya")], user_id="maya")
    memory.refresh_entities(user_id="maya")
    real = memory.context_block("Tell me about Maya", user_id="maya")
    assert "FACTS (" in real and "- Maya lives in Madrid." in real
    assert extract(("a", real)).facts == ()
    block = ("Here is what I know:\nFACTS (what is true now; dates say since when):\n"
             "- Maya lives in Madrid. (valid from 2026-03-02)\n- Maya works at Acme. (valid from 2026-03-02)\n"
             "ENTITIES:\n- Acme (organization): Acme employs Maya.\n- Maya (person): Maya lives in Madrid.")
    found = extract(("u", "What do you know about me?"), ("a", block))
    assert found.facts == ()
