"""LongMemEval (oracle): turn-level recall of answer turns, and knowledge updates.

Every question gets its own user id (its haystack sessions never mix with another
question's). Each haystack session is one episode dated by ``haystack_dates``; each
turn is a :class:`Message` with id ``{session_id}:{turn_idx}``, its role, and a
timestamp one second after the previous turn. Assistant turns carry no name, as the
adapters send them; the memory indexes them as ``assistant_speaker`` ("Assistant"). A
second ingest with ``assistant_speaker=None`` shows what indexing them buys.

Recall: a question's evidence is its ``has_answer`` turns; covered at k when the top-k
facts of ``get_context(question)`` cite all of them (also: share, any), per question
type, beside BM25 and dense retrieval over the raw turns of the same haystack.

Knowledge updates (``knowledge-update`` questions: an older session states a value, a
newer one changes it). Heuristic, without an LLM:

* *answer in context*: the ``context_block`` text holds the answer's key terms — the
  answer's words of 3+ letters and its numbers, minus stop words and words already in
  the question — at least half of them, and every number;
* *newest cited* / *superseded cited*: some top-k fact cites a ``has_answer`` turn of the
  newest evidence session / of an older one (the older value);
* *newest only*: newest cited and superseded not cited — what a temporal memory should
  hand the LLM; *stale only*: superseded cited and newest not — the failure to avoid;
  *newest first*: the first fact citing the newest turn ranks above any citing an older one.

The knowledge-update figures are given at k=10 and at k=5, for zep and BM25 alike.

Long history (``--long-per-type N``; the full run takes 4 questions of each type, ~8 minutes):
the oracle keeps only a question's evidence sessions; a real user's memory holds
many more. Each question of the sample gets its evidence sessions plus
:data:`LONG_DISTRACTORS` sessions of *other* questions of the dev half, drawn with a
fixed seed, re-dated into the question's own date range (widened to
:data:`LONG_SPAN` before its last session when narrower) and interleaved by date —
about 42 sessions per user, as in LongMemEval-S. Their turns carry no evidence. The
same questions are scored on the oracle and on the long history, zep beside BM25 and
dense retrieval over the same turns, so the drop from one to the other is measured in
one run; ingest time per turn is reported beside the embedder's own time per turn.

LongMemEval-S (``--s-per-type N``; the whole dev half in the full run, :data:`bench.longmemeval_s.QUICK_PER_TYPE`
per type quick): the same dev questions with their real S haystacks, ~48 sessions a user
(:mod:`bench.longmemeval_s`), zep beside BM25 and dense turns in the same run.

Run: ``python -m bench.longmemeval --data PATH [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from .baselines import BM25Turns, DenseTurns, Hit, RawTurn
from .common import LONGMEMEVAL_DEV, TOKEN_METHOD, Progress, load_average, options_for, percentiles, write_result
from .locomo import VARIANTS, Variant, _settings
from .longmemeval_data import AskedClock, Item, Turn, ingest_bulk, load
from .longmemeval_s import LONGMEMEVAL_S_DEV, format_s, run_s
from .longmemeval_s import QUICK_PER_TYPE as QUICK_S_PER_TYPE
from .recall import Tally

__all__ = ["Item", "answer_terms", "load", "long_history", "run"]

KS = (5, 10)
LONG_DISTRACTORS = 40
LONG_SEED = 31
LONG_SPAN = timedelta(days=120)
LONG_PER_TYPE = 8
QUICK_LONG_PER_TYPE = 2
ALL = "all"
QUICK_PER_TYPE = 8
_STOP = frozenset(
    """the and for are was were you your yours with that this from have has had not but they them their
    what when where which who how why can could would should will just also into about over than then
    there here its it's been being very more most some any each other only same such too now new old
    currently current previously before after used use using one two does did done doing get got""".split())
_WORD = re.compile(r"[a-z0-9][a-z0-9'.,$%-]*[a-z0-9%]|[a-z0-9]")


def long_history(items: Sequence[Item], pool: Sequence[Item], *, distractors: int = LONG_DISTRACTORS,
                 seed: int = LONG_SEED) -> list[Item]:
    """Each of ``items`` with ``distractors`` sessions of other questions of ``pool`` mixed in.

    The drawn sessions are re-dated, uniformly at random, into the question's date range
    (its first to its last session, widened to :data:`LONG_SPAN` before the last when
    narrower), lose their evidence marks, and are interleaved with the question's own
    sessions by date. Session and turn ids stay unique within a user. Deterministic for a
    given ``seed``.
    """
    import random

    rng = random.Random(seed)
    sessions = [(it.id, sid, turns) for it in pool for sid, _, turns in it.sessions]
    out = []
    for it in items:
        own = {sid for sid, _, _ in it.sessions}
        others = [(q, sid, turns) for q, sid, turns in sessions if q != it.id and sid not in own]
        picked = rng.sample(others, min(distractors, len(others)))
        last = it.sessions[-1][1]
        first = min(it.sessions[0][1], last - LONG_SPAN)
        span = (last - first).total_seconds()
        mixed = list(it.sessions)
        for n, (_, sid, turns) in enumerate(picked):
            when = first + timedelta(seconds=rng.uniform(0, span))
            new_sid = f"x{n}-{sid}"
            mixed.append((new_sid, when, [Turn(f"{new_sid}:{i}", t.role, t.content, when + timedelta(seconds=i),
                                               False, new_sid) for i, t in enumerate(turns)]))
        mixed.sort(key=lambda s: s[1])
        out.append(Item(it.id, it.type, it.question, it.answer, mixed, it.asked))
    return out


def answer_terms(answer: str, question: str) -> tuple[set[str], set[str]]:
    """Key words and numbers of ``answer`` that the question does not already contain."""
    asked = set(_WORD.findall(question.lower()))
    words = {w.strip(".,") for w in _WORD.findall(answer.lower())}
    words = {w for w in words if w and w not in _STOP and w not in asked and (len(w) >= 3 or w.isdigit())}
    numbers = {w for w in words if any(ch.isdigit() for ch in w)}
    return words, numbers


def answer_in_text(answer: str, question: str, text: str) -> bool | None:
    """The heuristic *answer in context*; None when the answer has no usable key term."""
    words, numbers = answer_terms(answer, question)
    if not words:
        return None
    found = set(_WORD.findall(text.lower())) | {w.strip(".,") for w in _WORD.findall(text.lower())}
    if not numbers <= found:
        return False
    return len(words & found) >= max(1, len(words) / 2)


def ingest(memory: Any, item: Item) -> int:
    """Send the question's sessions through ``conversation_end``; returns facts added."""
    from zep_core import Message

    added = 0
    for sid, _, turns in item.sessions:
        msgs = [Message(content=t.content, role=t.role, id=t.id, timestamp=t.timestamp) for t in turns]
        result = memory.conversation_end(sid, msgs, user_id=item.id, episode_id=f"{item.id}:{sid}")
        if result.status != "done":
            raise RuntimeError(f"{item.id} {sid}: ingest ended {result.status}: {result.error}")
        added += len(result.added)
    return added


