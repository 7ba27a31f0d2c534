"""Speed and size at 1k, 10k and 100k facts, with a bare Chroma query as the floor.

Synthetic users (:mod:`bench.synth`, seeded) talk in short first-person episodes. One
data folder grows through the sizes; at each size we measure:

* **single-episode ingest** of a sample of short episodes (1–3 user sentences and an
  assistant reply, users interleaved as in a live service): episodes/s and facts/s until
  they are in all three stores (``conversation_end`` calls, then one ``flush``: the
  background indexer batches across episodes), and the latency of one episode until all
  three stores hold it (``conversation_end`` + ``flush`` per episode), p50/p95/p99;
* **bulk ingest** (``conversation_end_many``) of another sample, sent in one call of
  batches of 256 as an import sends a file, timed until all three
  stores hold it, against the **embedder's own throughput**: the very texts the ingest
  embedded, in the same calls (same batches), embedded again on their own in the same
  run. ``ratio_to_embedder`` is ingest texts/s over embedder texts/s (1.0: the stores
  and the rules cost nothing). Once the size's other measures are taken, another such
  sample goes with the embedder on one thread, for the ingest and for its replay
  (``bulk_one_thread``): on two cores the embedder's own two threads leave none for the
  stores, and this shows the ratio once one is left. Between sizes the folder is
  bulk-loaded the same way;
* ``get_context`` latency p50/p95/p99 over distinct query texts (the query embedding
  included: the embedder's cache misses), and again with the same texts (cache hits);
  ``context_block`` with the same texts beside it (embedding cached); and ``get_context``
  ``as_of`` the middle of the data's time line (embedding cached): what was true then,
  superseded facts searched in SQLite, with how many answers held a fact no longer current;
* the **floor**: the same per-user Chroma collection queried directly with the
  precomputed vector for the same k, and the embedding time on its own; the ratio of
  ours to floor + embedding;
* RSS of the memory's processes (the memory's and its Chroma child, with the helper they are
  forked from), before the floor's own Chroma client loads its copy; disk used per fact.

Run: ``python -m bench.scale [--quick] [--sizes 1000 10000 100000]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from .common import Progress, dir_size, load_average, percentiles, rss_mb, write_result
from .synth import SynthUser, episodes, make_users, queries

__all__ = ["FULL_SIZES", "QUICK_SIZES", "run"]

FULL_SIZES = (1_000, 10_000, 100_000)
QUICK_SIZES = (1_000, 10_000)
#: Episodes per ``conversation_end_many`` batch (its default). A timed sample is one call of
#: several batches, as ``zep-memory ingest`` and ``import`` send a file: the rules and SQLite per
#: batch, Chroma and Kùzu once per call.
BULK_BATCH = 256
#: Episodes per call while loading a size.
LOAD_CALL = 4096


class RecordingEmbedder:
    """The memory's embedder, keeping the texts of every ``embed`` call while ``calls`` is a list.

    The bulk figure's baseline replays exactly those calls on the bare embedder.
    """

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.dimension = inner, inner.name, inner.dimension
        self.calls: list[list[str]] | None = None

    def embed(self, texts: Sequence[str]) -> Any:
        if self.calls is not None:
            self.calls.append(list(texts))
        return self.inner.embed(texts)

    def embed_query(self, text: str) -> Any:
        return self.inner.embed_query(text)

    def cache_clear(self) -> None:
        self.inner.cache_clear()


_Episode = tuple[SynthUser, str, list[dict]]  # (user, session id, messages), as bench.synth makes them


class _Loader:
    """Feeds synthetic episodes into a memory: one call each, or in bulk."""

    def __init__(self, memory: Any, users: list[SynthUser], seed: int) -> None:
        self.memory = memory
        self.users = users
        self.stream: Iterator[_Episode] = self._timed(episodes(users, seed))
        self.facts = 0
        self.episodes = 0
        self.first_said: datetime | None = None  # the data's time line so far (message timestamps)
        self.last_said: datetime | None = None

    def _timed(self, stream: Iterator[_Episode]) -> Iterator[_Episode]:
        """The episodes as they go by, noting the time line they span."""
        for user, session, msgs in stream:
            self.first_said = self.first_said or msgs[0]["timestamp"]
            self.last_said = msgs[-1]["timestamp"]
            yield user, session, msgs

    def skip(self, n: int) -> None:
        """Pass over the first ``n`` episodes unsent: those a kept folder already holds (the time line follows)."""
        for _ in itertools.islice(self.stream, n):
            self.episodes += 1

    def halfway(self) -> datetime:
        """The middle of the time line the memory holds: an ``as_of`` that finds facts superseded since."""
        assert self.first_said is not None and self.last_said is not None, "nothing was ingested"
        return self.first_said + (self.last_said - self.first_said) / 2

    def short(self, n: int) -> dict[str, Any]:
        """Ingest ``n`` short episodes one call each; timed until the indexes have them.

        The first half measures throughput (one ``flush`` at the end), the second half
        the latency of each episode until all three stores hold it (a ``flush`` each).
        """
        stream, timed = n - n // 2, n // 2
        start, facts0 = time.perf_counter(), self.facts
        for user, session, msgs in itertools.islice(self.stream, stream):
            self._count([self.memory.conversation_end(session, msgs, user_id=user.id)])
        handler = time.perf_counter() - start
        self.memory.flush()
        total = time.perf_counter() - start
        added = self.facts - facts0
        latency = []
        for user, session, msgs in itertools.islice(self.stream, timed):
            t0 = time.perf_counter()
            self._count([self.memory.conversation_end(session, msgs, user_id=user.id)])
            self.memory.flush()
            latency.append((time.perf_counter() - t0) * 1000)
        return {"episodes": stream, "facts": added, "seconds": round(total, 2),
                "episodes_per_s": round(stream / total, 1), "facts_per_s": round(added / total, 1),
                "handler_episodes_per_s": round(stream / handler, 1), "latency_episodes": timed,
                "episode_latency_ms": percentiles(latency) if latency else None, "_latency": latency}

    def bulk(self, until_facts: int | None = None, *, episodes: int | None = None,
             embedder: RecordingEmbedder | None = None, embedder_threads: int | None = None) -> dict[str, Any]:
        """Ingest with ``conversation_end_many`` until about ``until_facts`` facts, or ``episodes`` episodes.

        With ``embedder`` (the memory's, recording), the same embed calls are replayed on
        the bare embedder afterwards: the ingest's throughput against the embedder's own.
        With ``embedder_threads`` the embedder runs on that many threads for both (the
        local embedder's ``threads``), then goes back to its own.
        """
        if embedder_threads is not None:
            assert embedder is not None, "embedder_threads needs the recording embedder"
            own, embedder.inner.threads = embedder.inner.threads, embedder_threads
            try:
                return {**self.bulk(episodes=episodes, embedder=embedder), "embedder_threads": embedder_threads}
            finally:
                embedder.inner.threads = own
        start, facts0, eps0 = time.perf_counter(), self.facts, self.episodes
        if embedder is not None:
            embedder.calls = []
        while (self.episodes - eps0 < episodes) if episodes is not None else (self.facts < (until_facts or 0)):
            if episodes is not None:  # the sample in one call, as an import sends it
                n = episodes - (self.episodes - eps0)
            else:  # the load in calls of a few thousand episodes, re-aimed at the target after each
                per_episode = self.facts / self.episodes if self.episodes else 2.3
                n = max(1, min(LOAD_CALL, int((until_facts - self.facts) / per_episode) + 1))
            batch = [{"session_id": s, "user_id": u.id, "messages": m} for u, s, m in itertools.islice(self.stream, n)]
            self._count(self.memory.conversation_end_many(batch, batch_size=BULK_BATCH))
        self.memory.flush()
        secs = time.perf_counter() - start
        added = self.facts - facts0
        out: dict[str, Any] = {"episodes": self.episodes - eps0, "facts": added, "seconds": round(secs, 2),
                               "facts_per_s": round(added / secs, 1) if secs else None,
                               "episodes_per_s": round((self.episodes - eps0) / secs, 1) if secs else None,
                               "batch": BULK_BATCH}
        if embedder is not None:
            calls, embedder.calls = embedder.calls or [], None
            t0 = time.perf_counter()
            for texts in calls:
                embedder.inner.embed(texts)
            embed_secs = time.perf_counter() - t0
            texts = sum(len(c) for c in calls)
            out.update(embed_calls=len(calls), embedded_texts=texts, embed_seconds=round(embed_secs, 2),
                       ingest_texts_per_s=round(texts / secs, 1), embedder_texts_per_s=round(texts / embed_secs, 1),
                       ratio_to_embedder=round(embed_secs / secs, 2))
        return out

    def _count(self, results: Sequence[Any]) -> None:
        for result in results:
            if result.status != "done":
                raise RuntimeError(f"ingest ended {result.status}: {result.error}")
            self.facts += len(result.added)
            self.episodes += 1


def _time_queries(memory: Any, pairs: Sequence[tuple[SynthUser, str]],
                  as_of: datetime | None = None) -> tuple[list[float], int]:
    """``get_context`` per query (ms, ``as_of`` if given), and how many answers held a fact no longer current.

    ``measure`` times ``as_of`` in a pass of its own after :func:`_interleaved` (the texts'
    embeddings are cached by then), so that reading the history does not change what the
    queries for now are timed at.
    """
    times, historic = [], 0
    for user, text in pairs:
        t0 = time.perf_counter()
        answer = memory.get_context(text, user_id=user.id, speaker=user.name, as_of=as_of)
        times.append((time.perf_counter() - t0) * 1000)
        historic += any(not f.is_current for f in answer)
    return times, historic


def _interleaved(memory: Any, pairs: Sequence[tuple[SynthUser, str]]) -> dict[str, list[float]]:
    """Per query, back to back: ours (cache miss), the embedding alone, the bare Chroma query, ours again (hit).

    Interleaving puts ours and the floor under the same machine load.
    """
    from zep_core.stores.vectors import collection_name

    embedder = memory.embedder
    k = max(memory.config.semantic_candidates, memory.config.context_limit)
    probe = np.full(embedder.dimension, embedder.dimension ** -0.5, dtype=np.float32)
    out: dict[str, list[float]] = {"ours": [], "cached": [], "embed": [], "chroma": [], "block": []}
    with _BareChroma(memory.data_dir / "chroma", k) as bare:
        for user in {user.id: user for user, _ in pairs}.values():  # each index's first query loads it: not timed
            bare.query(collection_name(user.id, "current"), probe)
        for user, text in pairs:
            t0 = time.perf_counter()
            memory.get_context(text, user_id=user.id, speaker=user.name)
            t1 = time.perf_counter()
            vec = embedder.inner.embed([text])[0] if hasattr(embedder, "inner") else embedder.embed([text])[0]
            t2 = time.perf_counter()
            chroma_ms = bare.query(collection_name(user.id, "current"), vec)
            t4 = time.perf_counter()
            memory.get_context(text, user_id=user.id, speaker=user.name)
            t5 = time.perf_counter()
            memory.context_block(text, user_id=user.id, speaker=user.name)
            t6 = time.perf_counter()
            for key, secs in (("ours", t1 - t0), ("embed", t2 - t1), ("cached", t5 - t4), ("block", t6 - t5)):
                out[key].append(secs * 1000)
            out["chroma"].append(chroma_ms)
    return out


#: The floor's Chroma client, in a process of its own: a plain ``PersistentClient`` on the
#: memory's folder that times each ``query`` itself. In the bench's process its indexes would
#: stay resident after ``close()`` and count in the RSS of the memory measured at the next size.
_BARE_CHROMA = r"""
import json, sys, time
import numpy as np
import chromadb
from chromadb.config import Settings
client = chromadb.PersistentClient(path=sys.argv[1], settings=Settings(anonymized_telemetry=False, allow_reset=False))
k, cols = int(sys.argv[2]), {}
print("ready", flush=True)
for line in sys.stdin:
    name, vector = json.loads(line)
    col = cols.get(name) or cols.setdefault(name, client.get_collection(name, embedding_function=None))
    query = np.asarray([vector], dtype=np.float32)
    t0 = time.perf_counter()
    col.query(query_embeddings=query, n_results=k, include=["distances"])
    print((time.perf_counter() - t0) * 1000, flush=True)
client.close()
"""


class _BareChroma:
    """The floor: the same HNSW indexes queried by a plain Chroma client (nothing is written meanwhile)."""

    def __init__(self, path: Path, k: int) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", _BARE_CHROMA, str(path), str(k)], text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError("the bare Chroma client did not start")

    def query(self, collection: str, vector: np.ndarray) -> float:
        """Milliseconds one ``query`` of ``collection`` took, timed where it ran."""
        self.proc.stdin.write(json.dumps([collection, [float(x) for x in vector]]) + "\n")
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline())

    def __enter__(self) -> _BareChroma:
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.stdin.close()  # the client closes, so the memory's folder is left as it was
        self.proc.wait(timeout=60)


def _profile(memory: Any, pairs: Sequence[tuple[SynthUser, str]]) -> str:
    """pyinstrument text profile of ``get_context`` over ``pairs`` (library frames folded)."""
    from pyinstrument import Profiler

    profiler = Profiler(interval=0.0005)
    profiler.start()
    _time_queries(memory, pairs)
    profiler.stop()
    return profiler.output_text(unicode=False, color=False, show_all=False)


def _profile_ingest(memory: Any, users: list[SynthUser], seed: int, n: int = 100) -> dict[str, Any]:
    """pyinstrument profile of ``n`` short episodes into ``memory`` (open it with ``index_writes="sync"``).

    Synchronous index writes put the Chroma and Kùzu work on the profiled thread (the
    background indexer's thread is invisible to the profiler).
    """
    from pyinstrument import Profiler

    loader = _Loader(memory, users, seed)
    profiler = Profiler(interval=0.001)
    profiler.start()
    stats = loader.short(n)
    profiler.stop()
    single = profiler.output_text(unicode=False, color=False, show_all=False)
    profiler = Profiler(interval=0.001)
    profiler.start()
    bulk = loader.bulk(episodes=2 * BULK_BATCH)
    profiler.stop()
    return {"episodes_per_s_sync": stats["episodes_per_s"], "bulk_episodes_per_s_sync": bulk["episodes_per_s"],
            "facts": memory.stats()["facts"], "text": single,
            "bulk_text": profiler.output_text(unicode=False, color=False, show_all=False)}


def measure(memory: Any, loader: _Loader, users: list[SynthUser], n_queries: int, seed: int,
            data_dir: Path) -> dict[str, Any]:
    """Latency, floor, RSS and disk at the current size."""
    memory.flush()
    warm = queries(users, 20, seed + 1000)
    _time_queries(memory, warm)
    memory_rss = rss_mb()  # before the floor's own Chroma client loads a second copy of every index
    pairs = queries(users, n_queries, seed)
    memory.embedder.cache_clear()
    times = _interleaved(memory, pairs)
    as_of = loader.halfway()
    as_of_ms, historic = _time_queries(memory, pairs, as_of)
    ours, cached, embed_ms, chroma_ms = times["ours"], times["cached"], times["embed"], times["chroma"]
    counts = memory.stats()["facts"]
    facts = counts["current"] + counts["superseded"]
    disk = dir_size(data_dir)
    p_ours, p_chroma, p_embed = percentiles(ours), percentiles(chroma_ms), percentiles(embed_ms)
    floor = {p: round(p_chroma[p] + p_embed[p], 2) for p in p_ours}
    return {
        "facts": facts, "current_facts": counts["current"], "superseded_facts": counts["superseded"],
        "users": len(users), "queries": len(pairs),
        "get_context_ms": p_ours, "get_context_cached_ms": percentiles(cached),
        "context_block_cached_ms": percentiles(times["block"]),
        "as_of": as_of.isoformat(), "get_context_as_of_cached_ms": percentiles(as_of_ms),
        "as_of_answers_with_superseded_facts": historic,
        "chroma_query_ms": p_chroma, "embed_query_ms": p_embed, "floor_ms": floor,
        "ratio_to_floor": {p: round(p_ours[p] / floor[p], 2) for p in p_ours},
        "ratio_to_chroma": {p: round(p_ours[p] / p_chroma[p], 2) for p in p_ours},
        **memory_rss, "disk_mb": round(disk / 2**20, 1), "disk_bytes_per_fact": round(disk / max(facts, 1)),
    }


def remeasure(data_dir: str | Path, *, size: int, users: int = 100, seed: int = 7, n_queries: int = 300,
              progress: Progress | None = None, out_dir: Path | None = None,
              name: str = "scale_remeasured") -> dict[str, Any]:
    """The measures of :func:`run` again on a folder it built and kept (``data_dir``), with the code as it is now.

    Nothing is ingested: the folder's episodes are passed over in the data stream (same
    ``users`` and ``seed`` as the build), so the queries (``size``: the build's last) and the
    ``as_of`` moment are the build's. Written as ``<name>.json``.
    """
    from zep_core import Memory, MemoryConfig
    from zep_core.providers.local import LocalEmbedder

    progress = progress or Progress(name)
    root = Path(data_dir)
    people = make_users(users, seed)
    embedder = RecordingEmbedder(LocalEmbedder())
    embedder.embed(["warm up the model"])
    with Memory(MemoryConfig(data_dir=root, embedder=embedder, vector_exact_below=0)) as memory:
        loader = _Loader(memory, people, seed)
        loader.skip(memory.stats()["records"]["episodes"])
        row = measure(memory, loader, people, n_queries, seed + size, root)
    progress(f"{row['facts']} facts: get_context p50/p95 {row['get_context_ms']['p50']}/{row['get_context_ms']['p95']} "
             f"ms, floor {row['floor_ms']['p95']} ms (p95): {row['ratio_to_floor']['p95']}x")
    result = {"mode": "remeasured", "data_dir": str(root), "sizes": [row], "users": users, "seed": seed,
              "load_average_at_start": load_average(), "seconds": round(progress.elapsed, 1)}
    result["path"] = str(write_result(name, result, out_dir))
    return result


def run(*, quick: bool = False, sizes: Sequence[int] | None = None, users: int = 100, seed: int = 7,
        sample_episodes: int | None = None, bulk_episodes: int | None = None, n_queries: int | None = None,
        data_dir: str | Path | None = None, profile: bool = True, progress: Progress | None = None,
        out_dir: Path | None = None, save: bool = True, name: str = "scale") -> dict[str, Any]:
    """Run the scale benchmark and return (and write) its results.

    Args:
        quick: sizes 1k and 10k, fewer samples and queries.
        sizes: fact counts to measure at (ascending).
        users: synthetic users (the facts are spread over them).
        seed: the data and the queries are drawn from it.
        sample_episodes: short episodes timed one by one at each size.
        bulk_episodes: episodes timed through ``conversation_end_many`` at each size.
        n_queries: distinct queries timed at each size.
        data_dir: where the memory grows (default: a temporary folder, removed after).
        profile: keep a pyinstrument profile of ``get_context`` at the largest size.
        progress: progress printer.
        out_dir: results folder (default ``bench/results``).
        save: write ``<name>.json``.
        name: the results' name (``bench/long_user.py`` runs this as ``long_user``).
    """
    from zep_core import Memory, MemoryConfig
    from zep_core.providers.local import LocalEmbedder

    progress = progress or Progress("scale")
    bulk_sample = bulk_episodes or (200 if quick else 500)
    load_at_start = load_average()
    sizes = sorted(sizes or (QUICK_SIZES if quick else FULL_SIZES))
    sample_episodes = sample_episodes or (100 if quick else 200)
    n_queries = n_queries or (100 if quick else 300)
    tmp = Path(tempfile.mkdtemp(prefix="bench-scale-")) if data_dir is None else None
    root = Path(data_dir) if data_dir else tmp / "data"
    people = make_users(users, seed)
    rows: list[dict[str, Any]] = []
    profile_text = ""
    ingest_profile: dict[str, Any] = {}
    try:
        embedder = RecordingEmbedder(LocalEmbedder())
        embedder.embed(["warm up the model"])
        # every user gets a Chroma collection: this measures that path against its floor (bench/vector_tiers.py
        # measures the exact tier)
        with Memory(MemoryConfig(data_dir=root, embedder=embedder, vector_exact_below=0)) as memory:
            loader = _Loader(memory, people, seed)
            for size in sizes:
                load = None
                per_episode = loader.facts / loader.episodes if loader.episodes else 2.3
                sample_facts = int((sample_episodes + bulk_sample) * per_episode)
                if loader.facts + sample_facts < size * 0.9:
                    load = loader.bulk(size - sample_facts)
                    progress(f"bulk-loaded {load['facts']} facts at {load['facts_per_s']} facts/s")
                bulk = loader.bulk(episodes=bulk_sample, embedder=embedder)
                progress(f"{loader.facts} facts: bulk {bulk['episodes_per_s']} eps/s, {bulk['ingest_texts_per_s']} "
                         f"texts/s vs the embedder's {bulk['embedder_texts_per_s']} ({bulk['ratio_to_embedder']}x)")
                sample = loader.short(sample_episodes)
                while loader.facts < size:  # top up with short episodes, also timed
                    more = loader.short(min(sample_episodes, 50))
                    sample = _merge_samples(sample, more)
                sample.pop("_latency", None)
                progress(f"{loader.facts} facts: short episodes {sample['episodes_per_s']} eps/s "
                         f"({sample['facts_per_s']} facts/s), one episode p50/p95 "
                         f"{sample['episode_latency_ms']['p50']}/{sample['episode_latency_ms']['p95']} ms")
                row = measure(memory, loader, people, n_queries, seed + size, root)
                # The bulk sample again with the embedder on one thread, so that a core is left for the
                # stores (on two cores the embedder's own two threads fill both); after the measures, so
                # that its facts do not change the size they were taken at.
                bulk_one = loader.bulk(episodes=bulk_sample, embedder=embedder, embedder_threads=1)
                progress(f"{loader.facts} facts: bulk with the embedder on one thread: "
                         f"{bulk_one['ratio_to_embedder']}x its own throughput")
                row.update(target_size=size, ingest=sample, bulk=bulk, bulk_one_thread=bulk_one, load=load)
                rows.append(row)
                progress(f"{row['facts']} facts: get_context p50/p95/p99 {row['get_context_ms']} ms, "
                         f"chroma {row['chroma_query_ms']} ms, embed {row['embed_query_ms']} ms")
            if profile:
                profile_text = _profile(memory, queries(people, min(n_queries, 200), seed + 99))
        if profile:  # the same folder at its largest size, index writes on the calling thread
            with Memory(MemoryConfig(data_dir=root, embedder=embedder, index_writes="sync")) as memory:
                ingest_profile = _profile_ingest(memory, people, seed + 5)
            progress(f"ingest profile at {rows[-1]['facts']} facts (sync index writes): "
                     f"{ingest_profile['episodes_per_s_sync']} eps/s")
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    result = {"mode": "quick" if quick else "full", "sizes": rows, "users": users, "seed": seed,
              "sample_episodes": sample_episodes, "profile_get_context": profile_text,
              "profile_ingest": ingest_profile, "load_average_at_start": load_at_start,
              "seconds": round(progress.elapsed, 1)}
    if save:
        result["path"] = str(write_result(name, result, out_dir))
    return result


def _merge_samples(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    eps, facts, secs = a["episodes"] + b["episodes"], a["facts"] + b["facts"], a["seconds"] + b["seconds"]
    handler_secs = a["episodes"] / a["handler_episodes_per_s"] + b["episodes"] / b["handler_episodes_per_s"]
    latency = a["_latency"] + b["_latency"]
    return {"episodes": eps, "facts": facts, "seconds": round(secs, 2), "episodes_per_s": round(eps / secs, 1),
            "facts_per_s": round(facts / secs, 1), "handler_episodes_per_s": round(eps / handler_secs, 1),
            "latency_episodes": len(latency), "episode_latency_ms": percentiles(latency), "_latency": latency}


def format_table(result: dict[str, Any]) -> str:
    """A plain-text table of the sizes, for the console."""
    lines = [f"{'facts':>8} {'eps/s':>6} {'ep p95':>6} {'bulk x':>6} {'bulk1t x':>8} {'p50':>7} {'p95':>7} "
             f"{'p99':>7} "
             f"{'block95':>7} {'asof95':>7} {'chroma95':>8} {'embed95':>7} {'x floor95':>9} {'RSS MB':>7} "
             f"{'B/fact':>7}"]
    for r in result["sizes"]:
        lines.append(f"{r['facts']:>8} {r['ingest']['episodes_per_s']:>6} "
                     f"{r['ingest']['episode_latency_ms']['p95']:>6} "
                     f"{r['bulk']['ratio_to_embedder']:>6} "
                     f"{(r.get('bulk_one_thread') or {}).get('ratio_to_embedder', '-'):>8} "
                     f"{r['get_context_ms']['p50']:>7} "
                     f"{r['get_context_ms']['p95']:>7} {r['get_context_ms']['p99']:>7} "
                     f"{r['context_block_cached_ms']['p95']:>7} {r['get_context_as_of_cached_ms']['p95']:>7} "
                     f"{r['chroma_query_ms']['p95']:>8} "
                     f"{r['embed_query_ms']['p95']:>7} {r['ratio_to_floor']['p95']:>9} {r['rss_mb']:>7} "
                     f"{r['disk_bytes_per_fact']:>7}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Command line: ``python -m bench.scale [--quick] [--sizes …]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sizes 1k and 10k")
    parser.add_argument("--sizes", nargs="*", type=int)
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--data-dir", help="keep the built memory here")
    parser.add_argument("--out", type=Path, help="results folder (default: bench/results)")
    args = parser.parse_args(argv)
    result = run(quick=args.quick, sizes=args.sizes, users=args.users, data_dir=args.data_dir, out_dir=args.out)
    print_result(result)
    return result


def print_result(result: dict[str, Any]) -> None:
    """The table, then the top of the ``get_context`` profile when there is one."""
    print(format_table(result))
    if result["profile_get_context"]:
        print("\n".join(result["profile_get_context"].splitlines()[:40]))


if __name__ == "__main__":
    main()
