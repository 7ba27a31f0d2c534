"""ZepStore: LangGraph's BaseStore contract (the same asserts as InMemoryStore), then what zep adds.

LangGraph ships no store test suite in the installed packages, so the contract part is
written here, parametrised over LangGraph's own ``InMemoryStore`` and ``ZepStore``:
both must pass every assert.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore
from zep_core import ValidationError

from zep_langchain import ZepContext, ZepStore
from zep_langchain.store import DEFAULT_LAYOUT, NamespaceError, tenant_of
from zep_langchain.testing import ScriptedChatModel

ALICE = ("memories", "alice")
BOB = ("memories", "bob")
VALUE = {"text": "Grüße aus Berlin", "n": 3, "x": 1.25, "ok": True, "none": None, "tags": ["a", "b"],
         "nested": {"deep": {"list": [1, {"k": "v"}]}}}


@pytest.fixture(params=["InMemoryStore", "ZepStore"])
def store(request, make_memory):
    if request.param == "InMemoryStore":
        return InMemoryStore()
    return ZepStore(make_memory())


def keys(items) -> list[str]:
    return [i.key for i in items]


# -- the contract: the same asserts for both stores ------------------------------------------------


def test_put_then_get_returns_the_value_exactly(store):
    store.put(ALICE, "k1", VALUE)
    item = store.get(ALICE, "k1")
    assert item.value == VALUE and item.key == "k1" and item.namespace == ALICE
    assert item.created_at <= item.updated_at
    assert store.get(ALICE, "missing") is None
    assert store.get(BOB, "k1") is None


def test_a_put_overwrites_and_keeps_the_item_in_its_place(store):
    for key in ("a", "b", "c"):
        store.put(ALICE, key, {"v": key})
    first = store.get(ALICE, "b")
    store.put(ALICE, "b", {"v": "B"})
    again = store.get(ALICE, "b")
    assert again.value == {"v": "B"} and again.updated_at >= first.updated_at
    assert [(i.key, i.value["v"]) for i in store.search(ALICE)] == [("a", "a"), ("b", "B"), ("c", "c")]


def test_delete_removes_and_a_new_put_comes_last(store):
    for key in ("a", "b", "c"):
        store.put(ALICE, key, {"v": key})
    store.delete(ALICE, "a")
    assert store.get(ALICE, "a") is None
    assert keys(store.search(ALICE)) == ["b", "c"]
    store.put(ALICE, "a", {"v": "again"})
    assert keys(store.search(ALICE)) == ["b", "c", "a"]
    store.delete(ALICE, "never-there")  # deleting nothing is not an error


def test_search_lists_in_put_order_with_limit_and_offset(store):
    for i in range(7):
        store.put(ALICE, f"k{i}", {"i": i})
    store.put((*ALICE, "prefs"), "theme", {"i": 99})
    assert keys(store.search(ALICE)) == [f"k{i}" for i in range(7)] + ["theme"]
    assert keys(store.search(ALICE, limit=3)) == ["k0", "k1", "k2"]
    assert keys(store.search(ALICE, limit=3, offset=5)) == ["k5", "k6", "theme"]
    assert keys(store.search((*ALICE, "prefs"))) == ["theme"]
    assert store.search(("memories", "nobody")) == [] and store.search(("elsewhere",)) == []
    assert all(i.score is None for i in store.search(ALICE))


def test_search_filters_like_jsonb(store):
    store.put(ALICE, "a", {"kind": "note", "n": 1, "meta": {"lang": "en", "v": 2}, "tags": ["x", "y"]})
    store.put(ALICE, "b", {"kind": "note", "n": 5, "meta": {"lang": "de", "v": 2}, "tags": ["x"]})
    store.put(ALICE, "c", {"kind": "todo", "n": 10})
    assert keys(store.search(ALICE, filter={"kind": "note"})) == ["a", "b"]
    assert keys(store.search(ALICE, filter={"kind": "note", "n": 5})) == ["b"]
    assert keys(store.search(ALICE, filter={"meta": {"lang": "de"}})) == ["b"]
    assert keys(store.search(ALICE, filter={"tags": ["x", "y"]})) == ["a"]
    assert keys(store.search(ALICE, filter={"n": {"$gt": 1}})) == ["b", "c"]
    assert keys(store.search(ALICE, filter={"n": {"$gte": 1, "$lt": 10}})) == ["a", "b"]
    assert keys(store.search(ALICE, filter={"n": {"$lte": 5}, "kind": {"$ne": "todo"}})) == ["a", "b"]
    assert keys(store.search(ALICE, filter={"kind": {"$eq": "todo"}})) == ["c"]
    assert keys(store.search(ALICE, filter={"kind": "note"}, limit=1, offset=1)) == ["b"]


def test_list_namespaces_with_prefix_suffix_depth_and_paging(store):
    for ns in [(*ALICE, "prefs"), (*ALICE, "notes", "work"), (*ALICE, "notes", "home"), BOB, (*BOB, "prefs")]:
        store.put(ns, "k", {"v": 1})
    everything = [(*ALICE, "notes", "home"), (*ALICE, "notes", "work"), (*ALICE, "prefs"), BOB, (*BOB, "prefs")]
    assert store.list_namespaces() == everything
    assert store.list_namespaces(prefix=ALICE) == everything[:3]
    assert store.list_namespaces(prefix=ALICE, max_depth=3) == [(*ALICE, "notes"), (*ALICE, "prefs")]
    assert store.list_namespaces(suffix=("prefs",)) == [(*ALICE, "prefs"), (*BOB, "prefs")]
    assert store.list_namespaces(prefix=("memories", "*", "prefs")) == [(*ALICE, "prefs"), (*BOB, "prefs")]
    assert store.list_namespaces(prefix=ALICE, suffix=("work",)) == [(*ALICE, "notes", "work")]
    assert store.list_namespaces(max_depth=2) == [ALICE, BOB]
    assert store.list_namespaces(limit=2, offset=1) == everything[1:3]
    assert store.list_namespaces(prefix=("elsewhere",)) == []


def test_search_across_users_under_a_short_prefix(store):
    store.put(ALICE, "a", {"v": 1})
    store.put(BOB, "b", {"v": 2})
    assert sorted((i.namespace, i.key) for i in store.search(("memories",))) == [(ALICE, "a"), (BOB, "b")]
    assert sorted(keys(store.search(()))) == ["a", "b"]


def test_a_batch_reads_before_it_writes_and_the_last_put_wins(store):
    store.put(ALICE, "a", {"v": "old"})
    got = store.batch([
        PutOp(ALICE, "a", {"v": "first"}), PutOp(ALICE, "a", {"v": "last"}), PutOp(ALICE, "b", {"v": 1}),
        GetOp(ALICE, "a"), SearchOp(ALICE),
    ])
    assert got[:3] == [None, None, None]
    assert got[3].value == {"v": "old"} and keys(got[4]) == ["a"]
    assert store.get(ALICE, "a").value == {"v": "last"} and store.get(ALICE, "b").value == {"v": 1}


@pytest.mark.parametrize("namespace", [("memories", "a.b"), ("memories", ""), ("langgraph", "x")])
def test_bad_namespaces_are_refused(store, namespace):
    with pytest.raises(InvalidNamespaceError):
        store.put(namespace, "k", {"v": 1})


def test_the_async_methods_match(store):
    async def story():
        await store.aput(ALICE, "a", {"v": 1})
        await store.aput((*ALICE, "prefs"), "b", {"v": 2})
        got = await store.aget(ALICE, "a")
        listed = await store.asearch(ALICE, filter={"v": 2})
        spaces = await store.alist_namespaces(prefix=ALICE)
        await store.adelete(ALICE, "a")
        return got, listed, spaces, await store.aget(ALICE, "a")

    got, listed, spaces, deleted = asyncio.run(story())
    assert got.value == {"v": 1} and keys(listed) == ["b"]
    assert spaces == [ALICE, (*ALICE, "prefs")] and deleted is None


def test_ttl_is_refused_when_not_supported(store):
    if not store.supports_ttl:
        with pytest.raises(NotImplementedError):
            store.put(ALICE, "a", {"v": 1}, ttl=5)


# -- what ZepStore adds: users, zep's retrieval, time ------------------------------------------------


@pytest.fixture
def zep(memory):
    return ZepStore(memory, user_names={"alice": "Alice", "bob": "Bob"})


def test_a_query_searches_the_users_current_facts(zep, memory, clock):
    zep.put(ALICE, "home", {"content": "I live in Paris."})
    zep.put(ALICE, "music", {"content": "I like jazz."})
    zep.put(BOB, "home", {"content": "I live in Rome."})
    found = zep.search(ALICE, query="Where do I live?")
    assert found[0].key == "home" and found[0].value == {"content": "I live in Paris."}
    assert found[0].score > 0 and all(i.namespace == ALICE for i in found)
    clock.advance(days=30)
    zep.put(ALICE, "moved", {"content": "I moved to Berlin."})
    now = zep.search(ALICE, query="Where do I live?")
    assert now[0].key == "moved" and "home" not in keys(now)  # Paris is no longer true
    then = zep.as_of(clock.now - timedelta(days=10)).search(ALICE, query="Where do I live?")
    assert then[0].key == "home" and "moved" not in keys(then)
    assert "Alice lives in Berlin." in memory.context_block("Where does Alice live?", user_id="alice")


def test_a_query_never_reaches_another_users_items(zep):
    zep.put(ALICE, "home", {"content": "I live in Paris."})
    zep.put(BOB, "home", {"content": "I live in Rome."})
    for item in zep.search(BOB, query="Paris"):
        assert item.namespace == BOB and "Paris" not in item.value["content"]
    assert [i.value["content"] for i in zep.search(("memories",), query="Where does Bob live?")
            if i.namespace == BOB] == ["I live in Rome."]


def test_index_and_fields_choose_what_is_learned(memory):
    store = ZepStore(memory, fields=["content"])
    store.put(ALICE, "a", {"content": "I like jazz.", "note": "I like opera."})
    store.put(ALICE, "b", {"content": "I like chess."}, index=False)
    store.put(ALICE, "c", {"content": "-", "note": "I like tennis."}, index=["note"])
    facts = {f.content for f in memory.facts("alice")}
    assert "User likes jazz." in facts and "User likes tennis." in facts
    assert not any("opera" in f or "chess" in f for f in facts)
    assert store.get(ALICE, "b").value == {"content": "I like chess."}  # kept exactly, just not learned from
    found = store.search(ALICE, query="What games do I like? chess")
    assert keys(found)[-1] == "b" and found[-1].score is None  # nothing to search it by: last, as InMemoryStore


def test_langmems_org_and_user_namespaces_never_merge_two_users(memory):
    """langmem's ("memories", "{org_id}", "{user_id}") under the default layout: one tenant per user."""
    store = ZepStore(memory)
    alice, bob = ("memories", "acme", "alice"), ("memories", "acme", "bob")
    store.put(alice, "home", {"content": "I live in Paris."})
    store.put(bob, "home", {"content": "I live in Oslo."})
    assert sorted(memory.users()) == ["acme/alice", "acme/bob"]
    assert [i.value for i in store.search(alice, query="Where do I live?")] == [{"content": "I live in Paris."}]
    assert [i.value for i in store.search(bob, query="Where do I live?")] == [{"content": "I live in Oslo."}]
    assert [f.content for f in memory.facts("acme/alice") if f.is_current] == ["User lives in Paris."]
    assert sorted(i.namespace for i in store.search(("memories", "acme"))) == [alice, bob]
    assert store.list_namespaces(prefix=("memories", "acme")) == [alice, bob]
    assert store.get(alice, "home").value == {"content": "I live in Paris."}


