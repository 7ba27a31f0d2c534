"""One contract for the graph index, run against every implementation of :class:`GraphIndex`: Kùzu, and the double.

A test marked ``cypher`` reads through ``read_query``, which only the implementations of
:data:`TAKE_CYPHER` have (the double has none: ``Memory.cypher`` builds a graph of its own
from the records). Times are ISO strings as the stores keep them (``records.iso``: UTC, microseconds, ``+00:00``),
so string order is time order.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from zep_core.errors import QueryError
from zep_core.stores.base import EntityNode, FactEdge, GraphIndex
from zep_core.stores.graph import KuzuGraphIndex

from tests.stores.memory_indexes import MemoryGraphIndex

#: The double's shelf in this test: opening it again in the test finds what it held, as a folder does.
SHELF = pytest.StashKey[dict]()


def kuzu_embedded(folder: Path, request: pytest.FixtureRequest) -> GraphIndex:
    return KuzuGraphIndex(folder / "graph", buffer_pool_mb=64)


def in_memory(folder: Path, request: pytest.FixtureRequest) -> GraphIndex:
    return MemoryGraphIndex(request.node.stash.setdefault(SHELF, {}))


#: Every implementation under test: a name and a function that opens one over this test's folder
#: (opening the same folder again must find the same data). A server-backed one gets its server
#: with ``request.getfixturevalue(...)``, as the vector contract does with ``chroma_server``.
IMPLEMENTATIONS: dict[str, Callable[[Path, pytest.FixtureRequest], GraphIndex]] = {
    "kuzu-embedded": kuzu_embedded,
    "memory": in_memory,
}
#: The implementations that take read-only Cypher (``read_query``): the only ones a ``cypher`` test runs on.
TAKE_CYPHER = {"kuzu-embedded"}


def pytest_generate_tests(metafunc):
    if "open_graph" in metafunc.fixturenames:
        cypher = metafunc.definition.get_closest_marker("cypher") is not None
        metafunc.parametrize("open_graph", [name for name in IMPLEMENTATIONS if not cypher or name in TAKE_CYPHER],
                             indirect=True)


@pytest.fixture
def open_graph(request, tmp_path) -> Callable[[], GraphIndex]:
    """Open the implementation under test over this test's own folder."""
    opener = IMPLEMENTATIONS[request.param]
    return lambda: opener(tmp_path, request)


@pytest.fixture
def graph(open_graph):
    g = open_graph()
    yield g
    g.close()


def t(year: int, month: int = 1, day: int = 1) -> str:
    return f"{year:04d}-{month:02d}-{day:02d}T00:00:00.000000+00:00"


def node(user: str, key: str, name: str | None = None) -> EntityNode:
    return EntityNode(f"{user}-{key}", user, name or key.title(), "thing")


def fact(fid: str, user: str, subject: str, obj: str, *, since: str = t(2024), until: str | None = None,
         current: bool | None = None) -> FactEdge:
    return FactEdge(fid, user, f"{user}-{subject}", f"{user}-{obj}", "knows", since, until,
                    until is None if current is None else current)


def ids(user: str, *keys: str) -> set[str]:
    return {f"{user}-{k}" for k in keys}


def add(graph: GraphIndex, user: str, keys: str, *edges: tuple[str, str, str]) -> None:
    """Entities named by ``keys`` (space-separated) and current facts ``(fact_id, subject, object)``."""
    graph.upsert_entities(node(user, k) for k in keys.split())
    graph.upsert_facts(fact(f, user, s, o) for f, s, o in edges)


def fact_rows(graph: GraphIndex, fid: str) -> list[dict]:
    return graph.read_query("MATCH (:Entity)-[r:FACT]->(:Entity) WHERE r.fact_id = $f "
                            "RETURN r.current AS current, r.valid_from AS since, r.valid_until AS until", {"f": fid})


def test_every_implementation_is_a_graph_index(graph):
    assert isinstance(graph, GraphIndex)


# -- upserts and deletes ------------------------------------------------------------------


@pytest.mark.cypher
def test_upserting_the_same_entity_twice_keeps_one_node(graph):
    graph.upsert_entities([node("alice", "paris")])
    graph.upsert_entities([node("alice", "paris")])
    graph.upsert_entities([])
    assert graph.snapshot("alice") == (ids("alice", "paris"), {})
    assert graph.read_query("MATCH (e:Entity) RETURN count(e) AS n", {}) == [{"n": 1}]


