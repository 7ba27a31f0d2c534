"""Chroma: the vector index, derived from SQLite.

Layout (see FACTS.md: a ``where`` filter is Chroma's slow path, 82 ms vs 2.5 ms at
100k): one collection per user, so the hot query needs no filter — ``<user>_current``
holds a user's current facts. Older versions also kept ``<user>_entity`` (entity names),
which nothing read, and ``<user>_history`` (superseded facts, searched only for
``as_of``), which cost each user a second HNSW index held in memory (~2.7 MiB each,
bench/findings.md): ``as_of`` now searches SQLite for them. Both are dropped with the
user and once from an old folder.
Collection names are hashes of the user id, so ids never reach a file name. The
embedded index keeps its metadata database in WAL mode, its write log indexed (:func:`_prepare_metadata`).

Embedded (``PersistentClient`` in ``<data>/chroma``) or a Chroma server by URL
(``chroma run``, reached through ``HttpClient``). A server may be shared by several
data folders, so there every collection name also carries the data folder's
*namespace* — a random id kept in ``<data>/chroma/server_namespace`` — and
:meth:`ChromaVectorIndex.reset` (a rebuild) only ever drops its own collections.
Another process may drop a collection behind our back (``zep-memory forget`` on a
shared server): a stale cached handle is refreshed once and the call retried.

We always pass vectors ourselves (cosine space) and never documents or query texts:
Chroma's default embedding function would try to download a model.
"""

from __future__ import annotations

import hashlib
import re
import threading
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ..errors import StoreError
from .base import RETIRED_VECTOR_KINDS, VECTOR_KINDS

__all__ = ["ChromaVectorIndex", "collection_name"]

_PREFIX = "zep_"
_MAX_BATCH = 5000
_NAMESPACE_FILE = "server_namespace"
_NAMESPACE = re.compile(r"[0-9a-z]{1,32}")
_T = TypeVar("_T")
#: Cosine space; the HNSW graph written to disk every 50 new vectors instead of Chroma's 1,000.
#: Chroma keeps every vector not yet in a persisted graph in its log (``embeddings_queue``)
#: and replays it when a collection is first opened. With one small collection per user a
#: collection rarely reached 1,000, so the log kept nearly every vector ever written (2.2 kB
#: per fact on disk, beside the graph) and each first query replayed it; at 50 the log is
#: purged as it goes, upserts got faster and first queries twice as fast (bench/findings.md).
#: Existing collections keep the threshold they were created with until ``zep-memory rebuild``.
_CONFIGURATION = {"hnsw": {"space": "cosine", "sync_threshold": 50}}


def collection_name(user_id: str, kind: str, namespace: str | None = None) -> str:
    """The collection holding ``kind`` vectors of ``user_id`` (in ``namespace``, if any)."""
    if kind not in VECTOR_KINDS + RETIRED_VECTOR_KINDS:
        raise ValueError(f"unknown vector kind {kind!r}")
    digest = hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:32]
    middle = f"{namespace}_" if namespace else ""
    return f"{_PREFIX}{middle}{digest}_{kind}"


def _own_names(namespace: str | None, kinds: Sequence[str] = VECTOR_KINDS + RETIRED_VECTOR_KINDS) -> re.Pattern[str]:
    middle = f"{re.escape(namespace)}_" if namespace else ""
    return re.compile(f"{_PREFIX}{middle}[0-9a-f]{{32}}_({'|'.join(kinds)})")


def _folder_namespace(path: Path) -> str:
    """The data folder's namespace on a shared server, created on first use."""
    file = path / _NAMESPACE_FILE
    try:
        if file.is_file():
            value = file.read_text(encoding="utf-8").strip()
            if _NAMESPACE.fullmatch(value):
                return value
            raise StoreError(f"{file} holds {value!r}, not a namespace id; delete the file and run "
                             "`zep-memory rebuild` to index this data folder under a new one")
        path.mkdir(parents=True, exist_ok=True)
        value = uuid.uuid4().hex[:12]
        file.write_text(value + "\n", encoding="utf-8")
        return value
    except OSError as exc:
        raise StoreError(f"cannot read or create the Chroma namespace file {file}: {exc}") from exc