def test_a_layout_with_an_org_and_a_user_names_the_same_tenants(memory):
    store = ZepStore(memory, layout=("memories", "{org_id}", "{user_id}"), user_names={"acme/alice": "Alice"})
    store.put(("memories", "acme", "alice"), "home", {"content": "I live in Paris."})
    store.put(("memories", "acme", "alice", "prefs"), "music", {"content": "I like jazz."})
    store.put(("memories", "globex", "alice"), "home", {"content": "I live in Rome."})  # another Alice
    assert sorted(memory.users()) == ["acme/alice", "acme/alice/prefs", "globex/alice"]
    assert "Alice lives in Paris." in memory.context_block("Where does Alice live?", user_id="acme/alice")
    assert keys(store.search(("memories", "acme", "alice"))) == ["home", "music"]
    assert sorted(i.value["content"] for i in store.search(("memories",), query="Where do I live?")
                  if i.key == "home") == ["I live in Paris.", "I live in Rome."]
    assert tenant_of(("memories", "acme", "alice"), ("memories", "{org_id}", "{user_id}")) == \
        tenant_of(("memories", "acme", "alice")) == "acme/alice"


def test_a_namespace_that_names_no_user_is_kept_as_shared_data(zep, memory):
    for namespace in [("app_config",), ("memories",), ("users", "alice"), ("alice", "memories")]:
        zep.put(namespace, "k", {"content": f"shared {namespace[0]} setting"})
        assert zep.get(namespace, "k").value == {"content": f"shared {namespace[0]} setting"}
    zep.put(ALICE, "home", {"content": "I live in Paris."})
    assert sorted(memory.users()) == ["alice", "~alice/memories", "~app_config", "~memories", "~users/alice"]
    assert zep.get(("memories", "alice"), "k") is None  # ("users", "alice") is not Alice's
    assert [i.namespace for i in zep.search(("app_config",))] == [("app_config",)]
    assert [f.content for f in memory.facts("alice") if f.is_current] == ["Alice lives in Paris."]
    assert ("app_config",) in zep.list_namespaces()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.text(alphabet="ab/%~7E2F-", min_size=1, max_size=4), min_size=1, max_size=4),
                min_size=2, max_size=2, unique_by=tuple))
