"""The long-history setting of bench/longmemeval.py: each question's sessions among 40 of others'."""

from __future__ import annotations

import json
from pathlib import Path

from bench.common import Progress
from bench.longmemeval import LONG_DISTRACTORS, LONG_SPAN, load, long_history, run_long


def _write(path: Path, n: int) -> Path:
    """``n`` one-session questions in LongMemEval's format, a day apart, each with one evidence turn."""
    data = []
    for i in range(n):
        data.append({
            "question_id": f"q{i}", "question_type": ["single-session-user", "multi-session"][i % 2],
            "question": f"What is thing {i}?", "answer": f"thing{i}", "question_date": "2023/06/30 (Fri) 10:00",
            "haystack_dates": [f"2023/{5 + i // 28:02d}/{1 + i % 28:02d} (Mon) 10:00"],
            "haystack_session_ids": [f"s{i}"], "answer_session_ids": [f"s{i}"],
            "haystack_sessions": [[{"role": "user", "content": f"My favourite thing is thing{i}.", "has_answer": True},
                                   {"role": "assistant", "content": f"Noted: thing{i}."}]]})
    path.write_text(json.dumps(data))
    return path


def test_each_question_gets_its_sessions_among_40_of_other_questions(tmp_path):
    items = load(_write(tmp_path / "lme.json", 60))
    long = long_history(items[:4], items)
    assert long == long_history(items[:4], items)  # a fixed seed
    for short, mixed in zip(items[:4], long):
        assert len(mixed.sessions) == 1 + LONG_DISTRACTORS
        assert mixed.evidence == short.evidence  # the others' turns carry no evidence
        ids = [t.id for t in mixed.turns]
        assert len(ids) == len(set(ids))
        last = short.sessions[-1][1]
        assert all(last - LONG_SPAN <= when <= last for _, when, _ in mixed.sessions)
        assert [w for _, w, _ in mixed.sessions] == sorted(w for _, w, _ in mixed.sessions)
        assert not any(f"thing{short.id[1:]}." in t.content for t in mixed.turns if not t.has_answer
                       and t.role == "user")


def test_run_long_scores_the_same_questions_on_both_histories(tmp_path, embedder):
    path = _write(tmp_path / "lme.json", 45)
    out = run_long(path, per_type=1, embedder=embedder, root=tmp_path / "m", progress=Progress("t"))
    assert out["questions"] == 2 and out["long"]["sessions_per_user"] == 41
    for setting in ("oracle", "long"):
        assert set(out[setting]["systems"]) == {"bm25-turns", "dense-turns", "zep: defaults"}
        assert out[setting]["ingest_ms_per_turn"] > 0 and out[setting]["embed_ms_per_turn"] > 0
    assert out["oracle"]["systems"]["zep: defaults"]["recall"]["k10"]["all"]["all"] == 1.0