def test_upserting_an_entity_again_keeps_its_facts(graph):
    add(graph, "alice", "a b", ("f1", "a", "b"))
    graph.upsert_entities([node("alice", "a"), node("alice", "b")])
    assert graph.snapshot("alice") == (ids("alice", "a", "b"), {"f1": True})
    assert graph.neighbours("alice", ["alice-a"]) == ids("alice", "b")


def test_entities_of_two_users_stay_apart(graph):
    graph.upsert_entities([node("alice", "paris"), node("bob", "paris"), node("bob", "rome")])
    assert graph.snapshot("alice") == (ids("alice", "paris"), {})
    assert graph.snapshot("bob") == (ids("bob", "paris", "rome"), {})
    assert graph.snapshot("carol") == (set(), {})


@pytest.mark.cypher
def test_an_upserted_fact_links_its_two_entities_as_current(graph):
    add(graph, "alice", "a b", ("f1", "a", "b"))
    assert graph.snapshot("alice") == (ids("alice", "a", "b"), {"f1": True})
    assert fact_rows(graph, "f1") == [{"current": True, "since": t(2024), "until": None}]


@pytest.mark.cypher
def test_upserting_a_fact_again_replaces_its_state_without_duplicating_it(graph):
    add(graph, "alice", "a b", ("f1", "a", "b"))
    superseded = fact("f1", "alice", "a", "b", since=t(2024), until=t(2025), current=False)
    for _ in range(2):  # idempotent: the second upsert changes nothing
        graph.upsert_facts([superseded])
        assert fact_rows(graph, "f1") == [{"current": False, "since": t(2024), "until": t(2025)}]
        assert graph.snapshot("alice") == (ids("alice", "a", "b"), {"f1": False})
    assert graph.neighbours("alice", ["alice-a"]) == set()
    assert graph.neighbours("alice", ["alice-a"], as_of=t(2024, 6)) == ids("alice", "b")


def test_delete_facts_removes_the_relationship_and_ignores_missing_ones(graph):
    add(graph, "alice", "a b c", ("f1", "a", "b"), ("f2", "a", "c"))
    graph.delete_facts([("f1", "alice-a", "alice-b"), ("never-stored", "alice-a", "alice-c"),
                        ("f9", "alice-nobody", "alice-nowhere")])
    graph.delete_facts([])
    assert graph.snapshot("alice") == (ids("alice", "a", "b", "c"), {"f2": True})
    assert graph.neighbours("alice", ["alice-a"]) == ids("alice", "c")
    graph.delete_facts([("f1", "alice-a", "alice-b")])  # deleting again is fine
    assert graph.snapshot("alice")[1] == {"f2": True}


# -- neighbours -----------------------------------------------------------------------------


def test_neighbours_are_one_hop_away_over_current_facts_in_either_direction(graph):
    add(graph, "alice", "a b c d", ("f1", "a", "b"), ("f2", "c", "a"), ("f3", "b", "d"))
    graph.upsert_facts([fact("old", "alice", "a", "d", since=t(2020), until=t(2021), current=False)])
    assert graph.neighbours("alice", ["alice-a"]) == ids("alice", "b", "c")
    assert graph.neighbours("alice", ["alice-d"]) == ids("alice", "b")
    assert graph.neighbours("alice", []) == set()


def test_neighbours_as_of_follow_the_facts_valid_at_that_time(graph):
    graph.upsert_entities(node("alice", k) for k in "a b c d".split())
    graph.upsert_facts([fact("f1", "alice", "a", "b", since=t(2020), until=t(2022), current=False),
                        fact("f2", "alice", "a", "c", since=t(2022)),
                        fact("f3", "alice", "a", "d", since=t(2021), until=t(2023), current=False)])
    start = ["alice-a"]
    assert graph.neighbours("alice", start, as_of=t(2019)) == set()
    assert graph.neighbours("alice", start, as_of=t(2020)) == ids("alice", "b")  # valid_from is included
    assert graph.neighbours("alice", start, as_of=t(2021, 6)) == ids("alice", "b", "d")
    assert graph.neighbours("alice", start, as_of=t(2022)) == ids("alice", "c", "d")  # valid_until is not
    assert graph.neighbours("alice", start, as_of=t(2030)) == ids("alice", "c")
    assert graph.neighbours("alice", start) == ids("alice", "c")


