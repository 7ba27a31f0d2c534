"""Many tenants on one machine: build, open, touch and query folders of 1,000 to 100,000 users.

Each tenant is a synthetic user (:mod:`bench.synth`) with about 20 facts, written through
the bulk API (``conversation_end_many``). For each size the folder is built, then measured
in a fresh process (its memory is the open memory's, not the build's):

* **build**: wall and CPU seconds (the Chroma child's included); beside them, the CPU
  seconds of the embedder alone on the texts the build embedded (the same calls replayed on
  the bare embedder, in the same run; past 10,000 tenants a sample of the calls, scaled by
  their texts): the stores and the rules cost the build's CPU time minus that;
* **open**: ``Memory.open`` of the folder (the median of three fresh opens);
* **cold first query**: the first ``get_context`` of 200 random tenants after the open;
* **RSS after touching 1,000 random tenants** (a ``get_context`` each), the whole process
  tree (a Chroma child included);
* **warm get_context**: 50 tenants × 4 questions asked once to warm, then three times, p50/p95.

The baseline is a folder of 100 tenants built and measured the same way in the same run;
at each size its warm queries are interleaved with that size's (both folders open in the
measuring process), and the warm p95 is reported as a ratio to the baseline's.

Run: ``python -m bench.tenants`` (1,000 and 10,000 tenants) or ``--full`` (and 100,000: about
an hour and a half here, most of it the embedder), ``--sizes 300 3000`` for others;
``--keep DIR`` builds the folders there, or reuses those whose build completed (with the
figures it printed, kept in their ``built.json``). Writes ``bench/results/tenants.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing
import os
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from .common import Progress, percentiles, rss_mb, tree_cpu_s, write_result
from .synth import CITIES, COMPANIES, FIRST, JOBS, LAST, LIKES, SynthUser, episodes, make_users, queries

__all__ = ["run"]

BASELINE = 100
SIZES = (1_000, 10_000)
FULL_SIZES = (1_000, 10_000, 100_000)
EPISODES_PER_TENANT = 11  # ~1.8 facts each with the offline extractor: about 20 facts per tenant
BATCH = 512  # episodes per conversation_end_many call
_DISTINCT = len(FIRST) * len(LAST)  # the distinct names bench.synth has
#: The embedder's CPU on a build's texts is measured by embedding them again; past this many tenants
#: one call in ``ceil(tenants / this)`` is replayed and the time scaled by the texts (at 100,000
#: tenants a full replay is ~40 minutes of the embedder alone).
REPLAY_ALL_UP_TO = 10_000


def _user_id(n: int) -> str:
    return f"tenant-{n:06d}"


def _tenant_users(n: int, seed: int) -> list[SynthUser]:
    """``n`` synthetic users; past the names :func:`bench.synth.make_users` has, names repeat (other people)."""
    distinct = make_users(min(n, _DISTINCT), seed)
    rng = random.Random(seed)
    return [distinct[i] if i < _DISTINCT else
            SynthUser(f"user-{i:06d}", distinct[i % _DISTINCT].name, rng.choice(CITIES), rng.choice(COMPANIES),
                      rng.choice(JOBS), rng.sample(LIKES, 3)) for i in range(n)]


def _tenant_episodes(users: list[SynthUser], seed: int) -> Any:
    """Each tenant's episodes, tenant after tenant, as ``conversation_end_many`` takes them."""
    for n, user in enumerate(users):
        stream = episodes([user], seed + n)
        for _, session, messages in itertools.islice(stream, EPISODES_PER_TENANT):
            yield {"session_id": session, "user_id": _user_id(n), "messages": messages}