def _knowledge_update(item: Item, facts: Sequence[Any], k: int) -> dict[str, Any]:
    from zep_core.retrieval import render_context_block

    row = _knowledge_update_core(item, facts, k)
    row["answer_in_context"] = answer_in_text(item.answer, item.question, render_context_block(facts[:k]))
    return row


def _ku_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def rate(key: str, subset: list[dict[str, Any]]) -> float | None:
        vals = [r[key] for r in subset if r[key] is not None]
        return round(sum(vals) / len(vals), 3) if vals else None

    two = [r for r in rows if r["has_older_value"]]
    return {"n": len(rows), "n_with_older_value": len(two),
            "answer_in_context": rate("answer_in_context", rows),
            "answer_scored": sum(r["answer_in_context"] is not None for r in rows),
            "newest_cited": rate("newest_cited", rows), "superseded_cited": rate("superseded_cited", two),
            "newest_only": rate("newest_only", two), "stale_only": rate("stale_only", two),
            "newest_first": rate("newest_first", two)}


def _ku_baseline(item: Item, hits: Sequence[Hit], k: int) -> dict[str, Any]:
    """The same knowledge-update check on a raw-turn ranking (text = the turns themselves)."""
    facts = [_HitFact(h) for h in hits]
    row = _knowledge_update_core(item, facts, k)
    row["answer_in_context"] = answer_in_text(item.answer, item.question, "\n".join(h.text for h in hits[:k]))
    return row


