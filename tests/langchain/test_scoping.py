"""One compiled agent, many threads and users: each run reads and writes only its own user's memory."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from zep_core import ValidationError

from zep_langchain import ZepContext, ZepMemoryMiddleware, create_memory_tools
from zep_langchain.testing import ScriptedChatModel

ALICE = {"thread": "thread-a", "context": ZepContext(user_id="alice", user_name="Alice"),
         "says": "I live in Paris.", "home": "Paris"}
BOB = {"thread": "thread-b", "context": {"user_id": "bob", "user_name": "Bob"},  # a dict works too
       "says": "I live in Rome.", "home": "Rome"}


def respond(messages):
    """The model's side: look a question up with search_memory, answer from the tool, acknowledge the rest."""
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return AIMessage(f"From memory: {last.text}")
    if isinstance(last, HumanMessage) and last.text.endswith("?"):
        return AIMessage("", tool_calls=[{"name": "search_memory", "args": {"query": last.text}, "id": "c1"}])
    return AIMessage("Noted.")


def build(memory, **middleware_options):
    model = ScriptedChatModel(replies=[respond] * 20)
    agent = create_agent(model, tools=create_memory_tools(memory), system_prompt="You are helpful.",
                         middleware=[ZepMemoryMiddleware(memory=memory, end_policy=1, **middleware_options)],
                         context_schema=ZepContext, checkpointer=InMemorySaver())
    return agent, model


def run(agent, who, text, mode):
    inputs = {"messages": [{"role": "user", "content": text}]}
    options = {"config": {"configurable": {"thread_id": who["thread"]}}, "context": who["context"]}
    if mode == "async":
        return asyncio.run(agent.ainvoke(inputs, **options))
    return agent.invoke(inputs, **options)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_two_threads_two_users_one_agent_nothing_crosses(memory, mode):
    agent, model = build(memory)
    run(agent, ALICE, ALICE["says"], mode)
    run(agent, BOB, BOB["says"], mode)
    answers = {}
    for who in (ALICE, BOB):
        calls_before = len(model.calls)
        result = run(agent, who, "Where do I live?", mode)
        tool_result = next(m for m in result["messages"] if isinstance(m, ToolMessage))
        answers[who["home"]] = (tool_result.text, result["messages"][-1].text, model.calls[calls_before:])

    for home, other in (("Paris", "Rome"), ("Rome", "Paris")):
        tool_text, answer, calls = answers[home]
        assert f"lives in {home}." in tool_text and other not in tool_text
        assert answer.startswith("From memory:") and other not in answer
        for call in calls:  # every model call of the run saw only this user's memory
            system = call[0].text
            assert f"lives in {home}." in system and other not in system
            assert other not in "\n".join(m.text for m in call)  # nor the other thread's turns

    alice_turns = [(m.role, m.name, m.content) for m in memory.get_messages("thread-a", user_id="alice")]
    assert alice_turns == [("user", "Alice", "I live in Paris."), ("assistant", None, "Noted."),
                           ("user", "Alice", "Where do I live?"),
                           ("assistant", None, answers["Paris"][1])]
    assert [m.content for m in memory.get_messages("thread-b", user_id="bob")][0] == "I live in Rome."
    assert memory.get_messages("thread-b", user_id="alice") == []  # Bob's thread never reached Alice
    assert memory.get_messages("thread-a", user_id="bob") == []
    alice_facts = {f.content for f in memory.facts("alice")}
    bob_facts = {f.content for f in memory.facts("bob")}
    assert "Alice lives in Paris." in alice_facts and not any("Rome" in f or "Bob" in f for f in alice_facts)
    assert "Bob lives in Rome." in bob_facts and not any("Paris" in f or "Alice" in f for f in bob_facts)


def test_a_run_without_a_user_is_refused_before_the_model_is_called(memory):
    agent, model = build(memory)
    with pytest.raises(ValidationError, match=r"no user.*context_schema=ZepContext.*user_id="):
        agent.invoke({"messages": [{"role": "user", "content": "Hi"}]},
                     config={"configurable": {"thread_id": "t1"}})
    assert model.calls == [] and memory.users() == []


def test_a_run_without_a_thread_is_refused_naming_the_thread_id(memory):
    model = ScriptedChatModel(replies=[AIMessage("Noted.")])
    agent = create_agent(model, middleware=[ZepMemoryMiddleware(memory=memory)], context_schema=ZepContext)
    with pytest.raises(ValidationError, match=r"no session.*thread_id.*session_id="):
        agent.invoke({"messages": [{"role": "user", "content": "Hi"}]}, context=ZepContext(user_id="alice"))
    assert model.calls == []


def test_a_fixed_user_refuses_a_run_for_another(memory):
    agent, model = build(memory, user_id="alice")
    with pytest.raises(ValidationError, match="built for user_id='alice' but the run context names user_id='bob'"):
        run(agent, BOB, "I live in Rome.", "sync")
    assert memory.users() == []


def test_fixed_values_still_work_without_a_checkpointer_or_context(memory):
    model = ScriptedChatModel(replies=[AIMessage("Noted.")])
    agent = create_agent(model, middleware=[
        ZepMemoryMiddleware(memory=memory, session_id="s1", user_id="alice", user_name="Alice")])
    agent.invoke({"messages": [{"role": "user", "content": "I live in Paris."}]})
    assert [m.name for m in memory.get_messages("s1", user_id="alice")] == ["Alice", None]


def test_a_tool_without_a_user_says_what_to_pass(memory):
    search = create_memory_tools(memory)[0]
    with pytest.raises(ValidationError, match="search_memory tool has no user"):
        search.invoke({"query": "Where do I live?"})


def test_the_model_cannot_choose_the_user_of_a_tool(memory):
    search = create_memory_tools(memory)[0]
    assert set(search.tool_call_schema.model_json_schema()["properties"]) == {"query", "limit", "as_of"}


def test_a_custom_context_schema_with_a_user_id_works(memory):
    @dataclass
    class AppContext:
        user_id: str
        plan: str = "free"

    model = ScriptedChatModel(replies=[AIMessage("Noted.")])
    agent = create_agent(model, middleware=[ZepMemoryMiddleware(memory=memory)], context_schema=AppContext,
                         checkpointer=InMemorySaver())
    agent.invoke({"messages": [{"role": "user", "content": "I like jazz."}]},
                 config={"configurable": {"thread_id": "t9"}}, context=AppContext(user_id="carol"))
    assert [m.content for m in memory.get_messages("t9", user_id="carol")] == ["I like jazz.", "Noted."]


def test_end_and_clear_outside_a_run_name_the_thread_and_user(memory):
    middleware = ZepMemoryMiddleware(memory=memory, end_policy="explicit")
    agent = create_agent(ScriptedChatModel(replies=[AIMessage("Noted.")]), middleware=[middleware],
                         context_schema=ZepContext, checkpointer=InMemorySaver())
    run(agent, ALICE, "I like jazz.", "sync")
    with pytest.raises(ValidationError, match="pass session_id and user_id="):
        middleware.end_conversation()
    assert middleware.end_conversation(session_id="thread-a", user_id="alice").status == "done"
    middleware.clear(session_id="thread-a", user_id="alice")
    assert memory.get_messages("thread-a", user_id="alice") == []
