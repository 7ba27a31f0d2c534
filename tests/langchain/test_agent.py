"""ZepMemoryMiddleware with create_agent: a user moves, and the agent's prompt follows."""

from __future__ import annotations

import re

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from zep_langchain import ZepMemoryMiddleware, create_memory_tools
from zep_langchain.testing import ScriptedChatModel

HISTORY_CALL = AIMessage("", tool_calls=[{"name": "entity_history", "args": {"entity_name": "Alice"}, "id": "call-1"}])


def build(memory, session_id, replies, **options):
    model = ScriptedChatModel(replies=replies)
    middleware = ZepMemoryMiddleware(memory=memory, session_id=session_id, user_id="alice", user_name="Alice",
                                     **options)
    agent = create_agent(model, tools=create_memory_tools(memory, user_id="alice", user_name="Alice"),
                         system_prompt="You are a helpful assistant.", middleware=[middleware])
    return agent, model, middleware


def ask(text: str) -> dict:
    return {"messages": [{"role": "user", "content": text}]}


def dated(text: str) -> set[str]:
    return set(re.findall(r"\d{4}-\d{2}-\d{2}", text))


def check_story(models, result, memory):
    """What the three sessions must show, however they were run."""
    first, second, third = models
    assert first.system_prompts() == ["You are a helpful assistant."]  # a new user: nothing to add, no error
    assert "Alice lives in Paris." in second.system_prompts()[0]  # session 2 starts from session 1
    assert len(third.calls) == 2
    for prompt in third.system_prompts():
        assert prompt.startswith("You are a helpful assistant.")
        assert "Alice lives in Berlin. (valid from 2024-03-01)" in prompt
        assert "Paris" not in prompt
    tool_result = next(m for m in result["messages"] if isinstance(m, ToolMessage))
    assert "Alice lives in Paris. (valid 2024-01-01 to 2024-03-01; superseded)" in tool_result.content
    assert "Alice lives in Berlin. (valid 2024-03-01 to now; current)" in tool_result.content
    assert {"2024-01-01", "2024-03-01"} <= dated(tool_result.content)
    assert result["messages"][-1].content == "You live in Berlin; before that you lived in Paris."
    saved = memory.get_messages("s3", user_id="alice")
    assert [(m.role, m.content) for m in saved] == [
        ("user", "Where do I live now?"), ("assistant", "You live in Berlin; before that you lived in Paris.")]


def test_agent_sees_the_move_and_the_history_through_the_tool(memory, clock):
    agent1, model1, _ = build(memory, "s1", [AIMessage("Noted.")], end_policy=1)
    agent1.invoke(ask("I live in Paris."))
    clock.advance(days=60)
    agent2, model2, _ = build(memory, "s2", [AIMessage("Congratulations!")], end_policy=1)
    agent2.invoke(ask("I moved to Berlin."))
    clock.advance(days=1)
    agent3, model3, middleware = build(
        memory, "s3", [HISTORY_CALL, AIMessage("You live in Berlin; before that you lived in Paris.")])
    result = agent3.invoke(ask("Where do I live now?"))
    check_story((model1, model2, model3), result, memory)
    assert "Alice lives in Berlin." in middleware.last_context


async def test_agent_sees_the_move_and_the_history_through_the_tool_async(memory, clock):
    agent1, model1, _ = build(memory, "s1", [AIMessage("Noted.")], end_policy=1)
    await agent1.ainvoke(ask("I live in Paris."))
    clock.advance(days=60)
    agent2, model2, _ = build(memory, "s2", [AIMessage("Congratulations!")], end_policy=1)
    await agent2.ainvoke(ask("I moved to Berlin."))
    clock.advance(days=1)
    agent3, model3, _ = build(
        memory, "s3", [HISTORY_CALL, AIMessage("You live in Berlin; before that you lived in Paris.")])
    result = await agent3.ainvoke(ask("Where do I live now?"))
    check_story((model1, model2, model3), result, memory)


def test_default_policy_learns_on_clear_and_explicit_end(memory, clock):
    agent, _, middleware = build(memory, "s1", [AIMessage("Noted."), AIMessage("Nice.")])
    agent.invoke(ask("I live in Paris."))
    assert memory.unended_count("s1", user_id="alice") == 2  # stored, not yet learned
    assert middleware.end_conversation().status == "done"
    agent.invoke(ask("I like jazz."))
    middleware.clear()
    assert memory.get_messages("s1", user_id="alice") == []
    facts = [f.content for f in memory.get_context("Alice", user_id="alice")]
    assert "Alice lives in Paris." in facts and "Alice likes jazz." in facts


def test_an_existing_system_message_keeps_its_content_blocks(memory):
    agent, _, middleware = build(memory, "s1", [AIMessage("Noted.")], end_policy=1)
    agent.invoke(ask("I live in Paris."))
    model = ScriptedChatModel(replies=[AIMessage("Paris.")])
    blocks = SystemMessage(content=[{"type": "text", "text": "Rules first."}])
    agent = create_agent(model, system_prompt=blocks, middleware=[
        ZepMemoryMiddleware(memory=memory, session_id="s2", user_id="alice", user_name="Alice")])
    agent.invoke(ask("Where do I live?"))
    system = model.calls[0][0]
    assert system.content[0] == {"type": "text", "text": "Rules first."}
    assert "Alice lives in Paris." in system.content[1]["text"]


def test_without_a_system_prompt_the_context_becomes_one(memory):
    agent, _, _ = build(memory, "s1", [AIMessage("Noted.")], end_policy=1)
    agent.invoke(ask("I live in Paris."))
    model = ScriptedChatModel(replies=[AIMessage("Paris.")])
    agent = create_agent(model, middleware=[
        ZepMemoryMiddleware(memory=memory, session_id="s2", user_id="alice", user_name="Alice")])
    agent.invoke(ask("Where do I live?"))
    assert isinstance(model.calls[0][0], SystemMessage)
    assert "Alice lives in Paris." in model.calls[0][0].text


def test_a_resent_user_message_is_saved_once(memory):
    agent, _, _ = build(memory, "s1", [AIMessage("Noted."), AIMessage("Still noted.")])
    first = agent.invoke({"messages": [HumanMessage("I live in Paris.", id="h1")]})
    agent.invoke({"messages": first["messages"]})  # the same thread again: no new user message, a new answer
    assert [m.content for m in memory.get_messages("s1", user_id="alice")] == [
        "I live in Paris.", "Noted.", "Still noted."]


def test_every_human_message_of_one_input_is_saved(memory):
    agent, _, _ = build(memory, "s1", [AIMessage("Noted.")], end_policy=1)
    agent.invoke({"messages": [HumanMessage("I moved last month."), HumanMessage("I live in Oslo now.")]})
    assert [m.content for m in memory.get_messages("s1", user_id="alice")] == [
        "I moved last month.", "I live in Oslo now.", "Noted."]
    assert "Alice lives in Oslo." in memory.context_block("Where does Alice live?", user_id="alice")
