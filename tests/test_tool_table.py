"""The LangChain tools, the LlamaIndex tools and the MCP server expose exactly the core's table of memory tools.

Each adapter is read through its own framework: LangChain's ``args_schema`` and the
``tool_call_schema`` a model is shown, LlamaIndex's ``metadata.fn_schema`` and the
parameters a model is shown, and the MCP server's ``list_tools`` through the SDK's
client. The expectation is written from the table's fields, not from the pydantic model
the adapters build from it.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from typing import get_origin

import pytest
from zep_core import Message
from zep_core.tools import MEMORY_TOOLS, READ_TOOLS, ToolSpec

pytest.importorskip("mcp", reason="the MCP server needs the [mcp] extra")
from mcp import Client  # noqa: E402
from zep_core.mcp_server import create_mcp_server  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning")  # LlamaIndex's own

JSON_TYPES = {str: "string", int: "integer", list: "array"}


def expected(spec: ToolSpec) -> dict[str, dict]:
    """What a JSON schema of the tool's arguments must say of each one, from the table."""
    return {a.name: {"type": JSON_TYPES[get_origin(a.type) or a.type], "nullable": a.default is None,
                     "required": a.required, "default": None if a.required else a.default,
                     "minimum": a.minimum, "maximum": a.maximum, "description": a.description}
            for a in spec.args}


def described(schema: dict) -> dict[str, dict]:
    """The same facts, read from a JSON schema of arguments."""
    out = {}
    for name, prop in schema["properties"].items():
        types = [t["type"] for t in prop["anyOf"]] if "anyOf" in prop else [prop["type"]]
        out[name] = {"type": next(t for t in types if t != "null"), "nullable": "null" in types,
                     "required": name in schema.get("required", ()), "default": prop.get("default"),
                     "minimum": prop.get("minimum"), "maximum": prop.get("maximum"),
                     "description": prop.get("description")}
    return out


@pytest.fixture
def alice(memory, clock):
    memory.conversation_end("s1", [Message("I live in Paris. I work at Acme.", name="Alice",
                                           timestamp=datetime(2024, 1, 1, 12, tzinfo=timezone.utc))], user_id="alice")
    clock.advance(days=60)
    memory.conversation_end("s2", [Message("I moved to Berlin.", name="Alice",
                                           timestamp=datetime(2024, 3, 1, 12, tzinfo=timezone.utc))], user_id="alice")
    return memory


def mcp_tools(server) -> list:
    async def run():
        async with Client(server) as client:
            return (await client.list_tools()).tools
    return asyncio.run(run())


def mcp_answers(server, calls) -> list[str]:
    async def run():
        async with Client(server) as client:
            return ["".join(c.text for c in (await client.call_tool(name, args)).content if c.type == "text")
                    for name, args in calls]
    return asyncio.run(run())


def test_the_table_names_each_tool_and_argument_once():
    names = [spec.name for spec in MEMORY_TOOLS]
    assert len(set(names)) == len(names)
    for spec in MEMORY_TOOLS:
        assert len({a.name for a in spec.args}) == len(spec.args) and spec.description
    assert [s.name for s in READ_TOOLS] == ["search_memory", "entity_history", "related_entities"]


@pytest.mark.parametrize("user_id", ["alice", None], ids=["fixed user", "user from the run"])
def test_langchain_tools_are_the_tables_read_tools(memory, user_id):
    from zep_langchain import create_memory_tools

    tools = create_memory_tools(memory, user_id=user_id)

    assert [t.name for t in tools] == [s.name for s in READ_TOOLS]
    for tool, spec in zip(tools, READ_TOOLS):
        assert tool.description == spec.description
        schema = tool.args_schema.model_json_schema()
        assert set(schema["properties"]) == {a.name for a in spec.args} | {"runtime"}  # runtime: injected, hidden
        del schema["properties"]["runtime"]
        assert described(schema) == expected(spec)
        assert described(tool.tool_call_schema.model_json_schema()) == expected(spec)  # what the model is shown


@pytest.mark.parametrize("user_id", ["alice", None], ids=["fixed user", "user from the run"])
def test_llamaindex_tools_are_the_tables_read_tools(memory, user_id):
    from zep_llamaindex import create_memory_tools

    tools = create_memory_tools(memory, user_id=user_id)

    assert [t.metadata.name for t in tools] == [s.name for s in READ_TOOLS]
    for tool, spec in zip(tools, READ_TOOLS):
        assert tool.metadata.description == spec.description
        assert described(tool.metadata.fn_schema.model_json_schema()) == expected(spec)
        assert described(tool.metadata.get_parameters_dict()) == expected(spec)  # what the model is shown


@pytest.mark.parametrize("allow_forget", [False, True])
def test_mcp_tools_are_the_whole_table(memory, allow_forget):
    listed = mcp_tools(create_mcp_server(memory, user_id="alice", allow_forget=allow_forget))

    specs = [s for s in MEMORY_TOOLS if allow_forget or not s.destructive]
    assert sorted(t.name for t in listed) == sorted(s.name for s in specs)
    by_name = {t.name: t for t in listed}
    for spec in specs:
        assert by_name[spec.name].description == spec.description
        assert described(by_name[spec.name].input_schema) == expected(spec)


def test_the_three_adapters_give_the_same_answers(alice):
    from zep_langchain import create_memory_tools as langchain_tools
    from zep_llamaindex import create_memory_tools as llamaindex_tools

    calls = [("search_memory", {"query": "Where do I live?", "limit": 2}),
             ("search_memory", {"query": "Where did I live?", "as_of": "2024-02-01"}),
             ("entity_history", {"entity_name": "me"}),
             ("related_entities", {"entity_name": "Alice", "limit": 1}),
             ("entity_history", {"entity_name": "Zorblax"}),
             ("search_memory", {"query": "Where do I live?", "limit": 0})]
    chain = {t.name: t for t in langchain_tools(alice, user_id="alice", user_name="Alice")}
    index = {t.metadata.name: t for t in llamaindex_tools(alice, user_id="alice", user_name="Alice")}

    over_mcp = mcp_answers(create_mcp_server(alice, user_id="alice", user_name="Alice"), calls)
    over_llamaindex = [index[name](**args).content for name, args in calls]
    over_langchain = [chain[name].invoke(args) for name, args in calls[:-1]]  # its schema refuses limit=0

    assert over_mcp == over_llamaindex
    assert over_langchain == over_mcp[:-1]
    assert "Alice lives in Paris. (valid 2024-01-01 to 2024-03-01; superseded)" in over_mcp[2]
    assert over_mcp[-1] == "limit must be between 1 and 50."
    with pytest.raises(ValueError, match="limit"):
        chain["search_memory"].invoke(calls[-1][1])
