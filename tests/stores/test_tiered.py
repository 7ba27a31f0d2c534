"""The tiered vector index: exact search over SQLite for small users, a Chroma collection from a threshold on.

Real SQLite and Chroma in tmp_path. Facts are written the way a memory writes them: the
fact row (with its vector) in SQLite first, then the index write the outbox applies.
"""

from __future__ import annotations

import numpy as np
import pytest
from zep_core import Message
from zep_core.errors import StoreError
from zep_core.stores.base import VectorIndex
from zep_core.stores.records import RecordStore
from zep_core.stores.tiered import TieredVectorIndex, exact_search
from zep_core.stores.vector_process import ChromaProcess, available
from zep_core.stores.vectors import ChromaVectorIndex, collection_name
from zep_core.tenant import Tenant

T = Tenant.of  # a checked user id: what the stores take

DIM = 16


def axis(i: int) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[i] = 1.0
    return v


class Folder:
    """A record store and a tiered index over it, written to as the outbox writes."""

    def __init__(self, root, *, exact_below: int, max_open: int = 64, process: bool = False) -> None:
        self.root, self.exact_below, self.max_open, self.process = root, exact_below, max_open, process
        self.records = RecordStore(root / "zep.db")
        self.records.set_meta("embedder", f"test|{DIM}")
        self.index = self.open_index()
        self.n = 0

    def open_index(self) -> TieredVectorIndex:
        path = self.root / "chroma"

        def chroma():
            return ChromaProcess(path) if self.process else ChromaVectorIndex(path)

        return TieredVectorIndex(self.records, chroma, exact_below=self.exact_below, max_open=self.max_open,
                                 chroma_path=path)

    def reopen(self) -> None:
        self.index.close()
        self.index = self.open_index()

    def add(self, user: str, ids: list[str], vectors: np.ndarray) -> None:
        """Store the facts (or replace their vectors) in SQLite, then apply the index write."""
        vectors = np.asarray(vectors, dtype=np.float32).reshape(len(ids), -1)
        with self.records.transaction():
            for fid, v in zip(ids, vectors):
                self.n += 1
                self.records.db.execute(
                    "INSERT INTO facts (id, user_id, subject, predicate, object, content, confidence, valid_from, "
                    "source_message_ids, subject_id, embedding) VALUES (?, ?, 's', 'p', 'o', 'c', 1, "
                    "'2024-01-01', '[]', 'e', ?) ON CONFLICT(id) DO UPDATE SET embedding = excluded.embedding",
                    [fid, user, v.tobytes()])
        self.index.upsert(T(user), "current", ids, vectors)

    def retire(self, user: str, ids: list[str]) -> None:
        with self.records.transaction():
            for fid in ids:
                self.records.db.execute("UPDATE facts SET valid_until = '2024-02-01' WHERE id = ? AND user_id = ?",
                                        [fid, user])
        self.index.delete(T(user), "current", ids)

    def forget(self, user: str) -> None:
        with self.records.transaction():
            self.records.delete_user(T(user))
        self.index.drop_user(T(user))

    def close(self) -> None:
        self.index.close()
        self.records.close()


@pytest.fixture(params=[0, 3, 1000], ids=["all-chroma", "threshold-3", "all-exact"])
def folder(request, tmp_path):
    f = Folder(tmp_path, exact_below=request.param)
    yield f
    f.close()


# -- the vector-index contract (as tests/stores/test_vector_contract.py), on both tiers ------------------


def test_it_is_a_vector_index(folder):
    assert isinstance(folder.index, VectorIndex)


def test_nearest_first_with_cosine_similarity(folder):
    folder.add("alice", ["paris", "berlin", "rome"], np.stack([axis(0), axis(1), (axis(0) + axis(1)) / np.sqrt(2)]))
    hits = folder.index.query(T("alice"), "current", axis(0), k=2)
    assert [h[0] for h in hits] == ["paris", "rome"]
    assert hits[0][1] == pytest.approx(1.0, abs=1e-5) and hits[1][1] == pytest.approx(np.sqrt(0.5), abs=1e-4)
    assert [i for i, _ in folder.index.query(T("alice"), "current", axis(0), k=50)] == ["paris", "rome", "berlin"]


