"""Where a tenant's own HNSW index starts to pay on PostgreSQL: exact pgvector search against it, by tenant size.

Why (issue 34): on PostgreSQL a tenant's vector search is exact by default (pgvector scores
each of their current facts, :class:`zep_core.stores.postgres.indexes.PgVectorIndex`); a
large tenant gets a partial HNSW index of their own (:mod:`zep_core.stores.postgres.hnsw`).
For each tenant size (current facts; 384-d unit vectors drawn around 200 topics, as text
embeddings cluster, with other tenants' rows beside them) the run measures, in one process
and one run, on the same PostgreSQL:

* **exact** and **hnsw**: ``PgVectorIndex.query`` (k=10) of the tenant, the two alternating
  query by query (queries: stored vectors moved a little, so each has true neighbours);
* the index's **build** time (``CREATE INDEX CONCURRENTLY``, as the background thread runs
  it) and its **recall@10** against the exact answer;
* the **cost to the others**: a small tenant's exact search and a 20-fact write, before any
  index, after the sizes' indexes and after ``--crowd`` more (tenants of 50 facts, indexed):
  each index is one more predicate for the planner and for every insert.

The chosen threshold is the smallest size at which the index at least halves the search
(exact p50 ≥ 2× HNSW p50): an index costs the tenant a second copy of their vectors and a
build, so it must at least halve their search time to be worth them. It is the default of
``postgres_exact_below`` (docs/postgres.md).

Run: ``python -m bench.pg_vectors [--sizes 300 1000 3000 10000 30000] [--queries 200]
[--crowd 200] [--database-url URL]``. Writes ``bench/results/pg_vectors.json``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import percentiles, write_result

__all__ = ["measure", "main"]

DIM = 384
SIZES = (300, 1000, 3000, 10000, 30000)
TOPICS = 200


def _vectors(rng: np.random.Generator, n: int, centres: np.ndarray) -> np.ndarray:
    """``n`` unit vectors, each near one of the topic centres."""
    picked = centres[rng.integers(0, len(centres), n)]
    vectors = picked + 0.6 * rng.standard_normal((n, DIM)).astype(np.float32) / np.sqrt(DIM)
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def _insert(records: Any, user: str, vectors: np.ndarray, start: int = 0) -> None:
    """The facts of ``vectors`` for ``user``, written as ingest writes them (their lexical rows, their copy)."""
    from datetime import datetime, timezone

    from zep_core.models import Fact
    from zep_core.stores.rows import StoredFact

    when = datetime(2024, 1, 1, tzinfo=timezone.utc)
    for at in range(0, len(vectors), 2000):
        with records.transaction():
            records.write_facts(StoredFact(Fact(id=f"{user}-{start + at + i:07d}", user_id=user, valid_from=when,
                                                content=f"fact {start + at + i} of {user}", subject=user,
                                                predicate="said", object=f"thing {start + at + i}"), "e", None, v)
                                for i, v in enumerate(vectors[at:at + 2000]))


def _timed(fn: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return (time.perf_counter() - start) * 1000, out


def measure(url: str, sizes: Sequence[int] = SIZES, *, queries: int = 200, k: int = 10, crowd: int = 200,
            seed: int = 0) -> dict[str, Any]:
    """Query times (ms) with and without the tenant's HNSW index, build times and recall, by tenant size."""
    from zep_core.stores.postgres import PgRecordStore
    from zep_core.stores.postgres.hnsw import HnswIndexes
    from zep_core.stores.postgres.indexes import PgVectorIndex
    from zep_core.tenant import Tenant

    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((TOPICS, DIM)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    records = PgRecordStore(url)
    hnsw = HnswIndexes(records, records.new_connection, exact_below=1)
    exact, approximate = PgVectorIndex(records), PgVectorIndex(records, hnsw)
    try:
        for n in sizes:
            _insert(records, f"t{n}", _vectors(rng, n, centres))
            _insert(records, f"other{n}", _vectors(rng, min(n, 1000), centres))
        _insert(records, "small", _vectors(rng, 100, centres))
        conn = records.new_connection()
        conn.execute("ANALYZE facts")
        conn.close()
        probes = _vectors(rng, queries, centres)

        def others() -> dict[str, Any]:
            small = [_timed(lambda q=q: exact.query("small", "current", q, k))[0] for q in probes]
            writes = [_timed(lambda i=i: _insert(records, "writer", _vectors(rng, 20, centres), start=20 * i))[0]
                      for i in range(20)]
            records._exec(Tenant.of("writer"), "DELETE FROM facts WHERE user_id = %s", [Tenant.of("writer")])
            return {"small_tenant_search_ms": percentiles(small, (50, 95)),
                    "write_20_facts_ms": percentiles(writes, (50, 95))}

        before = others()
        rows: list[dict[str, Any]] = []
        for n in sizes:
            user, tenant = f"t{n}", Tenant.of(f"t{n}")
            build_ms, _ = _timed(lambda t=tenant: hnsw.check(t))
            assert hnsw.ready(tenant), f"no index was built for {user}"
            stored = np.frombuffer(b"".join(b for _, b in records.current_vectors(tenant)),
                                   dtype=np.float32).reshape(-1, DIM)
            asks = stored[rng.integers(0, len(stored), queries)] + 0.3 * probes / np.sqrt(DIM)
            exact_ms, hnsw_ms, recall = [], [], []
            for q in asks:
                a, truth = _timed(lambda q=q, u=user: exact.query(u, "current", q, k))
                b, found = _timed(lambda q=q, u=user: approximate.query(u, "current", q, k))
                exact_ms.append(a)
                hnsw_ms.append(b)
                recall.append(len({i for i, _ in truth} & {i for i, _ in found}) / k)
            row = {"facts": n, "exact_ms": percentiles(exact_ms, (50, 95)), "hnsw_ms": percentiles(hnsw_ms, (50, 95)),
                   "build_s": round(build_ms / 1000, 2), "recall_at_10": round(float(np.mean(recall)), 3)}
            row["exact_over_hnsw_p50"] = round(row["exact_ms"]["p50"] / max(row["hnsw_ms"]["p50"], 1e-3), 2)
            rows.append(row)
            print(f"{n:>7} facts: exact p50/p95 {row['exact_ms']['p50']}/{row['exact_ms']['p95']} ms | hnsw "
                  f"{row['hnsw_ms']['p50']}/{row['hnsw_ms']['p95']} ms, recall@10 {row['recall_at_10']}, built in "
                  f"{row['build_s']} s | exact/hnsw p50 x{row['exact_over_hnsw_p50']}", flush=True)
        after = others()
        for i in range(crowd):  # many indexed tenants: what each index costs everyone else
            _insert(records, f"crowd{i}", _vectors(rng, 50, centres))
            hnsw.check(Tenant.of(f"crowd{i}"))
        crowded = others() if crowd else after
        print(f"others, before any index / after {len(sizes)} / after {len(sizes) + crowd}: small tenant's search "
              f"p50 {before['small_tenant_search_ms']['p50']} / {after['small_tenant_search_ms']['p50']} / "
              f"{crowded['small_tenant_search_ms']['p50']} ms, a 20-fact write p50 "
              f"{before['write_20_facts_ms']['p50']} / {after['write_20_facts_ms']['p50']} / "
              f"{crowded['write_20_facts_ms']['p50']} ms")
    finally:
        hnsw.close()
        records.close()
    pays = [r["facts"] for r in rows if r["exact_ms"]["p50"] >= 2 * r["hnsw_ms"]["p50"]]
    return {"sizes": list(sizes), "queries": queries, "k": k, "dimension": DIM, "rows": rows,
            "others_before_indexes": before, "others_after_indexes": after,
            "crowd": crowd, "others_after_crowd": crowded,
            "threshold": pays[0] if pays else None,
            "threshold_rule": "smallest size whose exact p50 is at least twice the HNSW p50 (same run, alternating)"}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Command line: ``python -m bench.pg_vectors [--sizes N ...] [--queries N] [--database-url URL]``."""
    from bench.backends import postgres

    parser = argparse.ArgumentParser(prog="python -m bench.pg_vectors", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--crowd", type=int, default=200, help="more indexed tenants, to see what each costs")
    parser.add_argument("--database-url", help="a PostgreSQL server (a user that may create databases); "
                        "default: an embedded one")
    parser.add_argument("--out", type=Path, help="results folder (default: bench/results)")
    args = parser.parse_args(argv)
    with postgres(args.database_url) as databases:
        result = measure(databases.new(), args.sizes, queries=args.queries, crowd=args.crowd)
    print(f"threshold: {result['threshold']} current facts ({result['threshold_rule']})")
    result["path"] = str(write_result("pg_vectors", result, args.out))
    return result


if __name__ == "__main__":
    main()