def build(data: Path, tenants: int, seed: int, progress: Progress) -> dict[str, Any]:
    """Build a folder of ``tenants`` users; the build's times and the embedder's alone on the same calls."""
    from zep_core import Memory, MemoryConfig
    from zep_core.providers.local import LocalEmbedder

    from .scale import RecordingEmbedder

    embedder = RecordingEmbedder(LocalEmbedder())
    embedder.embed(["warm up the model"])
    embedder.calls = []
    users = _tenant_users(tenants, seed)
    wall, cpu = time.perf_counter(), tree_cpu_s()
    with Memory(MemoryConfig(data_dir=data, embedder=embedder)) as memory:
        stream = _tenant_episodes(users, seed)
        done = 0
        while batch := list(itertools.islice(stream, BATCH)):
            memory.conversation_end_many(batch, batch_size=BATCH)
            done += len(batch)
            if done % (BATCH * 40) < BATCH:
                progress(f"{tenants} tenants: {done} of {tenants * EPISODES_PER_TENANT} episodes")
        memory.flush()
        sampled = range(0, tenants, max(1, tenants // 50))
        facts = sum(len(memory.facts(_user_id(n))) for n in sampled)
        wall, cpu = time.perf_counter() - wall, tree_cpu_s() - cpu  # before the close: the Chroma child's too
    calls, embedder.calls = embedder.calls, None
    every = max(1, -(-tenants // REPLAY_ALL_UP_TO))  # past 10,000 tenants, one call in `every`, scaled by texts
    replayed = calls[::every]
    embed_cpu = time.process_time()
    for texts in replayed:
        embedder.inner.embed(texts)
    embed_cpu = (time.process_time() - embed_cpu) * sum(map(len, calls)) / max(1, sum(map(len, replayed)))
    return {"tenants": tenants, "episodes": tenants * EPISODES_PER_TENANT,
            "facts_per_tenant_sampled": round(facts / len(sampled), 1),
            "build_s": round(wall, 1), "build_cpu_s": round(cpu, 1), "embedder_cpu_s": round(embed_cpu, 1),
            "embedder_replay": "every call" if every == 1 else f"1 call in {every}, scaled by the texts",
            "stores_and_rules_cpu_s": round(cpu - embed_cpu, 1),
            "stores_and_rules_over_embedder_cpu": round((cpu - embed_cpu) / embed_cpu, 2) if embed_cpu else None}


def _pairs(users: list[SynthUser], tenants: int, question: Any, rng: random.Random, seed: int) -> list[tuple[str, str]]:
    """50 random tenants × 4 questions: ``(user id, text)``."""
    return [(_user_id(n), text) for n in rng.sample(range(tenants), min(50, tenants))
            for text in [question(n), *(t for _, t in queries([users[n]], 3, seed + n))]]


def _warm(memory: Any, users: list[SynthUser], question: Any, rng: random.Random, seed: int,
          baseline: tuple[Path, int] | None) -> dict[str, Any]:
    """Warm ``get_context``: each pair asked once, then three rounds timed.

    With a ``baseline`` folder, its own pairs are asked in the same rounds, one query of each
    folder in turn, so that both p95s meet the same moments of a shared machine.
    """
    from zep_core import Memory

    sides: list[tuple[Any, list[tuple[str, str]], list[float]]] = [
        (memory, _pairs(users, len(users), question, rng, seed), [])]
    other = None
    if baseline is not None:
        other = Memory.open(baseline[0])
        base_users = _tenant_users(baseline[1], seed)
        sides.append((other, _pairs(base_users, baseline[1], lambda n: f"Where does {base_users[n].name} live now?",
                                    rng, seed), []))
    try:
        for mem, pairs, _ in sides:
            for user, text in pairs:
                mem.get_context(text, user_id=user)
        longest = max(len(pairs) for _, pairs, _ in sides)
        turns = [(mem, times, pairs[i]) for i in range(longest) for mem, pairs, times in sides if i < len(pairs)]
        for _ in range(3):
            for mem, times, (user, text) in turns:
                start = time.perf_counter()
                mem.get_context(text, user_id=user)
                times.append((time.perf_counter() - start) * 1000)
    finally:
        if other is not None:
            other.close()
    out: dict[str, Any] = {"warm_get_context_ms": percentiles(sides[0][2]), "warm_queries": len(sides[0][2])}
    if baseline is not None:
        out["baseline_warm_get_context_ms"] = percentiles(sides[1][2])
        out["warm_p95_over_baseline"] = round(out["warm_get_context_ms"]["p95"] /
                                              out["baseline_warm_get_context_ms"]["p95"], 2)
    return out


def measure(data: Path, tenants: int, seed: int, baseline: tuple[Path, int] | None = None) -> dict[str, Any]:
    """Open, cold first queries, RSS after 1,000 tenants touched, warm queries (run in a fresh process).

    With a ``baseline`` (its folder and tenant count), its warm queries are interleaved with
    these and the ratio of the two p95s reported.
    """
    from zep_core import Memory

    opens = []
    for _ in range(3):
        start = time.perf_counter()
        memory = Memory.open(data)
        opens.append((time.perf_counter() - start) * 1000)
        memory.close()
    users = _tenant_users(tenants, seed)
    rng = random.Random(seed + 1)
    asked = {u.id: text for u, text in queries(users, min(4 * tenants, 4000), seed + 2)}

    def question(n: int) -> str:
        return asked.get(users[n].id) or f"Where does {users[n].name} live now?"

    out: dict[str, Any] = {"open_ms": round(statistics.median(opens), 1), "open_ms_all": [round(o, 1) for o in opens]}
    with Memory.open(data) as memory:
        cold = []
        for n in rng.sample(range(tenants), min(200, tenants)):
            start = time.perf_counter()
            memory.get_context(question(n), user_id=_user_id(n))
            cold.append((time.perf_counter() - start) * 1000)
        out["cold_first_query_ms"] = percentiles(cold)
        for n in rng.sample(range(tenants), min(1000, tenants)):
            memory.get_context(question(n), user_id=_user_id(n))
        out["touched"] = min(1000, tenants) + len(cold)
        out["rss_after_touching"] = rss_mb()
        out.update(_warm(memory, users, question, rng, seed, baseline))
    return out


def run(*, sizes: Sequence[int] = SIZES, baseline: int = BASELINE, seed: int = 7, keep: Path | None = None,
        quiet: bool = False, out_dir: Path | None = None, save: bool = True) -> dict[str, Any]:
    """Build and measure the baseline and each size; return (and write) the figures."""
    progress = Progress("tenants", quiet=quiet)
    root = Path(keep or tempfile.mkdtemp(prefix="zep-tenants-"))
    rows: list[dict[str, Any]] = []
    try:
        for tenants in (baseline, *sizes):
            data = root / f"tenants-{tenants}"
            built = data / "built.json"  # written once a build completed: a build cut short is started again
            if built.is_file():
                row: dict[str, Any] = {**json.loads(built.read_text()), "reused": True}
            else:
                if data.exists():
                    shutil.rmtree(data)
                row = build(data, tenants, seed, progress)
                built.write_text(json.dumps(row))
            progress(f"{tenants} tenants built: {row}")
            with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as fresh:
                base = None if tenants == baseline else (root / f"tenants-{baseline}", baseline)
                row.update(fresh.submit(measure, data, tenants, seed, base).result())
            row["disk_mb"] = round(sum(f.stat().st_size for f in data.rglob("*") if f.is_file()) / 2**20, 1)
            rows.append(row)
            progress(f"{tenants} tenants measured: open {row['open_ms']} ms, cold p95 "
                     f"{row['cold_first_query_ms']['p95']} ms, warm p95 {row['warm_get_context_ms']['p95']} ms, "
                     f"RSS {row['rss_after_touching']['rss_mb']} MB")
    finally:
        if keep is None:
            shutil.rmtree(root, ignore_errors=True)
    rows[0]["warm_p95_over_baseline"] = 1.0
    result = {"baseline_tenants": baseline, "sizes": rows, "seed": seed, "seconds": round(progress.elapsed, 1),
              "cpus": os.cpu_count()}
    if save:
        result["path"] = str(write_result("tenants", result, out_dir))
    return result


def format_table(result: dict[str, Any]) -> str:
    rows = result["sizes"]
    head = "| | " + " | ".join(f"{r['tenants']:,} tenants" for r in rows) + " |"
    lines = [head, "|---|" + "---|" * len(rows)]

    def cell(row: dict[str, Any], key: str, sub: str | None = None) -> str:
        value = row.get(key)
        if isinstance(value, dict):
            value = value.get(sub or "p95")
        return "–" if value is None else f"{value}"

    for title, key, sub in (("build (s)", "build_s", None), ("build CPU (s)", "build_cpu_s", None),
                            ("embedder alone, same calls, CPU (s)", "embedder_cpu_s", None),
                            ("stores + rules CPU / embedder CPU", "stores_and_rules_over_embedder_cpu", None),
                            ("open (ms, median of 3)", "open_ms", None),
                            ("cold first query p50 (ms)", "cold_first_query_ms", "p50"),
                            ("cold first query p95 (ms)", "cold_first_query_ms", "p95"),
                            ("RSS after touching 1,000 tenants (MB)", "rss_after_touching", "rss_mb"),
                            ("warm get_context p50 (ms)", "warm_get_context_ms", "p50"),
                            ("warm get_context p95 (ms)", "warm_get_context_ms", "p95"),
                            (f"warm p95 / {result['baseline_tenants']} tenants'", "warm_p95_over_baseline", None),
                            ("disk (MB)", "disk_mb", None)):
        lines.append(f"| {title} | " + " | ".join(cell(r, key, sub) for r in rows) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench.tenants", description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="also 100,000 tenants (about an hour and a half)")
    parser.add_argument("--sizes", type=int, nargs="+", help="tenant counts (default 1000 10000)")
    parser.add_argument("--keep", type=Path, help="build (or reuse) the folders here")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    sizes = args.sizes or (FULL_SIZES if args.full else SIZES)
    result = run(sizes=sizes, keep=args.keep, out_dir=args.out)
    print(format_table(result))
    print(f"written: {result['path']}")
    return result


if __name__ == "__main__":
    main()
