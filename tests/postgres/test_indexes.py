"""The vector and graph indexes on PostgreSQL are the record tables: they answer as Chroma and Kùzu answer.

The same tenants' entities and facts go into the PostgreSQL store and, as the outbox would
write them, into Kùzu; ``related`` gives the same entities in the same order from every
start and at every depth. The vector index finds the current facts by cosine, the tenant's
only, and a superseded fact leaves it in the same transaction.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from zep_core.models import Entity, Fact
from zep_core.stores.base import EntityNode, FactEdge, GraphIndex, VectorIndex
from zep_core.stores.graph import KuzuGraphIndex
from zep_core.stores.records import StoredFact, iso
from zep_core.tenant import Tenant

pytest.importorskip("psycopg", reason="PostgreSQL tests need the test extra: pip install -e '.[test]'")

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
NAMES = ["Ann", "Bo", "Cy", "Di", "Ed", "Flo", "Gus", "Hal", "Ida", "Jo", "Kit", "Lu"]


def _unit(rng):
    v = np.asarray([rng.gauss(0, 1) for _ in range(8)], dtype=np.float32)
    return v / np.linalg.norm(v)


@pytest.fixture
def pg(pg_url):
    from zep_core.stores.postgres import PgRecordStore

    store = PgRecordStore(pg_url)
    yield store
    store.close()


def test_related_walks_the_tenants_facts_as_kuzu_does(pg, tmp_path):
    from zep_core.stores.postgres.indexes import PgGraphIndex

    rng = random.Random(5)
    kuzu = KuzuGraphIndex(tmp_path / "graph", buffer_pool_mb=64)
    graph = PgGraphIndex(pg)
    assert isinstance(graph, GraphIndex)
    try:
        for user in (Tenant.of("ann"), Tenant.of("bob")):
            people = [Entity(id=f"{user}:{n}", user_id=user, name=n, entity_type="person") for n in NAMES]
            with pg.transaction():
                pg.insert_entities([(e, _unit(rng)) for e in people], iso(T0))
            kuzu.upsert_entities(EntityNode(e.id, user, e.name, e.entity_type) for e in people)
            facts, edges = [], []
            for i in range(18):
                s, o = rng.sample(people, 2)
                ended = i % 4 == 0
                fact = Fact(content=f"{s.name} knows {o.name}", subject=s.name, predicate="knows", object=o.name,
                            valid_from=T0, valid_until=T0 + timedelta(days=3) if ended else None, user_id=user,
                            id=f"{user}-f{i}")
                facts.append(StoredFact(fact, s.id, o.id, _unit(rng)))
                edges.append(FactEdge(fact.id, user, s.id, o.id, "knows", iso(T0),
                                      iso(fact.valid_until), not ended))
            facts.append(StoredFact(Fact(content="Ann likes tea", subject="Ann", predicate="likes", object="tea",
                                         valid_from=T0, user_id=user, id=f"{user}-tea"), f"{user}:Ann", None,
                                    _unit(rng)))  # no object entity: no edge
            with pg.transaction():
                pg.write_facts(facts)
            kuzu.upsert_facts(edges)
        for user in ("ann", "bob"):
            for name in NAMES:
                for hops in (1, 2, 3):
                    start = f"{user}:{name}"
                    assert graph.related(user, start, hops=hops, limit=50) == kuzu.related(
                        user, start, hops=hops, limit=50), (start, hops)
                    assert graph.related(user, start, hops=hops, limit=3) == kuzu.related(user, start, hops=hops,
                                                                                         limit=3)
        assert graph.related("bob", "ann:Ann", hops=3) == [] == kuzu.related("bob", "ann:Ann", hops=3)
        assert graph.snapshot("ann") == kuzu.snapshot("ann") and graph.snapshot() == kuzu.snapshot()
    finally:
        kuzu.close()


def test_the_vector_index_is_the_current_facts_of_the_tenant(pg):
    from zep_core.stores.postgres.indexes import PgVectorIndex

    index = PgVectorIndex(pg)
    assert isinstance(index, VectorIndex)
    ann, bob = Tenant.of("ann"), Tenant.of("bob")
    axis = np.eye(8, dtype=np.float32)
    both = (axis[0] + axis[1]) / np.linalg.norm(axis[0] + axis[1])
    rows = [(ann, "paris", axis[0]), (ann, "rome", both), (ann, "berlin", axis[1]), (bob, "oslo", axis[0])]
    with pg.transaction():
        pg.write_facts(StoredFact(Fact(content=f"{u} was in {c}", subject=u, predicate="visited", object=c,
                                       valid_from=T0, user_id=u, id=f"{u}-{c}"), f"{u}:{u}", None, v)
                       for u, c, v in rows)
    hits = index.query("ann", "current", axis[0], 2)
    assert [h[0] for h in hits] == ["ann-paris", "ann-rome"]
    assert hits[0][1] == pytest.approx(1.0, abs=1e-6) and hits[1][1] == pytest.approx(0.7071, abs=1e-4)
    assert [h[0] for h in index.query("bob", "current", axis[1], 10)] == ["bob-oslo"]  # bob's only
    assert index.ids("ann", "current") == {"ann-paris", "ann-rome", "ann-berlin"} and index.count("bob", "x") == 1
    paris = pg.get_facts(ann, ["ann-paris"])["ann-paris"]
    with pg.transaction():  # superseded: gone from the search in the same transaction, nothing to sync
        pg.update_facts([Fact(**{**paris.__dict__, "valid_until": T0 + timedelta(days=1),
                                 "superseded_by": "ann-berlin"})])
    assert [h[0] for h in index.query("ann", "current", axis[0], 1)] == ["ann-rome"]
    assert index.query("ann", "current", axis[0], 0) == [] and index.query("zed", "current", axis[0], 5) == []
