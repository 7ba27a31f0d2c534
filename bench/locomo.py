"""LoCoMo evidence recall@k: zep-memory's GetContext against raw-turn baselines.

Each LoCoMo session becomes one episode (``conversation_end``) dated by the session's
``date_time``; each turn is a ``Message(content=text, name=speaker, id=dia_id,
timestamp=session date + one second per turn)`` with role ``user`` (both speakers are
named humans). The conversation's ``sample_id`` is the user id. Every question is then
asked through ``Memory.get_context`` and counted *covered* at k when the source message
ids of the top-k facts include all of its evidence ids (also reported: the share of
evidence ids found, and whether any was).

The stores are filled once; every scoring variant re-queries the same data folder,
reopened with ``MemoryConfig.with_(...)``: the defaults, the spec literally
(``SPEC_SCORING``), and one row per part of the ranking switched off or swapped
(lexical signal, the question before a reply, the graph and its variants, newer-first,
the fusion), so the table shows what each part buys.

Run: ``python -m bench.locomo [--data ../shared/data/locomo/locomo_dev.json] [--quick]``.
"""

from __future__ import annotations

import argparse
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from zep_core.config import SPEC_SCORING

from .baselines import BM25Turns, DenseTurns, Hit, RawTurn
from .common import (
    LOCOMO_DEV,
    TOKEN_METHOD,
    Progress,
    load_average,
    options_for,
    percentiles,
    token_estimate,
    write_result,
)
from .recall import Tally

__all__ = ["CATEGORIES", "VARIANTS", "Conversation", "Question", "Variant", "load", "normalise_evidence", "run",
           "variant"]

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
MAIN = "1-4"
KS = (5, 10)
QUICK_CONVERSATIONS = ("conv-26",)
_EVIDENCE_RE = re.compile(r"D:?(\d+):(\d+)")


@dataclass(frozen=True)
class Turn:
    """One LoCoMo turn."""

    id: str
    speaker: str
    text: str
    timestamp: datetime


@dataclass(frozen=True)
class Question:
    """One LoCoMo question with its normalised evidence ids."""

    text: str
    category: int
    evidence: tuple[str, ...]


@dataclass
class Conversation:
    """A LoCoMo conversation: dated sessions of turns, and its questions."""

    sample_id: str
    sessions: list[tuple[str, list[Turn]]]
    questions: list[Question]
    dropped_evidence: int = 0
    dropped_questions: int = 0

    @property
    def turns(self) -> list[Turn]:
        """Every turn, in order."""
        return [t for _, turns in self.sessions for t in turns]


def parse_session_date(text: str) -> datetime:
    """Read LoCoMo's ``"1:56 pm on 8 May, 2023"`` as a UTC datetime."""
    try:
        return datetime.strptime(" ".join(text.split()), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)
    except ValueError:
        raise ValueError(f"unreadable LoCoMo session date {text!r}") from None


def normalise_evidence(raw: Sequence[str], known: set[str]) -> tuple[tuple[str, ...], int]:
    """Evidence ids as ``D<session>:<turn>``, split and repaired; returns them and how many were dropped.

    ``"D8:6; D9:17"`` gives two ids, ``"D:11:26"`` reads as ``D11:26``; an id that names no
    turn of the conversation (or ``"D"`` alone) is dropped.
    """
    ids: list[str] = []
    dropped = 0
    for item in raw:
        found = [f"D{a}:{b}" for a, b in _EVIDENCE_RE.findall(str(item))]
        if not found:
            dropped += 1
        for eid in found:
            if eid in known:
                ids.append(eid)
            else:
                dropped += 1
    return tuple(dict.fromkeys(ids)), dropped


def load(path: str | Path, *, conversations: Sequence[str] | None = None,
         max_questions: int | None = None, max_sessions: int | None = None) -> list[Conversation]:
    """Read LoCoMo conversations (all, or those whose ``sample_id`` is listed).

    ``max_sessions`` keeps the first sessions only (questions whose evidence lies
    beyond them are dropped); ``max_questions`` keeps the first questions.
    """
    import json

    data = json.loads(Path(path).read_text())
    out = []
    for item in data:
        if conversations and item["sample_id"] not in conversations:
            continue
        conv = item["conversation"]
        sessions = []
        n = 1
        while f"session_{n}_date_time" in conv and (max_sessions is None or len(sessions) < max_sessions):
            raw = conv.get(f"session_{n}") or []
            if raw:
                when = parse_session_date(conv[f"session_{n}_date_time"])
                sessions.append((f"session_{n}", [Turn(t["dia_id"], t["speaker"], t["text"],
                                                       when + timedelta(seconds=i))
                                                  for i, t in enumerate(raw) if t.get("text", "").strip()]))
            n += 1
        known = {t.id for _, turns in sessions for t in turns}
        c = Conversation(item["sample_id"], sessions, [])
        for qa in item["qa"]:
            evidence, dropped = normalise_evidence(qa.get("evidence") or [], known)
            c.dropped_evidence += dropped
            if not evidence:
                c.dropped_questions += 1
                continue
            c.questions.append(Question(qa["question"], int(qa["category"]), evidence))
        if max_questions is not None:
            c.questions = c.questions[:max_questions]
        out.append(c)
    if conversations and len(out) != len(set(conversations)):
        missing = sorted(set(conversations) - {c.sample_id for c in out})
        raise ValueError(f"conversations not in {path}: {', '.join(missing)}")
    return out


