"""Chat sessions as both adapters use them: the turn buffer, one end policy, the context helpers."""

from __future__ import annotations

from datetime import timedelta

import pytest
from zep_core import Memory, Message, ValidationError
from zep_core.sessions import DEFAULT_EVERY_N_TURNS, DEFAULT_IDLE_AFTER, EndPolicy, check_memory, context_for, facts_for


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


@pytest.mark.parametrize("value, says", [(0, "every_n_turns must be"), (True, "end_policy must be"),
                                         ("never", "end_policy must be"), (None, "end_policy must be")])
def test_bad_policies_are_refused(value, says):
    with pytest.raises(ValidationError, match=says):
        EndPolicy.of(value)


@pytest.mark.parametrize("fields, named", [({"idle_after": timedelta(0)}, "idle_after"),
                                           ({"idle_after": 60}, "idle_after"), ({"on_clear": "yes"}, "on_clear"),
                                           ({"every_n_turns": 2.5}, "every_n_turns")])
def test_bad_policy_fields_are_refused(fields, named):
    with pytest.raises(ValidationError, match=named):
        EndPolicy(**fields)


def test_the_default_learns_by_itself_and_the_names_mean_what_they_say():
    assert EndPolicy() == EndPolicy.of("auto") == EndPolicy(on_clear=True, every_n_turns=DEFAULT_EVERY_N_TURNS,
                                                            idle_after=DEFAULT_IDLE_AFTER)
    assert (DEFAULT_EVERY_N_TURNS, DEFAULT_IDLE_AFTER) == (10, timedelta(minutes=30))
    assert EndPolicy.of("clear") == EndPolicy(on_clear=True, every_n_turns=None, idle_after=None)
    assert EndPolicy.of("explicit") == EndPolicy(on_clear=False, every_n_turns=None, idle_after=None)
    assert EndPolicy.of(4) == EndPolicy(every_n_turns=4)


def test_by_default_a_long_session_ends_every_ten_answered_turns(memory):
    policy = EndPolicy()
    for i in range(9):
        policy.add_turns(memory, "chat", "ana", [Message(f"Question {i}?", name="Ana")])
        assert policy.add_turns(memory, "chat", "ana", [Message(f"Answer {i}.", role="assistant")]) == []
    policy.add_turns(memory, "chat", "ana", [Message("I live in Lisbon.", name="Ana")])
    [result] = policy.add_turns(memory, "chat", "ana", [Message("Nice.", role="assistant")])

    assert "Lisbon" in {f.object for f in result.added}
    assert memory.unended_count("chat", user_id="ana") == 0


def test_a_turn_after_an_idle_gap_ends_the_turns_before_it(memory, clock):
    policy = EndPolicy()
    policy.add_turns(memory, "chat", "ana", [Message("I live in Lisbon.", name="Ana"),
                                             Message("Nice.", role="assistant")])
    clock.advance(minutes=29)
    assert policy.add_turns(memory, "chat", "ana", [Message("I work at Acme.", name="Ana")]) == []  # no gap yet
    clock.advance(minutes=31)

    [result] = policy.add_turns(memory, "chat", "ana", [Message("Hello again.", name="Ana")])

    assert {f.object for f in result.added} >= {"Lisbon", "Acme"}
    assert [m.content for m in memory.get_messages("chat", user_id="ana")][-1] == "Hello again."
    assert memory.unended_count("chat", user_id="ana") == 1  # the new turn starts the next conversation


def test_explicit_and_clear_policies_never_end_by_themselves(memory, clock):
    for name in ("explicit", "clear"):
        policy = EndPolicy.of(name)
        for i in range(12):
            policy.add_turns(memory, name, "ana", [Message(f"I like sport number {i}.", name="Ana"),
                                                   Message("Ok.", role="assistant")])
            clock.advance(hours=1)
        assert memory.unended_count(name, user_id="ana") == 24


def test_tool_rows_are_kept_but_never_learned_from(memory):
    memory.add_messages("chat", [Message("Where should I move?", name="Ana"),
                                 Message("search(city guides)", role="tool"),
                                 Message("Ana lives in Madrid.", role="tool"),
                                 Message("I live in Lisbon.", name="Ana"), Message("Nice.", role="assistant")],
                        user_id="ana")

    result = memory.end_session("chat", user_id="ana")

    assert {f.object for f in result.added if f.predicate == "lives_in"} == {"Lisbon"}
    episode = memory.get_episode(result.episode_id)
    assert [m.role for m in episode.messages] == ["user", "user", "assistant"]
    assert len(memory.get_messages("chat", user_id="ana")) == 5  # the history keeps them


def test_a_session_of_tool_rows_only_has_nothing_to_learn(memory):
    memory.add_messages("chat", [Message("lookup()", role="tool")], user_id="ana")
    assert memory.end_session("chat", user_id="ana") is None