@dataclass(frozen=True)
class _HitFact:
    hit: Hit

    @property
    def source_message_ids(self) -> tuple[str, ...]:
        return self.hit.source_ids


def _knowledge_update_core(item: Item, facts: Sequence[Any], k: int) -> dict[str, Any]:
    evidence_sessions = [sid for sid, _, turns in item.sessions if any(t.has_answer for t in turns)]
    newest = evidence_sessions[-1] if evidence_sessions else None
    new_ids = {t.id for t in item.turns if t.has_answer and t.session == newest}
    old_ids = {t.id for t in item.turns if t.has_answer and t.session != newest}
    rank_new = next((i for i, f in enumerate(facts[:k]) if new_ids & set(f.source_message_ids)), None)
    rank_old = next((i for i, f in enumerate(facts[:k]) if old_ids & set(f.source_message_ids)), None)
    return {"id": item.id, "answer_in_context": None, "has_older_value": bool(old_ids),
            "newest_cited": rank_new is not None, "superseded_cited": rank_old is not None,
            "newest_only": rank_new is not None and rank_old is None,
            "stale_only": rank_old is not None and rank_new is None,
            "newest_first": rank_new is not None and (rank_old is None or rank_new < rank_old)}


#: zep-memory settings evaluated here: the same rows as LoCoMo's.
LME_VARIANTS: tuple[Variant, ...] = VARIANTS


def _evaluate_zep(memory: Any, items: Sequence[Item], v: Variant, clock: AskedClock | None = None) -> dict[str, Any]:
    tally = Tally(KS)
    latency: list[float] = []
    ku: list[dict[str, Any]] = []
    ku5: list[dict[str, Any]] = []
    for it in items:
        if clock is not None:
            clock.at = it.asked
        s = time.perf_counter()
        facts = memory.get_context(it.question, user_id=it.id, limit=max(KS), threshold=v.threshold,
                                   require_both=v.require_both)
        latency.append((time.perf_counter() - s) * 1000)
        tally.add([it.type, ALL], [Hit(tuple(f.source_message_ids), f.content) for f in facts], it.evidence)
        if it.type == "knowledge-update":
            ku.append(_knowledge_update(it, facts, max(KS)))
            ku5.append(_knowledge_update(it, facts, 5))
    if clock is not None:
        clock.at = None
    return {"recall": tally.table(), "latency_ms": percentiles(latency, (50, 95)),
            "knowledge_update": _ku_summary(ku), "knowledge_update_k5": _ku_summary(ku5),
            "knowledge_update_rows": ku}


def _evaluate_baselines(items: Sequence[Item], embedder: Any) -> dict[str, Any]:
    tallies = {"bm25-turns": Tally(KS), "dense-turns": Tally(KS)}
    ku: dict[str, list[dict[str, Any]]] = {name: [] for name in tallies}
    ku5: dict[str, list[dict[str, Any]]] = {name: [] for name in tallies}
    for it in items:
        raw = [RawTurn(t.id, f"{t.role}: {t.content}") for t in it.turns]
        for name, index in (("bm25-turns", BM25Turns(raw)), ("dense-turns", DenseTurns(raw, embedder))):
            hits = index.search(it.question, max(KS))
            tallies[name].add([it.type, ALL], hits, it.evidence)
            if it.type == "knowledge-update":
                ku[name].append(_ku_baseline(it, hits, max(KS)))
                ku5[name].append(_ku_baseline(it, hits, 5))
    return {name: {"recall": t.table(), "knowledge_update": _ku_summary(ku[name]),
                   "knowledge_update_k5": _ku_summary(ku5[name])} for name, t in tallies.items()}