# -- the scoring variants ---------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """A GetContext scoring setting: config changes (reopen) plus per-call overrides."""

    name: str
    config: tuple[tuple[str, Any], ...] = ()
    threshold: float | None = None
    require_both: bool | None = None


def variant(t: float, sw: float, gw: float, hops: int, *, both: bool = False) -> Variant:
    """A named variant with threshold ``t``, weights ``sw``/``gw`` and ``hops`` (``both``: AND)."""
    name = f"t={t:g} w={sw:g}/{gw:g} hops={hops}" + (" AND" if both else "")
    cfg = (("semantic_weight", sw), ("graph_weight", gw), ("graph_hops", hops))
    return Variant(name, cfg, threshold=t, require_both=both)


def ablation(name: str, **changes: Any) -> Variant:
    """A named variant: the defaults with these ``MemoryConfig`` changes (the folder is reopened)."""
    return Variant(name, tuple(sorted(changes.items())))


#: The defaults, the spec literally, and what each part of the ranking buys: each row
#: switches one part off (or swaps it) and keeps the rest at the defaults.
VARIANTS: tuple[Variant, ...] = (
    Variant("defaults"),
    ablation("spec literally (SPEC_SCORING)", scoring=SPEC_SCORING),
    ablation("before the lexical signal (weighted sum, t=0.2, no lexical, no newer-first)", fusion="weighted",
             lexical_weight=0.0, graph_mode="candidates", newer_first_similarity=1.0, asker_weight=0.3,
             semantic_threshold=0.2, time_weight=0.0),
    ablation("lexical off", lexical_weight=0.0),
    ablation("context text off (a reply without its question)", lexical_context_weight=0.0),
    ablation("graph off", graph_weight=0.0, asker_weight=0.0),
    ablation("graph: every nearby fact a candidate", graph_mode="candidates"),
    ablation("graph: the asker weighted as any entity", asker_weight=0.3),
    ablation("graph: a hop's facts ranked by meaning and words (graph_fit=words)", graph_fit="words"),
    ablation("newer-first off", newer_first_similarity=1.0),
    ablation("time signal off (a time the question names)", time_weight=0.0),
    ablation("fusion: weighted sum 0.7 cos + 0.3 graph + 0.2 BM25/max", fusion="weighted", lexical_weight=0.2),
    ablation("rrf_k=60", rrf_k=60),
    ablation("t=0.2", semantic_threshold=0.2),
    ablation("t=0", semantic_threshold=0.0),
)


# -- ingest and evaluation --------------------------------------------------------------


def ingest(memory: Any, conv: Conversation) -> dict[str, float]:
    """Send every session of ``conv`` through ``conversation_end``; returns counts and seconds."""
    from zep_core import Message

    start = time.perf_counter()
    added = 0
    for key, turns in conv.sessions:
        msgs = [Message(content=t.text, role="user", name=t.speaker, id=t.id, timestamp=t.timestamp)
                for t in turns]
        result = memory.conversation_end(key, msgs, user_id=conv.sample_id, episode_id=f"{conv.sample_id}:{key}")
        if result.status != "done":
            raise RuntimeError(f"{conv.sample_id} {key}: ingest ended {result.status}: {result.error}")
        added += len(result.added)
    return {"episodes": len(conv.sessions), "turns": len(conv.turns), "facts": added,
            "seconds": time.perf_counter() - start}


def _groups(q: Question) -> list[str]:
    return [str(q.category), MAIN] if q.category in (1, 2, 3, 4) else [str(q.category)]