def test_n_turns_do_not_end_while_a_tool_is_still_at_work(memory):
    policy = EndPolicy.of(1)
    policy.add_turns(memory, "chat", "ana", [Message("Weather in Lisbon?", name="Ana")])
    assert policy.add_turns(memory, "chat", "ana", [Message("weather(Lisbon)", role="tool")]) == []
    assert len(policy.add_turns(memory, "chat", "ana", [Message("Sunny.", role="assistant")])) == 1


class LikeMemory:
    """Memory's methods and nothing behind them: what a RemoteMemory looks like to an adapter."""

    @property
    def config(self):
        raise AssertionError("check_memory must not read config (a RemoteMemory would call its server)")


for _name in ("add_messages", "get_messages", "unended_count", "clear_messages", "end_session", "get_context",
              "context_block", "has_user", "entity_history", "related_entities", "now"):
    setattr(LikeMemory, _name, lambda self, *a, **k: None)


def test_check_memory_takes_anything_with_memorys_methods(memory):
    assert check_memory(memory) is memory and isinstance(memory, Memory)
    duck = LikeMemory()
    assert check_memory(duck) is duck


@pytest.mark.parametrize("value, says", [("./data", "got str: open one with"), (object(), "got object")])
def test_check_memory_refuses_other_things_clearly(value, says):
    with pytest.raises(ValidationError, match=f"memory must be an open zep_core.Memory .*{says}"):
        check_memory(value)


def test_check_memory_names_what_a_near_miss_lacks():
    class Half(LikeMemory):
        get_context = None

    with pytest.raises(ValidationError, match="it has no get_context"):
        check_memory(Half(), "the retriever's memory")


# -- sessions left waiting: the memory ends them -------------------------------------------------


def knows(memory, text, user="ana"):
    return text in memory.context_block(f"What about {text}?", user_id=user)


def test_a_new_session_of_the_same_user_ends_the_one_left_waiting(memory):
    turn(memory, "I adopted a cat called Miso.", "Lovely!", session="monday")
    assert memory.unended_count("monday", user_id="ana") == 2 and not knows(memory, "Miso")
    turn(memory, "Any tips for sleeping better?", session="tuesday")  # she left Monday's thread
    assert memory.unended_count("monday", user_id="ana") == 0
    assert knows(memory, "Miso")
    assert memory.unended_count("tuesday", user_id="ana") == 1  # the new thread goes on waiting
    turn(memory, "I sleep badly.", session="tuesday")  # a second turn in it ends nothing
    assert memory.unended_count("tuesday", user_id="ana") == 2


def test_a_new_session_ends_only_its_own_users_sessions(memory):
    memory.add_messages("chat", [Message("I live in Porto.", name="Bea")], user_id="bea")
    turn(memory, "Hello there, I am new here.", session="first")
    assert memory.unended_count("chat", user_id="bea") == 1


def test_tool_rows_in_a_new_session_are_not_a_new_conversation(memory):
    turn(memory, "I adopted a cat called Miso.", session="monday")
    memory.add_messages("store-log", [Message("{}", role="tool", name="zep-store")], user_id="ana")
    assert memory.unended_count("monday", user_id="ana") == 1


def test_maintain_ends_the_sessions_idle_long_enough(memory, clock):
    turn(memory, "I adopted a cat called Miso.", "Lovely!", session="monday")
    clock.advance(minutes=10)
    report = memory.maintain()
    assert report.sessions_ended == 0 and memory.unended_count("monday", user_id="ana") == 2  # not idle yet
    clock.advance(minutes=25)  # 35 minutes since her last turn, over session_idle_after's 30
    assert memory.maintain().sessions_ended == 1
    assert memory.unended_count("monday", user_id="ana") == 0 and knows(memory, "Miso")


def test_closing_the_memory_learns_from_every_session_left_waiting(make_memory, tmp_path):
    data = tmp_path / "data"
    memory = make_memory(data)
    turn(memory, "I adopted a cat called Miso.", session="short")
    memory.add_messages("other", [Message("I live in Porto.", name="Bea")], user_id="bea")
    memory.close()
    again = make_memory(data)
    assert knows(again, "Miso") and knows(again, "Porto", user="bea")
    assert again.unended_count("short", user_id="ana") == 0


def test_with_end_left_sessions_off_the_turns_wait_for_an_explicit_end(make_memory, tmp_path, clock):
    data = tmp_path / "data"
    memory = make_memory(data, end_left_sessions=False)
    turn(memory, "I adopted a cat called Miso.", session="monday")
    turn(memory, "Any tips for sleeping better?", session="tuesday")
    clock.advance(hours=2)
    assert memory.maintain().sessions_ended == 0
    memory.close()
    again = make_memory(data, end_left_sessions=False)
    assert again.unended_count("monday", user_id="ana") == 1 and not knows(again, "Miso")
    assert again.end_session("monday", user_id="ana").status == "done" and knows(again, "Miso")
