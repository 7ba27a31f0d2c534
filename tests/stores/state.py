"""Read each of the three stores directly and compare them, without Memory's own helpers.

The store tests' independent view of a memory, used by the reliability and CLI tests
too. Like the other store-level tests, it reaches past the façade to the stores a
memory was opened with (``memory._stores``); tests of what a user sees use the façade.

``Memory.check_consistency()`` is the library's view; these functions are the tests'
independent one: SQLite through a separate read-only connection, Chroma through its
client (collections named by ``collection_name``), Kùzu through raw Cypher. A
:class:`StoreState` is plain data, so two of them compare with ``==`` ("a second
reopen changes nothing", "a refused call stored nothing").
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from zep_core.stores.base import VECTOR_KINDS
from zep_core.stores.fts import TABLE_PREFIX
from zep_core.stores.vectors import collection_name
from zep_core.tenant import Tenant

T = Tenant.of  # a checked user id: what the stores take

_TABLES = ("episodes", "messages", "facts", "entities", "aliases", "session_messages", "outbox")


@dataclass
class StoreState:
    """Everything the three stores hold, as comparable plain data."""

    rows: dict[str, frozenset] = field(default_factory=dict)          # SQLite table -> rows (no blobs)
    facts: dict[str, tuple] = field(default_factory=dict)             # id -> (user, subject_id, object_id,
    #                                                                    predicate, current, superseded_by, vu)
    entities: dict[str, str] = field(default_factory=dict)            # id -> user
    chroma: dict[str, frozenset] = field(default_factory=dict)        # collection -> ids
    promoted: frozenset = frozenset()                                 # users with a Chroma collection (tiers)
    graph_nodes: dict[str, str] = field(default_factory=dict)         # id -> user
    graph_edges: dict[str, tuple] = field(default_factory=dict)       # fact id -> (user, s, o, current)
    graph_edges_backward: dict[str, tuple] = field(default_factory=dict)  # the same, read from the targets
    files: frozenset = frozenset()

    def users(self) -> set[str]:
        """Users with any episode, chat message, fact or entity in SQLite."""
        return {r[1] for r in self.rows.get("episodes", ())} | {u for u, *_ in self.facts.values()} \
            | set(self.entities.values()) | {r[1] for r in self.rows.get("session_messages", ())}


def sqlite_rows(db_path: Path) -> tuple[dict[str, frozenset], dict[str, tuple], dict[str, str]]:
    """Read zep.db through its own read-only connection."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30)
    try:
        rows = {}
        for table in _TABLES:
            cols = [c[1] for c in conn.execute(f"PRAGMA table_info({table})") if c[1] != "embedding"]
            cur = conn.execute(f"SELECT {', '.join(cols)} FROM {table}")
            rows[table] = frozenset(tuple(r) for r in cur.fetchall())
        facts = {r[0]: (r[1], r[2], r[3], r[4], r[5] is None and r[6] is None, r[6], r[5]) for r in conn.execute(
            "SELECT id, user_id, subject_id, object_id, predicate, valid_until, superseded_by FROM facts")}
        entities = dict(conn.execute("SELECT id, user_id FROM entities").fetchall())
        rows["vector_tiers"] = frozenset(conn.execute("SELECT user_id FROM vector_tiers WHERE state = 'ready'"))
    finally:
        conn.close()
    # the outbox's autoincrement seq is bookkeeping; compare its content only
    rows["outbox"] = frozenset(r[1:] for r in rows["outbox"])
    return rows, facts, entities


def postgres_rows(url: str) -> tuple[dict[str, frozenset], dict[str, tuple], dict[str, str]]:
    """Read a PostgreSQL memory's tables through a connection of the test's own (the tables' owner).

    Every tenant table, the lexical index's included, without vectors or the identity columns
    (``rowid``, the outbox's ``seq``), as :func:`sqlite_rows` reads zep.db.
    """
    import psycopg
    from zep_core.stores.postgres import TENANT_TABLES
    from zep_core.stores.postgres.schema import SCHEMA_NAME

    rows = {}
    with psycopg.connect(url, options=f"-c search_path={SCHEMA_NAME},public") as conn:
        for table in TENANT_TABLES:
            cols = [r[0] for r in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND table_name = %s "
                "AND column_name NOT IN ('embedding', 'rowid') ORDER BY ordinal_position", [SCHEMA_NAME, table])]
            rows[table] = frozenset(tuple(r) for r in conn.execute(f"SELECT {', '.join(cols)} FROM {table}"))
        facts = {r[0]: (r[1], r[2], r[3], r[4], r[5] is None and r[6] is None, r[6], r[5]) for r in conn.execute(
            "SELECT id, user_id, subject_id, object_id, predicate, valid_until, superseded_by FROM facts")}
        entities = dict(conn.execute("SELECT id, user_id FROM entities").fetchall())
        rows["vector_tiers"] = frozenset(conn.execute("SELECT user_id FROM vector_tiers WHERE state = 'ready'"))
    rows["outbox"] = frozenset(r[1:] for r in rows["outbox"])
    return rows, facts, entities


