"""Chat sessions as both adapters use them: the turn buffer, one end policy, the context helpers."""

from __future__ import annotations

import pytest
from zep_core import Message, ValidationError
from zep_core.sessions import EndPolicy, context_for, facts_for


def turn(memory, user_text, reply=None, *, session="chat"):
    memory.add_messages(session, [Message(user_text, name="Ana")], user_id="ana")
    if reply is not None:
        memory.add_messages(session, [Message(reply, role="assistant")], user_id="ana")


def test_every_n_turns_ends_after_the_nth_answer_not_at_the_nth_question(memory):
    policy = EndPolicy.of(2)
    turn(memory, "I live in Lisbon.", "Nice.")
    assert policy.after_turn(memory, "chat", "ana") is None  # one turn waiting
    turn(memory, "I work at Acme.")
    assert policy.after_turn(memory, "chat", "ana") is None  # the second question is not answered yet
    memory.add_messages("chat", [Message("Great!", role="assistant")], user_id="ana")
    result = policy.after_turn(memory, "chat", "ana")
    assert result is not None and result.status == "done"
    assert memory.unended_count("chat", user_id="ana") == 0
    assert {f.object for f in result.added} >= {"Lisbon", "Acme"}


def test_a_turn_counts_user_messages_not_stored_messages(memory):
    policy = EndPolicy.of(2)
    memory.add_messages("chat", [Message("Hi.", name="Ana"), Message("I live in Lisbon.", name="Ana"),
                                 Message("Hello!", role="assistant"), Message("(system note)", role="system")],
                        user_id="ana")
    assert memory.unended_count("chat", user_id="ana") == 4
    assert policy.after_turn(memory, "chat", "ana") is not None  # two user messages, answered


def test_clear_policy_and_explicit_policy(memory):
    turn(memory, "I live in Lisbon.", "Nice.")
    assert EndPolicy.of("explicit").before_clear(memory, "chat", "ana") is None
    assert memory.unended_count("chat", user_id="ana") == 2
    assert EndPolicy.of("clear").before_clear(memory, "chat", "ana").status == "done"
    assert memory.unended_count("chat", user_id="ana") == 0


def test_context_helpers_name_the_user_and_know_nothing_of_unknown_users(memory):
    turn(memory, "I live in Lisbon.", "Nice.")
    memory.end_session("chat", user_id="ana")
    facts = facts_for(memory, "Where does the user live?", user_id="ana", user_name="Ana")
    assert facts and facts[0].object == "Lisbon"
    assert "Lisbon" in context_for(memory, "Where do I live?", user_id="ana", user_name="Ana")
    assert facts_for(memory, "Where do I live?", user_id="nobody") == []
    assert context_for(memory, "   ", user_id="ana") == ""


@pytest.mark.parametrize("value", [0, True, "never"])
def test_bad_policies_are_refused(value):
    with pytest.raises(ValidationError):
        EndPolicy.of(value)
