"""A large tenant's HNSW index on PostgreSQL: built in the background, used once valid, never behind the facts.

What a user would see: the nearest facts the exact search finds (recall@10 of HNSW on these
2,000 facts: above .95), a superseded fact gone from the search at once, a forgotten tenant's
index dropped, another tenant's rows unreachable through the index's query, and a build cut
off by a crash started again. The plan is checked too: the search goes to the tenant's index.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from zep_core.models import Fact
from zep_core.stores.rows import StoredFact
from zep_core.tenant import Tenant

pytest.importorskip("psycopg", reason="PostgreSQL tests need the test extra: pip install -e '.[test]'")

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
DIM = 8


@pytest.fixture
def pg(pg_url):
    from zep_core.stores.postgres import PgRecordStore
    from zep_core.stores.postgres.hnsw import HnswIndexes
    from zep_core.stores.postgres.indexes import PgVectorIndex

    store = PgRecordStore(pg_url)
    hnsw = HnswIndexes(store, store.new_connection, exact_below=50, refresh_s=0.0)
    store.on_facts_written, store.on_user_deleted = hnsw.written, hnsw.forgotten
    yield store, hnsw, PgVectorIndex(store, hnsw), PgVectorIndex(store)
    hnsw.close()
    store.close()


def _vectors(rng, n):
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _write(store, user, vectors, start=0):
    with store.transaction():
        store.write_facts(StoredFact(Fact(id=f"{user}-{start + i}", user_id=user, valid_from=T0, subject=user,
                                          predicate="noted", object=f"item {start + i}",
                                          content=f"{user} noted item {start + i}"), "e", None, v)
                          for i, v in enumerate(vectors))


def _until(condition, seconds=30.0):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the background build did not finish in time"
        time.sleep(0.05)


def _copy_ids(store, user):
    tenant = Tenant.of(user)
    return {r[0] for r in store._rows(tenant, "SELECT id FROM ann_vectors WHERE user_id = %s", [tenant])}


def _plan(store, user, dimension=DIM):
    from zep_core.stores.postgres.hnsw import approximate_query

    tenant = Tenant.of(user)
    query = approximate_query(store._psycopg, tenant, dimension).as_string(store.conn)
    q = np.ones(dimension, dtype=np.float32)
    return "\n".join(r[0] for r in store._rows(tenant, "EXPLAIN " + query, [q, q, 10]))


def test_a_tenant_past_the_threshold_gets_an_index_and_the_same_answers(pg):
    store, hnsw, vectors, exact = pg
    rng = np.random.default_rng(1)
    _write(store, "small", _vectors(rng, 20))
    _write(store, "big", _vectors(rng, 30))
    time.sleep(0.3)
    assert not hnsw.ready(Tenant.of("big"))  # 30 < 50: still exact
    _write(store, "big", _vectors(rng, 1970), start=30)
    _until(lambda: hnsw.ready(Tenant.of("big")))
    assert not hnsw.ready(Tenant.of("small"))
    assert "ann_hnsw_" in _plan(store, "big")  # the planner takes the index (a tenant this large: it pays)
    recall = [len({i for i, _ in vectors.query("big", "current", q, 10)}
                  & {i for i, _ in exact.query("big", "current", q, 10)}) / 10 for q in _vectors(rng, 50)]
    assert np.mean(recall) >= 0.95
    # a k above the search breadth still gets k answers, best first
    for k in (200, 1500):  # pgvector's ef_search stops at 1,000: the iterative scan goes on
        found = vectors.query("big", "current", _vectors(rng, 1)[0], k)
        assert len(found) == k and [s for _, s in found] == sorted((s for _, s in found), reverse=True)


def test_the_copy_follows_every_write_after_the_build(pg):
    store, hnsw, vectors, exact = pg
    rng = np.random.default_rng(2)
    _write(store, "big", _vectors(rng, 60))
    _until(lambda: hnsw.ready(Tenant.of("big")))
    _write(store, "big", _vectors(rng, 10), start=60)  # new facts: copied in their own transaction
    ended = [f for f in store.get_facts(Tenant.of("big"), ["big-3", "big-61"]).values()]
    with store.transaction():
        store.update_facts([Fact(**{**f.__dict__, "valid_until": T0 + timedelta(days=1)}) for f in ended])
    tenant = Tenant.of("big")
    current = {r[0] for r in store._rows(tenant, "SELECT id FROM facts WHERE user_id = %s AND valid_until IS NULL "
                                                 "AND superseded_by IS NULL", [tenant])}
    assert "big-3" not in current and "big-61" not in current and "big-65" in current
    assert _copy_ids(store, "big") == current == vectors.ids("big", "current")
    # the facts that ended are never found, whatever is asked
    stored = store.fact_vectors(Tenant.of("big"), ["big-3"])["big-3"]
    assert "big-3" not in [i for i, _ in vectors.query("big", "current", stored, 10)]
    with store.transaction():  # re-embedding replaces the copy's vectors too
        store.set_embeddings(Tenant.of("big"), "facts", [("big-5", -stored)])
    assert vectors.query("big", "current", -stored, 1)[0][0] == "big-5"


def test_the_index_query_reads_one_tenant_only(pg):
    from zep_core.stores.postgres.hnsw import approximate_query

    store, hnsw, vectors, _ = pg
    rng = np.random.default_rng(3)
    odd = "o'brien\"; DROP TABLE facts; --"
    _write(store, odd, _vectors(rng, 60))
    _write(store, "eve", _vectors(rng, 60))
    _until(lambda: hnsw.ready(Tenant.of(odd)) and hnsw.ready(Tenant.of("eve")))
    q = _vectors(rng, 1)[0]
    assert {i.split("-")[0] for i, _ in vectors.query(odd, "current", q, 100)} == {odd.split("-")[0]}
    # eve's scope asking for the other tenant's index: row-level security admits none of its rows
    theirs = approximate_query(store._psycopg, Tenant.of(odd), DIM)
    assert store._rows(Tenant.of("eve"), theirs, [q, q, 100]) == []


def test_forgetting_a_tenant_drops_their_index_copy_and_mark(pg):
    from zep_core.stores.postgres.hnsw import index_name

    store, hnsw, vectors, _ = pg
    _write(store, "big", _vectors(np.random.default_rng(4), 60))
    _until(lambda: hnsw.ready(Tenant.of("big")))
    with store.transaction():
        store.delete_user(Tenant.of("big"))
    assert not hnsw.ready(Tenant.of("big")) and _copy_ids(store, "big") == set()

    def dropped():
        with store.new_connection() as conn:
            return not conn.execute("SELECT 1 FROM pg_class WHERE relname = %s",
                                    [index_name(Tenant.of("big"))]).fetchall()
    _until(dropped)
    assert store.vector_tiers() == {}


def test_a_build_cut_off_is_started_again(pg):
    from zep_core.stores.postgres.hnsw import index_name

    store, hnsw, vectors, _ = pg
    store.on_facts_written = None  # no background build: this test builds by hand
    _write(store, "big", _vectors(np.random.default_rng(5), 2000))
    assert hnsw.check(Tenant.of("big")) is True
    name = index_name(Tenant.of("big"))
    with store.new_connection() as conn:  # what a crash during CREATE INDEX CONCURRENTLY leaves: an invalid index
        conn.execute("UPDATE pg_index SET indisvalid = false WHERE indexrelid = %s::regclass", [f"zep.{name}"])
    store.clear_vector_tier(Tenant.of("big"))
    hnsw._ready.clear()
    assert "ann_hnsw_" not in _plan(store, "big")  # an invalid index is never used
    assert hnsw.check(Tenant.of("big")) is True
    assert "ann_hnsw_" in _plan(store, "big")


def test_a_rebuild_drops_every_index_and_copy(pg):
    store, hnsw, vectors, _ = pg
    _write(store, "big", _vectors(np.random.default_rng(6), 60))
    _until(lambda: hnsw.ready(Tenant.of("big")))
    vectors.reset()
    assert store.vector_tiers() == {} and _copy_ids(store, "big") == set()
    assert "ann_hnsw_" not in _plan(store, "big")
    assert len(vectors.query("big", "current", np.ones(DIM, dtype=np.float32), 100)) == 60  # exact again


def test_a_memory_indexes_its_large_tenants(pg_url, tmp_path, embedder):
    from zep_core import Memory, MemoryConfig
    from zep_core.models import Message

    with Memory(MemoryConfig(data_dir=tmp_path, embedder=embedder, database_url=pg_url,
                             postgres_exact_below=5)) as memory:
        for i in range(4):
            memory.conversation_end(f"s{i}", [Message(role="user", content=f"I adopted a cat named Tom{i}. "
                                                                            f"I work at Acme{i} now.")],
                                    user_id="ann")
        hnsw = memory._stores.vectors.hnsw
        hnsw.refresh_s = 0.0
        _until(lambda: hnsw.ready(Tenant.of("ann")))
        context = memory.get_context("Where does she work?", user_id="ann")
        assert any("Acme3" in f.content for f in context)


def test_a_user_that_does_not_own_the_tables_keeps_searching_exactly_and_says_why_once(pg_url, caplog):
    from urllib.parse import urlsplit, urlunsplit

    import psycopg
    from zep_core.stores.postgres import PgRecordStore
    from zep_core.stores.postgres.hnsw import HnswIndexes
    from zep_core.stores.postgres.indexes import PgVectorIndex

    PgRecordStore(pg_url).close()  # the owner made the tables
    role = f"zep_app_{urlsplit(pg_url).path.strip('/')}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT zep_tenant, zep_store TO {role}")  # all an application's user needs
    parts = urlsplit(pg_url)
    app_url = urlunsplit(parts._replace(netloc=f"{role}@{parts.netloc.rsplit('@', 1)[-1]}"))
    store = PgRecordStore(app_url)
    hnsw = HnswIndexes(store, store.new_connection, exact_below=50, refresh_s=0.0)
    store.on_facts_written = hnsw.written
    try:
        _write(store, "big", _vectors(np.random.default_rng(7), 60))
        _until(lambda: hnsw.failures == 1)
        _write(store, "big", _vectors(np.random.default_rng(8), 10), start=60)  # not tried again so soon
        time.sleep(0.3)
        assert hnsw.failures == 1 and not hnsw.ready(Tenant.of("big"))
        assert len(PgVectorIndex(store, hnsw).query("big", "current", np.ones(DIM, dtype=np.float32), 100)) == 70
        assert "could not be built (its searches stay exact" in caplog.text and "owner" in caplog.text
    finally:
        hnsw.close()
        store.close()
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f"DROP OWNED BY {role}")
        with psycopg.connect(urlunsplit(parts._replace(path="/postgres")), autocommit=True) as conn:
            conn.execute(f"DROP ROLE {role}")


def test_a_write_is_never_held_up_by_a_build_under_way(pg):
    """A build holds its lock through CREATE INDEX CONCURRENTLY, which waits for open writes:
    they must never wait for it (the benchmark's deadlock, before the two locks were told apart)."""
    import threading

    from zep_core.stores.postgres.hnsw import build_key

    store, hnsw, vectors, _ = pg
    store.on_facts_written = None
    _write(store, "big", _vectors(np.random.default_rng(9), 60))
    with store.new_connection() as builder:  # another process's build of this tenant, under way
        builder.execute("SELECT pg_advisory_lock(%s)", [build_key(Tenant.of("big"))])
        assert hnsw.check(Tenant.of("big")) is False  # this process leaves the build to it
        assert not hnsw.ready(Tenant.of("big"))
        done = threading.Event()
        threading.Thread(target=lambda: (_write(store, "big", _vectors(np.random.default_rng(10), 5), start=60),
                                          done.set()), daemon=True).start()
        assert done.wait(10), "a write waited for the build's lock"
    assert vectors.count("big", "current") == 65


def test_a_tenant_the_process_stopped_remembering_is_counted_again_and_still_indexed(pg, monkeypatch):
    """A process keeps the counts of its newest ``REMEMBERED`` tenants (100,000 tenants would
    otherwise each hold one for the process's life); one it forgot is counted again when written to."""
    from zep_core.stores.postgres import hnsw as module

    store, hnsw, vectors, exact = pg
    monkeypatch.setattr(module, "REMEMBERED", 2)
    rng = np.random.default_rng(5)
    for user in ("t0", "t1", "t2", "t3"):
        _write(store, user, _vectors(rng, 10))
        _until(lambda u=user: Tenant.of(u) in hnsw._checked)
    assert set(hnsw._checked) == {Tenant.of("t2"), Tenant.of("t3")}  # the oldest forgotten
    _write(store, "t0", _vectors(rng, 45), start=10)  # t0 crosses 50 while forgotten
    _until(lambda: hnsw.ready(Tenant.of("t0")))
    assert _copy_ids(store, "t0") == vectors.ids("t0", "current") and len(_copy_ids(store, "t0")) == 55


@pytest.mark.parametrize("users", [("100%", "100"), ("x%%y", "x%y"), ("%s", "%(u)s")])
def test_a_user_id_with_a_percent_sign_searches_its_own_index(pg, users):
    store, hnsw, vectors, exact = pg
    rng = np.random.default_rng(7)
    for user in users:  # each past the threshold: searched through an index of their own
        _write(store, user, _vectors(rng, 60))
    for user in users:
        _until(lambda u=user: hnsw.ready(Tenant.of(u)))
    for user in users:
        q = _vectors(rng, 1)[0]
        found = vectors.query(user, "current", q, 10)
        assert [i for i, _ in found] == [i for i, _ in exact.query(user, "current", q, 10)]  # 60 facts: all found
        assert len(found) == 10 and all(i.startswith(f"{user}-") for i, _ in found)
