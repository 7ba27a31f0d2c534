"""The store seam: Memory takes its stores from an opener, and uses them only through the Protocols.

The opener below hands Memory the real Chroma and Kùzu stores behind thin wrappers
that expose the Protocol methods and nothing else, and count the calls. Whatever the
façade, the ingest pipeline, the retrieval and the maintenance need, they get through
``VectorIndex`` and ``GraphIndex``: a server-grade store with those methods plugs in
the same way.
"""

from __future__ import annotations

from collections import Counter

from zep_core import Memory, MemoryConfig, Message
from zep_core.stores import Stores, open_stores
from zep_core.stores.base import GraphIndex, VectorIndex

VECTOR_METHODS = ("upsert", "delete", "query", "ids", "count", "drop_user", "reset", "close")
GRAPH_METHODS = ("upsert_entities", "upsert_facts", "delete_facts", "related", "snapshot", "drop_user", "reset",
                 "close")  # get_context's hop reads SQLite's adjacency indexes, not the graph index


class ProtocolOnly:
    """Forwards the named methods to a real store and counts them; has no other attribute."""

    def __init__(self, inner, methods, calls: Counter) -> None:
        for name in methods:
            setattr(self, name, self._counted(getattr(inner, name), name, calls))

    @staticmethod
    def _counted(method, name, calls):
        def call(*args, **kwargs):
            calls[name] += 1
            return method(*args, **kwargs)
        return call


def test_memory_works_on_any_stores_with_the_protocol_methods(tmp_path, embedder):
    calls: Counter = Counter()

    def opener(config: MemoryConfig) -> Stores:
        real = open_stores(config)
        return Stores(real.records, ProtocolOnly(real.vectors, VECTOR_METHODS, calls),
                      ProtocolOnly(real.graph, GRAPH_METHODS, calls), real.lock)

    config = MemoryConfig(data_dir=tmp_path / "data", embedder=embedder)
    with Memory(config, stores=opener) as memory:
        assert isinstance(memory._stores.vectors, VectorIndex) and isinstance(memory._stores.graph, GraphIndex)
        memory.conversation_end("s1", [Message("I live in Paris.", name="Alice")], user_id="alice")
        memory.conversation_end("s2", [Message("I moved to Berlin and I work at Acme.", name="Alice")],
                                user_id="alice")
        memory.conversation_end("s1", [Message("I live in Rome.", name="Bob")], user_id="bob")
        block = memory.context_block("Where does Alice live?", user_id="alice")
        assert "Berlin" in block and "Paris" not in block
        assert {e.name for e in memory.related_entities("Alice", user_id="alice")} >= {"Berlin", "Acme"}
        assert memory.cypher("MATCH (a:Entity {name: 'Alice'})-[r:FACT]->(b) WHERE r.current RETURN b.name AS n",
                             user_id="alice")
        assert memory.rebuild()["facts"] > 0 and memory.check_consistency() == {}
        memory.forget_user("bob")
        assert memory.stats()["vectors"]["current"] > 0
    assert calls["upsert"] and calls["query"] and calls["upsert_facts"]
    assert calls["related"] and calls["reset"] == 2 and calls["drop_user"] == 2
    assert calls["close"] == 2
    with Memory(config) as again:  # the default opener reads what the wrapped stores wrote
        assert "Berlin" in again.context_block("Where does Alice live?", user_id="alice")