def test_a_prepared_search_answers_as_query_does_for_the_vectors_read_when_it_was_prepared(folder):
    """``prepare`` reads a small user's vectors before the query vector exists (retrieval embeds meanwhile)."""
    folder.add("alice", ["paris", "berlin", "rome"], np.stack([axis(0), axis(1), (axis(0) + axis(1)) / np.sqrt(2)]))
    folder.add("bob", ["tokyo"], axis(0)[None, :])
    search = folder.index.prepare(T("alice"), "current")
    for q, k in ((axis(0), 2), (axis(1), 50), (axis(0) + 2 * axis(1), 3)):
        assert search(q, k) == folder.index.query(T("alice"), "current", q, k)
    assert [i for i, _ in search(axis(0), 10)] == ["paris", "rome", "berlin"]  # never bob's
    with pytest.raises(StoreError, match="unknown vector kind"):
        folder.index.prepare(T("alice"), "nope")
    exact = not folder.index.promoted(T("alice"))
    folder.retire("alice", ["paris"])  # after the read: an exact user's prepared search still holds it
    assert ("paris" in [i for i, _ in search(axis(0), 10)]) is exact
    assert "paris" not in [i for i, _ in folder.index.prepare(T("alice"), "current")(axis(0), 10)]


def test_ids_and_count_follow_the_current_facts(folder):
    assert folder.index.count(T("alice"), "current") == 0 and folder.index.ids(T("alice"), "current") == set()
    folder.add("alice", ["f1", "f2", "f3", "f4"], np.stack([axis(i) for i in range(4)]))
    folder.add("bob", ["b1"], axis(0)[None, :])
    assert folder.index.ids(T("alice"), "current") == {"f1", "f2", "f3", "f4"}
    assert folder.index.count(T("alice"), "current") == 4
    folder.retire("alice", ["f1", "never-stored"])
    assert folder.index.ids(T("alice"), "current") == {"f2", "f3", "f4"}
    assert folder.index.count(T("alice"), "current") == 3
    assert folder.index.ids(T("bob"), "current") == {"b1"} and folder.index.count(T("alice"), "history") == 0
    assert [i for i, _ in folder.index.query(T("alice"), "current", axis(0), k=10)][0] != "f1"


def test_an_upsert_replaces_the_vector(folder):
    folder.add("alice", ["f1", "f2", "f3"], np.stack([axis(0), axis(1), axis(2)]))
    folder.add("alice", ["f1"], axis(5)[None, :])
    assert folder.index.ids(T("alice"), "current") == {"f1", "f2", "f3"}
    assert folder.index.query(T("alice"), "current", axis(5), k=1)[0] == ("f1", pytest.approx(1.0, abs=1e-5))


def test_isolation_a_tenants_query_never_returns_another_tenants_ids(folder):
    for user, n in (("alice", 5), ("bob", 1), ("carol", 4)):
        folder.add(user, [f"{user}-{i}" for i in range(n)], np.stack([axis(0)] * n))
    for user in ("alice", "bob", "carol"):
        got = [i for i, _ in folder.index.query(T(user), "current", axis(0), k=100)]
        assert got and all(i.startswith(f"{user}-") for i in got)
        assert all(i.startswith(f"{user}-") for i in folder.index.ids(T(user), "current"))
    assert folder.index.query(T("dave"), "current", axis(0), k=10) == []


def test_drop_user_removes_only_that_user_and_reset_everything(folder):
    for user in ("alice", "bob"):
        folder.add(user, [f"{user}-{i}" for i in range(4)], np.stack([axis(i) for i in range(4)]))
    folder.forget("alice")
    assert folder.index.ids(T("alice"), "current") == set() and len(folder.index.ids(T("bob"), "current")) == 4
    assert collection_name("alice", "current") not in folder.index.collection_ids()
    folder.forget("alice")  # twice is fine
    folder.index.reset()
    assert not folder.index.collection_ids() and folder.records.vector_tiers() == {}
    assert len(folder.index.ids(T("bob"), "current")) == 4  # SQLite still has bob: exact until his next write


def test_mismatched_ids_and_vectors_and_unknown_kinds_are_refused(folder):
    with pytest.raises(StoreError, match="one vector per id"):
        folder.index.upsert(T("alice"), "current", ["a", "b"], axis(0)[None, :])
    with pytest.raises(StoreError, match="unknown vector kind"):
        folder.index.query(T("alice"), "nonsense", axis(0), k=1)


