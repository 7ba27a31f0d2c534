"""Batched graph writes: a call written with one statement per chunk of rows stores exactly
what the same rows written one statement per row store.

``KuzuGraphIndex(batch_from=...)`` picks the way: ``1`` always batched, a huge number always
one statement per row, ``None`` (the default) by the graph's size.
"""

from __future__ import annotations

import pytest
from zep_core.errors import StoreError
from zep_core.stores.base import EntityNode, FactEdge
from zep_core.stores.graph import KuzuGraphIndex

BATCHED, ROW_BY_ROW, AUTO = 1, 10**9, None


def t(year: int) -> str:
    return f"{year:04d}-01-01T00:00:00.000000+00:00"


def node(user: str, key: str, name: str | None = None) -> EntityNode:
    return EntityNode(f"{user}-{key}", user, name or key.title(), "thing")


def fact(fid: str, user: str, subject: str, obj: str, *, since: int = 2024, until: int | None = None) -> FactEdge:
    return FactEdge(fid, user, f"{user}-{subject}", f"{user}-{obj}", "knows", t(since),
                    None if until is None else t(until), until is None)


@pytest.fixture
def open_graph(tmp_path):
    """Open a Kùzu graph over its own folder, written batched, row by row or automatically."""
    opened: list[KuzuGraphIndex] = []

    def opener(batch_from: int | None, name: str = "graph") -> KuzuGraphIndex:
        g = KuzuGraphIndex(tmp_path / name, buffer_pool_mb=64, batch_from=batch_from)
        opened.append(g)
        return g

    yield opener
    for g in opened:
        g.close()


def nodes_of(graph: KuzuGraphIndex) -> list[dict]:
    return graph.read_query("MATCH (e:Entity) RETURN e.id AS id, e.user_id AS user, e.name AS name, "
                            "e.entity_type AS type ORDER BY id", {})


def edges_of(graph: KuzuGraphIndex) -> list[dict]:
    """Every stored relationship with all its properties, duplicates kept."""
    return graph.read_query(
        "MATCH (a:Entity)-[r:FACT]->(b:Entity) RETURN r.fact_id AS fact, a.id AS subject, b.id AS object, "
        "r.user_id AS user, r.predicate AS predicate, r.valid_from AS since, r.valid_until AS until, "
        "r.current AS current ORDER BY fact, subject, object", {})


def state(graph: KuzuGraphIndex) -> tuple:
    return graph.snapshot(), nodes_of(graph), edges_of(graph)


def mixed_rows() -> tuple[list[EntityNode], list[FactEdge]]:
    """Two users' entities and facts, with the cases a batch must get right."""
    entities = [node("alice", k) for k in "a b c d e".split()] + [node("bob", k) for k in "a b c".split()]
    entities += [node("alice", "a", "Renamed"), node("bob", "c", "Other")]  # repeated ids: the first one counts
    facts = [fact("f1", "alice", "a", "b"), fact("f2", "alice", "b", "c", since=2020, until=2022),
             fact("f3", "alice", "c", "d"), fact("f4", "bob", "a", "b"), fact("f5", "bob", "b", "c", until=2025),
             fact("f1", "alice", "a", "b", until=2026),  # the same fact again in the call: the last one counts
             fact("f6", "alice", "a", "nobody"),  # an entity that is not stored: left out
             fact("f7", "alice", "e", "a"), fact("f8", "bob", "c", "a")]
    return entities, facts


@pytest.mark.parametrize("way", [BATCHED, AUTO])
def test_a_batched_call_stores_what_one_call_per_row_stores(open_graph, way):
    entities, facts = mixed_rows()
    batched, one_by_one = open_graph(way, "batched"), open_graph(ROW_BY_ROW, "one-by-one")
    batched.upsert_entities(entities)
    batched.upsert_facts(facts)
    for e in entities:
        one_by_one.upsert_entities([e])
    for f in facts:
        one_by_one.upsert_facts([f])
    assert state(batched) == state(one_by_one)
    assert batched.snapshot("alice") == ({f"alice-{k}" for k in "abcde"}, {"f1": False, "f2": False, "f3": True,
                                                                           "f7": True})
    assert batched.snapshot("bob") == ({"bob-a", "bob-b", "bob-c"}, {"f4": True, "f5": False, "f8": True})
    assert {n["id"]: n["name"] for n in nodes_of(batched)}["alice-a"] == "A"
    assert [e["until"] for e in edges_of(batched) if e["fact"] == "f1"] == [t(2026)]


