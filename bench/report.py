"""Turn ``bench/results/*.json`` into ``docs/benchmarks.md`` and ``docs/latency.png``.

Run: ``python -m bench.report`` (``python -m bench`` calls it after the benchmarks).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .common import RESULTS_DIR
from .longmemeval_s import markdown_s, s_targets

__all__ = ["plot_latency", "render", "write_docs"]

DOCS = Path(__file__).resolve().parents[1] / "docs"
TARGET_LIFT = 0.15  # LoCoMo categories 1-4 all@10 over BM25 raw turns
TARGET_LME_LIFT = 0.10  # LongMemEval all@10 over BM25 raw turns
TARGET_SSA = 0.80  # LongMemEval single-session-assistant all@10
TARGET_CHAT = 0.95  # bench/chat.py: share of the chat corpus checks that hold
SPEC_ROW = "zep: spec literally (SPEC_SCORING)"
TARGET_P95_MS = 50.0
TARGET_EPS = 100.0  # single-episode conversation_end at 10k facts, until all three stores hold it
TARGET_EPISODE_P95_MS = 50.0  # one episode at 100k facts, until all three stores hold it
TARGET_FLOOR = {100_000: 2.0, 10_000: 3.0, 1_000: 3.0}  # get_context p95 over (embedding + bare Chroma) p95
TARGET_BULK = 0.5  # bulk ingest texts/s over the embedder's own texts/s on the same calls
TARGET_RSS_MB = 1024.0  # at 100k facts
CATS = (("1", "multi-hop"), ("2", "temporal"), ("3", "open-domain"), ("4", "single-hop"))


def _load(results_dir: Path, name: str) -> dict[str, Any] | None:
    path = results_dir / f"{name}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def _f(x: Any, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}" if isinstance(x, float) else str(x)


def _n(x: Any) -> str:
    return "–" if x is None else f"{x:.0f}"


def _ms(x: Any) -> str:
    return "–" if x is None else f"{x:.1f}"


def _ratio(x: Any) -> str:
    return "–" if x is None else f"{x:.2f}"


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(_f(c) if not isinstance(c, str) else c for c in r) + " |" for r in rows]
    return out + [""]


# -- LoCoMo ---------------------------------------------------------------------------


def _locomo_main_rows(res: dict[str, Any], names: Sequence[str], k: int, metric: str) -> list[list[Any]]:
    rows = []
    for name in names:
        if name not in res["systems"]:
            continue
        r = res["systems"][name]["recall"][f"k{k}"]
        rows.append([f"`{name}`"] + [r.get(c, {}).get(metric) for c, _ in CATS]
                    + [r["1-4"][metric], r.get("5", {}).get(metric), _n(r["1-4"]["tokens"])])
    return rows


def _locomo_focus(res: dict[str, Any]) -> list[str]:
    systems = res["systems"]
    names = ["bm25-turns", "dense-turns", "zep: defaults", SPEC_ROW]
    if res.get("winner"):
        names.append(res["winner"])
    return [n for n in dict.fromkeys(names) if n in systems]


def _locomo(res: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    systems = res["systems"]
    n = res["questions"]
    lines = ["## LoCoMo: evidence recall@k", "",
             f"{len(res['conversations'])} conversations ({', '.join(res['conversations'])}), {n} questions, "
             f"{res['ingest']['turns']} turns in {res['ingest']['episodes']} episodes "
             f"(ingested at {res['ingest']['turns_per_s']} turns/s, {res['ingest']['episodes_per_s']} sessions/s). "
             f"Evidence strings normalised (`D8:6; D9:17` → two ids, `D:11:26` → `D11:26`); "
             f"{res['dropped_evidence_ids']} unusable evidence ids dropped, {res['dropped_questions']} questions "
             "left without evidence skipped. Baselines index each raw turn as `speaker: text` "
             "(BM25: bm25s, English stop words, no stemmer; dense: numpy cosine over the same "
             "LocalEmbedder vectors). Tokens: " + res["token_method"] + ", summed over the top-k texts.", ""]
    focus = _locomo_focus(res)
    head = ["system", "multi-hop", "temporal", "open-domain", "single-hop", "**1–4**", "adversarial (5)", "tokens"]
    for k in (10, 5):
        lines += [f"**All evidence in the top {k}** (the question counts as covered only if every evidence turn is "
                  "cited):", ""]
        lines += _table(head, _locomo_main_rows(res, focus, k, "all"))
    lines += ["**Share of evidence found / any evidence found, top 10** (categories 1–4):", ""]
    rows = []
    for name in focus:
        r = systems[name]["recall"]
        rows.append([f"`{name}`", r["k10"]["1-4"]["frac"], r["k10"]["1-4"]["any"], r["k5"]["1-4"]["frac"],
                     r["k5"]["1-4"]["any"]])
    lines += _table(["system", "frac@10", "any@10", "frac@5", "any@5"], rows)
    bm25 = systems["bm25-turns"]["recall"]["k10"]
    target = {"bm25_all10": bm25["1-4"]["all"], "bm25_tokens10": bm25["1-4"]["tokens"],
              "bm25_adv10": bm25.get("5", {}).get("all"),
              "bm25_all5": systems["bm25-turns"]["recall"]["k5"]["1-4"]["all"]}
    if "zep: defaults" in systems:
        d = systems["zep: defaults"]["recall"]
        target.update(defaults_all10=d["k10"]["1-4"]["all"], defaults_tokens10=d["k10"]["1-4"]["tokens"],
                      defaults_adv10=d["k10"].get("5", {}).get("all"), defaults_all5=d["k5"]["1-4"]["all"])
    if res.get("winner"):
        target["best_name"] = res["winner"]
    lines += ["### What each part buys (same data, re-queried)", "",
              "The defaults, the spec's formula literally (`SPEC_SCORING`), the ranking before the lexical "
              "signal, and one row per part switched off or swapped, everything else at the defaults. "
              "Columns: all-evidence recall on categories 1–4 at 10 and 5, adversarial at 10, "
              "tokens at 10 (facts' text) and of the rendered facts block at 10.", ""]
    rows = []
    for name, s in systems.items():
        if not name.startswith("zep: "):
            continue
        r = s["recall"]
        mark = " **(best)**" if name == res.get("winner") else ""
        rows.append([f"`{name[5:]}`{mark}", r["k10"]["1-4"]["all"], r["k5"]["1-4"]["all"],
                     r["k10"].get("5", {}).get("all"), _n(r["k10"]["1-4"]["tokens"]),
                     _n(s.get("block_tokens", {}).get("k10")), _ms(s["latency_ms"]["p50"])])
    lines += _table(["variant", "all@10 1–4", "all@5 1–4", "all@10 adv.", "tokens@10", "block tokens@10",
                     "p50 ms"], rows)
    if res.get("head_to_head"):
        rows = [[f"`{pair}`", v["only_first"], v["only_second"]] for pair, v in res["head_to_head"].items()]
        lines += ["Questions (all categories) covered at 10 by one system and not the other:", ""]
        lines += _table(["pair", "only first", "only second"], rows)
    return lines, target


# -- LongMemEval ----------------------------------------------------------------------


def _longmemeval(res: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    systems = res["systems"]
    types = sorted({t for s in systems.values() for t in s["recall"]["k10"]} - {"all"})
    lines = ["## LongMemEval (oracle): answer-turn recall and knowledge updates", "",
             f"{res['scored_questions']} of {res['questions']} questions have `has_answer` turns and are scored. "
             "Each question is its own user; turn ids are `{session_id}:{turn_idx}`. "
             + "; ".join(f"`{k}`: {v['sessions']} sessions, {v['turns']} turns, {v['facts']} facts in "
                         f"{v['seconds']} s" for k, v in res["ingest"].items()) + ".", ""]
    for k in (10, 5):
        lines += [f"**All answer turns in the top {k}:**", ""]
        rows = []
        for name, s in systems.items():
            r = s["recall"][f"k{k}"]
            rows.append([f"`{name}`"] + [r.get(t, {}).get("all") for t in types] + [r["all"]["all"],
                                                                                   _n(r["all"]["tokens"])])
        lines += _table(["system"] + types + ["**all**", "tokens"], rows)
    for key, k in (("knowledge_update_k5", 5), ("knowledge_update", 10)):
        lines += [f"**Knowledge updates, top {k}** (`knowledge-update` questions; see the heuristic below):", ""]
        rows = []
        for name, s in systems.items():
            ku = s.get(key)
            if ku:
                rows.append([f"`{name}`", ku["answer_in_context"], ku["newest_cited"], ku["superseded_cited"],
                             ku["newest_only"], ku.get("stale_only"), ku["newest_first"]])
        lines += _table(["system", "answer in context", "newest cited", "superseded cited", "newest only",
                         "stale only", "newest first"], rows)
    lines += [
        "Heuristic: *answer in context* — the rendered facts block (or the raw turns' text for the baselines) "
        "holds at least half of the answer's key terms (its words of 3+ letters and its numbers, minus stop "
        "words and words already in the question) and every number in it. *Newest cited* / *superseded "
        "cited* — a top-k item cites a `has_answer` turn of the newest evidence session / of an older one "
        "(the value that was replaced). *Newest only* — newest cited and superseded not: what a temporal "
        "memory should hand the LLM. *Stale only* — superseded cited and newest not: the failure to avoid. "
        "*Newest first* — the first item citing the newest turn ranks above any citing an older one. The "
        "last four are computed over questions whose evidence spans two sessions.", ""]
    if res.get("long_history"):
        lines += _long_history(res["long_history"])
    if res.get("longmemeval_s"):
        lines += markdown_s(res["longmemeval_s"])
    target: dict[str, Any] = {}
    if "bm25-turns" in systems and "zep: defaults" in systems:
        b, d = systems["bm25-turns"], systems["zep: defaults"]
        target = {"bm25_all10": b["recall"]["k10"]["all"]["all"], "bm25_tokens10": b["recall"]["k10"]["all"]["tokens"],
                  "all10": d["recall"]["k10"]["all"]["all"], "tokens10": d["recall"]["k10"]["all"]["tokens"],
                  "ssa10": d["recall"]["k10"].get("single-session-assistant", {}).get("all"),
                  "bm25_ku5": b.get("knowledge_update_k5") or {}, "ku5": d.get("knowledge_update_k5") or {},
                  "long_history": res.get("long_history"), "longmemeval_s": res.get("longmemeval_s")}
    return lines, target


def _long_history(long: dict[str, Any]) -> list[str]:
    """The same questions on the oracle and on a LongMemEval-S-sized history (``bench.longmemeval.run_long``)."""
    o, g = long["oracle"], long["long"]
    lines = ["### Oracle against a long history", "",
             f"{long['questions']} questions (the first few of each type), each scored on its oracle sessions and on a "
             f"long history: its sessions plus {long['distractors']} sessions of other questions, re-dated into its "
             f"date range and interleaved (seed {long['seed']}): {g['sessions_per_user']} sessions and "
             f"{g['words_per_user']:,} words per user. Bulk ingest of the long histories: "
             f"{g['ingest_ms_per_turn']} ms per turn ({g['ingest_cpu_ms_per_turn']} ms CPU); the embedder alone on "
             f"the same turns: {g['embed_ms_per_turn']} ms ({g['embed_cpu_ms_per_turn']} ms CPU).", ""]
    types = sorted(set(o["systems"]["zep: defaults"]["recall"]["k10"]) - {"all"})
    for k in ("k10", "k5"):
        rows = []
        for setting, data in (("oracle", o), ("long", g)):
            for name, r in data["systems"].items():
                row = r["recall"][k]
                rows.append([setting, f"`{name}`"] + [row.get(t, {}).get("all") for t in types]
                            + [row["all"]["all"], _n(row["all"]["tokens"])])
        lines += [f"**All answer turns in the top {k[1:]}:**", "",
                  *_table(["history", "system", *types, "**all**", "tokens"], rows)]
    drop = {n: o["systems"][n]["recall"]["k10"]["all"]["all"] - g["systems"][n]["recall"]["k10"]["all"]["all"]
            for n in g["systems"]}
    lines += ["Drop from oracle to long history, all@10: " + ", ".join(f"{n} {d:+.3f}" for n, d in drop.items())
              + ".", ""]
    return lines


# -- scale ----------------------------------------------------------------------------


def plot_latency(res: dict[str, Any], path: Path) -> Path:
    """``get_context`` p50/p95 against size, with the floor (Chroma + embedding), as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = res["sizes"]
    x = [r["facts"] for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    series = (("get_context_ms", "get_context", "o", "C0"), ("floor_ms", "floor: embed + Chroma", "s", "C2"),
              ("chroma_query_ms", "bare Chroma query", "^", "C4"))
    for key, label, marker, color in series:
        ax.plot(x, [r[key]["p50"] for r in rows], "-" + marker, color=color, label=f"{label} p50")
        ax.plot(x, [r[key]["p95"] for r in rows], "--" + marker, color=color, alpha=0.55, label=f"{label} p95")
    ax.axhline(TARGET_P95_MS, color="red", lw=0.8, ls="--", label=f"target p95 {TARGET_P95_MS:.0f} ms")
    ax.set_xscale("log")
    ax.set_xlabel("facts in the memory (100 users)")
    ax.set_ylabel("latency (ms)")
    ax.set_title("get_context latency against size (2 cores, offline defaults)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2, loc="upper left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def _profile_lines(text: str, limit: int = 42) -> list[str]:
    """The call tree of a pyinstrument text profile, without its banner."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    start = next((i for i, ln in enumerate(lines) if ln.startswith("Profile at")), -1) + 1
    return lines[start:start + limit]


def _scale(res: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    rows = res["sizes"]
    lines = ["## Scale: speed and size", "",
             f"{res['users']} synthetic users (seed {res['seed']}), short first-person episodes (places, jobs, "
             "likes, relatives, outings; moves and job changes supersede older facts), users interleaved as in "
             "a live service. At each size, every figure beside the baseline measured in the same run:", "",
             "* **get_context**: distinct queries (the embedder's cache misses), against the floor — the same "
             "per-user Chroma collection queried directly with the precomputed vector for the same k, plus "
             "the embedding time on its own, interleaved query by query; `context_block` beside it (same "
             "texts, embedding cached), and `get_context` `as_of` the middle of the data's time line (same "
             "texts, embedding cached; superseded facts are searched in SQLite; `as_of` answers with a "
             "superseded fact: how many answers held a fact no longer current);",
             "* **bulk ingest** (`conversation_end_many`, 256 episodes a batch) until all three stores hold the "
             "episodes, against the embedder's own throughput: the very texts the ingest embedded, in the same "
             "calls, embedded again on their own (`x embedder` = ingest texts/s over embedder texts/s); then "
             "another sample the same way with the embedder on one thread, for the ingest and its replay "
             "(`x embedder, 1 thread`): on two cores the embedder's two threads leave none for the stores, and "
             "this shows the ratio once one is left;",
             f"* **single-episode ingest**: {res['sample_episodes']} short episodes, one `conversation_end` each — "
             "half timed as a stream (the background indexer batches across episodes), half one at a time with "
             "a `flush` after each: the latency until all three stores hold the episode.", "",
             "Between sizes the folder is loaded through `conversation_end_many` too.", "",
             "![get_context latency against size](latency.png)", ""]
    table = []
    for r in rows:
        block, then = r.get("context_block_cached_ms") or {}, r.get("get_context_as_of_cached_ms") or {}
        historic = r.get("as_of_answers_with_superseded_facts")
        table.append([str(r["facts"]), _ms(r["get_context_ms"]["p50"]), _ms(r["get_context_ms"]["p95"]),
                      _ms(r["get_context_ms"]["p99"]), _ms(r["floor_ms"]["p95"]), f"{r['ratio_to_floor']['p95']:.2f}",
                      _ms(r["get_context_cached_ms"]["p95"]), _ms(block.get("p95")), _ms(then.get("p95")),
                      f"{historic} of {r['queries']}" if historic is not None else "–",
                      _ms(r["embed_query_ms"]["p95"]), _ms(r["chroma_query_ms"]["p95"])])
    lines += _table(["facts", "p50 ms", "p95 ms", "p99 ms", "floor p95", "ours / floor (p95)", "cached p95",
                     "context_block p95 (cached)", "as_of p95 (cached)", "as_of answers with a superseded fact",
                     "embed p95", "Chroma p95"], table)
    ingest = []
    for r in rows:
        bulk, one, alone = r.get("bulk") or {}, r["ingest"], r.get("bulk_one_thread") or {}
        lat = one.get("episode_latency_ms") or {}
        ingest.append([str(r["facts"]), _ms(bulk.get("episodes_per_s")), _ms(bulk.get("ingest_texts_per_s")),
                       _ms(bulk.get("embedder_texts_per_s")),
                       _ratio(bulk.get("ratio_to_embedder")), _ratio(alone.get("ratio_to_embedder")),
                       _ms(one["episodes_per_s"]), _ms(lat.get("p50")), _ms(lat.get("p95")), _ms(lat.get("p99")),
                       _n(r["rss_mb"]), _n(r["disk_bytes_per_fact"])])
    lines += [""] + _table(["facts", "bulk eps/s", "bulk texts/s", "embedder texts/s", "x embedder",
                            "x embedder, 1 thread", "single eps/s", "one episode p50 ms", "p95 ms", "p99 ms",
                            "RSS MB", "disk B/fact"],
                           ingest)
    if res.get("profile_get_context"):
        lines += [f"pyinstrument profile of `get_context` over 200 distinct queries at {rows[-1]['facts']} facts "
                  "(seconds, top of the tree):", "", "```"]
        lines += _profile_lines(res["profile_get_context"]) + ["```", ""]
    ing = res.get("profile_ingest") or {}
    if ing.get("text"):
        lines += [f"pyinstrument profile of 100 short episodes ingested at {rows[-1]['facts']} facts with "
                  "`index_writes=\"sync\"` (so the Chroma and Kùzu writes run on the profiled thread; "
                  f"{ing['episodes_per_s_sync']} episodes/s):", "", "```"]
        lines += _profile_lines(ing["text"], 60) + ["```", ""]
    if ing.get("bulk_text"):
        lines += [f"pyinstrument profile of `conversation_end_many` (512 episodes) at {rows[-1]['facts']} facts "
                  f"with `index_writes=\"sync\"` ({ing['bulk_episodes_per_s_sync']} episodes/s):", "", "```"]
        lines += _profile_lines(ing["bulk_text"], 60) + ["```", ""]
    return lines, {"rows": rows}


# -- cost -----------------------------------------------------------------------------


def _cost(res: dict[str, Any]) -> list[str]:
    try:
        from .cost import format_table
    except Exception:  # another helper's module; show the raw numbers if it changed
        return ["## LLM cost per episode", "", "```", json.dumps(res.get("systems"), indent=2), "```", ""]
    return ["## LLM cost per episode", "", "From `bench/cost.py` (see its docstring for the method).", "", "```",
            format_table(res), "```", ""]


# -- the server -----------------------------------------------------------------------


def _server(res: dict[str, Any]) -> list[str]:
    """``bench/server.py``: get_context and conversation_end through the server vs in process."""
    rows = []
    for name in ("get_context", "conversation_end"):
        r = res[name]
        rows.append([f"`{name}`", r["calls"], _ms(r["in_process_ms"]["p50"]), _ms(r["in_process_ms"]["p95"]),
                     _ms(r["server_ms"]["p50"]), _ms(r["server_ms"]["p95"]), _ms(r["overhead_ms"]["p50"]),
                     _ms(r["overhead_ms"]["p95"]), f"{r['ratio']['p50']}×", f"{r['ratio']['p95']}×"])
    t = res["target"]
    return ["## The memory server: through `zep-memory serve` vs in process", "",
            f"`python -m bench.server` ({res.get('mode', '?')}): {res['facts']} facts of {res['users']} users; the "
            "server on a copy of the folder in its own process, reached by `RemoteMemory` over loopback; the same "
            "calls to both sides back to back, in alternating order, in the same run. Floors p50: "
            f"`GET /healthz` {_ms(res['floor_healthz_ms']['p50'])} ms, `GET /v1/now` "
            f"{_ms(res['floor_now_ms']['p50'])} ms. Same answers: {res['get_context']['same_answers']}/"
            f"{res['get_context']['calls']}.", "",
            *_table(("call", "n", "in process p50 (ms)", "p95", "server p50 (ms)", "p95", "overhead p50 (ms)",
                     "overhead p95", "ratio p50", "ratio p95"), rows),
            f"Target: `get_context` overhead p50 ≤ {t['overhead_p50_ms']:g} ms: {t['overhead_p50_measured_ms']:.2f} "
            f"ms, {_verdict(t['met'], 'missed')}; the median of the per-query differences "
            f"{res['get_context']['paired_overhead_ms_p50']:.2f} ms.", *_inside(res), ""]


def _chat(res: dict[str, Any]) -> list[str]:
    """``bench/chat.py``: what is true now, from real chat, by class."""
    rows = [[kind, f"{v['held']}/{v['checks']}"] for kind, v in res["by_kind"].items()]
    failed = [f"- {f['case']}: {f['check']}: {f['why']}" for f in res.get("failed", [])]
    return ["## What is true now, from real chat", "",
            f"`python -m bench.chat`: {res['cases']} chat cases of our own (user and assistant turns, one or several "
            "conversations; not from `../shared`), each with the facts `get_context` must and must not return; "
            f"the classes are the rules of `core/providers/talk.py`. **{res['held']}/{res['checks']} checks hold "
            f"({res['share']:.1%})**, {res['cases_held']}/{res['cases']} cases.", "",
            *_table(("class", "checks held"), rows), *(["Failed:", "", *failed, ""] if failed else [])]


def _truth(res: dict[str, Any]) -> list[str]:
    """``bench/truth.py``: the shared truth_chat dev set, cases held by class, beside the rows of the same run."""
    rows = res["rows"]
    names = list(rows)
    main = rows[names[0]]

    def share(held: int, total: int) -> str:
        return f"{held}/{total} ({held / total:.1%})" if total else "–"

    table = [[kind] + [share(rows[n]["by_class"][kind]["cases_held"], rows[n]["by_class"][kind]["cases"])
                       for n in names] + [share(c["checks_held"], c["checks"])]
             for kind, c in main["by_class"].items()]
    table.append(["**all cases**"] + [f"**{share(rows[n]['cases_held'], rows[n]['cases'])}**" for n in names]
                 + [f"**{share(main['checks_held'], main['checks'])}**"])
    table.append(["checks"] + [share(rows[n]["checks_held"], rows[n]["checks"]) for n in names] + [""])
    picked = {k: v for k, v in (res.get("selection") or {}).items() if v}
    part = (f" A selection ({', '.join(f'{k} {v}' for k, v in picked.items())}), not the whole set."
            if picked else "")
    others = ", ".join(f"`{n}` {rows[n]['cases_held']}/{rows[n]['cases']}" for n in names[1:])
    return ["## What is true now, in chat written by others (truth_chat)", "",
            f"`python -m bench.truth` ({res['seconds']:.0f} s, extractor `{res['extractor']}`): the cases of "
            "`../shared/data/truth_chat/truth_dev.json`, written independently of this project; each case in a "
            "fresh memory, each check `get_context(question, limit=5, speaker=...)` scored by the data README's "
            "rule (every `must` phrase in a field of one of the top 5 records, no `must_not` phrase in any; a case "
            f"holds when all its checks do).{part} **`{names[0]}`: {main['cases_held']}/{main['cases']} cases "
            f"({main['cases_held'] / main['cases']:.1%})**, {main['checks_held']}/{main['checks']} checks; in the "
            f"same run {others}. `zep: facts only` sets the verbatim `statement` quotes aside (the first 5 other "
            "facts of the top 50); `bm25-turns` is BM25 over the asked user's raw turns, top 5. Failures: "
            "`python -m bench.truth --dump FILE`; figures: `bench/results/truth.json`.", "",
            *_table(("class", *(f"`{n}` cases held" for n in names), f"`{names[0]}` checks held"), table)]


def _inside(res: dict[str, Any]) -> list[str]:
    """The verb's own time in the server (its ``Server-Timing``) and what the wire and the codecs add."""
    inside = res["get_context"].get("in_server_ms")
    if not inside:
        return []
    wire = res["get_context"]["server_ms"]["p50"] - inside["p50"]
    return ["", f"Inside the server (the answers' `Server-Timing`), `get_context` took p50 {_ms(inside['p50'])} ms "
            f"(p95 {_ms(inside['p95'])}); the wire, HTTP and the JSON codecs on both sides add p50 {wire:.2f} ms."]


# -- the page -------------------------------------------------------------------------


def _verdict(ok: bool, missed: str) -> str:
    return "met" if ok else missed


def _targets(loc: dict[str, Any] | None, scale: dict[str, Any] | None,
             lme: dict[str, Any] | None = None, server: dict[str, Any] | None = None,
             chat: dict[str, Any] | None = None, long_user: dict[str, Any] | None = None) -> list[str]:
    rows = []
    if loc and "defaults_all10" in loc:
        lift = loc["defaults_all10"] - loc["bm25_all10"]
        fewer = loc["defaults_tokens10"] < loc["bm25_tokens10"]
        rows.append([f"LoCoMo 1–4 all@10 ≥ BM25 + {TARGET_LIFT:.2f}, fewer tokens (defaults)",
                     f"{loc['defaults_all10']:.3f} vs BM25 {loc['bm25_all10']:.3f} ({lift:+.3f}); tokens "
                     f"{loc['defaults_tokens10']:.0f} vs {loc['bm25_tokens10']:.0f}; at k=5 "
                     f"{loc['defaults_all5']:.3f} vs {loc['bm25_all5']:.3f}",
                     _verdict(lift >= TARGET_LIFT - 1e-9 and fewer, f"missed by {max(TARGET_LIFT - lift, 0):.3f}"
                              + ("" if fewer else "; tokens not lower"))])
        if loc.get("bm25_adv10") is not None and loc.get("defaults_adv10") is not None:
            rows.append(["LoCoMo adversarial all@10 ≥ BM25's",
                         f"{loc['defaults_adv10']:.3f} vs BM25 {loc['bm25_adv10']:.3f}",
                         _verdict(loc["defaults_adv10"] >= loc["bm25_adv10"],
                                  f"missed by {loc['bm25_adv10'] - loc['defaults_adv10']:.3f}")])
    if lme and "all10" in lme:
        lift = lme["all10"] - lme["bm25_all10"]
        rows.append([f"LongMemEval all@10 ≥ BM25 + {TARGET_LME_LIFT:.2f}, tokens a fraction of BM25's",
                     f"{lme['all10']:.3f} vs BM25 {lme['bm25_all10']:.3f} ({lift:+.3f}); tokens "
                     f"{lme['tokens10']:.0f} vs {lme['bm25_tokens10']:.0f}",
                     _verdict(lift >= TARGET_LME_LIFT - 1e-9 and lme["tokens10"] < lme["bm25_tokens10"],
                              f"missed by {max(TARGET_LME_LIFT - lift, 0):.3f}")])
        if lme.get("ssa10") is not None:
            rows.append([f"LongMemEval single-session-assistant all@10 ≥ {TARGET_SSA:.2f}", f"{lme['ssa10']:.3f}",
                         _verdict(lme["ssa10"] >= TARGET_SSA, f"missed by {TARGET_SSA - lme['ssa10']:.3f}")])
        ku, b = lme["ku5"], lme["bm25_ku5"]
        if ku.get("newest_cited") is not None and b.get("newest_cited") is not None:
            rows.append(["LongMemEval knowledge-update: newest cited at k=5 ≥ BM25's",
                         f"{ku['newest_cited']:.3f} vs BM25 {b['newest_cited']:.3f}",
                         _verdict(ku["newest_cited"] >= b["newest_cited"],
                                  f"missed by {b['newest_cited'] - ku['newest_cited']:.3f}")])
        if ku.get("stale_only") is not None and b.get("stale_only") is not None:
            rows.append(["LongMemEval knowledge-update: stale-only at k=5 ≤ BM25's",
                         f"{ku['stale_only']:.3f} vs BM25 {b['stale_only']:.3f}",
                         _verdict(ku["stale_only"] <= b["stale_only"],
                                  f"over by {ku['stale_only'] - b['stale_only']:.3f}")])
    if scale:
        rows += _scale_targets(scale["rows"])
    long = (lme or {}).get("long_history")
    if long:
        rows += _long_targets(long)
    if (lme or {}).get("longmemeval_s"):
        rows += [[t, m, "met" if ok else "missed"] for t, m, ok in s_targets(lme["longmemeval_s"])]
    if long_user and long_user.get("sizes"):
        rows += _long_user_target(long_user)
    if chat:
        rows.append([f"chat corpus (≥ 60 cases of our own): ≥ {TARGET_CHAT:.0%} of the checks hold",
                     f"{chat['held']}/{chat['checks']} ({chat['share']:.1%}) in {chat['cases']} cases",
                     _verdict(chat["cases"] >= 60 and chat["share"] >= TARGET_CHAT, "missed")])
    if server and "target" in server:
        t, r = server["target"], server["get_context"]
        rows.append([f"`get_context` through the server: overhead p50 ≤ {t['overhead_p50_ms']:g} ms over in process "
                     "(loopback)", f"{_ms(r['server_ms']['p50'])} vs {_ms(r['in_process_ms']['p50'])} ms: "
                     f"+{t['overhead_p50_measured_ms']:.2f} ms ({r['ratio']['p50']}×)",
                     _verdict(t["met"], f"over by {t['overhead_p50_measured_ms'] - t['overhead_p50_ms']:.2f} ms")])
    return ["## Targets", ""] + _table(["target", "measured", "verdict"], rows) if rows else []


#: get_context p95 over its floor on one user of many facts (issue 31).
TARGET_LONG_USER_FLOOR = 2.0


def _long_user_target(res: dict[str, Any]) -> list[list[str]]:
    r = res["sizes"][-1]
    ratio = r["ratio_to_floor"]["p95"]
    measured = f"{r['get_context_ms']['p95']:.1f} ms vs floor {r['floor_ms']['p95']:.1f} ms: {ratio:.2f}×"
    return [[f"one user of {r['facts']} facts: get_context p95 ≤ {TARGET_LONG_USER_FLOOR:.0f}× (embedding + bare "
             "Chroma k=10)", measured,
             _verdict(ratio <= TARGET_LONG_USER_FLOOR, f"over by {ratio - TARGET_LONG_USER_FLOOR:.2f}×")]]


def _long_user(res: dict[str, Any]) -> list[str]:
    """``bench/long_user.py``: the scale measures on one synthetic user of many facts."""
    rows = []
    for r in res["sizes"]:
        bulk, one = r.get("bulk") or {}, r["ingest"]
        rows.append([str(r["facts"]), _ms(r["get_context_ms"]["p50"]), _ms(r["get_context_ms"]["p95"]),
                     _ms(r["floor_ms"]["p95"]), f"{r['ratio_to_floor']['p95']:.2f}",
                     _ms(r["embed_query_ms"]["p95"]), _ms(r["chroma_query_ms"]["p95"]),
                     _ratio(bulk.get("ratio_to_embedder")), _ms((one.get("episode_latency_ms") or {}).get("p95")),
                     _n(r["rss_mb"])])
    lines = ["## One user of many facts", "",
             f"`python -m bench.long_user`: one synthetic user (seed {res['seed']}) grown to "
             f"{res['sizes'][-1]['facts']} facts through the same episodes as the scale benchmark, measured the "
             "same way (distinct queries against the floor, interleaved). Every query meets the whole history: "
             "the user's name is in most facts.", ""]
    lines += _table(["facts", "p50 ms", "p95 ms", "floor p95", "ours / floor (p95)", "embed p95", "Chroma p95",
                     "bulk x embedder", "one episode p95", "RSS MB"], rows)
    if res.get("profile_get_context"):
        lines += ["", "pyinstrument profile of `get_context` (seconds, top of the tree):", "", "```",
                  *res["profile_get_context"].splitlines()[4:34], "```"]
    return lines + [""]


def _long_targets(long: dict[str, Any]) -> list[list[str]]:
    """Issue 31's targets on the long history, each against BM25 in the same run."""
    o, g = long["oracle"]["systems"], long["long"]["systems"]

    def at(systems: dict[str, Any], name: str, k: str, kind: str = "all") -> float:
        return systems[name]["recall"][k].get(kind, {}).get("all", float("nan"))

    zep, bm25 = "zep: defaults", "bm25-turns"
    n = f"long history, {long['questions']} questions"
    rows = []
    for k, lift in (("k5", 0.10), ("k10", 0.15)):
        got, base = at(g, zep, k), at(g, bm25, k)
        rows.append([f"{n}: all@{k[1:]} ≥ BM25 + {lift:.2f}", f"{got:.3f} vs BM25 {base:.3f} ({got - base:+.3f})",
                     _verdict(got - base >= lift - 1e-9, f"missed by {lift - (got - base):.3f}")])
    ssa = at(g, zep, "k5", "single-session-assistant")
    rows.append([f"{n}: single-session-assistant all@5 ≥ 0.80", f"{ssa:.3f}",
                 _verdict(ssa >= 0.80, f"missed by {0.80 - ssa:.3f}")])
    drop, bdrop = at(o, zep, "k10") - at(g, zep, "k10"), at(o, bm25, "k10") - at(g, bm25, "k10")
    rows.append([f"{n}: drop from oracle all@10 ≤ BM25's", f"{drop:.3f} vs BM25 {bdrop:.3f}",
                 _verdict(drop <= bdrop + 1e-9, f"over by {drop - bdrop:.3f}")])
    tokens, btokens = (g[x]["recall"]["k10"]["all"]["tokens"] for x in (zep, bm25))
    rows.append([f"{n}: context tokens ≤ a third of BM25's (k=10)", f"{tokens:.0f} vs {btokens:.0f}",
                 _verdict(tokens <= btokens / 3, "over")])
    ms, embed = long["long"]["ingest_ms_per_turn"], long["long"]["embed_ms_per_turn"]
    rows.append([f"{n}: bulk ingest ≤ 8 ms per turn", f"{ms} ms (the embedder alone on the turns: {embed} ms)",
                 _verdict(ms <= 8, f"over by {ms - 8:.2f} ms")])
    return rows


def _size(rows: Sequence[dict[str, Any]], target: int) -> dict[str, Any] | None:
    """The row measured at ``target`` facts (the run overshoots a little), if any."""
    return next((r for r in rows if r.get("target_size") == target), None)


def _scale_targets(rows: Sequence[dict[str, Any]]) -> list[list[str]]:
    out = []
    for size, bound in sorted(TARGET_FLOOR.items()):
        r = _size(rows, size)
        if r is not None:
            ratio = r["ratio_to_floor"]["p95"]
            out.append([f"get_context p95 ≤ {bound:.0f}× (embedding + bare Chroma k=10) at {r['facts']} facts",
                        f"{r['get_context_ms']['p95']:.1f} ms vs floor {r['floor_ms']['p95']:.1f} ms: {ratio:.2f}×",
                        _verdict(ratio <= bound, f"over by {ratio - bound:.2f}×")])
    for r in rows:
        bulk, alone = r.get("bulk") or {}, r.get("bulk_one_thread") or {}
        if bulk.get("ratio_to_embedder") is not None:
            one = (f" ({alone['ratio_to_embedder']:.2f}× with the embedder on one thread)"
                   if alone.get("ratio_to_embedder") is not None else "")
            out.append([f"bulk ingest ≥ {TARGET_BULK:.0%} of the embedder's throughput at {r['facts']} facts",
                        f"{bulk['ingest_texts_per_s']:.0f} vs {bulk['embedder_texts_per_s']:.0f} texts/s: "
                        f"{bulk['ratio_to_embedder']:.2f}×{one}",
                        _verdict(bulk["ratio_to_embedder"] >= TARGET_BULK,
                                 f"missed by {TARGET_BULK - bulk['ratio_to_embedder']:.2f}×")])
    r = _size(rows, 10_000)
    if r is not None:
        eps = r["ingest"]["episodes_per_s"]
        out.append([f"single-episode ingest ≥ {TARGET_EPS:.0f} short episodes/s at {r['facts']} facts",
                    f"{eps:.1f} episodes/s", _verdict(eps >= TARGET_EPS, f"missed by {TARGET_EPS - eps:.1f}/s")])
    r = _size(rows, 100_000)
    if r is not None:
        p95 = (r["ingest"].get("episode_latency_ms") or {}).get("p95")
        if p95 is not None:
            out.append([f"one episode p95 ≤ {TARGET_EPISODE_P95_MS:.0f} ms at {r['facts']} facts (all three stores)",
                        f"{p95:.1f} ms", _verdict(p95 <= TARGET_EPISODE_P95_MS,
                                                  f"over by {p95 - TARGET_EPISODE_P95_MS:.1f} ms")])
        pss = f" (PSS {r['pss_mb']:.0f} MB, {r['processes']} processes)" if r.get("pss_mb") else ""
        out.append([f"RSS ≤ {TARGET_RSS_MB / 1024:.0f} GB at {r['facts']} facts", f"{r['rss_mb']:.0f} MB{pss}",
                    _verdict(r["rss_mb"] <= TARGET_RSS_MB, f"over by {r['rss_mb'] - TARGET_RSS_MB:.0f} MB")])
    return out


def render(results_dir: Path = RESULTS_DIR, notes: str = "") -> str:
    """The Markdown page for the results found in ``results_dir``."""
    loc, lme = _load(results_dir, "locomo"), _load(results_dir, "longmemeval")
    scale, cost = _load(results_dir, "scale"), _load(results_dir, "cost")
    env = next((r["environment"] for r in (loc, lme, scale, cost) if r), {})
    modes = {name: r.get("mode", "?") for name, r in (("locomo", loc), ("longmemeval", lme), ("scale", scale)) if r}
    run = _load(results_dir, "run") or {}
    took = ", ".join(f"{k} {v / 60:.1f} min" for k, v in run.get("seconds", {}).items())
    lines = ["# Benchmarks", "",
             "Generated by `python -m bench` (full run; `--quick` for a few minutes) from `bench/results/*.json` — "
             "do not edit by hand. Offline defaults: all-MiniLM-L6-v2 int8 embedder, rule-based extractor, "
             "embedded SQLite + Chroma + Kùzu.", "",
             f"Measured {env.get('measured_at', '?')} on {env.get('cpus', '?')} CPUs, Python {env.get('python', '?')}, "
             f"{', '.join(f'{k} {v}' for k, v in env.get('packages', {}).items() if v)}; load average at write "
             f"time {env.get('load_average', '?')} (other work on the machine inflates timings). Modes: "
             + ", ".join(f"{k} {v}" for k, v in modes.items()) + "."
             + (f" Run time ({run.get('mode')}): {run.get('total_seconds', 0) / 60:.1f} min — {took}." if took else ""),
             ""]
    body: list[str] = []
    loc_target = scale_target = lme_target = None
    chat = _load(results_dir, "chat")
    if chat:
        body += _chat(chat)
    truth = _load(results_dir, "truth")
    if truth:
        body += _truth(truth)
    if loc:
        part, loc_target = _locomo(loc)
        body += part
    if lme:
        part, lme_target = _longmemeval(lme)
        body += part
    if scale:
        part, scale_target = _scale(scale)
        body += part
    long_user = _load(results_dir, "long_user")
    if long_user and long_user.get("sizes"):
        body += _long_user(long_user)
    if cost:
        body += _cost(cost)
    server = _load(results_dir, "server")
    if server:
        body += _server(server)
    lines += _targets(loc_target, scale_target, lme_target, server, chat, long_user)
    if notes:
        lines += [notes, ""]
    return "\n".join(lines + body).rstrip() + "\n"


def write_docs(results_dir: Path = RESULTS_DIR, docs_dir: Path = DOCS, notes_file: Path | None = None) -> list[Path]:
    """Write ``benchmarks.md`` (and ``latency.png`` when scale results exist); returns the paths."""
    docs_dir.mkdir(parents=True, exist_ok=True)
    notes_file = notes_file or Path(__file__).resolve().parent / "findings.md"
    notes = notes_file.read_text().strip() if notes_file.is_file() else ""
    written = []
    scale = _load(results_dir, "scale")
    if scale and scale.get("sizes"):
        written.append(plot_latency(scale, docs_dir / "latency.png"))
    page = docs_dir / "benchmarks.md"
    page.write_text(render(results_dir, notes))
    written.append(page)
    return written


if __name__ == "__main__":
    for p in write_docs():
        print(f"written: {p}")