def test_data_reopened_later_is_still_there(folder):
    folder.add("alice", [f"a{i}" for i in range(5)], np.stack([axis(i) for i in range(5)]))
    folder.reopen()
    assert folder.index.ids(T("alice"), "current") == {f"a{i}" for i in range(5)}
    assert folder.index.query(T("alice"), "current", axis(2), k=1)[0][0] == "a2"


# -- exact search is Chroma's ranking ----------------------------------------------------------------


def test_exact_search_ranks_as_chroma_does_ids_and_similarities(tmp_path):
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((60, 384)).astype(np.float32)  # not unit length: both normalise
    ids = [f"f{i:03d}" for i in range(60)]
    chroma = ChromaVectorIndex(tmp_path / "chroma")
    try:
        chroma.upsert("alice", "current", ids, vectors)
        rows = [(i, v.tobytes()) for i, v in zip(ids, vectors)]
        for q in rng.standard_normal((5, 384)).astype(np.float32):
            want = chroma.query("alice", "current", q, 10)
            got = exact_search(rows, q, 10)
            assert [i for i, _ in got] == [i for i, _ in want]
            assert np.allclose([s for _, s in got], [s for _, s in want], atol=1e-5)
    finally:
        chroma.close()


def test_exact_search_skips_unusable_vectors_and_keeps_ties_in_id_order():
    good = axis(0).tobytes()
    rows = [("a", good), ("b", np.full(DIM, np.nan, np.float32).tobytes()), ("c", axis(0)[:4].tobytes()),
            ("d", good), ("e", np.zeros(DIM, np.float32).tobytes())]
    assert [i for i, _ in exact_search(rows, axis(0), 10)] == ["a", "d"]
    assert exact_search(rows, np.zeros(DIM, np.float32), 10) == [] and exact_search(rows, axis(0), 0) == []


# -- promotion -----------------------------------------------------------------------------------------


def test_a_user_is_promoted_by_the_write_that_reaches_the_threshold(tmp_path):
    f = Folder(tmp_path, exact_below=5)
    try:
        f.add("alice", [f"a{i}" for i in range(4)], np.stack([axis(i) for i in range(4)]))
        f.add("bob", ["b0"], axis(0)[None, :])
        assert not f.index.promoted(T("alice")) and not f.index.chroma_started  # nothing started for small users
        assert not (tmp_path / "chroma").exists()
        before = f.index.query(T("alice"), "current", axis(1), k=3)
        f.add("alice", ["a4"], axis(4)[None, :])  # the fifth current fact
        assert f.index.promoted(T("alice")) and f.records.vector_tiers() == {"alice": "ready"}
        assert f.index.collection_ids() == {collection_name("alice", "current"): frozenset(f"a{i}" for i in range(5))}
        assert f.index.query(T("alice"), "current", axis(1), k=3)[:1] == before[:1]
        f.retire("alice", ["a0", "a1"])  # below the threshold again: stays promoted (no flapping)
        assert f.index.promoted(T("alice")) and f.index.ids(T("alice"), "current") == {"a2", "a3", "a4"}
        assert not f.index.promoted(T("bob"))
    finally:
        f.close()


def test_a_crash_between_building_the_collection_and_recording_it_leaves_the_user_exact_and_right(tmp_path):
    f = Folder(tmp_path, exact_below=3)
    try:
        f.add("alice", ["a0", "a1", "a2"], np.stack([axis(0), axis(1), axis(2)]))
        assert f.index.promoted(T("alice"))
        # the process died after the build and before the mark: simulated by dropping the mark,
        # with a fact added and one retired meanwhile (so the half-built collection is stale)
        f.records.set_vector_tier(T("alice"), "building")
        f.index.close()
        with f.records.transaction():
            f.records.db.execute("UPDATE facts SET valid_until = '2024-02-01' WHERE id = 'a0'")
        f.index = f.open_index()
        assert not f.index.promoted(T("alice"))
        assert f.index.ids(T("alice"), "current") == {"a1", "a2"}
        assert "a0" not in [i for i, _ in f.index.query(T("alice"), "current", axis(0), k=5)]
        f.records.clear_vector_tier(T("alice"))  # no mark at all: the same
        f.reopen()
        assert not f.index.promoted(T("alice")) and f.index.ids(T("alice"), "current") == {"a1", "a2"}
        f.add("alice", ["a3"], axis(3)[None, :])  # the next write promotes again, from SQLite
        assert f.index.promoted(T("alice"))
        assert f.index.collection_ids()[collection_name("alice", "current")] == {"a1", "a2", "a3"}
    finally:
        f.close()