def test_two_different_namespaces_never_name_the_same_tenant(pair):
    first, second = (tuple(n) for n in pair)
    for layout in [DEFAULT_LAYOUT, ("memories", "{org_id}", "{user_id}"), ("{user_id}", "memories")]:
        assert tenant_of(first, layout) != tenant_of(second, layout)


def test_bad_layouts_and_namespaces_get_a_clear_error(memory):
    for layout, message in [(("memories",), "placeholder"), (("{user_id}", "{user_id}"), "once"),
                            (("memories", "{user id}"), "whole placeholder"), ("memories", "tuple")]:
        with pytest.raises(ValidationError, match=message):
            ZepStore(memory, layout=layout)
    with pytest.raises(NamespaceError, match="256"):
        ZepStore(memory).put(("memories", "a" * 200, "b" * 100), "k", {"v": 1})
    assert issubclass(NamespaceError, InvalidNamespaceError) and memory.users() == []


def test_another_layout_puts_the_user_first(memory):
    store = ZepStore(memory, layout=("{user_id}", "memories"))
    store.put(("alice", "memories"), "a", {"content": "I like jazz."})
    assert store.get(("alice", "memories"), "a").value == {"content": "I like jazz."}
    assert memory.get_messages("langgraph-store", user_id="alice")


@pytest.mark.parametrize("value", [{"t": (1, 2)}, {1: "a"}, {"x": float("nan")}, {"when": object()}, ["a"]])
def test_values_that_would_not_come_back_exactly_are_refused_and_nothing_is_written(zep, memory, value):
    with pytest.raises(ValidationError):
        zep.batch([PutOp(ALICE, "ok", {"v": 1}), PutOp(ALICE, "bad", value)])
    assert memory.users() == []


