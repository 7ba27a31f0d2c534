"""What tenant isolation of ``cypher()`` costs, at 1 tenant and at 10,000.

``cypher()`` runs in a sandbox process against a graph built from SQLite with the
calling tenant's rows only (:mod:`zep_core.stores.sandbox`). This measures, in one
folder holding one "large" tenant (a long conversation's worth of facts) alone, and
in a folder holding the same tenant among ``--tenants`` small ones:

* **open**: ``Memory.open`` of the folder (the sandbox is not started on open);
* **first query**: the tenant's first ``cypher()`` — the sandbox process starting and
  the tenant graph being built from SQLite;
* **switching tenants**: the first query of each of 50 other tenants in turn (each
  builds its graph; four are cached);
* **warm query**: the same query again (the graph is cached until the tenant's next
  write), p50/p95 — against the baseline, the same query run in-process on the shared
  graph index with a ``user_id`` filter (what the text rewriting did, without its
  holes), measured in the same run;
* **RSS** of the application process (a fresh one: the folders are built in another)
  and of the sandbox process;
* ``get_context`` p50, which does not go through the sandbox (its hop queries use the
  shared graph index, unchanged), to show the isolation costs the query path nothing.

Run: ``python -m bench.cypher_tenants [--tenants 10000] [--quick]``; writes
``bench/results/cypher_tenants.json``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import shutil
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from .common import Progress, percentiles, rss_mb, write_result

__all__ = ["run"]

QUERY = ("MATCH (e:Entity {name: $name})-[r:FACT]-(x:Entity) WHERE r.current "
         "RETURN x.name AS name, r.predicate AS predicate ORDER BY name")
SHARED = ("MATCH (e:Entity {name: $name, user_id: $u})-[r:FACT]-(x:Entity {user_id: $u}) WHERE r.current "
          "RETURN x.name AS name, r.predicate AS predicate ORDER BY name")
CITIES = ["Paris", "Berlin", "Lisbon", "Oslo", "Rome", "Madrid", "Vienna", "Prague", "Dublin", "Porto"]
THINGS = ["chess", "jazz", "tennis", "hiking", "sushi", "poetry", "cycling", "opera", "yoga", "baking"]
PEOPLE = ["Ana", "Bo", "Cy", "Di", "Ed", "Flo", "Gus", "Hal", "Ivy", "Jo", "Kim", "Lu", "Max", "Ned", "Oz"]


def _large_tenant(memory: Any, rng: random.Random, episodes: int) -> None:
    for i in range(episodes):
        person, thing, city = rng.choice(PEOPLE), rng.choice(THINGS), rng.choice(CITIES)
        memory.conversation_end(f"big-{i}", [
            {"role": "user", "name": "Big", "content": f"My friend {person}{i} likes {thing} and lives in {city}."},
            {"role": "user", "name": "Big", "content": f"I like {thing}{i % 40}."}], user_id="big")


def _small_tenants(memory: Any, rng: random.Random, n: int, progress: Progress) -> None:
    for i in range(n):
        memory.conversation_end("s", [{"role": "user", "name": f"U{i}", "content":
                                       f"I live in {rng.choice(CITIES)} and I like {rng.choice(THINGS)}."}],
                                user_id=f"t{i:05d}")
        if i and i % 1000 == 0:
            progress(f"{i} small tenants")


def _sandbox_rss_mb(memory: Any) -> float | None:
    proc = memory._sandbox._proc
    if proc is None:
        return None
    for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return None


def _timed(call: Any, n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        call()
        out.append((time.perf_counter() - start) * 1000)
    return out


def measure(data_dir: Path, small: Sequence[str], warm_n: int) -> dict[str, Any]:
    from zep_core import Memory

    start = time.perf_counter()
    memory = Memory.open(data_dir)
    out: dict[str, Any] = {"open_ms": round((time.perf_counter() - start) * 1000, 1)}
    try:
        params = {"name": "Big"}
        start = time.perf_counter()
        rows = memory.cypher(QUERY, params, user_id="big")
        out["first_query_ms"] = round((time.perf_counter() - start) * 1000, 1)
        out["rows"] = len(rows)
        warm = _timed(lambda: memory.cypher(QUERY, params, user_id="big"), warm_n)
        graph = memory._stores.graph
        base = _timed(lambda: graph.read_query(SHARED, {**params, "u": "big"}), warm_n)
        out["warm_query_ms"] = percentiles(warm)
        out["shared_index_query_ms"] = percentiles(base)
        out["warm_over_shared_p50"] = round(out["warm_query_ms"]["p50"] / out["shared_index_query_ms"]["p50"], 2)
        if small:
            switches = [_timed(lambda u=u: memory.cypher("MATCH (n) RETURN count(n) AS n", user_id=u), 1)[0]
                        for u in small]
            out["switch_first_query_ms"] = percentiles(switches)
        contexts = _timed(lambda: memory.get_context("Where does Ana0 live?", user_id="big"), warm_n)
        out["get_context_ms"] = percentiles(contexts)
        out["app_rss_mb"] = rss_mb()["rss_mb"]
        out["sandbox_rss_mb"] = _sandbox_rss_mb(memory)
        out["facts_of_big"] = memory.stats("big")["user"]
    finally:
        memory.close()
    return out


def run(*, tenants: int = 10_000, big_episodes: int = 200, warm_n: int = 200, seed: int = 7,
        keep: Path | None = None, quiet: bool = False) -> dict[str, Any]:
    """Build both folders, measure each, return the figures."""
    from zep_core import Memory

    progress = Progress("tenants", quiet=quiet)
    root = Path(keep or tempfile.mkdtemp(prefix="zep-tenants-"))
    result: dict[str, Any] = {"tenants": tenants, "big_episodes": big_episodes}
    try:
        for label, n_small in (("one_tenant", 0), ("many_tenants", tenants)):
            data = root / label
            rng = random.Random(seed)
            if not (data / "zep.db").exists():
                with Memory.open(data) as memory:
                    _large_tenant(memory, rng, big_episodes)
                    _small_tenants(memory, rng, n_small, progress)
            progress(f"{label}: built, measuring")
            picks = random.Random(seed).sample(range(n_small), min(50, n_small))
            with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as fresh:
                # a fresh process: its RSS is the open memory's, not the build's
                result[label] = fresh.submit(measure, data, [f"t{i:05d}" for i in picks], warm_n).result()
            progress(f"{label}: {result[label]}")
    finally:
        if keep is None:
            shutil.rmtree(root, ignore_errors=True)
    return result


def format_table(result: dict[str, Any]) -> str:
    rows = ["| | 1 tenant | {:,} tenants |".format(result["tenants"]), "|---|---|---|"]
    one, many = result["one_tenant"], result["many_tenants"]

    def cell(d: dict, key: str, sub: str | None = None) -> str:
        v = d.get(key)
        if isinstance(v, dict):
            return f"{v[sub or 'p50']:.1f}"
        return "–" if v is None else f"{v}"

    for title, key, sub in (("open (ms)", "open_ms", None), ("first cypher (ms)", "first_query_ms", None),
                            ("warm cypher p50 (ms)", "warm_query_ms", "p50"),
                            ("warm cypher p95 (ms)", "warm_query_ms", "p95"),
                            ("same query in-process on the shared index p50 (ms)", "shared_index_query_ms", "p50"),
                            ("warm / shared p50", "warm_over_shared_p50", None),
                            ("first cypher of another tenant p50 (ms)", "switch_first_query_ms", "p50"),
                            ("first cypher of another tenant p95 (ms)", "switch_first_query_ms", "p95"),
                            ("get_context p50 (ms)", "get_context_ms", "p50"),
                            ("application RSS (MB)", "app_rss_mb", None), ("sandbox RSS (MB)", "sandbox_rss_mb", None)):
        rows.append(f"| {title} | {cell(one, key, sub)} | {cell(many, key, sub)} |")
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench.cypher_tenants", description=__doc__.splitlines()[0])
    parser.add_argument("--tenants", type=int, default=10_000)
    parser.add_argument("--quick", action="store_true", help="1,000 tenants, 50 large-tenant episodes")
    parser.add_argument("--keep", type=Path, help="build (or reuse) the folders here")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    result = run(tenants=1000 if args.quick else args.tenants, big_episodes=50 if args.quick else 200,
                 keep=args.keep)
    path = write_result("cypher_tenants", result, args.out)
    print(format_table(result))
    print(f"written: {path}")
    return result


if __name__ == "__main__":
    main()
