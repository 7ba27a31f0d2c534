"""What the model says about known facts is honoured as it says it, whatever the subjects.

Through the real OpenAI client against the fake endpoint: a known fact the model lists in
``contradicted`` is retired even when the episode's new fact is about someone or something
else, or when the episode adds no fact at all (it then ends at the episode's time); one it
lists in ``mistaken`` is taken back (it never held).
"""

from __future__ import annotations

from datetime import datetime, timezone

from zep_core import Message

from tests.providers.conftest import answer, fact, known_ref

UTC = timezone.utc


def said(name, text, day):
    return [Message(text, name=name, id=f"{name}-{day}", timestamp=datetime(2024, 3, day, 9, tzinfo=UTC))]


def current(memory, user, name):
    return {f.content for f in memory.entity_history(name, user_id=user) if f.is_current}


def test_a_contradicted_fact_of_another_subject_is_retired_by_the_new_fact(openai_memory, fake):
    memory = openai_memory()
    fake.push_chat(answer(fact("Greg", "has_pet", "Miso", content="Greg has a cat named Miso.")))
    memory.conversation_end("s1", said("Greg", "I have a cat, Miso.", 1), user_id="greg")
    fake.push_chat(lambda body: answer(fact("Miso", "died_on", "2024-03-09", content="Miso died.", entity=False),
                                       contradicted=[known_ref(body, "Miso")]))
    result = memory.conversation_end("s2", said("Greg", "We had to put Miso down.", 10), user_id="greg")
    (gone,) = [f for f in result.superseded if f.predicate == "has_pet"]
    (died,) = result.added
    assert gone.superseded_by == died.id and gone.valid_until == died.valid_from
    assert "Greg has a cat named Miso." not in current(memory, "greg", "Greg")
    assert "Greg has a cat named Miso." not in [f.content for f in memory.get_context("Does Greg have a cat?",
                                                                                       user_id="greg")]
    history = [f.content for f in memory.entity_history("Greg", user_id="greg")]
    assert "Greg has a cat named Miso." in history  # history keeps it, ended


def test_a_relative_who_moved_retires_the_old_fact_under_a_new_subject(openai_memory, fake):
    memory = openai_memory()
    fake.push_chat(answer(fact("Ciara", "has_sister_in", "Cork", content="Ciara has a sister who lives in Cork.")))
    memory.conversation_end("s1", said("Ciara", "My sister lives in Cork.", 1), user_id="ciara")
    fake.push_chat(lambda body: answer(fact("Ciara's sister", "lives_in", "Galway"),
                                       contradicted=[known_ref(body, "Cork")]))
    result = memory.conversation_end("s2", said("Ciara", "My sister moved to Galway.", 12), user_id="ciara")
    assert [f.content for f in result.superseded] == ["Ciara has a sister who lives in Cork."]
    assert result.superseded[0].superseded_by == result.added[0].id
    context = [f.content for f in memory.get_context("Where does Ciara's sister live?", user_id="ciara")]
    assert "Ciara has a sister who lives in Cork." not in context and "Ciara's sister lives in Galway." in context


def test_a_contradicted_fact_nothing_replaces_ends_at_the_episodes_time(openai_memory, fake):
    memory = openai_memory()
    fake.push_chat(answer(fact("Greg", "has_pet", "Miso", content="Greg has a cat named Miso.")))
    memory.conversation_end("s1", said("Greg", "I have a cat, Miso.", 1), user_id="greg")
    fake.push_chat(lambda body: answer(contradicted=[known_ref(body, "Miso")]))
    result = memory.conversation_end("s2", said("Greg", "Miso is no longer with us.", 20), user_id="greg")
    (gone,) = result.superseded
    assert gone.valid_until == datetime(2024, 3, 20, 9, tzinfo=UTC) and gone.superseded_by is None
    assert current(memory, "greg", "Greg") == set()


def test_a_mistaken_fact_is_taken_back_whatever_the_new_facts_say(openai_memory, fake):
    memory = openai_memory()
    fake.push_chat(answer(fact("Greg", "works_at", "Initech")))
    memory.conversation_end("s1", said("Greg", "I work at Initech.", 1), user_id="greg")
    fake.push_chat(lambda body: answer(fact("Initech", "is_a", "former employer", entity=False),
                                       mistaken=[known_ref(body, "Initech")]))
    result = memory.conversation_end("s2", said("Greg", "Initech? I never worked there, I said that wrong.", 5),
                                     user_id="greg")
    (taken,) = [f for f in result.superseded if f.predicate == "works_at"]
    assert taken.valid_until == taken.valid_from  # never held
    assert "Greg works at Initech." not in current(memory, "greg", "Greg")