def _sample(items: Sequence[Item], per_type: int) -> list[Item]:
    taken: dict[str, int] = defaultdict(int)
    out = []
    for it in items:
        if it.evidence and taken[it.type] < per_type:
            out.append(it)
            taken[it.type] += 1
    return out


def run_long(path: str | Path, *, per_type: int, embedder: Any, root: Path, progress: Progress,
             settings: Any = None) -> dict[str, Any]:
    """The same questions on the oracle and on a long history (:func:`long_history`), with the baselines."""
    from zep_core import Memory, MemoryConfig

    pool = load(path)
    sample = _sample(pool, per_type)
    histories = {"oracle": sample, "long": long_history(sample, pool)}
    out: dict[str, Any] = {"questions": len(sample), "distractors": LONG_DISTRACTORS, "seed": LONG_SEED}
    for name, items in histories.items():
        turns = [t for it in items for t in it.turns]
        systems = dict(_evaluate_baselines(items, embedder))
        t0, c0 = time.perf_counter(), time.process_time()
        embedder.embed([t.content for t in turns])
        embed_wall, embed_cpu = time.perf_counter() - t0, time.process_time() - c0
        clock = AskedClock()
        with Memory(MemoryConfig(data_dir=root / f"long-{name}", embedder=embedder,
                                 **options_for(settings, root / f"long-{name}")),
                    clock=clock) as memory:
            t0, c0 = time.perf_counter(), time.process_time()
            facts = ingest_bulk(memory, items)
            memory.flush()
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            res = _evaluate_zep(memory, items, Variant("defaults"), clock)
        systems["zep: defaults"] = res
        words = [sum(len(t.content.split()) for t in it.turns) for it in items]
        out[name] = {
            "sessions_per_user": round(sum(len(it.sessions) for it in items) / len(items), 1),
            "words_per_user": round(sum(words) / len(words)), "turns": len(turns), "facts": facts,
            "ingest_ms_per_turn": round(wall * 1000 / len(turns), 2),
            "ingest_cpu_ms_per_turn": round(cpu * 1000 / len(turns), 2),
            "embed_ms_per_turn": round(embed_wall * 1000 / len(turns), 2),
            "embed_cpu_ms_per_turn": round(embed_cpu * 1000 / len(turns), 2),
            "systems": systems}
        bm25 = systems["bm25-turns"]["recall"]
        progress(f"{name}: {len(items)} users, {out[name]['sessions_per_user']} sessions and "
                 f"{out[name]['words_per_user']} words each; ingest {out[name]['ingest_ms_per_turn']} ms/turn "
                 f"(embedder alone {out[name]['embed_ms_per_turn']}); all@10 zep "
                 f"{res['recall']['k10'][ALL]['all']}, bm25 {bm25['k10'][ALL]['all']}; "
                 f"all@5 zep {res['recall']['k5'][ALL]['all']}, bm25 {bm25['k5'][ALL]['all']}")
    return out


