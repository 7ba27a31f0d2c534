"""A question about what the assistant said reaches the assistant's turns; one about the user is not flooded by them."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from zep_core import Message
from zep_core.resolve import asks_what_the_assistant_said

T0 = datetime(2026, 1, 5, 9, tzinfo=timezone.utc)


@pytest.mark.parametrize("question", [
    "What did you recommend for dinner in Lisbon?", "Can you remind me of the restaurant you suggested?",
    "In our previous chat you told me about a restaurant. Which one was it?",
    "What was the place we talked about for dinner?", "Have you mentioned a seafood place to me?",
])
def test_questions_about_the_assistants_words(question):
    assert asks_what_the_assistant_said(question)


@pytest.mark.parametrize("question", [
    "Can you suggest a restaurant?", "Where do I live?", "What do I like to eat?", "Could you recommend a book?",
])
def test_questions_that_are_not_about_its_words(question):
    assert not asks_what_the_assistant_said(question)


@pytest.fixture
def memory_with_a_recommendation(memory):
    """Maya's many statements about food, and one reply of the assistant naming a restaurant."""
    turns = [("I recommend Lisbon to all my friends for a city trip.", "user"),
             ("My favourite dinner is my mum's seafood rice.", "user"),
             ("Ana asked me to recommend a hotel in Lisbon.", "user"),
             ("In Lisbon, the best dinner is at Cervejaria Ramiro, famous for its seafood.", "assistant"),
             ("I would recommend the Lisbon tram to anyone visiting.", "user"),
             ("My sister wants me to recommend a dinner place in Lisbon.", "user"),
             ("I recommend the Lisbon aquarium for families.", "user")]
    for n, (text, role) in enumerate(turns):
        memory.conversation_end(f"s{n}", [Message(text, role=role, name="Maya" if role == "user" else None,
                                                  timestamp=T0 + timedelta(days=n))], user_id="maya")
    return memory


def test_what_the_assistant_said_ranks_first_for_a_question_about_it(memory_with_a_recommendation):
    facts = memory_with_a_recommendation.get_context("What did you recommend to me for dinner in Lisbon?",
                                                     user_id="maya", limit=3)
    assert "Cervejaria Ramiro" in facts[0].content, [f.content for f in facts]


def test_a_question_about_the_user_still_finds_the_users_words_first(memory_with_a_recommendation):
    facts = memory_with_a_recommendation.get_context("What is my favourite dinner?", user_id="maya", limit=3)
    assert "seafood rice" in facts[0].content


def test_the_assistants_facts_weigh_as_the_askers_when_asked_what_it_said(memory_with_a_recommendation):
    def score(question):
        facts = memory_with_a_recommendation.get_context(question, user_id="maya")
        return next(f.score for f in facts if "Cervejaria Ramiro" in f.content)

    # the same words; only the first asks what the assistant said (the second is a new request)
    assert score("What did you recommend to me for dinner in Lisbon?") > score(
        "Can you recommend to me a dinner in Lisbon?")