def test_both_ways_store_the_same_on_a_graph_that_already_holds_data(open_graph):
    entities, facts = mixed_rows()
    graphs = [open_graph(BATCHED, "batched"), open_graph(ROW_BY_ROW, "one-by-one")]
    for g in graphs:
        g.upsert_entities([node("alice", "a", "Kept"), node("alice", "z")])
        g.upsert_facts([fact("f1", "alice", "a", "z"), fact("f3", "alice", "c", "d"), fact("old", "alice", "z", "a")])
        g.upsert_entities(entities)
        g.upsert_facts(facts)
        g.delete_facts([("old", "alice-z", "alice-a"), ("f7", "alice-e", "alice-a")])
    assert state(graphs[0]) == state(graphs[1])
    assert {n["id"]: n["name"] for n in nodes_of(graphs[0])}["alice-a"] == "Kept"  # stored nodes are left alone


@pytest.mark.parametrize("way", [BATCHED, AUTO])
def test_upserting_a_batch_again_changes_nothing_and_duplicates_no_edge(open_graph, way):
    graph = open_graph(way)
    entities, facts = mixed_rows()
    graph.upsert_entities(entities)
    graph.upsert_facts(facts)
    before = state(graph)
    for _ in range(3):
        graph.upsert_entities(entities)
        graph.upsert_facts(facts)
    assert state(graph) == before
    fact_ids = [e["fact"] for e in edges_of(graph)]
    assert len(fact_ids) == len(set(fact_ids)) == 7


@pytest.mark.parametrize("way", [BATCHED, AUTO])
def test_a_batch_supersedes_current_facts(open_graph, way):
    graph = open_graph(way)
    keys = [f"n{i}" for i in range(40)]
    graph.upsert_entities(node("alice", k) for k in ["hub", *keys])
    graph.upsert_facts(fact(f"f{k}", "alice", "hub", k, since=2020) for k in keys)
    assert graph.neighbours("alice", ["alice-hub"]) == {f"alice-{k}" for k in keys}
    graph.upsert_facts(fact(f"f{k}", "alice", "hub", k, since=2020, until=2023) for k in keys[:30])
    assert graph.snapshot("alice")[1] == {f"f{k}": k in keys[30:] for k in keys}
    assert graph.neighbours("alice", ["alice-hub"]) == {f"alice-{k}" for k in keys[30:]}
    assert graph.neighbours("alice", ["alice-hub"], as_of=t(2022)) == {f"alice-{k}" for k in keys}
    assert len(edges_of(graph)) == 40
    assert {(e["since"], e["until"], e["current"]) for e in edges_of(graph) if e["fact"] == "fn0"} == {
        (t(2020), t(2023), False)}


@pytest.mark.parametrize("way", [BATCHED, ROW_BY_ROW, AUTO])
def test_delete_facts_in_a_batch_removes_exactly_the_named_relationships(open_graph, way):
    graph = open_graph(way)
    keys = [f"n{i}" for i in range(30)]
    graph.upsert_entities(node(u, k) for u in ("alice", "bob") for k in ["hub", *keys])
    graph.upsert_facts(fact(f"{u}-{k}", u, "hub", k) for u in ("alice", "bob") for k in keys)
    gone = [(f"alice-{k}", "alice-hub", f"alice-{k}") for k in keys[:20]]
    graph.delete_facts([*gone, *gone[:5],  # named twice
                        ("never-stored", "alice-hub", "alice-n25"), ("bob-n1", "bob-nobody", "bob-n1"),
                        ("bob-n2", "bob-hub", "bob-n3")])  # a stored fact id, but between other entities: kept
    graph.delete_facts([])
    assert graph.snapshot("alice")[1] == {f"alice-{k}": True for k in keys[20:]}
    assert graph.snapshot("bob")[1] == {f"bob-{k}": True for k in keys}
    assert graph.neighbours("alice", ["alice-hub"]) == {f"alice-{k}" for k in keys[20:]}
    graph.delete_facts(gone)  # deleting again is fine
    assert len(edges_of(graph)) == 40


