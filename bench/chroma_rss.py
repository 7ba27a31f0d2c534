"""Resident memory Chroma keeps per collection, against the same client holding none (same run).

Why it matters: the vector layout is one collection per user (the current facts; it was a
second one for superseded facts until this measure retired it), so Chroma's cost per
loaded collection is paid per user, not per fact.
Chroma's embedded client keeps every HNSW index it has loaded in an LRU cache sized
``RLIMIT_NOFILE // 5`` (``chromadb/api/rust.py``), not a setting: in practice every
collection touched since the client opened stays resident.

The run creates ``collections`` collections with our HNSW configuration, upserts
``vectors`` random 384-d vectors into each and queries each once, and reports the growth
of the process's anonymous memory over the empty client, per collection.

Run: ``python -m bench.chroma_rss [--collections 100] [--vectors 10 200]``.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["anonymous_mb", "measure"]


def anonymous_mb() -> float:
    """Anonymous (heap and mmap) memory of this process in MiB, from ``/proc/self/smaps_rollup``."""
    try:
        for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
            if line.startswith("Anonymous:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def measure(collections: int, vectors: int, *, dimension: int = 384, seed: int = 0) -> dict[str, Any]:
    """Create ``collections`` collections of ``vectors`` vectors each; MiB of anonymous memory per collection."""
    import chromadb
    from chromadb.config import Settings
    from zep_core.stores.vectors import _CONFIGURATION

    folder = Path(tempfile.mkdtemp(prefix="bench-chroma-rss-"))
    rng = np.random.default_rng(seed)
    try:
        client = chromadb.PersistentClient(path=str(folder), settings=Settings(anonymized_telemetry=False))
        client.heartbeat()
        base = anonymous_mb()
        for i in range(collections):
            col = client.get_or_create_collection(f"bench-{i}", configuration=_CONFIGURATION)
            block = rng.standard_normal((vectors, dimension)).astype(np.float32)
            col.upsert(ids=[f"{i}-{j}" for j in range(vectors)], embeddings=block)
            col.query(query_embeddings=block[:1], n_results=min(5, vectors))
        grown = anonymous_mb() - base
        return {"collections": collections, "vectors_each": vectors, "empty_client_mb": round(base, 1),
                "grown_mb": round(grown, 1), "mb_per_collection": round(grown / collections, 2),
                "vector_mb_per_collection": round(vectors * dimension * 4 / 2**20, 3)}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Print MiB per collection for each vector count (each in a fresh client)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collections", type=int, default=100)
    parser.add_argument("--vectors", type=int, nargs="*", default=[10, 200])
    args = parser.parse_args(argv)
    rows = [measure(args.collections, n) for n in args.vectors]
    for row in rows:
        print(f"{row['collections']} collections x {row['vectors_each']} vectors: +{row['grown_mb']} MiB over the "
              f"empty client ({row['empty_client_mb']} MiB), {row['mb_per_collection']} MiB per collection "
              f"(its vectors: {row['vector_mb_per_collection']} MiB)")
    return rows


if __name__ == "__main__":
    main()
