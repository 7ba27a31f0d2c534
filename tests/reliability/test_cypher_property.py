"""cypher() isolation as a property: random queries from a small grammar, 0 differences.

Two folders hold the same tenant (``mallory``, same episodes, same clock); one also
holds ``alice``, whose names overlap mallory's. Every generated query must give
mallory the same answer in both — rows, or the same error — so nothing about alice
can be read, counted or tested for. The grammar covers patterns in MATCH, WHERE,
RETURN, CASE and subqueries (EXISTS, COUNT), labels or none, recursive relationships
with filters, and variable names taken from Cypher's keywords (the old text rewriting
stopped at ``limit``, ``skip`` and ``WHERE``).

To show the property has teeth, each query also runs over the shared graph index
itself; the test requires that many of them would tell alice's data apart there.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zep_core import Memory, MemoryConfig, Message, ZepMemoryError

from tests.conftest import Clock
from tests.reliability.figures import record

QUERIES = 500
MAL, ALICE = "mallory", "alice"
MAL_SAYS = ["I live in Rome.", "I work at Initech.", "My friend Bob likes chess."]
ALICE_SAYS = ["I live in Lisbon and I work at SecretCorp.", "My sister Ana likes Rome.", "Bob likes chess."]
#: Variable names, Cypher keywords among them (``where``, ``match`` and ``order`` fail to parse: the same error).
VARS = ["a", "b", "n", "x", "y", "e", "limit", "skip", "count", "limit", "skip", "where", "match", "order"]
NAMES = ["'Alice'", "'SecretCorp'", "'Lisbon'", "'Mal'", "'Rome'", "'Bob'", "'chess'", "'Ana'", "'Initech'"]
USERS = ["'alice'", "'mallory'"]
PREDICATES = ["'lives_in'", "'works_at'", "'likes'", "'sister'", "'friend'"]
STATS = {"queries": 0, "answered": 0, "errors": 0, "differences": 0, "distinguishing_on_the_shared_index": 0}


def _fill(memory: Memory, with_alice: bool) -> Memory:
    for i, text in enumerate(MAL_SAYS):
        memory.conversation_end(f"m{i}", [Message(text, name="Mal")], user_id=MAL, episode_id=f"m{i}")
    if with_alice:
        for i, text in enumerate(ALICE_SAYS):
            memory.conversation_end(f"a{i}", [Message(text, name="Alice")], user_id=ALICE, episode_id=f"a{i}")
    memory.flush()
    return memory


@pytest.fixture(scope="module")
def folders(tmp_path_factory, embedder):
    base = tmp_path_factory.mktemp("cypher-property")
    shared, solo = (Memory(MemoryConfig(data_dir=base / name, embedder=embedder), clock=Clock())
                    for name in ("shared", "solo"))
    yield _fill(shared, True), _fill(solo, False)
    shared.close()
    solo.close()
    record("cypher_property", dict(STATS), ".venv/bin/python -m pytest -q tests/reliability/test_cypher_property.py")


# -- the grammar --------------------------------------------------------------------------------

@st.composite
def node(draw, var: str | None = None) -> str:
    label = draw(st.sampled_from(["", ":Entity"]))
    prop = draw(st.sampled_from(["", "name", "user_id", "entity_type"]))
    props = ""
    if prop:
        value = draw(st.sampled_from(USERS if prop == "user_id" else ["'person'", "'thing'"]
                                     if prop == "entity_type" else NAMES))
        props = f" {{{prop}: {value}}}"
    return f"({var or ''}{label}{props})"


@st.composite
def rel(draw, var: str | None = None) -> str:
    label = draw(st.sampled_from(["", ":FACT"]))
    shapes = ["", "*1..2", "*1..3 (r2, m2 | WHERE r2.current)", "*1..1 (r2, m2 | WHERE true)"]
    shape = "" if var else draw(st.sampled_from(shapes))  # named relationships stay single (they have properties)
    arrow = draw(st.sampled_from(["-[{}]->", "<-[{}]-", "-[{}]-"]))
    return arrow.format(f"{var or ''}{label}{shape}")


@st.composite
def path(draw, bound: dict[str, str]) -> str:
    """A pattern; its new variables are added to ``bound`` (name -> node or rel)."""
    def var(kind: str) -> str | None:
        if not draw(st.booleans()):
            return None
        name = draw(st.sampled_from(VARS))
        if name in bound:
            return name if kind == "node" == bound[name] else None
        bound[name] = kind
        return name

    text = draw(node(var("node")))
    for _ in range(draw(st.integers(0, 2))):
        text += draw(rel(var("rel"))) + draw(node(var("node")))
    return text


def _of(bound: dict[str, str], kind: str) -> list[str]:
    return [v for v, k in bound.items() if k == kind]


@st.composite
def condition(draw, bound: dict[str, str], depth: int = 0) -> str:
    options = ["compare", "pattern", "exists", "count"] + (["not", "and", "or"] if depth < 2 else [])
    kind = draw(st.sampled_from(options))
    nodes, rels, strings = _of(bound, "node"), _of(bound, "rel"), _of(bound, "string")
    if kind == "compare" and (nodes or rels):
        v = draw(st.sampled_from(nodes + rels))
        if bound[v] == "rel":
            return f"{v}.predicate = {draw(st.sampled_from(PREDICATES))}"
        prop, values = draw(st.sampled_from([("name", NAMES + strings), ("user_id", USERS)]))
        return f"{v}.{prop} = {draw(st.sampled_from(values))}"
    if kind in ("pattern", "compare"):
        return draw(path(dict(bound)))  # a pattern predicate: its new variables stay local
    if kind == "exists":
        return f"EXISTS {{ MATCH {draw(path(dict(bound)))} }}"
    if kind == "count":
        return f"COUNT {{ MATCH {draw(path(dict(bound)))} }} > {draw(st.integers(0, 2))}"
    if kind == "not":
        return f"NOT ({draw(condition(bound, depth + 1))})"
    return f"({draw(condition(bound, depth + 1))}) {kind.upper()} ({draw(condition(bound, depth + 1))})"


@st.composite
def item(draw, bound: dict[str, str]) -> str:
    nodes, rels = _of(bound, "node"), _of(bound, "rel")
    kinds = ["count", "case", "subcount"] + (["prop", "whole"] if nodes or rels else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "prop":
        v = draw(st.sampled_from(nodes + rels))
        props = ["predicate", "user_id", "valid_until", "current"] if bound[v] == "rel" else ["name", "user_id", "id"]
        return f"{v}.{draw(st.sampled_from(props))}"
    if kind == "whole":
        return draw(st.sampled_from(nodes + rels))
    if kind == "case":
        return f"CASE WHEN {draw(condition(bound))} THEN 1 ELSE 0 END"
    if kind == "subcount":
        return f"COUNT {{ MATCH {draw(path(dict(bound)))} }}"
    return "count(*)"


@st.composite
def query(draw) -> str:
    bound: dict[str, str] = {}
    clauses = []
    if draw(st.integers(0, 4)) == 0:
        clauses.append(f"UNWIND [{', '.join(draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3)))}] AS g")
        bound["g"] = "string"
    first = "OPTIONAL MATCH" if draw(st.integers(0, 5)) == 0 else "MATCH"
    clauses.append(f"{first} " + ", ".join(draw(path(bound)) for _ in range(draw(st.integers(1, 2)))))
    if draw(st.booleans()):
        clauses.append(f"WHERE {draw(condition(bound))}")
    items = [f"{draw(item(bound))} AS c{i}" for i in range(draw(st.integers(1, 3)))]
    text = " ".join(clauses) + " RETURN " + ("DISTINCT " if draw(st.booleans()) else "") + ", ".join(items)
    if draw(st.integers(0, 4)) == 0:
        text += f" LIMIT {draw(st.integers(0, 5))}"
    return text


# -- the property --------------------------------------------------------------------------------

def answer(run) -> tuple:
    """Rows as sorted text without the random fact ids, or the error's type and message."""
    try:
        rows = run()
    except ZepMemoryError as exc:
        return ("error", type(exc).__name__, str(exc))
    except RuntimeError as exc:  # the shared index's own Kùzu
        return ("error", "RuntimeError", str(exc))
    return ("rows", sorted(re.sub(r"'fact_id': '[^']*'", "", repr(row)) for row in rows))


@settings(max_examples=QUERIES, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(text=query())
def test_a_tenants_answers_do_not_depend_on_another_tenants_data(folders, text):
    shared, solo = folders
    got = answer(lambda: shared.cypher(text, user_id=MAL))
    STATS["queries"] += 1
    STATS["answered" if got[0] == "rows" else "errors"] += 1
    expected = answer(lambda: solo.cypher(text, user_id=MAL))
    if got != expected:
        STATS["differences"] += 1
    assert got == expected, text
    if got[0] == "rows" and answer(lambda: shared._stores.graph.read_query(text, {})) != got:
        STATS["distinguishing_on_the_shared_index"] += 1


def test_the_generated_queries_had_teeth(folders):
    """Runs after the property: most queries ran, and many would have told alice apart on the shared graph."""
    if STATS["queries"] < QUERIES:
        pytest.skip("run together with the property test above (it fills the figures this checks)")
    assert STATS["differences"] == 0
    assert STATS["answered"] >= QUERIES // 2, STATS
    assert STATS["distinguishing_on_the_shared_index"] >= QUERIES // 8, STATS