def test_the_store_survives_a_restart(make_memory, tmp_path):
    folder = tmp_path / "restart"
    first = make_memory(data_dir=folder)
    ZepStore(first).put(ALICE, "a", VALUE)
    first.close()
    again = ZepStore(make_memory(data_dir=folder))
    assert again.get(ALICE, "a").value == VALUE
    assert again.list_namespaces() == [ALICE]


def test_an_as_of_view_is_read_only(zep, clock):
    zep.put(ALICE, "a", {"v": 1})
    view = zep.as_of(clock.now)
    assert view.get(ALICE, "a").value == {"v": 1}
    assert zep.as_of(clock.now - timedelta(seconds=1)).get(ALICE, "a") is None
    with pytest.raises(ValidationError, match="read-only"):
        view.put(ALICE, "b", {"v": 2})


def test_the_log_is_never_learned_from_by_ending_its_session(zep, memory):
    zep.put(ALICE, "a", {"v": 1})  # no text: nothing to learn
    assert memory.end_session("langgraph-store", user_id="alice") is None
    assert memory.facts("alice") == []


# langchain-core's @tool schema types ToolRuntime.context as None and warns when it serialises a real one
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
def test_an_agent_runs_with_the_store_and_tools_that_use_it(memory):
    @tool
    def remember(content: str, runtime: ToolRuntime) -> str:
        """Save a memory about the user."""
        runtime.store.put(("memories", runtime.context.user_id), "m1", {"content": content})
        return "saved"

    @tool
    def recall(query: str, runtime: ToolRuntime) -> str:
        """Search the user's memories."""
        return "; ".join(i.value["content"] for i in runtime.store.search(("memories", runtime.context.user_id),
                                                                          query=query))

    model = ScriptedChatModel(replies=[
        AIMessage("", tool_calls=[{"name": "remember", "args": {"content": "I live in Paris."}, "id": "1"}]),
        AIMessage("Saved."),
        AIMessage("", tool_calls=[{"name": "recall", "args": {"query": "Where do I live?"}, "id": "2"}]),
        AIMessage("You live in Paris."),
    ])
    store = ZepStore(memory, user_names={"alice": "Alice"})
    agent = create_agent(model, tools=[remember, recall], store=store, context_schema=ZepContext)
    context = {"user_id": "alice"}  # a dict context: LangGraph makes it a ZepContext
    agent.invoke({"messages": [{"role": "user", "content": "Remember I live in Paris."}]}, context=context)
    result = agent.invoke({"messages": [{"role": "user", "content": "Where do I live?"}]}, context=context)
    recalled = next(m for m in result["messages"] if isinstance(m, ToolMessage))
    assert recalled.text == "I live in Paris."
    assert store.get(ALICE, "m1").value == {"content": "I live in Paris."}
    assert "Alice lives in Paris." in {f.content for f in memory.facts("alice")}


