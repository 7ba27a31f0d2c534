"""Where approximate search starts to pay: exact search over SQLite against a Chroma collection, by tenant size.

Why (issue 33): a Chroma collection keeps its HNSW index resident once touched, so a
collection per tenant stops near a thousand tenants; SQLite already holds every
vector. For each tenant size (current facts; synthetic 384-d unit vectors) the run
measures, in the same process and run:

* **exact**: :func:`zep_core.stores.tiered.exact_search` over the tenant's vectors read
  from SQLite (:meth:`RecordStore.current_vectors`), warm (the same connection, pages
  cached) and cold (a new connection per query: no SQLite page cache; the OS cache
  stays warm, which this run cannot drop);
* **chroma** (the baseline): the same vectors in a collection of the embedded client
  with our HNSW configuration, queried warm, and cold (the first query after the
  client was opened again: the HNSW files are loaded); and the anonymous memory the
  loaded collection added to the process.

Each figure is also given as a ratio to Chroma's at the same size. The chosen
threshold is the smallest size at which exact search's warm p50 is slower than
Chroma's warm p50 (below it exact search is as fast and holds no memory; p50, as p95 of
sub-millisecond figures moves with the machine's load); that is the
default of ``vector_exact_below`` (docs/benchmarks.md, "Vector tiers").

Run: ``python -m bench.vector_tiers [--sizes 10 100 300 1000 3000 10000] [--queries 200]``.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.chroma_rss import anonymous_mb
from bench.common import percentiles, write_result

__all__ = ["measure", "main"]

DIM = 384
SIZES = (10, 100, 300, 1000, 3000, 10000)


def _insert(records: Any, user: str, vectors: np.ndarray) -> list[str]:
    ids = [f"{user}-{i:06d}" for i in range(len(vectors))]
    with records.transaction():
        records.db.conn.executemany(
            "INSERT INTO facts (id, user_id, subject, predicate, object, content, confidence, valid_from, "
            "source_message_ids, subject_id, embedding) VALUES (?, ?, 's', 'p', 'o', 'c', 1, '2024-01-01', '[]', "
            "'e', ?)", [(i, user, v.tobytes()) for i, v in zip(ids, vectors)])
    return ids


def _timed(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def measure(sizes: Sequence[int] = SIZES, *, queries: int = 200, cold: int = 20, k: int = 10,
            seed: int = 0) -> dict[str, Any]:
    """Query times (ms) of both tiers and Chroma's resident memory per collection, by tenant size."""
    from zep_core.stores.records import RecordStore
    from zep_core.stores.tiered import exact_search
    from zep_core.stores.vectors import ChromaVectorIndex

    rng = np.random.default_rng(seed)
    folder = Path(tempfile.mkdtemp(prefix="bench-vector-tiers-"))
    rows: list[dict[str, Any]] = []
    try:
        records = RecordStore(folder / "zep.db")
        for n in sizes:  # other tenants' rows beside each one, as in a shared folder
            vectors = rng.standard_normal((n, DIM)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            _insert(records, f"t{n}", vectors)
            _insert(records, f"other{n}", rng.standard_normal((min(n, 1000), DIM)).astype(np.float32))
        probes = rng.standard_normal((queries, DIM)).astype(np.float32)
        chroma = ChromaVectorIndex(folder / "chroma")
        for n in sizes:
            user = f"t{n}"
            current = records.current_vectors(user)
            ids = [i for i, _ in current]
            matrix = np.frombuffer(b"".join(b for _, b in current), dtype=np.float32).reshape(len(ids), DIM)
            before = anonymous_mb()
            for start in range(0, n, 5000):
                chroma.upsert(user, "current", ids[start:start + 5000], matrix[start:start + 5000])
            chroma.query(user, "current", probes[0], k)
            grown = anonymous_mb() - before
            exact_warm = [_timed(lambda q=q, u=user: exact_search(records.current_vectors(u), q, k)) for q in probes]
            chroma_warm = [_timed(lambda q=q, u=user, c=chroma: c.query(u, "current", q, k)) for q in probes]
            exact_cold, chroma_cold = [], []
            for q in probes[:cold]:
                fresh = RecordStore(folder / "zep.db")
                exact_cold.append(_timed(lambda q=q, r=fresh, u=user: exact_search(r.current_vectors(u), q, k)))
                fresh.close()
            chroma.close()
            for q in probes[:cold]:
                chroma = ChromaVectorIndex(folder / "chroma")
                chroma_cold.append(_timed(lambda q=q, c=chroma, u=user: c.query(u, "current", q, k)))
                chroma.close()
            chroma = ChromaVectorIndex(folder / "chroma")
            recall = np.mean([len({i for i, _ in exact_search(current, q, k)}
                                  & {i for i, _ in chroma.query(user, "current", q, k)}) / k for q in probes[:50]])
            row = {"facts": n, "exact_warm_ms": percentiles(exact_warm, (50, 95)),
                   "exact_cold_ms": percentiles(exact_cold, (50, 95)),
                   "chroma_warm_ms": percentiles(chroma_warm, (50, 95)),
                   "chroma_cold_ms": percentiles(chroma_cold, (50, 95)),
                   "chroma_resident_mb": round(grown, 2), "chroma_recall_at_10": round(float(recall), 3)}
            for when in ("warm", "cold"):
                row[f"ratio_exact_to_chroma_{when}"] = {
                    p: round(row[f"exact_{when}_ms"][p] / max(row[f"chroma_{when}_ms"][p], 1e-3), 2)
                    for p in ("p50", "p95")}
            rows.append(row)
            print(f"{n:>6} facts: exact warm p50/p95 {row['exact_warm_ms']['p50']}/{row['exact_warm_ms']['p95']} ms, "
                  f"cold {row['exact_cold_ms']['p50']}/{row['exact_cold_ms']['p95']} ms | chroma warm "
                  f"{row['chroma_warm_ms']['p50']}/{row['chroma_warm_ms']['p95']} ms, cold "
                  f"{row['chroma_cold_ms']['p50']}/{row['chroma_cold_ms']['p95']} ms, +{row['chroma_resident_mb']} MB "
                  f"resident, recall@10 {row['chroma_recall_at_10']} | exact/chroma warm p50 "
                  f"x{row['ratio_exact_to_chroma_warm']['p50']}", flush=True)
        chroma.close()
        records.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    pays = [r["facts"] for r in rows if r["exact_warm_ms"]["p50"] > r["chroma_warm_ms"]["p50"]]
    return {"sizes": list(sizes), "queries": queries, "cold_queries": cold, "k": k, "dimension": DIM,
            "rows": rows, "threshold": pays[0] if pays else max(sizes),
            "threshold_rule": "smallest size whose exact warm p50 exceeds Chroma's warm p50 (same run)"}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--cold", type=int, default=20)
    args = parser.parse_args(argv)
    result = measure(args.sizes, queries=args.queries, cold=args.cold)
    print(f"threshold: {result['threshold']} current facts ({result['threshold_rule']})")
    print(f"wrote {write_result('vector_tiers', result)}")


if __name__ == "__main__":
    main()