def test_neighbours_never_include_the_start_entities(graph):
    add(graph, "alice", "a b c", ("f1", "a", "b"), ("f2", "b", "c"), ("f3", "c", "a"))
    assert graph.neighbours("alice", ["alice-a", "alice-b"]) == ids("alice", "c")
    assert graph.neighbours("alice", ["alice-a", "alice-b", "alice-c"]) == set()


def test_neighbours_are_scoped_to_the_user(graph):
    add(graph, "alice", "a b", ("fa", "a", "b"))
    add(graph, "bob", "a c", ("fb", "a", "c"))
    assert graph.neighbours("alice", ["alice-a"]) == ids("alice", "b")
    assert graph.neighbours("bob", ["bob-a"]) == ids("bob", "c")
    assert graph.neighbours("bob", ["alice-a"]) == set()  # alice's entity, asked for as bob
    assert graph.neighbours("bob", ["alice-a", "bob-a"]) == ids("bob", "c")


def test_neighbours_respect_the_limit(graph):
    keys = [f"n{i}" for i in range(6)]
    add(graph, "alice", "hub " + " ".join(keys), *((f"f{k}", "hub", k) for k in keys))
    assert graph.neighbours("alice", ["alice-hub"]) == ids("alice", *keys)
    limited = graph.neighbours("alice", ["alice-hub"], limit=3)
    assert len(limited) == 3 and limited <= ids("alice", *keys)


# -- related --------------------------------------------------------------------------------


@pytest.fixture
def village(graph):
    """alice: start - Zed, start - Anna (1 hop); both - Aaron (2 hops); Aaron - Bea (3 hops).

    Ids sort against the names (Zed ``p1`` before Anna ``p2``, Aaron ``p0`` first), so order
    by name and nearness shows.
    """
    graph.upsert_entities([EntityNode("start", "alice", "Start", "person"), EntityNode("p1", "alice", "Zed", "person"),
                           EntityNode("p2", "alice", "Anna", "person"), EntityNode("p0", "alice", "Aaron", "person"),
                           EntityNode("p3", "alice", "Bea", "person")])
    graph.upsert_facts(FactEdge(f, "alice", s, o, "knows", t(2024), None, True)
                       for f, s, o in [("f1", "start", "p1"), ("f2", "p2", "start"), ("f3", "p1", "p0"),
                                       ("f4", "p2", "p0"), ("f5", "p0", "p3")])
    return graph


def test_related_lists_distinct_entities_within_hops_nearest_first_then_by_name(village):
    assert village.related("alice", "start", hops=1) == ["p2", "p1"]  # Anna before Zed
    assert village.related("alice", "start") == ["p2", "p1", "p0"]  # Aaron is two hops away: after both
    assert village.related("alice", "start", hops=3) == ["p2", "p1", "p0", "p3"]  # the start never comes back


def test_related_respects_the_limit(village):
    assert village.related("alice", "start", hops=3, limit=2) == ["p2", "p1"]
    assert village.related("alice", "start", hops=3, limit=1) == ["p2"]


def test_related_walks_superseded_facts_too(village):
    village.upsert_entities([EntityNode("x", "alice", "Ex", "person")])
    village.upsert_facts([FactEdge("old", "alice", "start", "x", "dated", t(2020), t(2021), False)])
    assert village.related("alice", "start", hops=1) == ["p2", "x", "p1"]  # Anna, Ex, Zed


def test_related_never_includes_other_users(village):
    village.upsert_entities([EntityNode("bz", "bob", "Zed", "person"), EntityNode("bs", "bob", "Start", "person")])
    village.upsert_facts([FactEdge("fb", "bob", "bs", "bz", "knows", t(2024), None, True)])
    assert village.related("alice", "start", hops=3) == ["p2", "p1", "p0", "p3"]
    assert village.related("bob", "bs", hops=3) == ["bz"]
    assert village.related("bob", "start", hops=3) == []  # alice's entity, asked for as bob
    assert village.related("alice", "nobody") == []


# -- read_query -----------------------------------------------------------------------------


