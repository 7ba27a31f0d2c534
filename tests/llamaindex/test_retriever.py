"""ZepRetriever returns current facts as nodes, in query engines and chat engines alike."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from llama_index.core.chat_engine import ContextChatEngine
from llama_index.core.query_engine import RetrieverQueryEngine
from zep_core import Message, ValidationError

from zep_llamaindex import ZepRetriever


@pytest.fixture
def moved(make_memory, clock):
    """Ada lived in Paris, then moved to Berlin a month later; Bob lives in Rome."""
    core = make_memory()
    core.conversation_end("s1", [Message("I live in Paris.", name="Ada", id="m1")], user_id="ada")
    clock.advance(days=30)
    core.conversation_end("s2", [Message("I moved to Berlin.", name="Ada", id="m2")], user_id="ada")
    core.conversation_end("s1", [Message("I live in Rome.", name="Bob")], user_id="bob")
    return core


def test_nodes_are_current_facts_with_their_parts(moved, clock):
    nodes = ZepRetriever(memory=moved, user_id="ada").retrieve("Where does Ada live?")

    top = nodes[0]
    assert top.node.get_content() == "Ada lives in Berlin."
    meta = top.node.metadata
    assert (meta["subject"], meta["predicate"], meta["object"]) == ("Ada", "lives_in", "Berlin")
    assert meta["valid_from"] == clock.now.isoformat() and meta["valid_until"] is None
    assert meta["source_message_ids"] == ["m2"] and meta["fact_id"] == top.node.node_id
    assert top.score == meta["score"] > 0
    assert meta["semantic_score"] > 0.5 and meta["lexical_score"] > 0 and meta["graph_score"] == 1.0
    assert not [n for n in nodes if "Paris" in n.node.get_content()]


def test_async_retrieve_gives_the_same_nodes(moved):
    retriever = ZepRetriever(memory=moved, user_id="ada")

    nodes = asyncio.run(retriever.aretrieve("Where does Ada live?"))

    assert [n.node.node_id for n in nodes] == [n.node.node_id for n in retriever.retrieve("Where does Ada live?")]


def test_first_person_queries_are_asked_for_the_user_name(moved):
    nodes = ZepRetriever(memory=moved, user_id="ada", user_name="Ada").retrieve("Where do I live?")

    assert "Ada lives in Berlin." in [n.node.get_content() for n in nodes]


def test_top_k_caps_the_results_and_users_stay_apart(moved):
    assert len(ZepRetriever(memory=moved, user_id="ada", top_k=1).retrieve("Where does Ada live?")) == 1
    bob = [n.node.get_content() for n in ZepRetriever(memory=moved, user_id="bob").retrieve("Where does Bob live?")]
    assert "Bob lives in Rome." in bob and not [t for t in bob if "Ada" in t or "Berlin" in t]


def test_llamaindexs_similarity_top_k_is_top_k(moved):
    retriever = ZepRetriever(memory=moved, user_id="ada", similarity_top_k=1)
    assert retriever.top_k == 1 and len(retriever.retrieve("Where does Ada live?")) == 1
    with pytest.raises(ValidationError, match="similarity_top_k=2 disagree"):
        ZepRetriever(memory=moved, user_id="ada", top_k=1, similarity_top_k=2)


def test_as_of_returns_what_was_true_then(moved, clock):
    retriever = ZepRetriever(memory=moved, user_id="ada", as_of=clock.now - timedelta(days=10))

    nodes = retriever.retrieve("Where does Ada live?")

    assert nodes[0].node.get_content() == "Ada lives in Paris."
    assert nodes[0].node.metadata["valid_until"] == clock.now.isoformat()


def test_an_unknown_user_gets_no_nodes(moved):
    assert ZepRetriever(memory=moved, user_id="nobody").retrieve("Where do I live?") == []


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_query_engine_answers_from_the_current_fact(moved, llm, mode):
    engine = RetrieverQueryEngine.from_args(ZepRetriever(memory=moved, user_id="ada", user_name="Ada"), llm=llm)

    response = engine.query("Where do I live?") if mode == "sync" else asyncio.run(engine.aquery("Where do I live?"))

    assert str(response) == "Noted."
    assert "Ada lives in Berlin." in llm.prompts[-1] and "Where do I live?" in llm.prompts[-1]
    assert not [p for p in llm.prompts if "Paris" in p]
    assert response.source_nodes[0].node.metadata["object"] == "Berlin"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_context_chat_engine_gets_the_current_fact(moved, llm, mode):
    engine = ContextChatEngine.from_defaults(retriever=ZepRetriever(memory=moved, user_id="ada"), llm=llm)

    question = "Where does Ada live now?"
    response = engine.chat(question) if mode == "sync" else asyncio.run(engine.achat(question))

    assert "Ada lives in Berlin." in llm.prompts[-1]
    assert not [p for p in llm.prompts if "Paris" in p]
    assert response.source_nodes[0].node.metadata["object"] == "Berlin"


def test_bad_arguments_are_refused(moved):
    with pytest.raises(ValidationError, match="memory must be an open zep_core.Memory"):
        ZepRetriever(memory="./data", user_id="ada")
    with pytest.raises(ValidationError, match="needs user_id=.*no shared default user"):
        ZepRetriever(memory=moved)
    with pytest.raises(ValidationError, match="top_k"):
        ZepRetriever(memory=moved, user_id="ada", top_k=0)
    with pytest.raises(ValidationError, match="user_id"):
        ZepRetriever(memory=moved, user_id="")