def test_forget_drops_a_half_built_collection(tmp_path):
    f = Folder(tmp_path, exact_below=2)
    try:
        f.add("alice", ["a0", "a1"], np.stack([axis(0), axis(1)]))
        f.records.set_vector_tier(T("alice"), "building")
        f.reopen()
        f.forget("alice")
        assert f.index.collection_ids() == {} and f.records.vector_tiers() == {}
    finally:
        f.close()


# -- the bounded cache ----------------------------------------------------------------------------------


@pytest.mark.parametrize("process", [False, True], ids=["embedded", "process"])
def test_evicted_collections_below_chromas_sync_threshold_still_answer(tmp_path, process):
    if process and not available():
        pytest.skip("no fork() here")
    f = Folder(tmp_path, exact_below=3, max_open=2, process=process)
    users = [f"user{i}" for i in range(5)]
    try:
        for n, user in enumerate(users):  # 3-7 vectors each: far below sync_threshold (50), nothing persisted
            f.add(user, [f"{user}-{j}" for j in range(n + 3)], np.stack([axis(j) for j in range(n + 3)]))
        for _ in range(2):
            for n, user in enumerate(users):
                assert f.index.promoted(T(user))
                assert len(f.index.resident()) <= 2
                hits = f.index.query(T(user), "current", axis(n + 2), k=3)
                assert hits[0] == (f"{user}-{n + 2}", pytest.approx(1.0, abs=1e-5))
                assert f.index.count(T(user), "current") == n + 3
        assert f.index.opened > 2  # Chroma was closed to release collections, and opened again
        f.reopen()
        assert f.index.ids(T("user0"), "current") == {"user0-0", "user0-1", "user0-2"}
    finally:
        f.close()


# -- a memory of many small tenants -------------------------------------------------------------------


def test_many_small_tenants_open_and_answer_without_starting_chroma(make_memory, tmp_path):
    data = tmp_path / "data"
    memory = make_memory(data, vector_exact_below=50)
    users = [f"tenant{i}" for i in range(12)]
    for i, user in enumerate(users):
        memory.conversation_end("s", [Message(f"I live in City{i}.", name=user.capitalize())], user_id=user)
    memory.flush()
    assert not memory._stores.vectors.chroma_started and not (data / "chroma").exists()
    memory.close()
    again = make_memory(data, vector_exact_below=50)
    for i, user in enumerate(users):
        facts = again.get_context(f"Where does {user.capitalize()} live?", user_id=user)
        assert facts and all(f.user_id == user for f in facts)
        assert f"City{i}" in facts[0].content
    assert again.check_consistency() == {}
    assert not again._stores.vectors.chroma_started and not (data / "chroma").exists()


def test_an_old_folder_drops_the_collections_of_users_below_the_threshold_once(make_memory, tmp_path):
    data = tmp_path / "data"
    old = make_memory(data, vector_exact_below=0)  # every user has a collection, as before the tiers
    old.conversation_end("s", [Message("I live in Paris.", name="Alice")], user_id="alice")
    old.conversation_end("s", [Message(f"I like sport number {i}.", name="Bob") for i in range(6)], user_id="bob")
    old.flush()
    old._stores.records.set_meta("vector_tiers", "0")  # as a folder written before the tiers
    old._stores.records.clear_vector_tier()
    big = old._stores.records.current_fact_count(T("bob"))
    old.close()
    assert big >= 2
    again = make_memory(data, vector_exact_below=2)
    names = set(again._stores.vectors.collection_ids())
    assert collection_name("alice", "current") not in names and collection_name("bob", "current") in names
    assert again._stores.vectors.promoted(T("bob")) and not again._stores.vectors.promoted(T("alice"))
    assert again.check_consistency() == {}
    assert "Paris" in again.context_block("Where does Alice live?", user_id="alice")