class ChromaVectorIndex:
    """Chroma collections per user and kind; embedded, or a server by URL.

    Args:
        path: folder for the embedded ``PersistentClient``; with ``url``, the folder
            that keeps this data folder's namespace id on the server.
        url: ``http://host:port`` of a Chroma server (``chroma run``) instead.
        namespace: prefix that keeps this index's collections apart from others on
            the same server (lowercase letters and digits). Default: none when
            embedded; with ``url``, the id kept in ``path`` (created on first use).

    Raises:
        StoreError: the server cannot be reached, or the folder cannot be opened.

    Example:
        >>> index = ChromaVectorIndex(url="http://127.0.0.1:8000", namespace="team1")  # doctest: +SKIP
        >>> index.upsert("alice", "current", ["f1"], np.ones((1, 384), dtype=np.float32))

    """

    def __init__(self, path: Path | None = None, *, url: str | None = None,
                 namespace: str | None = None) -> None:
        import chromadb
        from chromadb.config import Settings

        if namespace is not None and not _NAMESPACE.fullmatch(namespace):
            raise StoreError(f"Chroma namespace {namespace!r} must be 1-32 lowercase letters or digits")
        if url and namespace is None and path is not None:
            namespace = _folder_namespace(Path(path))
        self.namespace = namespace
        self.url = url
        self.path = Path(path).resolve() if path is not None else None
        settings = Settings(anonymized_telemetry=False, allow_reset=False)
        try:
            if url:
                self.client = chromadb.HttpClient(**_http_args(url), settings=settings)
            else:
                with _OPEN_LOCK:
                    first = not _OPEN.get(self.path)  # see _prepare_metadata: only while Chroma has it closed
                    ready = _prepare_metadata(self.path) if first else True
                    self.client = chromadb.PersistentClient(path=str(path), settings=settings)
                    if not ready:  # a new folder: Chroma has just made its tables; index them, then open again
                        self.client.close()
                        _wait_released(self.path)
                        _prepare_metadata(self.path)
                        self.client = chromadb.PersistentClient(path=str(path), settings=settings)
                    _OPEN[self.path] = _OPEN.get(self.path, 0) + 1
        except Exception as exc:  # chromadb raises many types
            hint = (" Start one with `chroma run --path DIR --host HOST --port PORT`, or leave out "
                    "chroma_url to use the embedded index." if url else "")
            why = str(exc).rstrip() or type(exc).__name__
            why += "" if why.endswith((".", "?", "!")) else "."
            raise StoreError(f"could not open the Chroma vector index at {url or path}: {why}{hint}") from exc
        self._collections: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._closed = False

    def _name(self, user_id: str, kind: str) -> str:
        return collection_name(user_id, kind, self.namespace)

    def _collection(self, user_id: str, kind: str, *, create: bool = True) -> Any | None:
        name = self._name(user_id, kind)
        col = self._collections.get(name)
        if col is not None:
            return col
        with self._lock:
            try:
                if create:
                    col = self.client.get_or_create_collection(
                        name, embedding_function=None, configuration=_CONFIGURATION)
                else:
                    col = self.client.get_collection(name, embedding_function=None)
            except Exception as exc:
                if not create:
                    return None
                raise StoreError(f"Chroma could not open collection {name}: {exc}") from exc
            self._collections[name] = col
            return col

    def _call(self, user_id: str, kind: str, what: str, fn: Callable[[Any], _T], *,
              create: bool, missing: _T) -> _T:
        """Run ``fn(collection)``; a handle gone stale (dropped elsewhere) is refreshed once."""
        for attempt in (1, 2):
            col = self._collection(user_id, kind, create=create)
            if col is None:
                return missing
            try:
                return fn(col)
            except Exception as exc:
                self._collections.pop(self._name(user_id, kind), None)
                if attempt == 2 or "does not exist" not in str(exc).lower():
                    raise StoreError(f"Chroma {what} failed: {exc}") from exc
        raise AssertionError("unreachable")

    def upsert(self, user_id: str, kind: str, ids: Sequence[str], vectors: np.ndarray) -> None:
        """Insert or replace vectors; idempotent."""
        if not len(ids):
            return
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) != len(ids):
            raise StoreError(f"Chroma upsert needs one vector per id: {len(ids)} ids, vectors of shape "
                             f"{vectors.shape}")
        for i in range(0, len(ids), _MAX_BATCH):
            batch_ids, batch = list(ids[i:i + _MAX_BATCH]), vectors[i:i + _MAX_BATCH]
            self._call(user_id, kind, "upsert", lambda col, i=batch_ids, v=batch: col.upsert(ids=i, embeddings=v),
                       create=True, missing=None)

    def delete(self, user_id: str, kind: str, ids: Sequence[str]) -> None:
        """Remove ids; missing ids are ignored."""
        if not len(ids):
            return
        for i in range(0, len(ids), _MAX_BATCH):
            batch_ids = list(ids[i:i + _MAX_BATCH])
            self._call(user_id, kind, "delete", lambda col, i=batch_ids: col.delete(ids=i),
                       create=False, missing=None)

    def query(self, user_id: str, kind: str, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        """Up to ``k`` ``(id, cosine similarity)`` pairs, best first."""
        query = np.asarray(vector, dtype=np.float32)[None, :]

        def run(col: Any) -> list[tuple[str, float]]:
            res = col.query(query_embeddings=query, n_results=k, include=["distances"])
            return [(i, 1.0 - float(d)) for i, d in zip(res["ids"][0], res["distances"][0])]

        return self._call(user_id, kind, "query", run, create=False, missing=[])

    def ids(self, user_id: str, kind: str) -> set[str]:
        """Every id in a user's collection of that kind."""
        def run(col: Any) -> set[str]:
            out: set[str] = set()
            offset = 0
            while True:
                got = col.get(include=[], limit=_MAX_BATCH, offset=offset)["ids"]
                out.update(got)
                if len(got) < _MAX_BATCH:
                    return out
                offset += _MAX_BATCH

        return self._call(user_id, kind, "read", run, create=False, missing=set())

    def count(self, user_id: str, kind: str) -> int:
        """How many vectors a user's collection of that kind holds (0 when it does not exist)."""
        return self._call(user_id, kind, "count", lambda col: int(col.count()), create=False, missing=0)

    def collection_ids(self) -> dict[str, frozenset[str]]:
        """Every collection of this index by name, with the ids it holds (for checks and tests)."""
        own = _own_names(self.namespace)
        try:
            names = [str(getattr(col, "name", col)) for col in self.client.list_collections()]
        except Exception as exc:
            raise StoreError(f"Chroma could not list its collections: {exc}") from exc
        out: dict[str, frozenset[str]] = {}
        for name in filter(own.fullmatch, names):
            col = self.client.get_collection(name, embedding_function=None)
            ids: set[str] = set()
            while True:
                got = col.get(include=[], limit=_MAX_BATCH, offset=len(ids))["ids"]
                ids.update(got)
                if len(got) < _MAX_BATCH:
                    break
            out[name] = frozenset(ids)
        return out

    def drop_user(self, user_id: str) -> None:
        """Delete the user's collections (those of retired kinds too)."""
        for kind in VECTOR_KINDS + RETIRED_VECTOR_KINDS:
            name = self._name(user_id, kind)
            with self._lock:
                self._collections.pop(name, None)
                try:
                    self.client.delete_collection(name)
                except Exception:  # absent collection: nothing to drop
                    pass

    def reset(self) -> None:
        """Delete every collection of this index (other namespaces on a server stay)."""
        own = _own_names(self.namespace)
        with self._lock:
            self._collections.clear()
            try:
                names = [str(getattr(col, "name", col)) for col in self.client.list_collections()]
                for name in names:
                    if own.fullmatch(name):
                        self.client.delete_collection(name)
            except Exception as exc:
                raise StoreError(f"Chroma reset failed: {exc}") from exc

    def drop_retired(self) -> int:
        """Delete this index's collections of retired kinds (older versions' entity vectors); return how many."""
        retired = _own_names(self.namespace, RETIRED_VECTOR_KINDS)
        dropped = 0
        with self._lock:
            try:
                for col in self.client.list_collections():
                    name = str(getattr(col, "name", col))
                    if retired.fullmatch(name):
                        self._collections.pop(name, None)
                        self.client.delete_collection(name)
                        dropped += 1
            except Exception as exc:
                raise StoreError(f"Chroma could not drop the retired collections: {exc}") from exc
        return dropped

    def close(self) -> None:
        """Drop cached handles and release Chroma's per-folder system.

        Chroma caches one system per folder for the whole process; left open, a later
        open in this process would reuse its in-memory HNSW indexes even after another
        process changed the files, and could write those stale indexes back.
        """
        self._collections.clear()
        if self._closed:
            return
        self._closed = True
        close = getattr(self.client, "close", None)
        if close is not None:
            close()
        if self.url is None and self.path is not None:
            with _OPEN_LOCK:
                left = _OPEN.pop(self.path, 1) - 1
                if left:
                    _OPEN[self.path] = left
            if not left:
                _wait_released(self.path)


#: Embedded Chroma folders this process has a client open on, with how many.
_OPEN: dict[Path, int] = {}
_OPEN_LOCK = threading.Lock()


#: Chroma's log of writes not yet in a persisted HNSW file, by collection ("topic"). Chroma
#: 1.5 reads it (``topic = ? AND seq_id > ?``) and purges it (``topic = ? AND seq_id < ?``) on
#: every write, and the table has no index but its ``seq_id`` key: each write scanned the
#: unpersisted rows of every collection, ~1.6 kB each, so its cost grew with the number of
#: users (bench/findings.md).
_QUEUE_INDEX = "CREATE INDEX IF NOT EXISTS zep_embeddings_queue_topic ON embeddings_queue(topic, seq_id)"


def _prepare_metadata(path: Path) -> bool:
    """Put Chroma's metadata database in WAL mode and index its write log, before Chroma opens it.

    Chroma creates ``chroma.sqlite3`` in rollback-journal mode, so every upsert pays a
    journal file and its syncs (bench/findings.md has the cost of each). The mode is kept
    in the file and Chroma leaves it as it finds it, so it is set once, here, before the
    client starts; a new folder gets an empty database in WAL mode, which Chroma fills.
    The index (:data:`_QUEUE_INDEX`) is an extra index on Chroma's own table: Chroma's
    statements use it and nothing of Chroma's depends on its absence.

    Only call it while no Chroma client of this process has the file open: Chroma links
    its own SQLite, and closing any other descriptor of the file in the same process
    drops the POSIX locks Chroma's SQLite holds on it.

    Returns:
        False when Chroma has not made its tables yet (a new folder): open the client,
        close it, and call this again.

    """
    import sqlite3

    path.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path / "chroma.sqlite3"), timeout=5)
    try:
        if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            conn.execute("PRAGMA journal_mode = WAL")
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'embeddings_queue'").fetchone():
            return False
        conn.execute(_QUEUE_INDEX)
        return True
    finally:
        conn.close()


def _wait_released(path: Path, timeout_s: float = 2.0) -> None:
    """Wait until Chroma has closed its metadata database after ``close()``.

    Chroma's Rust core closes its SQLite connections on a background task after the
    client is closed. The last connection to close checkpoints the write-ahead log into
    ``chroma.sqlite3`` and deletes ``chroma.sqlite3-wal``, so once that file is gone the
    folder is whole and can be copied, moved or deleted.
    """
    import time

    wal = path / "chroma.sqlite3-wal"
    deadline = time.monotonic() + timeout_s
    while wal.exists() and time.monotonic() < deadline:
        time.sleep(0.01)


def _http_args(url: str) -> dict[str, Any]:
    """``HttpClient`` arguments for ``http(s)://host:port``; a bad URL is a clear error."""
    from urllib.parse import urlparse

    parsed = urlparse(url if "://" in url else f"http://{url}")
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise StoreError(f"chroma_url {url!r} is not an http(s)://host:port URL")
    try:
        port = parsed.port or (443 if parsed.scheme == "https" else 8000)
    except ValueError:
        raise StoreError(f"chroma_url {url!r} has an invalid port") from None
    return {"host": parsed.hostname, "port": port, "ssl": parsed.scheme == "https"}
