"""cypher(): a tenant's query runs against a graph that holds only that tenant's rows.

The routes below got around the old text rewriting (issue 13): each read another
tenant's entities and facts. They now run, and see nothing of anyone else, because
the sandbox graph is built from that tenant's rows only. Also here: the limits on
one query (time, rows, memory), the parameters' checks, and that the sandbox graph
follows the tenant's writes.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest
from zep_core import Memory, MemoryConfig, Message, QueryError, ValidationError

from tests.conftest import Clock
from tests.core.fakes import ScriptedExtractor, said

ALICE, MAL = "alice", "mallory"

ROUTES = {
    "pattern in WHERE": "MATCH (e:Entity {name:'Mal'}) WHERE (e)-[:FACT]->(:Entity {name:'SecretCorp'}) "
                        "OR (:Entity {user_id:'alice'})-[:FACT]->(:Entity {name:'SecretCorp'}) RETURN e.name AS x",
    "pattern in WHERE by property": "MATCH (e:Entity {name:'Mal'}) WHERE (a {user_id:'alice'})-[:FACT]->"
                                    "(b {name:'SecretCorp'}) RETURN e.name AS x",
    "UNWIND enumerates values": "MATCH (e:Entity {name:'Mal'}) UNWIND ['SecretCorp', 'Lisbon', 'Rome'] AS g "
                                "WITH e, g WHERE (a {user_id:'alice'})-[]->(b {name:g}) RETURN g AS x",
    "pattern in RETURN": "MATCH (e:Entity {name:'Mal'}) RETURN EXISTS { MATCH (a)-[:FACT]->(b {name:'SecretCorp'}) } "
                         "AS x",
    "CASE WHEN": "MATCH (e:Entity {name:'Mal'}) RETURN CASE WHEN EXISTS { MATCH (a {name:'Alice'}) } "
                 "THEN 'yes' ELSE 'no' END AS x",
    "COUNT subquery": "MATCH (e:Entity {name:'Mal'}) RETURN COUNT { MATCH (a)-[q:FACT]->(b) WHERE a.user_id = 'alice' }"
                      " AS x",
    "recursive filter cuts the MATCH": "MATCH (e:Entity)-[r*1..1 (x, y | WHERE true)]-(z), (a)-[q:FACT]->(b) "
                                       "RETURN a.user_id AS u, a.name AS x, q.predicate AS p, b.name AS y",
    "variable named limit": "MATCH (e:Entity)-[r]-(limit), (a)-[q:FACT]->(b) RETURN DISTINCT a.name AS x, b.name AS y",
    "variable named skip": "MATCH (skip)-[r]-(e:Entity), (a)-[q]->(b) RETURN DISTINCT a.name AS x, b.name AS y",
    "plain values": "MATCH (a)-[q:FACT]->(b) RETURN a.user_id AS u, a.name + ' ' + q.predicate + ' ' + b.name AS x",
    "a map of another node": "MATCH (a)-[q]->(b) RETURN {n: a.name, u: a.user_id, o: b.name} AS x",
    "unlabelled everything": "MATCH (n) OPTIONAL MATCH (n)-[r]-(m) RETURN n, r, m",
    "by internal offset": "MATCH (n) WHERE offset(id(n)) < 1000 RETURN n.name AS x, n.user_id AS u",
    "UNION of everything": "MATCH (e:Entity) RETURN e.name AS x UNION MATCH (n) RETURN n.name AS x",
}


def _fill(memory: Memory, *, with_alice: bool) -> Memory:
    if with_alice:
        memory.conversation_end("a1", [Message("I live in Lisbon and I work at SecretCorp.", name="Alice")],
                                user_id=ALICE, episode_id="a1")
    memory.conversation_end("m1", [Message("I live in Rome.", name="Mal")], user_id=MAL, episode_id="m1")
    return memory


@pytest.fixture
def two_tenants(make_memory):
    return _fill(make_memory(), with_alice=True)


@pytest.fixture(scope="module")
def shared_and_solo(tmp_path_factory, embedder):
    base = tmp_path_factory.mktemp("cypher")
    shared, solo = (Memory(MemoryConfig(data_dir=base / name, embedder=embedder), clock=Clock())
                    for name in ("shared", "solo"))
    _fill(shared, with_alice=True)
    _fill(solo, with_alice=False)
    yield shared, solo
    shared.close()
    solo.close()


def leaks(rows) -> bool:
    text = repr(rows)
    return any(word in text for word in ("alice", "Alice", "SecretCorp", "Lisbon"))


def answer(rows) -> list[str]:
    """Rows as sorted text, without the random fact ids (they differ between two folders)."""
    return sorted(re.sub(r"'fact_id': '[^']*'", "", repr(row)) for row in rows)


@pytest.mark.parametrize("route", list(ROUTES), ids=list(ROUTES))
def test_no_route_reaches_another_tenant(shared_and_solo, route):
    shared, solo = shared_and_solo
    query = ROUTES[route]
    rows = shared.cypher(query, user_id=MAL)
    assert not leaks(rows), rows
    assert answer(rows) == answer(solo.cypher(query, user_id=MAL))  # as if alice had never been stored
    shared.flush()  # the same text over the shared graph index tells alice's data apart: a real route
    assert answer(shared._stores.graph.read_query(query, {})) != answer(rows)


def test_answers_equal_the_users_own_graph_index(two_tenants):
    """The sandbox graph holds what the graph index holds for that user, no more and no less."""
    query = ("MATCH (a)-[r:FACT]->(b) RETURN a.id AS a, a.user_id AS au, a.name AS n, a.entity_type AS t, "
             "r.fact_id AS f, r.user_id AS ru, r.predicate AS p, r.valid_from AS vf, r.valid_until AS vu, "
             "r.current AS c, b.id AS b ORDER BY f")
    two_tenants.flush()
    index = two_tenants._stores.graph
    for user in (ALICE, MAL):
        own = [row for row in index.read_query(query, {}) if row["au"] == user]
        assert two_tenants.cypher(query, user_id=user) == own and own


def test_the_cli_prints_no_other_tenant(tmp_path, make_memory):
    data = tmp_path / "data"
    memory = make_memory(data)
    memory.conversation_end("a1", [Message("I work at SecretCorp.", name="Alice")], user_id=ALICE)
    memory.conversation_end("m1", [Message("I live in Rome.", name="Mal")], user_id=MAL)
    memory.close()
    out = subprocess.run([sys.executable, "-m", "zep_core", "cypher", "--data", str(data), "--user", MAL,
                          "MATCH (e:Entity)-[r]-(limit), (a)-[q:FACT]->(b) RETURN DISTINCT a.name, b.name"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "Mal" in out.stdout and "Rome" in out.stdout
    assert "Alice" not in out.stdout and "SecretCorp" not in out.stdout


def test_the_graph_follows_the_tenants_writes(two_tenants, clock):
    query = "MATCH (a)-[r:FACT]->(b) WHERE r.current RETURN b.name AS place"
    assert two_tenants.cypher(query, user_id=MAL) == [{"place": "Rome"}]
    clock.advance(days=1)
    two_tenants.conversation_end("m2", [Message("I moved to Oslo.", name="Mal")], user_id=MAL)
    assert two_tenants.cypher(query, user_id=MAL) == [{"place": "Oslo"}]
    two_tenants.forget_user(MAL)
    two_tenants.conversation_end("m3", [Message("I live in Bergen.", name="Mal")], user_id=MAL)
    assert two_tenants.cypher(query, user_id=MAL) == [{"place": "Bergen"}]


def test_another_tenants_writes_do_not_change_the_answer(two_tenants):
    query = "MATCH (n) RETURN n.name AS name ORDER BY name"
    before = two_tenants.cypher(query, user_id=MAL)
    two_tenants.conversation_end("a2", [Message("I like Rome and Mal.", name="Alice")], user_id=ALICE)
    assert two_tenants.cypher(query, user_id=MAL) == before == [{"name": "Mal"}, {"name": "Rome"}]


def test_a_runaway_list_is_stopped_by_the_memory_limit(two_tenants):
    with pytest.raises(QueryError, match="out of memory|crashed"):
        two_tenants.cypher("UNWIND range(1, 10000000000) AS x RETURN count(x)", user_id=MAL)
    assert two_tenants.cypher("MATCH (n) RETURN count(n) AS n", user_id=MAL) == [{"n": 2}]  # and it goes on


def test_too_many_rows_is_an_error_naming_limit(make_memory):
    memory = make_memory(cypher_max_rows=100)
    memory.conversation_end("m1", [Message("I live in Rome.", name="Mal")], user_id=MAL)
    assert len(memory.cypher("UNWIND range(1, 100) AS x RETURN x", user_id=MAL)) == 100
    with pytest.raises(QueryError, match="more than 100 rows; add LIMIT"):
        memory.cypher("UNWIND range(1, 101) AS x RETURN x", user_id=MAL)


def test_a_slow_query_is_stopped_by_the_time_limit(make_memory):
    memory = make_memory(cypher_timeout_s=0.5)
    memory.conversation_end("m1", [Message("I live in Rome.", name="Mal")], user_id=MAL)
    with pytest.raises(QueryError, match=r"ran past the 0.5 s limit \(cypher_timeout_s\)"):
        memory.cypher("UNWIND range(1, 3000000) AS x WITH x WHERE x % 7 = 1 RETURN sum(x * x % 13) AS n",
                      user_id=MAL)
    assert memory.cypher("MATCH (n) RETURN count(n) AS n", user_id=MAL) == [{"n": 2}]


def test_a_stuck_sandbox_is_killed_at_the_time_limit(make_memory):
    """Kùzu checks its timeout between steps; when it does not answer at all, the process is killed."""
    memory = make_memory(cypher_timeout_s=0.5)
    memory.conversation_end("m1", [Message("I live in Rome.", name="Mal")], user_id=MAL)
    assert memory.cypher("MATCH (n) RETURN count(n) AS n", user_id=MAL) == [{"n": 2}]
    stuck = memory._sandbox._proc
    os.kill(stuck.pid, signal.SIGSTOP)
    try:
        with pytest.raises(QueryError, match="ran past the 0.5 s limit"):
            memory.cypher("MATCH (n) RETURN count(n) AS n", user_id=MAL)
    finally:
        if stuck.poll() is None:
            os.kill(stuck.pid, signal.SIGCONT)
    assert stuck.wait(timeout=10) is not None  # killed
    assert memory.cypher("MATCH (n) RETURN count(n) AS n", user_id=MAL) == [{"n": 2}]  # a new one answers


@pytest.mark.parametrize(("params", "says"), [
    ("abc", "mapping"),
    ({1: "x"}, "string keys"),
    ({"x": object()}, "is a object"),
    ({"x": {"y": {1: 2}}}, "non-string keys"),
    ({"x": "\ud800"}, "surrogate"),
])
def test_bad_params_are_refused(two_tenants, params, says):
    with pytest.raises(ValidationError, match=says):
        two_tenants.cypher("MATCH (n) RETURN n.name", params, user_id=MAL)


def test_deeply_nested_params_are_refused(two_tenants):
    deep: list = []
    for _ in range(100):
        deep = [deep]
    with pytest.raises(ValidationError, match="nested more than"):
        two_tenants.cypher("RETURN $x AS x", {"x": deep}, user_id=MAL)


def test_errors_show_the_query_as_written(two_tenants):
    with pytest.raises(QueryError) as caught:
        two_tenants.cypher("MATCH (e:Entity {name: $who}) RETURN e.nope", {"who": "Mal"}, user_id=MAL)
    assert "__zep" not in str(caught.value) and "failed" in str(caught.value)


def test_dates_and_lists_come_back_as_python_values(two_tenants):
    rows = two_tenants.cypher("RETURN date('2024-02-29') AS d, [1, 2, null] AS l, {a: true} AS m",
                              user_id=MAL)
    assert repr(rows) == "[{'d': datetime.date(2024, 2, 29), 'l': [1, 2, None], 'm': {'a': True}}]"


def test_names_survive_the_copy_exactly(make_memory):
    names = ['a,b', 'q"uote', "new\nline", "back\\slash", "ü🙂", "'"]
    extractor = ScriptedExtractor()
    memory = make_memory(extractor=extractor)
    extractor.push(*[said("Mal", "likes", name) for name in names])
    memory.conversation_end("m1", [Message("Scripted.", name="Mal")], user_id=MAL)
    rows = memory.cypher("MATCH (a)-[r:FACT]->(b) RETURN b.name AS n", user_id=MAL)
    assert sorted(r["n"] for r in rows) == sorted(names)


def test_the_sandbox_stops_with_the_memory(make_memory):
    memory = make_memory()
    memory.conversation_end("m1", [Message("I live in Rome.", name="Mal")], user_id=MAL)
    memory.cypher("MATCH (n) RETURN n.name", user_id=MAL)
    proc = memory._sandbox._proc
    memory.close()
    assert proc.wait(timeout=10) is not None
    assert not any((memory.data_dir / "cypher").iterdir())  # the load files are gone too


def test_memory_open_checks_the_cypher_limits(tmp_path):
    from zep_core import ConfigError

    for bad in ({"cypher_timeout_s": 0}, {"cypher_timeout_s": float("nan")}, {"cypher_max_rows": 0},
                {"cypher_memory_mb": 10}, {"cypher_cache_tenants": "4"}):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            Memory.open(tmp_path / "data", **bad)


# -- the sandbox process itself: nothing outside its work folder is reachable ----------------

def _sandbox_of(memory: Memory):
    """The memory's sandbox, started (the query check is *not* in front of it from here on)."""
    memory.cypher("MATCH (n) RETURN count(n)", user_id=MAL)
    sandbox = memory._sandbox
    if not sandbox.confined:
        pytest.skip("this kernel has no Landlock (Linux >= 5.13 with the landlock LSM): the sandbox cannot "
                    "confine itself here, and says so in a warning")
    return sandbox


