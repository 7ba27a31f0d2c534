"""A whole Memory on the store seam's double: no file written, and a folder opened again finds what it held."""

from __future__ import annotations

import doctest

from zep_core import Memory, MemoryConfig, Message
from zep_core.stores.base import GraphIndex, VectorIndex

from tests.stores import memory_backend
from tests.stores.memory_backend import MemoryBackend


def test_the_module_example_runs():
    result = doctest.testmod(memory_backend)
    assert result.attempted > 0 and result.failed == 0


def test_a_memory_on_the_double_writes_no_file_and_finds_its_data_when_opened_again(tmp_path, embedder):
    opener, config = MemoryBackend(), MemoryConfig(data_dir=tmp_path / "data", embedder=embedder)
    with Memory(config, stores=opener) as memory:
        assert isinstance(memory._stores.vectors, VectorIndex) and isinstance(memory._stores.graph, GraphIndex)
        memory.conversation_end("s1", [Message("I live in Paris.", name="Alice")], user_id="alice")
        memory.conversation_end("s2", [Message("I moved to Berlin and I work at Acme.", name="Alice")], user_id="alice")
        memory.conversation_end("s1", [Message("I live in Rome.", name="Bob")], user_id="bob")
    assert not (tmp_path / "data").exists()
    with Memory(config, stores=opener) as again:
        block = again.context_block("Where does Alice live?", user_id="alice")
        assert "Berlin" in block and "Paris" not in block
        assert {e.name for e in again.related_entities("Alice", user_id="alice")} >= {"Berlin", "Acme"}
        assert again.rebuild()["facts"] > 0 and again.check_consistency() == {}
        again.forget_user("bob")
        assert again.users() == ["alice"] and again.stats()["vectors"]["current"] > 0
    with Memory(config, stores=MemoryBackend()) as elsewhere:  # a new opener: a new, empty disk
        assert elsewhere.users() == []


def test_stats_names_the_backend_that_opened_the_stores_not_the_one_the_config_would_choose(tmp_path, embedder):
    config = MemoryConfig(data_dir=tmp_path / "data", embedder=embedder)  # no URL: the config alone says "sqlite"
    with Memory(config, stores=MemoryBackend()) as memory:
        stats = memory.stats()
        assert stats["backend"] == "custom" and stats["database"] is None
    with Memory(config) as memory:
        assert memory.stats()["backend"] == "sqlite"
