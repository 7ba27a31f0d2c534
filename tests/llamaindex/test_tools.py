"""Memory tools: an agent can search memory, read an entity's history and find related entities."""

from __future__ import annotations

import asyncio
import re

import pytest
from llama_index.core.agent.workflow import FunctionAgent
from zep_core import Message, ValidationError

from zep_llamaindex import create_memory_tools

# FunctionAgent (workflows) inspects pydantic models with inspect.getmembers, which warns.
pytestmark = pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning")


@pytest.fixture
def moved(make_memory, clock):
    core = make_memory()
    core.conversation_end("s1", [Message("I live in Paris and I work at Acme.", name="Ada")], user_id="ada")
    clock.advance(days=30)
    core.conversation_end("s2", [Message("I moved to Berlin.", name="Ada")], user_id="ada")
    core.conversation_end("s1", [Message("I live in Rome.", name="Bob")], user_id="bob")
    return core


@pytest.fixture
def tools(moved):
    return {t.metadata.name: t for t in create_memory_tools(moved, user_id="ada", user_name="Ada")}


def test_three_tools_with_descriptions(tools):
    assert sorted(tools) == ["entity_history", "related_entities", "search_memory"]
    assert all(t.metadata.description for t in tools.values())


def test_search_memory_gives_what_is_true_now(tools):
    found = tools["search_memory"](query="Where do I live?").content

    assert "Ada lives in Berlin." in found and "Paris" not in found


def test_entity_history_shows_the_old_fact_as_superseded(tools):
    history = tools["entity_history"](entity_name="Ada").content.splitlines()

    assert re.fullmatch(r"- Ada lives in Paris\. \(valid \d{4}-\d\d-\d\d to \d{4}-\d\d-\d\d; superseded\)",
                        [line for line in history if "Paris" in line][0])
    assert re.fullmatch(r"- Ada lives in Berlin\. \(valid \d{4}-\d\d-\d\d to now; current\)",
                        [line for line in history if "Berlin" in line][0])


def test_related_entities_lists_the_neighbours(tools):
    related = tools["related_entities"](entity_name="Ada").content

    assert "Berlin" in related and "Acme" in related and "Rome" not in related


def test_unknown_things_get_a_sentence_not_an_error(moved, tools):
    assert "No entity named 'Zed'" in tools["entity_history"](entity_name="Zed").content
    assert "No entity named 'Zed'" in tools["related_entities"](entity_name="Zed").content
    fresh = {t.metadata.name: t for t in create_memory_tools(moved, user_id="nobody")}
    assert fresh["search_memory"](query="Where do I live?").content == "Nothing is stored in memory for this user yet."


def test_search_memory_takes_a_limit_and_a_time(tools):
    past = tools["search_memory"](query="Where do I live?", as_of="2024-01-15").content
    assert past.startswith('Facts in memory for "Where do I live?" (true on 2024-01-15')
    assert "Ada lives in Paris." in past and "Berlin" not in past
    assert len(tools["search_memory"](query="Where do I live and work?", limit=1).content.splitlines()) == 2


def test_top_k_is_the_default_limit_of_a_search(moved):
    tools = {t.metadata.name: t for t in create_memory_tools(moved, user_id="ada", top_k=1)}

    assert tools["search_memory"].metadata.get_parameters_dict()["properties"]["limit"]["default"] == 1
    assert len(tools["search_memory"](query="Where do I live and work?").content.splitlines()) == 2
    with pytest.raises(ValidationError, match="top_k"):
        create_memory_tools(moved, user_id="ada", top_k=0)


def test_bad_arguments_get_a_sentence(tools):
    assert tools["search_memory"](query="home", limit=0).content == "limit must be between 1 and 50."
    assert tools["entity_history"]().content == "entity_history needs entity_name."
    assert tools["related_entities"](entity_name="Ada", limit="all").content.startswith("limit must be a whole number")


def test_the_former_argument_name_still_works_with_a_warning(tools):
    with pytest.warns(DeprecationWarning, match="argument 'entity' is now called 'entity_name'"):
        old = tools["entity_history"](entity="Ada").content

    assert old == tools["entity_history"](entity_name="Ada").content


def test_tools_work_async(tools):
    found = asyncio.run(tools["search_memory"].acall(query="Where does Ada live?"))

    assert "Ada lives in Berlin." in found.content


def test_an_agent_calls_search_memory_and_reads_the_answer(moved, fc_llm):
    fc_llm.script = [("search_memory", {"query": "Where do I live?"}), "You live in Berlin."]
    agent = FunctionAgent(tools=create_memory_tools(moved, user_id="ada", user_name="Ada"), llm=fc_llm)

    async def run():
        return str(await agent.run(user_msg="Where do I live?"))

    assert asyncio.run(run()) == "You live in Berlin."
    tool_result = fc_llm.calls[-1][-1]
    assert tool_result.role.value == "tool" and "Ada lives in Berlin." in tool_result.content
