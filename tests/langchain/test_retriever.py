from __future__ import annotations

import pytest
from langchain_tests.integration_tests import RetrieversIntegrationTests
from zep_core import ValidationError

from zep_langchain import ZepRetriever


class TestZepRetrieverStandard(RetrieversIntegrationTests):
    """LangChain's standard retriever suite, on real SQLite/Chroma/Kùzu stores."""

    @pytest.fixture(autouse=True)
    def _memory(self, alice_memory):
        self.memory = alice_memory

    @property
    def retriever_constructor(self) -> type[ZepRetriever]:
        return ZepRetriever

    @property
    def retriever_constructor_params(self) -> dict:
        return {"memory": self.memory, "user_id": "alice"}

    @property
    def retriever_query_example(self) -> str:
        return "What do you know about Alice?"


def test_documents_carry_the_fact_its_triple_validity_and_score_parts(alice_memory):
    docs = ZepRetriever(memory=alice_memory, user_id="alice", k=10).invoke("Where does Alice live?")
    lives = [d for d in docs if d.metadata["predicate"] == "lives_in" and d.metadata["subject"] == "Alice"]
    assert [d.page_content for d in lives] == ["Alice lives in Berlin."]
    meta = lives[0].metadata
    assert (meta["subject"], meta["predicate"], meta["object"]) == ("Alice", "lives_in", "Berlin")
    assert meta["valid_from"].startswith("2024-03-01") and meta["valid_until"] is None
    assert meta["score"] > 0 and meta["semantic_score"] > 0 and meta["graph_score"] == 1.0
    assert meta["source_message_ids"] and meta["episode_id"]
    assert lives[0].id == meta["fact_id"]


def test_superseded_facts_are_not_retrieved(alice_memory):
    docs = ZepRetriever(memory=alice_memory, user_id="alice").invoke("Where does Alice live?")
    assert not any("Paris" in d.page_content for d in docs)


def test_as_of_retrieves_what_was_true_then(alice_memory):
    retriever = ZepRetriever(memory=alice_memory, user_id="alice", as_of="2024-02-01T00:00:00+00:00")
    texts = [d.page_content for d in retriever.invoke("Where does Alice live?")]
    assert "Alice lives in Paris." in texts and "Alice lives in Berlin." not in texts


def test_k_in_invoke_overrides_the_field(alice_memory):
    retriever = ZepRetriever(memory=alice_memory, user_id="alice", k=5)
    assert len(retriever.invoke("What do you know about Alice?")) == 5
    assert len(retriever.invoke("What do you know about Alice?", k=2)) == 2


def test_user_name_reads_first_person_questions_as_that_user(alice_memory):
    plain = ZepRetriever(memory=alice_memory, user_id="alice", k=3).invoke("Where do I live?")
    named = ZepRetriever(memory=alice_memory, user_id="alice", k=3, user_name="Alice").invoke("Where do I live?")
    def graph_score(docs):
        return next((d.metadata["graph_score"] for d in docs if d.page_content == "Alice lives in Berlin."), None)

    assert graph_score(named) == 1.0  # "I" is Alice: her facts are found through the graph too
    assert graph_score(plain) in (None, 0.0)  # "I" is the unnamed default user: no graph match


def test_unknown_user_gets_no_documents_not_an_error(alice_memory):
    assert ZepRetriever(memory=alice_memory, user_id="nobody").invoke("Where does Alice live?") == []


def test_other_users_facts_never_come_back(alice_memory):
    docs = ZepRetriever(memory=alice_memory, user_id="bob").invoke("Alice")
    assert docs == []


async def test_ainvoke_matches_invoke(alice_memory):
    retriever = ZepRetriever(memory=alice_memory, user_id="alice", k=3)
    sync = [d.page_content for d in retriever.invoke("Where does Alice live?")]
    async_ = [d.page_content for d in await retriever.ainvoke("Where does Alice live?")]
    assert async_ == sync and len(sync) == 3


def test_bad_arguments_are_refused(alice_memory):
    with pytest.raises(ValueError):
        ZepRetriever(memory=alice_memory, user_id="alice", k=0)
    with pytest.raises(ValidationError, match="does not take 'top_k' as an invoke.. argument.*use k="):
        ZepRetriever(memory=alice_memory, user_id="alice").invoke("x", top_k=3)
    with pytest.raises(ValidationError, match="'filter'.*scoped by user_id"):
        ZepRetriever(memory=alice_memory, user_id="alice").invoke("x", filter={"subject": "Alice"})


@pytest.mark.parametrize(("field", "hint"), [("top_k", "use k="), ("filter", "scoped by user_id"),
                                             ("kk", "it takes memory, user_id, k")])
def test_unknown_constructor_fields_are_refused_with_what_to_use(alice_memory, field, hint):
    with pytest.raises(ValueError, match=f"does not take '{field}' as an argument") as caught:
        ZepRetriever(memory=alice_memory, user_id="alice", **{field: 1})
    assert hint in str(caught.value)


def test_search_kwargs_set_k_as_of_and_threshold(alice_memory):
    docs = ZepRetriever(memory=alice_memory, user_id="alice", search_kwargs={"k": 2}).invoke("What about Alice?")
    assert len(docs) == 2
    then = ZepRetriever(memory=alice_memory, user_id="alice", search_kwargs={"as_of": "2024-02-01T00:00:00+00:00"})
    texts = [d.page_content for d in then.invoke("Where does Alice live?")]
    assert "Alice lives in Paris." in texts and "Alice lives in Berlin." not in texts
    loose = ZepRetriever(memory=alice_memory, user_id="alice", search_kwargs={"threshold": 0.0, "k": 50})
    strict = ZepRetriever(memory=alice_memory, user_id="alice", search_kwargs={"threshold": 0.99, "k": 50})
    question = "quantum chromodynamics lecture notes"  # shares no word and no entity with Alice's facts
    assert loose.invoke(question) and strict.invoke(question) == []
    assert len(strict.invoke(question, threshold=0.0)) == len(loose.invoke(question))  # a call's value wins


def test_search_kwargs_override_the_fields(alice_memory):
    retriever = ZepRetriever(memory=alice_memory, user_id="alice", k=5, search_kwargs={"k": 1})
    assert len(retriever.invoke("What about Alice?")) == 1
    assert len(retriever.invoke("What about Alice?", k=3)) == 3


@pytest.mark.parametrize("search_kwargs", [{"top_k": 2}, {"k": 0}, {"threshold": 2}, {"as_of": "yesterday"}])
def test_bad_search_kwargs_are_refused(alice_memory, search_kwargs):
    with pytest.raises(ValueError):
        ZepRetriever(memory=alice_memory, user_id="alice", search_kwargs=search_kwargs)


def test_a_user_is_required(alice_memory):
    with pytest.raises(ValueError, match="user_id"):
        ZepRetriever(memory=alice_memory)


def test_an_unnamed_user_is_the_default_speaker(memory):
    from langchain_core.messages import HumanMessage

    from zep_langchain import ZepChatMessageHistory

    history = ZepChatMessageHistory(memory, "s1", user_id="u1")
    history.add_messages([HumanMessage("I live in Paris.")])
    history.end_conversation()
    texts = [d.page_content for d in ZepRetriever(memory=memory, user_id="u1").invoke("Where do I live?")]
    assert "User lives in Paris." in texts