def run(path: str | Path, *, quick: bool = False, per_type: int | None = None,
        assistant_speakers: Sequence[str | None] | None = None, variants: Sequence[Variant] = LME_VARIANTS,
        data_dir: str | Path | None = None, progress: Progress | None = None, long_per_type: int | None = None,
        out_dir: Path | None = None, save: bool = True, settings: Any = None, s_per_type: int | None = None,
        s_path: str | Path = LONGMEMEVAL_S_DEV) -> dict[str, Any]:
    """Run the LongMemEval benchmark and return (and write) its results.

    Args:
        path: ``longmemeval_oracle_dev.json``.
        quick: the first few questions of each type, one ingest (the defaults).
        per_type: questions per type (overrides ``quick``).
        assistant_speakers: one ingest per entry, with this ``assistant_speaker``: the
            default ``"Assistant"`` indexes the (unnamed) assistant turns, None leaves them
            out. Default: ``("Assistant",)`` quick, ``("Assistant", None)`` full; the
            scoring variants run on the first only.
        variants: zep-memory scoring variants, evaluated on the same data.
        data_dir: where the memories are built (default: a temporary folder, removed after).
        progress: progress printer.
        long_per_type: questions per type scored on the oracle and on a long history
            (:func:`run_long`); default 4 full, 2 quick, 0 for none.
        out_dir: results folder (default ``bench/results``).
        save: write ``longmemeval.json``.
        settings: ``MemoryConfig`` fields for every memory built (e.g. ``vector_exact_below``), or a
            function of the memory's folder giving them (:func:`bench.common.options_for`).
        s_per_type: LongMemEval-S questions per type (:func:`bench.longmemeval_s.run_s`); default the
            whole file full, :data:`bench.longmemeval_s.QUICK_PER_TYPE` quick; 0 for none.
        s_path: ``longmemeval_s_dev.json.gz``.
    """
    from zep_core import Memory, MemoryConfig
    from zep_core.providers.local import LocalEmbedder

    progress = progress or Progress("longmemeval")
    load_at_start = load_average()
    if assistant_speakers is None:
        assistant_speakers = ("Assistant",) if quick else ("Assistant", None)
    items = load(path, per_type=per_type if per_type is not None else (QUICK_PER_TYPE if quick else None))
    scored = [it for it in items if it.evidence]
    progress(f"{len(items)} questions ({len(scored)} with answer turns), {sum(len(i.turns) for i in items)} turns")
    tmp = Path(tempfile.mkdtemp(prefix="bench-lme-")) if data_dir is None else None
    root = Path(data_dir) if data_dir else tmp / "data"
    embedder = LocalEmbedder()
    systems: dict[str, Any] = dict(_evaluate_baselines(scored, embedder))
    progress("baselines: " + ", ".join(f"{n} all@10 {s['recall']['k10'][ALL]['all']}" for n, s in systems.items()))
    ingests = {}
    try:
        for n, speaker in enumerate(assistant_speakers):
            label = "zep" if n == 0 else f"zep[assistant_speaker={speaker!r}]"
            base = MemoryConfig(data_dir=root / f"ingest{n}", embedder=embedder, assistant_speaker=speaker,
                                **options_for(settings, root / f"ingest{n}"))
            clock = AskedClock()
            with Memory(base, clock=clock) as memory:
                t0 = time.perf_counter()
                facts_added = sum(ingest(memory, it) for it in items)
                memory.flush()
                secs = time.perf_counter() - t0
            ingests[label] = {"sessions": sum(len(i.sessions) for i in items),
                              "turns": sum(len(i.turns) for i in items), "facts": facts_added,
                              "seconds": round(secs, 1)}
            progress(f"{label}: ingested {ingests[label]['sessions']} sessions, {facts_added} facts in {secs:.1f}s")
            by_config: dict[tuple, list[Variant]] = {}
            for v in (variants if n == 0 else variants[:1]):
                by_config.setdefault(v.config, []).append(v)
            for changes, group in by_config.items():
                with Memory(base.with_(**dict(changes)), clock=clock) as memory:
                    for v in group:
                        res = _evaluate_zep(memory, scored, v, clock)
                        res["settings"] = _settings(memory.config, v)
                        systems[f"{label}: {v.name}"] = res
                        progress(f"{label}: {v.name}: all@10 {res['recall']['k10'][ALL]['all']}")
        if long_per_type is None:
            long_per_type = QUICK_LONG_PER_TYPE if quick else LONG_PER_TYPE
        long = run_long(path, per_type=long_per_type, embedder=embedder, root=root,
                        progress=progress, settings=settings) if long_per_type else None
        s_result = None
        if s_per_type != 0 and Path(s_path).is_file():
            s_result = run_s(s_path, per_type=s_per_type or (QUICK_S_PER_TYPE if quick else None), embedder=embedder,
                             root=root, progress=progress, settings=settings)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    result = {
        "dataset": str(path), "mode": "quick" if quick else "full", "questions": len(items),
        "scored_questions": len(scored), "token_method": TOKEN_METHOD, "ingest": ingests,
        "systems": systems, "long_history": long, "longmemeval_s": s_result, "load_average_at_start": load_at_start,
        "seconds": round(progress.elapsed, 1),
    }
    if save:
        result["path"] = str(write_result("longmemeval", result, out_dir))
    return result