class _SameEmbedder(Embeddings):
    """LangChain ``Embeddings`` over the memory's embedder: InMemoryStore then embeds as ZepStore does."""

    def __init__(self, embedder):
        self.embedder = embedder

    def embed_documents(self, texts):
        return [list(map(float, v)) for v in self.embedder.embed(list(texts))]

    def embed_query(self, text):
        return list(map(float, self.embedder.embed_query(text)))


SHORT = {"tea": {"content": "green tea"}, "dog": {"content": "Biscuit"}, "city": {"content": "東京"},
         "hobby": {"content": "Schach"}, "color": {"content": "teal"}}


def test_query_search_finds_items_that_gave_no_facts_ranked_by_similarity_as_in_memory_store(make_memory, embedder):
    """A word or two, another script: no fact is learned from them, and search still ranks them, with the
    same scores (cosine similarities) and order as LangGraph's InMemoryStore embedding with the same model."""
    zep = ZepStore(make_memory(), index={"fields": ["content"]})  # no "embed": the memory's embedder
    ref = InMemoryStore(index={"dims": embedder.dimension, "embed": _SameEmbedder(embedder), "fields": ["content"]})
    for store in (zep, ref):
        for key, value in SHORT.items():
            store.put(ALICE, key, value)
    assert zep.memory.get_context("green tea", user_id="alice") == []  # nothing learned: all too short

    for query in ("What do I drink?", "Tokyo", "chess", "a blue-green colour"):
        ours, theirs = zep.search(ALICE, query=query), ref.search(ALICE, query=query)
        assert keys(ours) == keys(theirs), query
        assert [i.score for i in ours] == pytest.approx([i.score for i in theirs], abs=1e-5), query
    assert keys(zep.search(ALICE, query="Tokyo"))[0] == "city"