def _evaluate(convs: Sequence[Conversation], search: Callable[[Conversation, str], list[Hit]],
              block: Callable[[Sequence[Hit], int], int] | None = None) -> dict[str, Any]:
    tally = Tally(KS)
    covered: list[int] = []
    times: list[float] = []
    blocks = {k: [] for k in KS}
    for conv in convs:
        for q in conv.questions:
            t0 = time.perf_counter()
            hits = search(conv, q.text)
            times.append((time.perf_counter() - t0) * 1000)
            covered.append(int(tally.add(_groups(q), hits, q.evidence)[max(KS)]))
            if block is not None and q.category != 5:
                for k in KS:
                    blocks[k].append(block(hits, k))
    out = {"recall": tally.table(), "latency_ms": percentiles(times, (50, 95)),
           "covered_at_10": "".join(map(str, covered))}
    if block is not None:
        out["block_tokens"] = {f"k{k}": round(sum(v) / max(len(v), 1), 1) for k, v in blocks.items()}
    return out


@dataclass(frozen=True)
class _FactHit(Hit):
    fact: Any = None


def _fact_hits(facts: Sequence[Any]) -> list[Hit]:
    return [_FactHit(tuple(f.source_message_ids), f.content, f) for f in facts]


def _block_tokens(hits: Sequence[Hit], k: int) -> int:
    """Tokens of the rendered facts block (``render_context_block``) of the top ``k``."""
    from zep_core.retrieval import render_context_block

    return token_estimate(render_context_block([h.fact for h in hits[:k]]))


def run(path: str | Path, *, quick: bool = False, conversations: Sequence[str] | None = None,
        max_questions: int | None = None, max_sessions: int | None = None, variants: Sequence[Variant] = VARIANTS,
        embedder: Any = None,
        data_dir: str | Path | None = None, progress: Progress | None = None,
        out_dir: Path | None = None, save: bool = True, settings: Any = None) -> dict[str, Any]:
    """Run the LoCoMo benchmark and return (and write) its results.

    Args:
        path: ``locomo_dev.json`` (or the full ``locomo10.json``).
        quick: one conversation (conv-26) instead of all.
        conversations: sample ids to use (overrides ``quick``).
        max_questions: cap per conversation (for smoke tests).
        max_sessions: keep the first sessions of each conversation only (for smoke tests).
        embedder: the embedder (default: a new offline ``LocalEmbedder``).
        variants: scoring variants of zep-memory to evaluate.
        data_dir: where the memory is built (default: a temporary folder, removed after).
        progress: progress printer.
        out_dir: results folder (default ``bench/results``).
        save: write ``locomo.json``.
        settings: ``MemoryConfig`` fields for every memory built (e.g. ``vector_exact_below``), or a
            function of the memory's folder giving them (:func:`bench.common.options_for`).
    """
    from zep_core import Memory, MemoryConfig
    from zep_core.providers.local import LocalEmbedder

    progress = progress or Progress("locomo")
    load_at_start = load_average()
    if conversations is None and quick:
        conversations = QUICK_CONVERSATIONS
    convs = load(path, conversations=conversations, max_questions=max_questions, max_sessions=max_sessions)
    n_q = sum(len(c.questions) for c in convs)
    progress(f"{len(convs)} conversations, {sum(len(c.turns) for c in convs)} turns, {n_q} questions")
    tmp = Path(tempfile.mkdtemp(prefix="bench-locomo-")) if data_dir is None else None
    root = Path(data_dir) if data_dir else tmp / "data"
    embedder = embedder or LocalEmbedder()
    base = MemoryConfig(data_dir=root, embedder=embedder, **options_for(settings, root))
    systems: dict[str, Any] = {}
    try:
        ingest_stats = []
        with Memory(base) as memory:
            for conv in convs:
                stats = ingest(memory, conv)
                ingest_stats.append({"conversation": conv.sample_id, **stats})
                progress(f"ingested {conv.sample_id}: {stats['episodes']} episodes, {stats['turns']} turns, "
                         f"{stats['facts']} facts in {stats['seconds']:.1f}s")
            counts = memory.stats()
        baselines = {}
        for conv in convs:
            raw = [RawTurn(t.id, f"{t.speaker}: {t.text}") for t in conv.turns]
            baselines[conv.sample_id] = (BM25Turns(raw), DenseTurns(raw, embedder))
        for i, name in enumerate(("bm25-turns", "dense-turns")):
            systems[name] = _evaluate(convs, lambda c, q, i=i: baselines[c.sample_id][i].search(q, max(KS)))
            progress(f"{name}: all@10 {MAIN} = {systems[name]['recall']['k10'][MAIN]['all']}")
        by_config: dict[tuple, list[Variant]] = {}
        for v in variants:
            by_config.setdefault(v.config, []).append(v)
        for changes, group in by_config.items():
            with Memory(base.with_(**dict(changes))) as memory:
                for v in group:
                    def search(c: Conversation, q: str, v: Variant = v) -> list[Hit]:
                        return _fact_hits(memory.get_context(q, user_id=c.sample_id, limit=max(KS),
                                                             threshold=v.threshold, require_both=v.require_both))

                    res = _evaluate(convs, search, _block_tokens)
                    res["settings"] = _settings(memory.config, v)
                    systems[f"zep: {v.name}"] = res
                    progress(f"zep: {v.name}: all@10 {MAIN} = {res['recall']['k10'][MAIN]['all']}")
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    result = {
        "dataset": str(path), "mode": "quick" if quick else "full",
        "conversations": [c.sample_id for c in convs], "questions": n_q,
        "dropped_evidence_ids": sum(c.dropped_evidence for c in convs),
        "dropped_questions": sum(c.dropped_questions for c in convs),
        "token_method": TOKEN_METHOD, "ingest": _ingest_summary(ingest_stats), "stores": counts,
        "systems": systems, "winner": best_variant(systems), "seconds": round(progress.elapsed, 1),
        "load_average_at_start": load_at_start,
    }
    result["head_to_head"] = head_to_head(systems, result["winner"])
    if save:
        result["path"] = str(write_result("locomo", result, out_dir))
    return result