def format_table(result: dict[str, Any], k: int = 10) -> str:
    """A plain-text table of all-evidence recall@k per question type."""
    types = sorted({g for s in result["systems"].values() for g in s["recall"][f"k{k}"]} - {ALL}) + [ALL]
    lines = [f"all-evidence recall@{k}", f"{'system':<44}" + "".join(f"{t[-9:]:>10}" for t in types)]
    for name, s in result["systems"].items():
        row = s["recall"][f"k{k}"]
        lines.append(f"{name[:44]:<44}" + "".join(f"{row[t]['all']:>10.3f}" for t in types))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Command line: ``python -m bench.longmemeval --data PATH [--quick]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(LONGMEMEVAL_DEV))
    parser.add_argument("--quick", action="store_true", help=f"the first {QUICK_PER_TYPE} questions of each type")
    parser.add_argument("--per-type", type=int)
    parser.add_argument("--long-per-type", type=int,
                        help=f"questions per type on the long history (default {LONG_PER_TYPE}, quick "
                             f"{QUICK_LONG_PER_TYPE}; 0: none)")
    parser.add_argument("--s-per-type", type=int,
                        help="LongMemEval-S questions per type (default: all full, "
                             f"{QUICK_S_PER_TYPE} quick; 0: none)")
    parser.add_argument("--out", type=Path, help="results folder (default: bench/results)")
    args = parser.parse_args(argv)
    result = run(args.data, quick=args.quick, per_type=args.per_type, out_dir=args.out,
                 long_per_type=args.long_per_type, s_per_type=args.s_per_type)
    print(format_table(result, 10))
    print(format_table(result, 5))
    for name, s in result["systems"].items():
        print(f"knowledge updates {name}: k10", json.dumps(s["knowledge_update"]),
              "k5", json.dumps(s.get("knowledge_update_k5")))
    if result.get("long_history"):
        print(format_long(result["long_history"]))
    if result.get("longmemeval_s"):
        print(format_s(result["longmemeval_s"]))
    return result


def format_long(long: dict[str, Any]) -> str:
    """Oracle against long history, per system: all-evidence recall at 10 and 5, by type."""
    lines = [f"oracle vs long history ({long['questions']} questions, {long['long']['sessions_per_user']} sessions "
             f"per user on the long history)"]
    for k in ("k10", "k5"):
        types = sorted(set(long["oracle"]["systems"]["zep: defaults"]["recall"][k]) - {ALL}) + [ALL]
        lines.append(f"all-evidence recall@{k[1:]}".ljust(32) + "".join(f"{t[-9:]:>10}" for t in types))
        for setting in ("oracle", "long"):
            for name, res in long[setting]["systems"].items():
                row = res["recall"][k]
                lines.append(f"  {setting:<8}{name:<22}" + "".join(f"{row[t]['all']:>10.3f}" for t in types)
                             + f"  tokens {row[ALL]['tokens']:.0f}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
