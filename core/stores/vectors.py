"""Chroma: the vector index, derived from SQLite.

Layout (see FACTS.md: a ``where`` filter is Chroma's slow path, 82 ms vs 2.5 ms at
100k): one collection per user and kind, so the hot query needs no filter —
``<user>_current`` holds a user's current facts, ``<user>_history`` the superseded
ones (searched only for ``as_of``), ``<user>_entity`` entity names. Collection names
are hashes of the user id, so ids never reach a file name.

We always pass vectors ourselves (cosine space) and never documents or query texts:
Chroma's default embedding function would try to download a model.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import StoreError
from .base import VECTOR_KINDS

__all__ = ["ChromaVectorIndex", "collection_name"]

_PREFIX = "zep_"
_MAX_BATCH = 5000


def collection_name(user_id: str, kind: str) -> str:
    """The collection holding ``kind`` vectors of ``user_id``."""
    if kind not in VECTOR_KINDS:
        raise ValueError(f"unknown vector kind {kind!r}")
    digest = hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:32]
    return f"{_PREFIX}{digest}_{kind}"


class ChromaVectorIndex:
    """Chroma collections per user and kind; embedded, or a server by URL.

    Args:
        path: folder for the embedded ``PersistentClient``.
        url: ``http://host:port`` of a Chroma server (``chroma run``) instead.
    """

    def __init__(self, path: Path | None = None, *, url: str | None = None) -> None:
        import chromadb
        from chromadb.config import Settings

        settings = Settings(anonymized_telemetry=False, allow_reset=False)
        try:
            if url:
                from urllib.parse import urlparse

                parsed = urlparse(url)
                self.client = chromadb.HttpClient(host=parsed.hostname or "127.0.0.1",
                                                  port=parsed.port or 8000,
                                                  ssl=parsed.scheme == "https", settings=settings)
            else:
                self.client = chromadb.PersistentClient(path=str(path), settings=settings)
        except Exception as exc:  # chromadb raises many types
            where = url or path
            raise StoreError(f"could not open the Chroma vector index at {where}: {exc}") from exc
        self._collections: dict[str, Any] = {}
        self._lock = threading.Lock()

    def _collection(self, user_id: str, kind: str, *, create: bool = True) -> Any | None:
        name = collection_name(user_id, kind)
        col = self._collections.get(name)
        if col is not None:
            return col
        with self._lock:
            try:
                if create:
                    col = self.client.get_or_create_collection(
                        name, embedding_function=None, configuration={"hnsw": {"space": "cosine"}})
                else:
                    col = self.client.get_collection(name, embedding_function=None)
            except Exception as exc:
                if not create:
                    return None
                raise StoreError(f"Chroma could not open collection {name}: {exc}") from exc
            self._collections[name] = col
            return col

    def upsert(self, user_id: str, kind: str, ids: Sequence[str], vectors: np.ndarray) -> None:
        """Insert or replace vectors; idempotent."""
        if not len(ids):
            return
        col = self._collection(user_id, kind)
        vectors = np.asarray(vectors, dtype=np.float32)
        for i in range(0, len(ids), _MAX_BATCH):
            try:
                col.upsert(ids=list(ids[i:i + _MAX_BATCH]), embeddings=vectors[i:i + _MAX_BATCH])
            except Exception as exc:
                raise StoreError(f"Chroma upsert failed: {exc}") from exc

    def delete(self, user_id: str, kind: str, ids: Sequence[str]) -> None:
        """Remove ids; missing ids are ignored."""
        if not len(ids):
            return
        col = self._collection(user_id, kind, create=False)
        if col is None:
            return
        for i in range(0, len(ids), _MAX_BATCH):
            try:
                col.delete(ids=list(ids[i:i + _MAX_BATCH]))
            except Exception as exc:
                raise StoreError(f"Chroma delete failed: {exc}") from exc

    def query(self, user_id: str, kind: str, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        """Up to ``k`` ``(id, cosine similarity)`` pairs, best first."""
        col = self._collection(user_id, kind, create=False)
        if col is None:
            return []
        try:
            res = col.query(query_embeddings=np.asarray(vector, dtype=np.float32)[None, :],
                            n_results=k, include=["distances"])
        except Exception as exc:
            raise StoreError(f"Chroma query failed: {exc}") from exc
        return [(i, 1.0 - float(d)) for i, d in zip(res["ids"][0], res["distances"][0])]

    def ids(self, user_id: str, kind: str) -> set[str]:
        """Every id in a user's collection of that kind."""
        col = self._collection(user_id, kind, create=False)
        if col is None:
            return set()
        out: set[str] = set()
        offset = 0
        while True:
            got = col.get(include=[], limit=_MAX_BATCH, offset=offset)["ids"]
            out.update(got)
            if len(got) < _MAX_BATCH:
                return out
            offset += _MAX_BATCH

    def drop_user(self, user_id: str) -> None:
        """Delete the user's collections."""
        for kind in VECTOR_KINDS:
            name = collection_name(user_id, kind)
            with self._lock:
                self._collections.pop(name, None)
                try:
                    self.client.delete_collection(name)
                except Exception:  # absent collection: nothing to drop
                    pass

    def reset(self) -> None:
        """Delete every zep-memory collection."""
        with self._lock:
            self._collections.clear()
            for col in self.client.list_collections():
                name = getattr(col, "name", col)
                if str(name).startswith(_PREFIX):
                    self.client.delete_collection(name)

    def close(self) -> None:
        """Drop cached handles (the client has no explicit close)."""
        self._collections.clear()