def graph_state(graph) -> tuple[dict[str, str], dict[str, tuple], dict[str, tuple]]:
    """Nodes and FACT relationships, by raw Cypher on the Kùzu index.

    Relationships are read twice, from their sources and from their targets: Kùzu keeps
    both directions in separate structures, and a torn write can leave them differing.
    """
    nodes = {r["id"]: r["u"] for r in graph.read_query("MATCH (e:Entity) RETURN e.id AS id, e.user_id AS u", {})}
    edges = {}
    for pattern in ("(a:Entity)-[r:FACT]->(b:Entity)", "(b:Entity)<-[r:FACT]-(a:Entity)"):
        edges[pattern] = {r["f"]: (r["u"], r["s"], r["o"], bool(r["c"])) for r in graph.read_query(
            f"MATCH {pattern} RETURN r.fact_id AS f, r.user_id AS u, a.id AS s, b.id AS o, r.current AS c", {})}
    return nodes, *edges.values()


def data_files(root: Path) -> frozenset:
    """Relative paths of every file under the data folder."""
    return frozenset(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def snapshot(memory, *, with_files: bool = False) -> StoreState:
    """The state of an open memory's three stores, read directly from each (after a flush)."""
    memory.flush()  # index writes may still be queued for the background indexer
    if memory.config.database_url:  # PostgreSQL: the vectors and the graph are the record tables themselves
        rows, facts, entities = postgres_rows(memory.config.database_url)
        rows.pop("vector_tiers")
        edges = {f: (v[0], v[1], v[2], v[4]) for f, v in facts.items() if v[2] is not None and v[1] != v[2]
                 and entities.get(v[1]) == v[0] == entities.get(v[2])}
        return StoreState(rows=rows, facts=facts, entities=entities, graph_nodes=dict(entities), graph_edges=edges,
                          graph_edges_backward=dict(edges))
    rows, facts, entities = sqlite_rows(memory.data_dir / "zep.db")
    promoted = frozenset(u for (u,) in rows.pop("vector_tiers"))
    stores = memory._stores
    nodes, edges, backward = graph_state(stores.graph)
    return StoreState(rows=rows, facts=facts, entities=entities, chroma=stores.vectors.collection_ids(),
                      promoted=promoted,
                      graph_nodes=nodes, graph_edges=edges, graph_edges_backward=backward,
                      files=data_files(memory.data_dir) if with_files else frozenset())


def problems(state: StoreState, single_valued: Iterable[str]) -> list[str]:
    """Every disagreement between the stores, and every broken supersession; [] when sound."""
    out: list[str] = []
    single = set(single_valued)
    facts, entities = state.facts, state.entities
    users = state.users()
    expected: dict[str, frozenset] = {}
    small = {collection_name(u, "current") for u in users - state.promoted}
    for user in users & state.promoted:  # the others are searched exactly in SQLite (zep_core.stores.tiered)
        mine = {f: v for f, v in facts.items() if v[0] == user}
        expected[collection_name(user, "current")] = frozenset(f for f, v in mine.items() if v[4])
    for name in set(expected) | {n for n in state.chroma if n not in small}:
        want, got = expected.get(name, frozenset()), state.chroma.get(name, frozenset())
        if want != got:
            out.append(f"chroma {name}: missing {sorted(want - got)[:3]}, stale {sorted(got - want)[:3]}")
    if state.graph_nodes != entities:
        diff = set(state.graph_nodes.items()) ^ set(entities.items())
        out.append(f"graph nodes differ from SQLite entities: {sorted(diff)[:3]}")
    want_edges = {f: (v[0], v[1], v[2], v[4]) for f, v in facts.items() if v[2] is not None}
    for way, edges in (("forward", state.graph_edges), ("backward", state.graph_edges_backward)):
        if edges != want_edges:
            diff = set(edges.items()) ^ set(want_edges.items())
            out.append(f"graph edges ({way}) differ from SQLite facts: {sorted(diff)[:3]}")
    for fid, (user, subject, obj, _pred, _current, superseded_by, valid_until) in facts.items():
        if entities.get(subject) != user or (obj is not None and entities.get(obj) != user):
            out.append(f"fact {fid} points to an entity missing for its user")
        if superseded_by is not None:
            if facts.get(superseded_by, (None,))[0] != user:
                out.append(f"fact {fid} superseded_by {superseded_by}, which is missing")
            if valid_until is None:
                out.append(f"fact {fid} is superseded but has no valid_until (half-applied)")
    current = Counter((v[0], v[1], v[3]) for v in facts.values() if v[4] and v[3] in single)
    out += [f"two current facts for {k}" for k, n in current.items() if n > 1]
    if state.rows.get("outbox"):
        out.append(f"{len(state.rows['outbox'])} outbox rows left after open")
    return out


def traces(state: StoreState, user: str) -> list[str]:
    """Where ``user`` still appears in any store (for forget_user)."""
    found = [f"sqlite {t}" for t, rows in state.rows.items() if t != "outbox" and any(user in r for r in rows)]
    found += [f"chroma {collection_name(user, k)}" for k in VECTOR_KINDS if collection_name(user, k) in state.chroma]
    found += ["kuzu node" for u in state.graph_nodes.values() if u == user][:1]
    found += ["kuzu edge" for e in state.graph_edges.values() if e[0] == user][:1]
    return found


def digest(texts: Iterable[str]) -> str:
    """A short hash of message contents, to check an episode came back whole."""
    return hashlib.sha256("\x1e".join(texts).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def user_records(memory, user) -> dict:
    """Everything stored for a user, as the record store and the indexes read it back (once written)."""
    memory.flush()  # the index writes go in the background: read the indexes once they are applied
    stores = memory._stores
    records = stores.records
    tenant = T(user)
    fact_ids = [i for ids in records.iter_fact_ids(tenant) for i in ids]
    entity_ids = [i for ids in records.iter_entity_ids(tenant) for i in ids]
    stored = records.stored_facts(tenant, fact_ids)
    return {
        "episodes": [memory.get_episode(i, user_id=user) for i in records.episode_ids(tenant)],
        "facts": [stored[i].fact for i in fact_ids],
        "fact_entities": {i: (stored[i].subject_id, stored[i].object_id) for i in fact_ids},
        "fact_vectors": {i: stored[i].embedding.tobytes() for i in fact_ids},
        "entities": records.get_entities(tenant, entity_ids),
        "entity_vectors": {e.id: v.tobytes() for e, v in records.entity_rows(tenant, entity_ids)},
        "changed_at": records.entity_changed_at(tenant, entity_ids),
        "chat": records.session_rows(tenant),
        "vectors": {k: stores.vectors.ids(tenant, k) for k in VECTOR_KINDS},
        "graph": stores.graph.snapshot(user),
    }


def stored_fact_vector(memory, user: str, fact_id: str):
    """The vector SQLite keeps for a fact of a user."""
    return memory._stores.records.stored_facts(T(user), [fact_id])[fact_id].embedding


def vector_ids(memory, user: str, kind: str) -> set[str]:
    """The ids in one of a user's Chroma collections."""
    return memory._stores.vectors.ids(T(user), kind)


def wipe_vector_index(memory) -> None:
    """Lose the whole vector index, as a wiped Chroma folder or server would.

    Chroma's collections go, the tiered index's marks stay (a reset of the tiered index
    would demote every user, losing nothing).
    """
    vectors = memory._stores.vectors
    chroma = vectors._index() if hasattr(vectors, "settle") else vectors
    chroma.reset()


def lexical_tables(conn) -> list[str]:
    """The names of per-user lexical (FTS5) tables in an open ``zep.db`` connection: none since schema 6."""
    return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE ? "
                                       "AND sql LIKE 'CREATE VIRTUAL TABLE%'", [TABLE_PREFIX + "%"])]


def lexical_index(memory) -> dict[str, tuple]:
    """The lexical index as ``{fact id: (owner, content, terms, length, live, valid_from, valid_until, postings)}``.

    Read straight from SQLite. The owner is the user whose key holds the row; a row under
    the wrong key shows as a fact whose ``user_id`` differs from it. ``postings`` are the
    row's ``(term, live, tf_text, tf_context, length)``, sorted.
    """
    conn = sqlite3.connect(f"file:{memory.data_dir / 'zep.db'}?mode=ro", uri=True)
    try:
        out: dict[str, tuple] = {}
        for fid, owner, content, doc, *row in conn.execute(
                "SELECT f.id, d.user_id, f.content, d.doc, d.terms, d.length, d.live, d.valid_from, d.valid_until "
                "FROM lexical_docs d JOIN facts f ON f.rowid = d.doc"):
            postings = sorted(conn.execute("SELECT term, live, tf_text, tf_context, length FROM lexical_postings "
                                           "WHERE user_id = ? AND doc = ?", [owner, doc]))
            out[fid] = (owner, content, " ".join(sorted(row[0].split())), *row[1:], tuple(postings))
        return out
    finally:
        conn.close()