def _settings(config: Any, v: Variant) -> dict[str, Any]:
    """Every scoring number the variant ran with."""
    scoring = config.scoring
    out = {k: (list(scoring[k]) if isinstance(scoring[k], tuple) else scoring[k]) for k in scoring.keys()}
    if v.threshold is not None:
        out["semantic_threshold"] = v.threshold
    if v.require_both is not None:
        out["require_both"] = v.require_both
    return out


def _ingest_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    secs = sum(r["seconds"] for r in rows)
    eps = sum(r["episodes"] for r in rows)
    turns = sum(r["turns"] for r in rows)
    return {"per_conversation": rows, "episodes": eps, "turns": turns, "facts": sum(r["facts"] for r in rows),
            "seconds": round(secs, 1), "episodes_per_s": round(eps / secs, 2) if secs else None,
            "turns_per_s": round(turns / secs, 1) if secs else None}


def best_variant(systems: dict[str, Any]) -> str:
    """The zep variant with the best all-evidence recall@10 on categories 1–4 (then @5, then fewer tokens)."""
    ours = {n: s["recall"] for n, s in systems.items() if n.startswith("zep: ")}

    def key(name: str) -> tuple[float, float, float]:
        r = ours[name]
        return (r["k10"][MAIN]["all"], r["k5"][MAIN]["all"], -r["k10"][MAIN]["tokens"])

    return max(ours, key=key) if ours else ""


def head_to_head(systems: dict[str, Any], winner: str) -> dict[str, dict[str, int]]:
    """Questions covered at 10 by one system and not the other (all categories, same order)."""
    out = {}
    pairs = [("zep: defaults", "dense-turns"), ("zep: defaults", "bm25-turns")]
    if winner and winner != "zep: defaults":
        pairs += [(winner, "dense-turns"), (winner, "bm25-turns"), (winner, "zep: defaults")]
    for a, b in pairs:
        if a in systems and b in systems:
            ca, cb = systems[a]["covered_at_10"], systems[b]["covered_at_10"]
            out[f"{a} vs {b}"] = {"only_first": sum(x == "1" and y == "0" for x, y in zip(ca, cb)),
                                  "only_second": sum(x == "0" and y == "1" for x, y in zip(ca, cb))}
    return out


def format_table(result: dict[str, Any], k: int = 10) -> str:
    """A plain-text table of all-evidence recall@k per category, for the console."""
    cats = [str(c) for c in (1, 2, 3, 4)] + [MAIN, "5"]
    head = f"{'system':<34}" + "".join(f"{c:>7}" for c in cats) + f"{'tokens':>8}"
    lines = [f"all-evidence recall@{k}", head]
    for name, s in result["systems"].items():
        row = s["recall"][f"k{k}"]
        lines.append(f"{name:<34}" + "".join(f"{row.get(c, {}).get('all', float('nan')):>7.3f}" for c in cats)
                     + f"{row[MAIN]['tokens']:>8.0f}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Command line: ``python -m bench.locomo --data PATH [--quick]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(LOCOMO_DEV))
    parser.add_argument("--quick", action="store_true", help="one conversation")
    parser.add_argument("--conversations", nargs="*", help="sample ids to use")
    parser.add_argument("--max-questions", type=int, help="questions per conversation")
    parser.add_argument("--data-dir", help="keep the built memory here")
    parser.add_argument("--out", type=Path, help="results folder (default: bench/results)")
    args = parser.parse_args(argv)
    result = run(args.data, quick=args.quick, conversations=args.conversations,
                 max_questions=args.max_questions, data_dir=args.data_dir, out_dir=args.out)
    print(format_table(result, 10))
    print(format_table(result, 5))
    print("winner:", result["winner"])
    return result


if __name__ == "__main__":
    main()