@pytest.mark.cypher
def test_read_query_returns_rows_keyed_by_the_return_names(village):
    rows = village.read_query("MATCH (a:Entity)-[r:FACT]->(b:Entity) WHERE a.id = $id "
                              "RETURN a.name AS subject, r.predicate AS predicate, b.name AS object, "
                              "r.current AS current ORDER BY object", {"id": "p2"})
    assert rows == [{"subject": "Anna", "predicate": "knows", "object": "Aaron", "current": True},
                    {"subject": "Anna", "predicate": "knows", "object": "Start", "current": True}]
    assert village.read_query("MATCH (e:Entity) WHERE e.id = 'nobody' RETURN e.id AS id", {}) == []


@pytest.mark.cypher
@pytest.mark.parametrize("write", [
    "CREATE (:Entity {id: 'intruder', user_id: 'alice', name: 'Intruder', entity_type: 'thing'})",
    "MATCH (e:Entity) SET e.name = 'Changed'",
    "MATCH (:Entity)-[r:FACT]->(:Entity) DELETE r",
    "MERGE (:Entity {id: 'intruder'})",
])
def test_a_write_through_read_query_raises_and_leaves_the_graph_unchanged(village, write):
    before = village.snapshot()
    names = "MATCH (e:Entity) RETURN e.name AS name ORDER BY name"
    named = village.read_query(names, {})
    with pytest.raises(QueryError):
        village.read_query(write, {})
    assert village.snapshot() == before
    assert village.read_query(names, {}) == named  # and read_query still works afterwards
    village.upsert_entities([node("alice", "later")])  # so do writes
    assert "alice-later" in village.snapshot("alice")[0]


@pytest.mark.cypher
def test_a_failing_read_query_raises_query_error(graph):
    with pytest.raises(QueryError):
        graph.read_query("MATCH (e:Nowhere) RETURN e", {})
    assert graph.read_query("MATCH (e:Entity) RETURN count(e) AS n", {}) == [{"n": 0}]


# -- snapshot, drop_user, reset, reopening ------------------------------------------------------


def test_snapshot_reports_entities_and_fact_currency_per_user_and_for_all(graph):
    add(graph, "alice", "a b", ("fa1", "a", "b"))
    graph.upsert_facts([fact("fa2", "alice", "b", "a", since=t(2020), until=t(2021), current=False)])
    add(graph, "bob", "c d", ("fb1", "c", "d"))
    assert graph.snapshot("alice") == (ids("alice", "a", "b"), {"fa1": True, "fa2": False})
    assert graph.snapshot("bob") == (ids("bob", "c", "d"), {"fb1": True})
    assert graph.snapshot() == (ids("alice", "a", "b") | ids("bob", "c", "d"),
                                {"fa1": True, "fa2": False, "fb1": True})


def test_drop_user_removes_only_that_users_nodes_and_facts(graph):
    add(graph, "alice", "a b", ("fa", "a", "b"))
    add(graph, "bob", "a b", ("fb", "a", "b"))
    graph.drop_user("alice")
    assert graph.snapshot("alice") == (set(), {})
    assert graph.snapshot() == (ids("bob", "a", "b"), {"fb": True})
    assert graph.neighbours("bob", ["bob-a"]) == ids("bob", "b")
    graph.drop_user("alice")  # dropping twice is fine
    graph.drop_user("nobody")
    add(graph, "alice", "a c", ("fa2", "a", "c"))
    assert graph.snapshot("alice") == (ids("alice", "a", "c"), {"fa2": True})


def test_reset_removes_everything_and_the_store_stays_usable(graph):
    add(graph, "alice", "a b", ("fa", "a", "b"))
    add(graph, "bob", "a b", ("fb", "a", "b"))
    graph.reset()
    assert graph.snapshot() == (set(), {})
    graph.reset()
    add(graph, "alice", "a b", ("fa", "a", "b"))
    assert graph.snapshot() == (ids("alice", "a", "b"), {"fa": True})
    assert graph.neighbours("alice", ["alice-a"]) == ids("alice", "b")


def test_data_is_still_there_after_closing_and_reopening(open_graph):
    first = open_graph()
    add(first, "alice", "a b", ("fa", "a", "b"))
    first.close()
    again = open_graph()
    try:
        assert again.snapshot() == (ids("alice", "a", "b"), {"fa": True})
        assert again.neighbours("alice", ["alice-a"]) == ids("alice", "b")
    finally:
        again.close()
