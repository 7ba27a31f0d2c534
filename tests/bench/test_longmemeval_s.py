"""LongMemEval-S in bench/longmemeval_s.py: the real haystacks, zep beside BM25 and dense turns in one run."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from bench.common import Progress
from bench.longmemeval_data import load, sample, session_of
from bench.longmemeval_s import SYSTEMS, _storage, format_s, markdown_s, run_s, s_targets

TYPES = ("single-session-user", "multi-session", "knowledge-update")


def _haystack(i: int) -> tuple[list[str], list[str], list[list[dict]]]:
    """Six sessions a day apart: the answer in the fourth, chit-chat elsewhere, one session listed twice."""
    ids, dates, sessions = [], [], []
    for n in range(6):
        ids.append(f"q{i}-s{n}")
        dates.append(f"2023/05/{10 + n:02d} (Wed) 10:00")
        if n == 3:
            sessions.append([{"role": "user", "content": f"My sister's new puppy is called Biscuit{i}.",
                              "has_answer": True},
                             {"role": "assistant", "content": "What a lovely name for a puppy!"}])
        else:
            sessions.append([{"role": "user", "content": f"Can you give me a recipe for soup number {n}?"},
                             {"role": "assistant", "content": f"Sure: simmer vegetables for {n + 20} minutes."}])
    ids.append(ids[0])  # listed twice: the first copy stands
    dates.append(dates[0])
    sessions.append([{"role": "user", "content": "a second copy", "has_answer": True}])
    return ids, dates, sessions


def _write(path: Path, per_type: int) -> Path:
    data = []
    for i in range(per_type * len(TYPES)):
        ids, dates, sessions = _haystack(i)
        data.append({"question_id": f"q{i}", "question_type": TYPES[i % len(TYPES)],
                     "question": "What is my sister's puppy called?", "answer": f"Biscuit{i}",
                     "question_date": "2023/06/01 (Thu) 09:00", "answer_session_ids": [f"q{i}-s3"],
                     "haystack_session_ids": ids, "haystack_dates": dates, "haystack_sessions": sessions})
    with gzip.open(path, "wt") as f:
        json.dump(data, f)
    return path


def test_the_s_file_is_read_with_each_session_once_and_sampled_the_same_way_each_time(tmp_path):
    items = load(_write(tmp_path / "s.json.gz", 4))
    assert len(items) == 12 and all(len(it.sessions) == 6 for it in items)
    assert all(it.evidence == (f"{it.id}-s3:0",) and it.answer_sessions == (f"{it.id}-s3",) for it in items)
    assert session_of(items[0].evidence[0]) == "q0-s3"
    drawn = sample(items, 2, seed=1)
    assert drawn == sample(items, 2, seed=1) and len(drawn) == 6
    assert sorted(it.type for it in drawn) == sorted(TYPES * 2)
    assert [it.id for it in drawn] == [it.id for it in items if it in drawn]  # file order
    assert sample(items, None, seed=1) == items


def test_a_tiny_s_run_scores_zep_and_both_baselines_with_sessions_tokens_and_speed(tmp_path, embedder):
    path = _write(tmp_path / "s.json.gz", 1)
    out = run_s(path, per_type=1, embedder=embedder, root=tmp_path / "m", progress=Progress("t", quiet=True))
    assert out["questions"] == 3 and out["sessions_per_user"] == 6 and out["facts"] > 0
    assert set(out["systems"]) == set(SYSTEMS)
    zep = out["systems"]["zep: defaults"]
    assert zep["recall"]["k5"]["all"]["all"] == 1.0 and zep["sessions"]["k5"]["all"]["any"] == 1.0
    assert set(zep["recall"]["k10"]) == {*TYPES, "all"}
    assert out["ingest_ms_per_turn"] > 0 and out["embed_ms_per_turn"] > 0
    assert out["get_context_ms"]["p95"] > 0 and out["floor_ms"]["p95"] > 0 and out["ratio_to_floor"]["p95"] > 0
    assert len(out["rows"]) == 3 and len(s_targets(out)) == 7
    # the embedder fills both cores in the bulk ingest as alone: the ingest target is judged by CPU time
    _, shown, met = next(t for t in s_targets(out) if "bulk ingest" in t[0])
    assert f"{out['ingest_cpu_ms_per_turn']} vs {out['embed_cpu_ms_per_turn']} ms CPU" in shown
    assert met == (out["ingest_cpu_ms_per_turn"] <= out["embed_cpu_ms_per_turn"])
    assert "LongMemEval-S" in format_s(out)
    page = "\n".join(markdown_s(out))
    assert "### LongMemEval-S" in page and "session any@5" in page and "`bm25-turns`" in page
    assert zep["ku_newest"]["k5"]["knowledge-update"]["any"] == 1.0 and "KU newest@5" in page
    # each call's time and what it read from disk are kept, and how many calls read is shown beside the p95
    assert all(r["ms"] > 0 and r["floor_ms"] > 0 for r in out["rows"])
    if out["storage"] is not None:  # Linux: /proc/self/io
        assert 0 <= out["storage"]["calls_reading_disk"] <= 3 and all(r["disk_kb"] >= 0 for r in out["rows"])
        assert f"{out['storage']['calls_reading_disk']} calls read from disk" in format_s(out)


def test_the_calls_that_read_nothing_from_disk_are_timed_apart_as_a_diagnostic_not_a_target():
    ours, floor = [10.0, 2.0, 3.0, 20.0], [2.0, 1.0, 1.0, 2.0]
    st = _storage(ours, floor, [4096 * 1024, 0, 0, 1024 * 1024])
    assert st["calls_reading_disk"] == 2 and st["disk_kb_per_reading_call"] == 2560
    assert st["cached_get_context_ms"]["p95"] <= 3.0 and st["cached_floor_ms"]["p50"] == 1.0
    assert st["cached_ratio_p95"] == round(st["cached_get_context_ms"]["p95"] / 1.0, 2)
    assert "cached_get_context_ms" not in _storage(ours, floor, [1, 1, 1, 1])  # every call read: nothing apart
    assert _storage(ours, floor, [0, None, 0, 0]) is None  # no counter on this system: no diagnostic


def test_longmemeval_runs_the_s_setting_and_the_report_shows_it_with_its_targets(tmp_path, embedder):
    from bench.locomo import Variant
    from bench.longmemeval import run
    from bench.report import render

    s_path = _write(tmp_path / "s.json.gz", 1)
    with gzip.open(s_path, "rt") as f:
        (tmp_path / "oracle.json").write_text(f.read())
    result = run(tmp_path / "oracle.json", per_type=1, assistant_speakers=("Assistant",),
                 variants=(Variant("defaults"),), long_per_type=0, s_per_type=1, s_path=s_path,
                 out_dir=tmp_path / "results", progress=Progress("t", quiet=True))
    assert result["longmemeval_s"]["questions"] == 3
    page = render(tmp_path / "results")
    assert "### LongMemEval-S: the real long histories" in page
    assert "LongMemEval-S, 3 questions: all@5 ≥ BM25 + 0.10" in page


def test_what_the_process_has_read_from_storage_is_a_count_that_only_grows(tmp_path):
    from bench.common import storage_reads

    before = storage_reads()
    (tmp_path / "f").write_bytes(b"x" * 65536)
    assert (tmp_path / "f").read_bytes()[:1] == b"x"
    after = storage_reads()
    if before is None:  # not Linux: the benchmark reports no disk reads rather than a wrong count
        assert after is None
    else:
        assert isinstance(before, int) and after >= before >= 0