def test_scores_are_similarities_so_a_threshold_means_what_it_says(make_memory):
    store = ZepStore(make_memory())
    store.put(ALICE, "home", {"content": "I live in Lisbon, near the river."})
    store.put(ALICE, "pet", {"content": "Biscuit"})

    found = store.search(ALICE, query="Where do I live?")
    assert keys(found)[0] == "home" and all(-1.0 <= i.score <= 1.0 for i in found)
    close = [i.key for i in found if i.score >= 0.3]
    assert close == ["home"]


def test_index_config_fields_choose_the_searched_text_and_a_disagreement_is_refused(make_memory):
    memory = make_memory()
    store = ZepStore(memory, index={"fields": ["title"]})
    store.put(ALICE, "a", {"title": "Sourdough", "body": "a long unrelated text about taxes"})
    assert keys(store.search(ALICE, query="bread baking")) == ["a"]
    assert store.search(ALICE, query="bread baking")[0].score > store.search(ALICE, query="taxes")[0].score
    with pytest.raises(ValidationError, match="disagree"):
        ZepStore(memory, fields=["body"], index={"fields": ["title"]})


class _Letters(Embeddings):
    """A model of another kind than the memory's: letter counts (26 numbers), so "zzz" is near "zebra"."""

    def embed_documents(self, texts):
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text):
        return [float(text.lower().count(c)) for c in "abcdefghijklmnopqrstuvwxyz"]


def test_the_index_embed_searches_the_items_as_in_memory_store(make_memory):
    """``index={"embed": ...}`` is the model items and queries are embedded with, as in ``InMemoryStore``."""
    zep = ZepStore(make_memory(), index={"dims": 26, "embed": _Letters(), "fields": ["content"]})
    ref = InMemoryStore(index={"dims": 26, "embed": _Letters(), "fields": ["content"]})
    assert zep.index_config["dims"] == 26 and isinstance(zep.index_config["embed"], _Letters)
    for store in (zep, ref):
        for key, value in SHORT.items():
            store.put(ALICE, key, value)
        store.put(ALICE, "zoo", {"content": "I saw a zebra at the zoo."})
    for query in ("zzz", "eat tea", "Biscuit"):
        ours, theirs = zep.search(ALICE, query=query), ref.search(ALICE, query=query)
        assert keys(ours) == keys(theirs), query
        assert [i.score for i in ours] == pytest.approx([i.score for i in theirs], abs=1e-5), query
    assert keys(zep.search(ALICE, query="zzz"))[0] == "zoo"
    assert keys(zep.as_of(datetime(2100, 1, 1, tzinfo=timezone.utc)).search(ALICE, query="zzz"))[0] == "zoo"


def test_a_bad_index_embed_or_dims_is_a_clear_error(make_memory):
    memory = make_memory()
    with pytest.raises(ValidationError, match=r"index\['embed'\] must be"):
        ZepStore(memory, index={"embed": 42})
    with pytest.raises(ValidationError, match=r"index\['dims'\] must be"):
        ZepStore(memory, index={"dims": "many", "embed": _Letters()})
    store = ZepStore(memory, index={"dims": 384, "embed": _Letters()})
    store.put(ALICE, "a", {"content": "tea"})
    with pytest.raises(ValidationError, match="length 26, but index\\['dims'\\] is 384"):
        store.search(ALICE, query="tea")