def _raw(memory: Memory, sandbox, query: str):
    return sandbox.query(MAL, memory._sync.version(MAL), query, {})


def test_the_sandbox_cannot_read_another_graph_even_past_the_query_check(tmp_path, make_memory, embedder):
    """ATTACH of a graph database with every tenant in it: the check refuses the word, and
    below the check the process cannot open the files (a checkpointed copy, WAL empty)."""
    other = Memory(MemoryConfig(data_dir=tmp_path / "victim", embedder=embedder))
    _fill(other, with_alice=True)
    other.close()  # checkpointed: ATTACH would work on it if the files could be opened
    memory = _fill(make_memory(), with_alice=False)
    with pytest.raises(QueryError, match="read-only"):
        memory.cypher(f"ATTACH '{tmp_path / 'victim' / 'graph'}' AS g (dbtype kuzu)", user_id=MAL)
    sandbox = _sandbox_of(memory)
    for query in (f"ATTACH '{tmp_path / 'victim' / 'graph'}' AS g (dbtype kuzu)",
                  f"LOAD FROM '{tmp_path / 'victim' / 'zep.db'}' (file_format='csv', header=false) RETURN *",
                  f"LOAD FROM '{memory.data_dir / 'zep.db'}' (file_format='csv', header=false) RETURN *"):
        with pytest.raises(QueryError, match="(?i)permission denied|cannot open") as caught:
            _raw(memory, sandbox, query)
        assert not leaks(str(caught.value))


def test_the_sandbox_cannot_write_files_even_past_the_query_check(tmp_path, make_memory):
    memory = _fill(make_memory(), with_alice=True)
    sandbox = _sandbox_of(memory)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    for query in (f"COPY (MATCH (n) RETURN n.name) TO '{tmp_path / 'out.csv'}'",
                  f"EXPORT DATABASE '{tmp_path / 'dump'}'"):
        with pytest.raises(QueryError):
            _raw(memory, sandbox, query)
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_load_files_a_killed_process_left_are_removed_before_a_sandbox_starts(make_memory):
    memory = _fill(make_memory(), with_alice=True)
    work = memory.data_dir / "cypher"
    work.mkdir(exist_ok=True)
    (work / "left.entities.csv").write_text("a1,alice,Alice,person\n")  # what a crash mid-load leaves
    memory.cypher("MATCH (n) RETURN count(n)", user_id=MAL)
    assert not (work / "left.entities.csv").exists()
