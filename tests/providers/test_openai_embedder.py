"""The OpenAI-compatible embedder: batches, unit vectors, identity, query cache, switching models."""

from __future__ import annotations

import numpy as np
import pytest
from zep_core import ConfigError, Memory, MemoryConfig, Message, ProviderError
from zep_core.providers.fake_openai import server_error
from zep_core.providers.openai import OpenAIEmbedder, OpenAIExtractor

from tests.providers.conftest import DIM, answer, fact


def test_one_request_per_batch_never_one_per_text(client, fake):
    embedder = OpenAIEmbedder(dimensions=DIM, batch_size=2, client=client)
    vectors = embedder.embed(["Alice lives in Paris.", "Bob likes golf.", "Carol works at Acme.", "Dan", "Eve"])
    requests = fake.log("embeddings")
    assert [len(r.body["input"]) for r in requests] == [2, 2, 1]
    assert all(r.body["dimensions"] == DIM and r.body["encoding_format"] == "float" for r in requests)
    assert vectors.shape == (5, DIM) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)
    assert embedder.usage.requests == 3


def test_name_and_dimension_identify_the_model(client):
    assert (OpenAIEmbedder(client=client).name, OpenAIEmbedder(client=client).dimension) == (
        "openai:text-embedding-3-small", 1536)
    short = OpenAIEmbedder(dimensions=256, client=client)
    assert (short.name, short.dimension) == ("openai:text-embedding-3-small@256", 256)


def test_an_unknown_model_is_asked_its_dimension_once(client, fake):
    embedder = OpenAIEmbedder("nomic-embed-text", client=client)
    assert embedder.dimension == DIM and embedder.dimension == DIM
    assert len(fake.log("embeddings")) == 1


def test_vectors_of_the_wrong_size_are_an_error(client):
    embedder = OpenAIEmbedder("text-embedding-3-small", client=client)  # expects 1536, the server sends 64
    with pytest.raises(ProviderError, match="expected 1536"):
        embedder.embed(["Alice"])


def test_repeated_queries_are_served_from_the_cache(client, fake):
    embedder = OpenAIEmbedder(dimensions=DIM, client=client)
    first = embedder.embed_query("where does Alice live?")
    again = embedder.embed_query("where does Alice live?")
    embedder.embed_query("what does Bob like?")
    assert first is again and not first.flags.writeable
    assert len(fake.log("embeddings")) == 2


def test_embedding_failures_are_retried_then_raised(make_client, fake, sleeps):
    embedder = OpenAIEmbedder(dimensions=DIM, client=make_client(max_retries=1))
    fake.push_embeddings(server_error(500))
    assert embedder.embed(["ok"]).shape == (1, DIM) and len(sleeps) == 1
    fake.push_embeddings(server_error(500), server_error(500))
    with pytest.raises(ProviderError, match="HTTP 500"):
        embedder.embed(["fails"])


def test_an_episode_embeds_its_new_facts_and_entities_in_one_request(openai_memory, fake):
    memory = openai_memory()
    fake.push_chat(answer(fact("Alice", "lives_in", "Paris"), fact("Alice", "likes", "tea"),
                          fact("Alice", "works_at", "Acme")))
    memory.conversation_end("s", [Message("I live in Paris, like tea and work at Acme.", name="Alice")],
                            user_id="alice")
    sizes = sorted(len(r.body["input"]) for r in fake.log("embeddings"))
    assert sizes == [7]  # the three facts and the four new entities, in one request


def test_switching_between_openai_and_local_embedders_needs_a_reembed(tmp_path, client, fake, embedder, clock):
    data = tmp_path / "data"
    remote = OpenAIEmbedder(dimensions=DIM, client=client)
    fake.push_chat(answer(fact("Alice", "lives_in", "Paris")))
    with Memory(MemoryConfig(data_dir=data, embedder=remote, extractor=OpenAIExtractor(client=client)),
                clock=clock) as memory:
        memory.conversation_end("s", [Message("I live in Paris.", name="Alice")], user_id="alice")

    with pytest.raises(ConfigError, match=r"openai:text-embedding-3-small@64 \(64-d\).*local:"):
        Memory(MemoryConfig(data_dir=data, embedder=embedder), clock=clock)

    with Memory(MemoryConfig(data_dir=data, embedder=embedder, on_embedder_mismatch="reembed"),
                clock=clock) as memory:
        assert memory.stats()["embedder"] == {"name": embedder.name, "dimension": 384}
        found = memory.get_context("Where does Alice live?", user_id="alice")
        assert found[0].content == "Alice lives in Paris." and found[0].semantic_score > 0.6

    requests_before = len(fake.log("embeddings"))
    with pytest.raises(ConfigError, match="vectors cannot be mixed"):
        Memory(MemoryConfig(data_dir=data, embedder=remote), clock=clock)
    assert len(fake.log("embeddings")) == requests_before  # refused before any embedding was asked for