def test_a_batch_of_five_thousand_edges_is_stored_whole(open_graph):
    graph = open_graph(AUTO)
    keys = [f"n{i}" for i in range(500)]
    graph.upsert_entities(node("alice", k) for k in keys)
    edges = [fact(f"f{i}", "alice", keys[i % 500], keys[(i * 7 + 1) % 500]) for i in range(5000)]
    graph.upsert_facts(edges)
    assert graph.snapshot("alice") == ({f"alice-{k}" for k in keys}, {f"f{i}": True for i in range(5000)})
    graph.upsert_facts(FactEdge(e.fact_id, e.user_id, e.subject_id, e.object_id, e.predicate, e.valid_from, t(2025),
                                False) for e in edges)
    assert graph.snapshot("alice")[1] == {f"f{i}": False for i in range(5000)}
    assert graph.read_query("MATCH ()-[r:FACT]->() RETURN count(r) AS n", {}) == [{"n": 5000}]
    assert graph.neighbours("alice", ["alice-n0"]) == set()
    graph.delete_facts((e.fact_id, e.subject_id, e.object_id) for e in edges[:4500])
    assert graph.snapshot("alice")[1] == {f"f{i}": False for i in range(4500, 5000)}


@pytest.mark.parametrize("way", [BATCHED, AUTO])
def test_a_batch_mixing_users_keeps_each_users_graph_apart(open_graph, way):
    graph = open_graph(way)
    users = [f"user{i}" for i in range(5)]
    graph.upsert_entities(node(u, k) for k in ("a", "b", "c") for u in users)
    graph.upsert_facts(fact(f"{u}-f{j}", u, s, o) for j, (s, o) in enumerate([("a", "b"), ("b", "c")]) for u in users)
    for u in users:
        assert graph.snapshot(u) == ({f"{u}-a", f"{u}-b", f"{u}-c"}, {f"{u}-f0": True, f"{u}-f1": True})
        assert graph.neighbours(u, [f"{u}-b"]) == {f"{u}-a", f"{u}-c"}
        assert graph.related(u, f"{u}-a") == [f"{u}-b", f"{u}-c"]
    assert graph.neighbours("user0", ["user1-b"]) == set()
    graph.drop_user("user2")
    graph.upsert_facts(fact(f"{u}-f0", u, "a", "b", until=2025) for u in users)  # user2's edge has no nodes now
    assert graph.snapshot("user2") == (set(), {})
    assert graph.snapshot("user3")[1] == {"user3-f0": False, "user3-f1": True}


def test_a_batched_write_that_fails_changes_nothing(open_graph):
    graph = open_graph(BATCHED)
    graph.upsert_entities(node("alice", k) for k in "a b c".split())
    graph.upsert_facts([fact("f1", "alice", "a", "b")])
    before = state(graph)
    bad = FactEdge("f2", "alice", "alice-b", "alice-c", "knows", 20240101, None, True)  # not an ISO string
    with pytest.raises(StoreError):
        graph.upsert_facts([fact("f1", "alice", "a", "b", until=2025), bad])
    assert state(graph) == before
    graph.upsert_facts([fact("f1", "alice", "a", "b", until=2025)])  # and the graph still takes writes
    assert graph.snapshot("alice")[1] == {"f1": False}


def test_batched_writes_are_there_after_reopening(open_graph, tmp_path):
    graph = open_graph(BATCHED)
    entities, facts = mixed_rows()
    graph.upsert_entities(entities)
    graph.upsert_facts(facts)
    before = state(graph)
    graph.close()
    again = KuzuGraphIndex(tmp_path / "graph", buffer_pool_mb=64)
    try:
        assert state(again) == before
    finally:
        again.close()
