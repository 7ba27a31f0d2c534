"""Render the reliability figures into ``docs/reliability.md``.

The reliability tests leave ``bench/results/reliability-*.json``; this turns them into
the tables between the ``<!-- figures:start -->`` and ``<!-- figures:end -->`` markers of
the doc, and says what it wrote::

    .venv/bin/python -m pytest -q tests/reliability
    .venv/bin/python -m tests.reliability.report          # rewrites the rows it has results for

Only what a result file here regenerates is rewritten: a check with no result file keeps
its row as the doc has it, and the hostile-case table stays unless the hostile run left
its file. With no result file at all the doc is left untouched. ``--print`` prints the
tables instead; ``--doc`` and ``--results`` name another doc and results folder.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tests.reliability.figures import RESULTS, ROOT

DOC = ROOT / "docs" / "reliability.md"
START, END = "<!-- figures:start -->", "<!-- figures:end -->"
_DETAILS = "<details><summary>How each hostile case was answered</summary>"


@dataclass
class Tables:
    """The figures section, and which of its parts came from result files and which were kept."""

    text: str = ""
    regenerated: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


def _soak(results: Path) -> dict:
    """``soak.json`` (written by ``python -m bench.soak``, not by the tests) as a result row."""
    path = results / "soak.json"
    if not path.exists():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {"figures": data, "command": data.get("command", ""),
            "when": data.get("environment", {}).get("measured_at", "not run")}


def _cell(text: str) -> str:
    """Text safe inside a markdown table cell."""
    return text.replace("|", "/").replace("<", "&lt;").replace("\n", " ")


def _disk_full(f: dict) -> str:
    if not f:
        return "not run (needs root to mount a tmpfs)"
    parts = []
    for end, how in (("exits", "a writer that goes on, then closes"),
                     ("sigkill", "a writer SIGKILLed after its error")):
        w = f.get(f"writer_{end}", {})
        if w:
            parts.append(f"{how}: {w.get('error')} at once, exited {w.get('exited_after_error_s')} s after it, "
                         f"{w.get('survivors')} processes left; once space was freed {w.get('acknowledged')} "
                         f"acknowledged episodes whole (**lost: {w.get('lost')}**), doctor {w.get('doctor')} "
                         f"({w.get('reopen_check_doctor_s')} s with the rebuild)")
    c = f.get("chroma_calls", {})
    if c:
        outcomes = ", ".join(f"{n} {o}" for o, n in c.get("outcomes", {}).items())
        stuck = (f"; stuck: past the {c.get('deadline_s')} s deadline, its process killed"
                 if "stuck" in c.get("outcomes", {}) else "")
        parts.append(f"Chroma itself on the full disk: {c.get('calls')} calls ({outcomes}{stuck}), the slowest "
                     f"answered in {c.get('slowest_s')} s")
    return "; ".join(parts)


def tables(section: str = "", results: Path = RESULTS) -> Tables:
    """The figures section from the result files in ``results``; what they do not cover is kept from ``section``.

    ``section`` is what the doc has between its markers: a check with no result file keeps
    its row from it, and the hostile-case table stays as it is without the hostile run's file.
    """
    out = Tables()
    old_rows = {line[2:].split(" | ", 1)[0]: line for line in section.splitlines()
                if line.startswith("| ") and line.count(" | ") >= 3}

    def _row(check: str, result: str, data: dict) -> str:
        if not data:
            out.kept.append(check)
            return old_rows.get(check, f"| {check} | not run yet | | |")
        out.regenerated.append(check)
        when = data.get("when", "not run")[:16].replace("T", " ")
        return f"| {check} | {_cell(result)} | `{data.get('command', '')}` | {when} |"

    def _load(name: str) -> dict:
        path = results / f"reliability-{name}.json"
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}

    crash, conc, locks = _load("crash"), _load("concurrency"), _load("locks")
    pg_crash, pg_iso = _load("crash-postgres"), _load("isolation-postgres")
    pc, pi = pg_crash.get("figures", {}), pg_iso.get("figures", {})
    hostile, iso, limits = _load("hostile"), _load("isolation"), _load("limits")
    c, k, h, i = crash.get("figures", {}), conc.get("figures", {}), hostile.get("figures", {}), iso.get("figures", {})
    lk, lm = locks.get("figures", {}), limits.get("figures", {})
    prop, soak = _load("cypher_property"), _soak(results)
    cp, sk = prop.get("figures", {}), soak.get("figures", {})
    load = _load("server_load")
    sl = load.get("figures", {})
    sv, sw, sr = sl.get("kill", {}), sl.get("conversation_end_ms", {}), sl.get("get_context_ms", {})
    kills = ", ".join(f"{n} {op if op.startswith('between') else 'during ' + op}"
                      for op, n in sorted(sk.get("kills", {}).items(), key=lambda kv: -kv[1]))
    answers = ", ".join(f"{n} {kind}" for kind, n in sorted(h.get("answers", {}).items()))
    rows = [
        "| check | figures from the last run | command | run at |",
        "|---|---|---|---|",
        _row("Crash safety: SIGKILL during ingestion",
             f"**{c.get('trials', 0)} trials** ({c.get('trials_hash_embedder', 0)} hash embedder, "
             f"{c.get('trials_local_embedder', 0)} default embedder), seed {c.get('seed')}, kill after "
             f"U({', '.join(map(str, c.get('kill_delay_s', [])))}) s (from the fork in "
             f"{c.get('kill_timed_from_fork', 'n/a')} trials, from the open in the rest; "
             f"{c.get('killed_before_open_returned', 'n/a')} killed before the open returned; the memory's Chroma "
             f"process killed too in {c.get('chroma_process_killed_too', 'n/a')}); "
             f"{c.get('episodes_acknowledged', 0)} episodes "
             f"acknowledged, {c.get('episodes_verified_at_end', 0)} verified whole at the end (the others belong to "
             "the user the child forgets now and then); "
             f"{c.get('outbox_rows_replayed', 0)} outbox rows replayed in {c.get('trials_with_outbox_rows_left', 0)} "
             f"trials; {c.get('vector_index_rebuilds_after_torn_writes', 0)} vector-index rebuilds after torn "
             f"Chroma writes; **inconsistencies found: {c.get('inconsistencies', 'n/a')}**; "
             f"{c.get('seconds', 0)} s", crash),
        _row("Crash safety on PostgreSQL: SIGKILL during ingestion",
             f"**{pc.get('trials', 0)} trials** ({pc.get('trials_hash_embedder', 0)} hash embedder, "
             f"{pc.get('trials_local_embedder', 0)} default embedder), seed {pc.get('seed')}, kill after "
             f"U({', '.join(map(str, pc.get('kill_delay_s', [])))}) s; a tenant's HNSW index from their third "
             f"current fact, so kills land in its builds ({pc.get('tenants_hnsw_ready', 0)} tenants indexed, "
             f"{pc.get('tenants_hnsw_building', 0)} with a build cut off at the end); "
             f"{pc.get('episodes_acknowledged', 0)} episodes acknowledged, {pc.get('episodes_verified_at_end', 0)} "
             "verified whole at the end; the copy of the indexed tenants' vectors checked against their facts after "
             f"each kill; **inconsistencies found: {pc.get('inconsistencies', 'n/a')}**; {pc.get('seconds', 0)} s",
             pg_crash),
        _row("Concurrency: threads on one Memory",
             f"**{k.get('writers', 0)} writers, {k.get('readers', 0)} readers**; {k.get('episodes_ingested', 0)} "
             f"episodes ingested ({k.get('racing_restatements', 0)} racing restatements of one fact, "
             f"{k.get('racing_moves', 0)} racing moves of one user); {k.get('reads', 0)} reads completed "
             f"({k.get('reads_while_writing', 0)} while writers ran, plus {k.get('reads_answered_not_found_yet', 0)} "
             f"answered NotFoundError before the user's first facts landed); errors: {k.get('errors', 'n/a')}; "
             "lost or duplicated facts: 0; "
             f"{k.get('seconds', 0)} s", conc),
        _row("Concurrency: a second process",
             "; ".join(f"{name.replace('_', ' ')}: {v.get('outcome', '')}"
                       + (f" (in {v['seconds'] * 1000:.1f} ms)" if v.get("seconds") is not None else "")
                       for name, v in sorted(lk.items())), locks),
        _row("Server: client processes, then SIGKILL",
             f"**{sl.get('clients', 0)} client processes × {sl.get('episodes_per_client', 0)} episodes** through "
             f"`zep-memory serve` ({sl.get('episodes_acknowledged', 0)} acknowledged, "
             f"{sl.get('episodes_per_s', 0)} episodes/s), each reading `get_context` alongside: conversation_end "
             f"p50/p95 {sw.get('p50', 0)}/{sw.get('p95', 0)} ms, get_context p50/p95 {sr.get('p50', 0)}/"
             f"{sr.get('p95', 0)} ms ({sl.get('reads', 0)} reads); errors: {sl.get('errors', 'n/a')}, lost: "
             f"{sl.get('lost', 'n/a')}, duplicated: {sl.get('duplicated', 'n/a')}. SIGKILL once "
             f"{sv.get('acknowledged_before_kill', 0)} of {sl.get('clients', 0) * sv.get('episodes_per_client', 0)} "
             f"more episodes were acknowledged ({sv.get('clients_writing_at_kill', 0)} clients writing): "
             f"{sv.get('outbox_rows_left', 0)} outbox rows replayed by the restart ({sv.get('restart_seconds', 0)} s), "
             f"{sv.get('episodes_sent_again', 0)} episodes sent again ({sv.get('sent_again_already_stored', 0)} "
             f"already stored, {sv.get('pending_after_restart_completed_by_maintain', 0)} of them pending until "
             f"`maintain`); {sv.get('episodes_checked', 0)} episodes checked: **lost: {sv.get('lost', 'n/a')}, "
             f"duplicated: {sv.get('duplicated', 'n/a')}**; doctor: {sv.get('doctor', 'n/a')}; "
             f"{sl.get('seconds', 0)} s", load),
        _row("Hostile and broken input",
             f"**{h.get('run', 0)} cases** ({h.get('cases', 0)} in the corpus): {answers}; stores unchanged by "
             "every refusal, bystander unchanged, no file outside the data folder", hostile),
        _row("Tenant isolation (hypothesis)",
             f"**{i.get('examples_generated', 0)} examples**, {i.get('users', 0)} users, {i.get('episodes', 0)} "
             f"episodes, {i.get('reads_checked', 0)} reads checked, {i.get('users_forgotten', 0)} users forgotten "
             "and checked absent in SQLite, Chroma and Kùzu; leaks found: 0", iso),
        _row("Tenant isolation on PostgreSQL (hypothesis)",
             f"**{pi.get('examples_generated', 0)} examples**, {pi.get('users', 0)} users, {pi.get('episodes', 0)} "
             f"episodes, {pi.get('reads_checked', 0)} reads checked, {pi.get('users_forgotten', 0)} users forgotten "
             "and checked absent; every statement under row-level security; leaks found: 0", pg_iso),
        _row("Tenant isolation of cypher() (hypothesis)",
             f"**{cp.get('queries', 0)} generated queries** (patterns in MATCH, WHERE, RETURN, CASE and "
             f"subqueries, keyword variable names): {cp.get('answered', 0)} answered, {cp.get('errors', 0)} "
             f"refused or failed alike in both folders; {cp.get('distinguishing_on_the_shared_index', 0)} of them "
             "would tell the other tenant's data apart on a shared graph; "
             f"**differences with and without another tenant: {cp.get('differences', 'n/a')}**", prop),
        _row("Soak: SIGKILL trials over every operation",
             f"**{sk.get('trials', 0)} trials**, seed {sk.get('seed')}; {sk.get('episodes_acknowledged', 0)} "
             f"episodes and {sk.get('moves_acknowledged', 0)} moves acknowledged, "
             f"{sk.get('episodes_checked', 0)} episode checks; kills: {kills}; "
             f"{sk.get('outbox_rows_replayed', 0)} outbox rows replayed; **lost: {sk.get('lost', 'n/a')}, "
             f"inconsistent: {sk.get('inconsistent', 'n/a')}**; {sk.get('seconds_per_trial', {}).get('mean', 0)} s "
             "per trial", soak),
        _row("A full disk (20 MB tmpfs)", _disk_full(_load("disk_full").get("figures", {})), _load("disk_full")),
        _row("Resource bounds", "; ".join(f"{k}: {v}" for k, v in sorted(lm.items())), limits),
    ]
    if hostile:
        cases = ["", _DETAILS, "", "| case | answer |", "|---|---|"]
        cases += [f"| {_cell(name)} | {_cell(answer)} |" for name, answer in h.get("by_case", {}).items()]
        cases += ["", "</details>"]
        out.regenerated.append("the hostile-case table")
    elif _DETAILS in section:
        cases = ["", section[section.index(_DETAILS):].strip()]
        out.kept.append("the hostile-case table")
    else:
        cases = []
    out.text = "\n".join(rows + cases)
    return out


def main(argv: list[str] | None = None) -> int:
    """Rewrite what the result files regenerate in the doc's figures (or print the tables with ``--print``)."""
    parser = argparse.ArgumentParser(prog="python -m tests.reliability.report", description=__doc__.splitlines()[0])
    parser.add_argument("--print", action="store_true", help="print the tables; write nothing")
    parser.add_argument("--doc", type=Path, default=DOC, help="the doc to update (default docs/reliability.md)")
    parser.add_argument("--results", type=Path, default=RESULTS, help="the result files (default bench/results/)")
    args = parser.parse_args(argv)
    doc = args.doc.read_text(encoding="utf-8") if args.doc.exists() else ""
    pattern = re.compile(re.escape(START) + "\n?(.*?)\n?" + re.escape(END), re.DOTALL)
    found = pattern.search(doc)
    if found is None and not args.print:
        print(f"error: {args.doc} has no {START} ... {END} section to write the figures into; nothing written",
              file=sys.stderr)
        return 2
    made = tables(found.group(1) if found else "", args.results)
    if args.print:
        print(made.text)
        return 0
    if not made.regenerated:
        print(f"{args.doc}: unchanged; no reliability result file in {args.results} "
              "(run `.venv/bin/python -m pytest -q tests/reliability` first)")
        return 0
    args.doc.write_text(doc[:found.start()] + f"{START}\n{made.text}\n{END}" + doc[found.end():], encoding="utf-8")
    print(f"{args.doc}: regenerated {len(made.regenerated)} from {args.results}: {'; '.join(made.regenerated)}")
    if made.kept:
        print(f"kept as they were (no result file): {'; '.join(made.kept)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
