from __future__ import annotations

import pytest
from langchain_tests.integration_tests import ToolsIntegrationTests
from langchain_tests.unit_tests import ToolsUnitTests

from tests.langchain.conftest import tell
from zep_langchain import ZepEntityHistoryTool, ZepRelatedEntitiesTool, ZepSearchMemoryTool, create_memory_tools

TOOLS = [
    (ZepSearchMemoryTool, {"query": "Where does Alice live?", "limit": 3}),
    (ZepEntityHistoryTool, {"entity_name": "Alice"}),
    (ZepRelatedEntitiesTool, {"entity_name": "Alice"}),
]


class _OnAlice:
    """Each tool of the standard suites runs against Alice's memory."""

    tool_class: type
    example: dict

    @pytest.fixture(autouse=True)
    def _memory(self, alice_memory):
        self.memory = alice_memory

    @property
    def tool_constructor(self):
        return self.tool_class

    @property
    def tool_constructor_params(self) -> dict:
        return {"memory": self.memory, "user_id": "alice"}

    @property
    def tool_invoke_params_example(self) -> dict:
        return self.example


class TestSearchMemoryUnit(_OnAlice, ToolsUnitTests):
    tool_class, example = TOOLS[0]


class TestEntityHistoryUnit(_OnAlice, ToolsUnitTests):
    tool_class, example = TOOLS[1]


class TestRelatedEntitiesUnit(_OnAlice, ToolsUnitTests):
    tool_class, example = TOOLS[2]


class TestSearchMemoryIntegration(_OnAlice, ToolsIntegrationTests):
    tool_class, example = TOOLS[0]


class TestEntityHistoryIntegration(_OnAlice, ToolsIntegrationTests):
    tool_class, example = TOOLS[1]


class TestRelatedEntitiesIntegration(_OnAlice, ToolsIntegrationTests):
    tool_class, example = TOOLS[2]


@pytest.fixture
def tools(alice_memory):
    return {t.name: t for t in create_memory_tools(alice_memory, user_id="alice", user_name="Alice")}


def test_the_three_tools_have_names_and_argument_schemas(tools):
    assert list(tools) == ["search_memory", "entity_history", "related_entities"]
    assert tools["search_memory"].args["query"]["type"] == "string"
    assert tools["search_memory"].args["limit"]["default"] == 5
    assert tools["entity_history"].args["entity_name"]["type"] == "string"


def test_search_memory_returns_current_facts_with_dates(tools):
    out = tools["search_memory"].invoke({"query": "Where do I live?", "limit": 3})
    assert "Alice lives in Berlin. (valid from 2024-03-01" in out
    assert "Paris" not in out


def test_entity_history_shows_the_old_and_the_new_fact_with_dates(tools):
    out = tools["entity_history"].invoke({"entity_name": "Alice"})
    assert "Alice lives in Paris. (valid 2024-01-01 to 2024-03-01; superseded)" in out
    assert "Alice lives in Berlin. (valid 2024-03-01 to now; current)" in out
    assert out.index("Paris") < out.index("Berlin")


def test_me_means_the_user(tools):
    history = tools["entity_history"]
    assert history.invoke({"entity_name": "me"}) == history.invoke({"entity_name": "Alice"})


def test_related_entities_lists_connected_names(tools):
    out = tools["related_entities"].invoke({"entity_name": "Alice"})
    assert "Berlin (place)" in out and "Acme" in out


@pytest.mark.parametrize("name", ["entity_history", "related_entities"])
def test_unknown_entity_is_a_helpful_answer_not_a_crash(tools, name):
    out = tools[name].invoke({"entity_name": "Zorblax"})
    assert "No entity named 'Zorblax'" in out and "search_memory" in out


def test_a_user_without_memory_gets_a_plain_answer(alice_memory):
    for tool in create_memory_tools(alice_memory, user_id="newcomer"):
        args = {"query": "anything"} if tool.name == "search_memory" else {"entity_name": "Alice"}
        assert tool.invoke(args) == "Nothing is stored in memory for this user yet."


def test_nothing_relevant_says_so(make_memory):
    strict = make_memory(semantic_threshold=0.5)  # the default threshold lets weak matches through
    tell(strict, "alice", "Alice")
    out = ZepSearchMemoryTool(memory=strict, user_id="alice").invoke({"query": "quantum chromodynamics lecture notes"})
    assert out.startswith("No facts in memory match")


def test_bad_arguments_come_back_as_a_validation_error(tools):
    with pytest.raises(ValueError):
        tools["search_memory"].invoke({"query": "x", "limit": 0})


async def test_tools_work_async(tools):
    out = await tools["entity_history"].ainvoke({"entity_name": "Alice"})
    assert "Berlin" in out and "Paris" in out
    found = await tools["search_memory"].ainvoke({"query": "Where do I live?"})
    assert "Alice lives in Berlin." in found


def test_first_person_queries_are_about_the_user(tools):
    assert "Alice likes jazz." in tools["search_memory"].invoke({"query": "What do I like?"})
    assert "Alice likes jazz." in tools["search_memory"].invoke({"query": "What does the user like?"})


def test_search_memory_answers_what_was_true_at_as_of(tools):
    out = tools["search_memory"].invoke({"query": "Where did I live?", "as_of": "2024-02-01"})
    assert out.startswith('Facts in memory for "Where did I live?" (true on 2024-02-01')
    assert "Alice lives in Paris. (valid from 2024-01-01 until 2024-03-01)" in out and "Berlin" not in out


def test_related_entities_takes_a_limit(tools):
    out = tools["related_entities"].invoke({"entity_name": "Alice", "limit": 1})
    assert out.count("(") == 2  # "(within 2 hops)" and one entity


def test_the_former_argument_names_still_work_with_a_warning(tools):
    with pytest.warns(DeprecationWarning, match="argument 'k' is now called 'limit'"):
        one = tools["search_memory"].invoke({"query": "What do I like?", "k": 1})
    assert one == tools["search_memory"].invoke({"query": "What do I like?", "limit": 1})
    assert len(one.splitlines()) == 2
    with pytest.warns(DeprecationWarning, match="argument 'entity' is now called 'entity_name'"):
        old = tools["entity_history"].invoke({"entity": "Alice"})
    assert old == tools["entity_history"].invoke({"entity_name": "Alice"})


def test_an_argument_given_by_both_names_is_refused(tools):
    with pytest.raises(ValueError, match="give limit only"):
        tools["search_memory"].invoke({"query": "x", "k": 1, "limit": 2})


def test_a_plain_string_is_the_first_argument(tools):
    assert tools["entity_history"].invoke("me") == tools["entity_history"].invoke({"entity_name": "Alice"})
    assert "Alice lives in Berlin." in tools["search_memory"].invoke("Where do I live?")
