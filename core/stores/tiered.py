"""Two tiers of vector search: exact over SQLite for small users, a Chroma collection for large ones.

Why (issue 33, "100,000 tenants on one machine"): a Chroma collection keeps its HNSW
index resident once touched (~2.8 MB per user, bench/findings.md), so a collection per
user stops near a thousand users. SQLite already keeps every fact's vector, written in
the same transaction as the fact, and an exact search over one user's current vectors
read from it costs a fraction of a millisecond at the sizes most users have, with
nothing kept in memory between queries (``bench/vector_tiers.py``; figures and the
chosen threshold in docs/benchmarks.md).

So a user with fewer current facts than ``exact_below`` has no collection:
:meth:`TieredVectorIndex.upsert` and :meth:`~TieredVectorIndex.delete` do nothing for
them (SQLite already holds what they would write), :meth:`~TieredVectorIndex.query` is an
exact cosine search over their current facts' vectors (one read by ``facts_current``, an
index led by ``user_id``), and ``ids``/``count`` come from SQLite. The first upsert that
finds a user at or above the threshold *promotes* them: their collection is built from
SQLite's current vectors, and only once it is complete is the promotion recorded in
SQLite (table ``vector_tiers``, one row per promoted user; no DDL per user). A crash in
between leaves the user searched exactly, their half-built collection dropped and built
again on the next promotion. A promoted user stays promoted (no flapping around the
threshold) until a rebuild (:meth:`~TieredVectorIndex.reset`) or ``forget``.

Chroma is opened lazily, on the first call that needs a collection, so a memory whose
users are all small never starts it (nor its child process). At most ``max_open``
promoted collections are resident at once. Chroma 1.5's own cache cannot bound that:
it evicts by file handles (``RLIMIT_NOFILE // 5`` collections), and a collection it
evicts before its first 50 vectors were persisted (``sync_threshold``) fails every later
query with "Nothing found on disk" (seen with 60 collections under a file limit of 200; it
depends on when Chroma persists, so no test pins it). What does
release a collection's memory without losing anything is closing the client: its
unpersisted vectors stay in Chroma's write log, replayed when the collection is next
opened. So when one more collection would pass ``max_open``, the Chroma index is closed
(its child process exits, giving its memory back to the system) and opened again
lazily; the resident set starts empty.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ..errors import StoreError
from ..tenant import Tenant, key
from .base import RETIRED_VECTOR_KINDS, VECTOR_KINDS, VectorIndex
from .record_protocols import VectorTierRecords

__all__ = ["ExactVectors", "TieredVectorIndex", "exact_search"]

log = logging.getLogger("zep_core")

_BUILDING, _READY = "building", "ready"
_BUILD_BATCH = 5000
#: Meta key: the folder's collections from before the tiers were sorted once (see :meth:`TieredVectorIndex.settle`).
_SETTLED = "vector_tiers"


def exact_search(rows: Sequence[tuple[str, bytes]], vector: np.ndarray, k: int) -> list[tuple[str, float]]:
    """The ``k`` rows nearest to ``vector`` by cosine similarity, best first, as Chroma's cosine space ranks them.

    Rows and query are normalised (Chroma's cosine space normalises both, then ranks by
    ``1 - dot``); vectors of another dimension, not finite or of zero length are skipped.
    Equal scores keep the rows' order (ids, as :meth:`RecordStore.current_vectors` reads them).
    """
    return ExactVectors(rows).search(vector, k)


class ExactVectors:
    """One user's vectors, read for an exact search: the matrix is built once per width, before or at the query.

    :meth:`TieredVectorIndex.prepare` reads them (and builds the matrix of the stored width)
    while the question is still being embedded; :meth:`search` then only scores.
    """

    def __init__(self, rows: Sequence[tuple[str, bytes]], dimension: int | None = None) -> None:
        self.rows = rows
        self._built: dict[int, tuple[list[str], np.ndarray, np.ndarray]] = {}
        if dimension:
            self._matrix(dimension)

    def _matrix(self, dimension: int) -> tuple[list[str], np.ndarray, np.ndarray]:
        """The ids, the matrix and the row norms of the vectors of ``dimension`` floats."""
        built = self._built.get(dimension)
        if built is None:
            kept = [r for r in self.rows if len(r[1]) == 4 * dimension]
            matrix = np.frombuffer(b"".join(r[1] for r in kept), dtype=np.float32).reshape(len(kept), dimension)
            with np.errstate(all="ignore"):
                norms = np.linalg.norm(matrix, axis=1)
            built = self._built[dimension] = ([r[0] for r in kept], matrix, norms)
        return built

    def search(self, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        """The ``k`` vectors nearest to ``vector``, best first (see :func:`exact_search`)."""
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(query))
        if k <= 0 or not np.isfinite(norm) or norm == 0.0:
            return []
        ids, matrix, norms = self._matrix(query.shape[0])
        if not ids:
            return []
        with np.errstate(all="ignore"):
            scores = (matrix @ (query / norm)) / norms
        usable = np.isfinite(scores)
        ranked = np.argsort(-np.where(usable, scores, -np.inf), kind="stable")
        return [(ids[i], float(scores[i])) for i in ranked[:k] if usable[i]]


class TieredVectorIndex:
    """The :class:`VectorIndex` of a memory: exact search in SQLite below a size, Chroma at and above it.

    Args:
        records: the record store (the facts' vectors, and the promotion marks).
        open_chroma: opens the Chroma index (embedded, in a child process, or a server); called lazily.
        exact_below: users with fewer current facts than this are searched exactly; 0 gives every user
            a collection on their first write (the layout before the tiers).
        max_open: at most this many promoted collections resident at once (see the module docstring).
        chroma_path: the embedded Chroma folder, to tell without opening Chroma that it holds
            nothing yet; None for a server (which is then asked).

    Raises:
        StoreError: ``exact_below`` or ``max_open`` out of range.

    """

    def __init__(self, records: VectorTierRecords, open_chroma: Callable[[], VectorIndex], *, exact_below: int,
                 max_open: int, chroma_path: Path | None = None) -> None:
        if not isinstance(exact_below, int) or exact_below < 0:
            raise StoreError(f"exact_below must be a whole number >= 0, got {exact_below!r}")
        if not isinstance(max_open, int) or max_open < 1:
            raise StoreError(f"max_open must be a whole number >= 1, got {max_open!r}")
        self.records = records
        self.exact_below = exact_below
        self.max_open = min(max_open, _handle_bound())
        self._open_chroma = open_chroma
        self._chroma_path = chroma_path
        self._chroma: VectorIndex | None = None
        self._resident: OrderedDict[str, None] = OrderedDict()
        self._tiers = records.vector_tiers()  # promoted users are few: kept here, and in SQLite
        self._lock = threading.RLock()
        self._closed = False
        self._dimension: int | None = None
        #: Set by :func:`zep_core.stores.folder.open_folder`; handed to Chroma when it opens.
        self.on_failure: Callable[[], None] | None = None
        self._needs_check = False
        self.opened = 0  # how many times Chroma was opened (tests and bench read it)

    # -- Chroma, lazily and bounded ---------------------------------------------------------

    @property
    def needs_check(self) -> bool:
        """Whether Chroma saw its disk fail or a call stall (the next open checks its files)."""
        return self._needs_check or bool(getattr(self._chroma, "needs_check", False))

    @property
    def chroma(self) -> VectorIndex:
        """The Chroma index behind the promoted users (opened now if it was not; tests and tools reach it here)."""
        with self._lock:
            return self._index()

    @property
    def chroma_started(self) -> bool:
        """Whether Chroma is open now."""
        return self._chroma is not None

    def _chroma_has_data(self) -> bool:
        """Whether Chroma may hold collections (an embedded folder without its database holds none)."""
        if self._chroma is not None or self._chroma_path is None:
            return True
        return (self._chroma_path / "chroma.sqlite3").exists()

    def _index(self, user_id: str | None = None) -> VectorIndex:
        """The Chroma index, opened if need be; ``user_id`` is made resident, closing Chroma first if it is full."""
        if self._closed:
            raise StoreError("the vector index is closed")
        if user_id is not None and user_id not in self._resident and len(self._resident) >= self.max_open:
            log.debug("%d vector collections resident: closing Chroma to release them", len(self._resident))
            self._release()
        if self._chroma is None:
            self._chroma = self._open_chroma()
            self.opened += 1
            if self.on_failure is not None and hasattr(self._chroma, "on_failure"):
                self._chroma.on_failure = self.on_failure
        if user_id is not None:
            self._resident[user_id] = None
            self._resident.move_to_end(user_id)
        return self._chroma

    def _release(self) -> None:
        chroma, self._chroma = self._chroma, None
        self._resident.clear()
        if chroma is not None:
            try:
                chroma.close()
            finally:  # a child killed at its close deadline sets it: the next open checks Chroma's files
                self._needs_check = self._needs_check or bool(getattr(chroma, "needs_check", False))

    def resident(self) -> list[str]:
        """The promoted users whose collections are open now, least recently used first."""
        return list(self._resident)

    # -- tiers -----------------------------------------------------------------------------

    def promoted(self, user_id: Tenant) -> bool:
        """Whether the user's vectors are searched in their Chroma collection.

        Every method of a user's vectors asks this first, so each takes only a
        :class:`~zep_core.tenant.Tenant` (a ``TypeError`` otherwise), as the record store does.
        """
        return self._tiers.get(key(user_id)) == _READY

    def _usable_width(self) -> int | None:
        if self._dimension is None:
            dim = (self.records.get_meta("embedder") or "").rpartition("|")[2]
            self._dimension = int(dim) if dim.isdigit() else None
        return None if self._dimension is None else 4 * self._dimension

    def _promote(self, user_id: str, dimension: int) -> None:
        """Build the user's collection from SQLite's current vectors, then record it (in that order)."""
        self._tiers[user_id] = _BUILDING
        self.records.set_vector_tier(user_id, _BUILDING)  # a collection may exist from here: forget drops it
        chroma = self._index(user_id)
        chroma.drop_user(user_id)  # a collection half built by a process that crashed
        rows = [(i, b) for i, b in self.records.current_vectors(user_id) if len(b) == 4 * dimension]
        for start in range(0, len(rows), _BUILD_BATCH):
            batch = rows[start:start + _BUILD_BATCH]
            matrix = np.frombuffer(b"".join(b for _, b in batch), dtype=np.float32).reshape(len(batch), dimension)
            finite = np.isfinite(matrix).all(axis=1)
            if finite.any():
                chroma.upsert(user_id, "current", [batch[i][0] for i in np.flatnonzero(finite)], matrix[finite])
        self.records.set_vector_tier(user_id, _READY)  # only now: a crash before this leaves the user exact
        self._tiers[user_id] = _READY
        log.info("user %r reached %d current facts: their vectors now have a Chroma collection",
                 user_id, len(rows))

    # -- the VectorIndex protocol ----------------------------------------------------------

    def upsert(self, user_id: str, kind: str, ids: Sequence[str], vectors: np.ndarray) -> None:
        """Write to the user's collection once they have one; the first write at the threshold builds it."""
        if not _check_kind(kind) or not len(ids):
            return
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) != len(ids):
            raise StoreError(f"vector upsert needs one vector per id: {len(ids)} ids, vectors of shape "
                             f"{vectors.shape}")
        with self._lock:
            if self.promoted(user_id):
                self._index(user_id).upsert(user_id, kind, ids, vectors)
            elif self.records.current_fact_count(user_id) >= self.exact_below:
                self._promote(user_id, vectors.shape[1])

    def delete(self, user_id: str, kind: str, ids: Sequence[str]) -> None:
        """Remove ids from the user's collection, if they have one (else SQLite already has them retired)."""
        if not _check_kind(kind) or not len(ids):
            return
        with self._lock:
            if self.promoted(user_id):
                self._index(user_id).delete(user_id, kind, ids)

    def query(self, user_id: str, kind: str, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        """Up to ``k`` ``(id, cosine similarity)`` pairs of the user's current facts, best first."""
        if not _check_kind(kind):
            return []
        with self._lock:
            if self.promoted(user_id):
                return self._index(user_id).query(user_id, kind, vector, k)
        return exact_search(self.records.current_vectors(user_id), vector, k)

    def prepare(self, user_id: str, kind: str) -> Callable[[np.ndarray, int], list[tuple[str, float]]]:
        """:meth:`query` in two steps: read now what the search needs besides the query; search when it comes.

        A small user's current vectors are read and stacked here, so a caller can read them
        while the query is being embedded (:class:`~zep_core.retrieval.Retriever` does); a
        promoted user's search waits for the vector and asks their collection. What is
        returned searches the vectors as they were when this was called.
        """
        if not _check_kind(kind):
            return lambda vector, k: []
        with self._lock:
            if self.promoted(user_id):
                return functools.partial(self.query, user_id, kind)
        width = self._usable_width()
        return ExactVectors(self.records.current_vectors(user_id), width // 4 if width else None).search

    def ids(self, user_id: str, kind: str) -> set[str]:
        """The ids searched for the user: their collection's, or their current facts with usable vectors."""
        if not _check_kind(kind):
            return set()
        with self._lock:
            if self.promoted(user_id):
                return self._index(user_id).ids(user_id, kind)
        width = self._usable_width()
        out = set()
        for fid, blob in self.records.current_vectors(user_id):
            if width is None or len(blob) == width:
                if np.isfinite(np.frombuffer(blob, dtype=np.float32)).all():
                    out.add(fid)
        return out

    def count(self, user_id: str, kind: str) -> int:
        """How many vectors are searched for the user (small users: their current facts, counted in SQLite)."""
        if not _check_kind(kind):
            return 0
        with self._lock:
            if self.promoted(user_id):
                return self._index(user_id).count(user_id, kind)
        return self.records.current_fact_count(user_id)

    def drop_user(self, user_id: str) -> None:
        """Remove the user's collection (if any could exist) and their mark."""
        with self._lock:
            if user_id in self._tiers or self._chroma is not None or not self.settled():
                if self._chroma_has_data():
                    self._index().drop_user(user_id)
                self._resident.pop(user_id, None)
            self.records.clear_vector_tier(user_id)
            self._tiers.pop(user_id, None)

    def reset(self) -> None:
        """Remove every collection and every mark (a rebuild promotes the users at the threshold again)."""
        with self._lock:
            self.records.clear_vector_tier()
            self._tiers.clear()
            if self._chroma_has_data():
                self._index().reset()
            self._resident.clear()
            self.records.set_meta(_SETTLED, "1")

    def close(self) -> None:
        """Close Chroma if it was opened (the data stays)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._release()

    # -- what maintenance and tests use ------------------------------------------------------

    def settled(self) -> bool:
        """Whether the folder's collections were sorted into the tiers (see :meth:`settle`)."""
        return self.records.get_meta(_SETTLED) == "1"

    def settle(self, users: Sequence[str]) -> int:
        """Once per folder: keep the collections of users at the threshold, drop the others'.

        A folder written before the tiers has a collection for every user. Those of users
        at or above the threshold stay and are recorded as promoted (they are complete:
        the outbox kept them up to date); the others are dropped, quietly, as their users
        are now searched in SQLite, which holds every vector anyway. Returns how many were dropped.
        """
        with self._lock:
            if self.settled():
                return 0
            dropped = 0
            if self._chroma_has_data():
                names = set(self.collection_ids())
                from .vectors import collection_name

                namespace = getattr(self._chroma, "namespace", None)
                for user in users:
                    if collection_name(user, "current", namespace) not in names or user in self._tiers:
                        continue
                    if self.records.current_fact_count(user) >= self.exact_below:
                        self.records.set_vector_tier(user, _READY)
                        self._tiers[user] = _READY
                    else:
                        self._index().drop_user(user)
                        dropped += 1
                self._release()  # what this touched need not stay resident
            self.records.set_meta(_SETTLED, "1")
            return dropped

    def drop_retired(self) -> int:
        """Delete collections of retired kinds (older versions'); never starts Chroma on a folder without it."""
        with self._lock:
            if not self._chroma_has_data():
                return 0
            drop = getattr(self._index(), "drop_retired", None)
            return int(drop()) if drop is not None else 0

    def lost_collections(self) -> bool:
        """Whether a promoted user's collection is gone (Chroma's folder deleted, a wiped server).

        Never starts Chroma when no user is promoted.
        """
        with self._lock:
            user = next((u for u, state in self._tiers.items() if state == _READY), None)
            if user is None:
                return False
            return not self._index(user).count(user, "current") and self.records.current_fact_count(user) > 0

    def collection_ids(self) -> dict[str, frozenset[str]]:
        """Every collection Chroma holds, by name, with its ids (none when Chroma holds nothing yet)."""
        with self._lock:
            if not self._chroma_has_data():
                return {}
            get = getattr(self._index(), "collection_ids", None)
            return get() if get is not None else {}


def _check_kind(kind: str) -> bool:
    """Whether ``kind`` is kept (a retired kind is known and holds nothing; another is an error)."""
    if kind in VECTOR_KINDS:
        return True
    if kind in RETIRED_VECTOR_KINDS:
        return False
    raise StoreError(f"unknown vector kind {kind!r}; the vector index keeps {', '.join(VECTOR_KINDS)}")


def _handle_bound() -> int:
    """Collections Chroma itself keeps resident before its own (unsafe) eviction: its cache is file handles // 5."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):  # pragma: no cover - Windows: Chroma reads another limit
        return 1 << 30
    if soft == resource.RLIM_INFINITY:
        return 1 << 30
    return max(1, soft // 5 - 8)  # a few handles for the metadata database and the socket
