"""One contract for the vector index: Chroma embedded, in a child process (the default), a server, and the double.

The double (:class:`tests.stores.memory_indexes.MemoryVectorIndex`) keeps its vectors on a
shelf of the test's own: opened again on it, it finds them, as Chroma does in its folder.
"""

from __future__ import annotations

import numpy as np
import pytest
from zep_core.errors import StoreError
from zep_core.stores.base import VectorIndex
from zep_core.stores.vector_process import ChromaProcess, available
from zep_core.stores.vectors import ChromaVectorIndex

DIM = 16


def unit(*rows: list[float] | np.ndarray) -> np.ndarray:
    out = np.zeros((len(rows), DIM), dtype=np.float32)
    for i, row in enumerate(rows):
        out[i, :len(row)] = row
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def axis(i: int) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[i] = 1.0
    return v


@pytest.fixture(params=["embedded", "process", "server", "memory"])
def location(request, tmp_path):
    """How to open the index under test: a folder (here or in a child), a server URL with this test's own folder,
    or the double's shelf."""
    if request.param == "memory":
        return {"shelf": {}}
    if request.param == "process" and not available():
        pytest.skip("this platform has no fork() (Windows), so Chroma runs in the memory's process")
    if request.param in ("embedded", "process"):
        return {"path": tmp_path / "chroma", "process": request.param == "process"}
    return {"path": tmp_path / "chroma", "url": request.getfixturevalue("chroma_server")}


def open_index(location):
    if "shelf" in location:
        from tests.stores.memory_indexes import MemoryVectorIndex

        return MemoryVectorIndex(location["shelf"])
    options = dict(location)
    if options.pop("process", False):
        return ChromaProcess(options["path"])
    return ChromaVectorIndex(**options)


@pytest.fixture
def index(location):
    idx = open_index(location)
    yield idx
    idx.close()


def test_every_implementation_is_a_vector_index(index):
    assert isinstance(index, VectorIndex)


def test_upserted_vectors_come_back_nearest_first_with_cosine_similarity(index):
    index.upsert("alice", "current", ["paris", "berlin", "rome"], np.stack([axis(0), axis(1), unit([1, 1])[0]]))
    hits = index.query("alice", "current", axis(0), k=2)
    assert [h[0] for h in hits] == ["paris", "rome"]
    assert hits[0][1] == pytest.approx(1.0, abs=1e-5)
    assert hits[1][1] == pytest.approx(np.sqrt(0.5), abs=1e-4)


def test_query_asks_for_more_than_stored_and_gets_what_there_is(index):
    index.upsert("alice", "current", ["a"], axis(0)[None, :])
    assert [i for i, _ in index.query("alice", "current", axis(0), k=50)] == ["a"]


def test_ids_lists_every_stored_id_per_user_and_kind(index):
    index.upsert("alice", "current", ["f1", "f2"], np.stack([axis(0), axis(1)]))
    index.upsert("alice", "history", ["f0"], axis(2)[None, :])
    index.upsert("bob", "history", ["b1"], axis(3)[None, :])
    assert index.ids("alice", "current") == {"f1", "f2"}
    assert index.ids("alice", "history") == {"f0"}
    assert index.ids("bob", "history") == {"b1"} and index.ids("bob", "current") == set()


def test_count_says_how_many_vectors_a_user_and_kind_hold(index):
    assert index.count("alice", "current") == 0  # no collection yet
    index.upsert("alice", "current", ["f1", "f2"], np.stack([axis(0), axis(1)]))
    index.upsert("alice", "current", ["f1"], axis(2)[None, :])
    index.upsert("bob", "current", ["b1"], axis(0)[None, :])
    assert index.count("alice", "current") == 2 and index.count("bob", "current") == 1
    index.delete("alice", "current", ["f1"])
    assert index.count("alice", "current") == 1 and index.count("alice", "history") == 0


def test_upsert_is_idempotent_and_replaces_the_vector(index):
    index.upsert("alice", "current", ["f1", "f2"], np.stack([axis(0), axis(1)]))
    index.upsert("alice", "current", ["f1", "f2"], np.stack([axis(0), axis(1)]))
    assert index.ids("alice", "current") == {"f1", "f2"}
    index.upsert("alice", "current", ["f1"], axis(5)[None, :])
    assert index.ids("alice", "current") == {"f1", "f2"}
    assert index.query("alice", "current", axis(5), k=1)[0] == ("f1", pytest.approx(1.0, abs=1e-5))


def test_delete_removes_ids_and_ignores_missing_ones(index):
    index.upsert("alice", "current", ["f1", "f2"], np.stack([axis(0), axis(1)]))
    index.delete("alice", "current", ["f1", "never-stored"])
    assert index.ids("alice", "current") == {"f2"}
    index.delete("nobody", "current", ["f1"])  # no collection yet: nothing to do
    index.delete("alice", "current", [])


def test_users_never_see_each_others_vectors(index):
    index.upsert("alice", "current", ["alice-fact"], axis(0)[None, :])
    index.upsert("bob", "current", ["bob-fact"], axis(0)[None, :])
    assert [i for i, _ in index.query("alice", "current", axis(0), k=10)] == ["alice-fact"]
    assert [i for i, _ in index.query("bob", "current", axis(0), k=10)] == ["bob-fact"]
    assert index.query("carol", "current", axis(0), k=10) == []
    assert index.ids("carol", "current") == set()


def test_drop_user_removes_only_that_user(index):
    for user in ("alice", "bob"):
        index.upsert(user, "current", [f"{user}-1"], axis(0)[None, :])
        index.upsert(user, "history", [f"{user}-h"], axis(1)[None, :])
    index.drop_user("alice")
    assert index.ids("alice", "current") == set() and index.ids("alice", "history") == set()
    assert index.ids("bob", "current") == {"bob-1"} and index.ids("bob", "history") == {"bob-h"}
    index.drop_user("alice")  # dropping twice is fine
    index.upsert("alice", "current", ["again"], axis(2)[None, :])
    assert index.ids("alice", "current") == {"again"}


def test_reset_removes_everything_of_this_index(index):
    index.upsert("alice", "current", ["a"], axis(0)[None, :])
    index.upsert("bob", "history", ["b"], axis(1)[None, :])
    index.reset()
    assert index.ids("alice", "current") == set() and index.ids("bob", "history") == set()
    index.upsert("alice", "current", ["a2"], axis(0)[None, :])
    assert index.ids("alice", "current") == {"a2"}


def test_a_collection_dropped_by_another_client_is_reopened_not_an_error(location):
    if location.get("process"):
        pytest.skip("a Chroma child is its folder's only client (it holds the owner lock): two clients of "
                    "one folder exist only in one process or on a server")
    first, second = open_index(location), open_index(location)
    first.upsert("alice", "current", ["a"], axis(0)[None, :])
    assert second.ids("alice", "current") == {"a"}
    second.drop_user("alice")  # e.g. `zep-memory forget alice` in another process
    assert first.query("alice", "current", axis(0), k=5) == []
    assert first.ids("alice", "current") == set()
    first.upsert("alice", "current", ["b"], axis(1)[None, :])
    assert second.ids("alice", "current") == {"b"}


def test_mismatched_ids_and_vectors_are_refused(index):
    with pytest.raises(StoreError, match="one vector per id"):
        index.upsert("alice", "current", ["a", "b"], axis(0)[None, :])


def test_data_reopened_later_is_still_there(location):
    index = open_index(location)
    index.upsert("alice", "current", ["a"], axis(0)[None, :])
    index.close()
    again = open_index(location)
    assert again.ids("alice", "current") == {"a"}
    again.close()
