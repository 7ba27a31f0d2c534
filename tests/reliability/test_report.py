"""`python -m tests.reliability.report` rewrites only what its result files regenerate, and says what it wrote.

Run as docs/reliability.md says, in a fresh clone (no ``bench/results/``) it once deleted the
hostile-case table (196 lines) and printed nothing. Here the real command runs on a copy of
the doc, with a results folder of the test's own.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "reliability.md"


def report(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tests.reliability.report", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def test_without_result_files_the_doc_is_left_as_it_is_and_the_report_says_so(tmp_path):
    doc = tmp_path / "reliability.md"
    doc.write_bytes(DOC.read_bytes())
    (tmp_path / "results").mkdir()

    run = report(tmp_path, "--doc", str(doc), "--results", str(tmp_path / "results"))

    assert run.returncode == 0, run.stderr
    assert doc.read_bytes() == DOC.read_bytes()
    assert "unchanged; no reliability result file" in run.stdout


def test_one_result_file_rewrites_its_row_and_keeps_every_other_line(tmp_path):
    doc = tmp_path / "reliability.md"
    doc.write_bytes(DOC.read_bytes())
    results = tmp_path / "results"
    results.mkdir()
    (results / "reliability-limits.json").write_text(json.dumps({
        "name": "limits", "command": ".venv/bin/python -m pytest -q tests/reliability/test_limits.py",
        "when": "2030-01-02T03:04:05+0000", "figures": {"defaults": "max_message_chars=7"}}), encoding="utf-8")

    run = report(tmp_path, "--doc", str(doc), "--results", str(results))

    assert run.returncode == 0, run.stderr
    before, after = DOC.read_text(encoding="utf-8").splitlines(), doc.read_text(encoding="utf-8").splitlines()
    changed = [(a, b) for a, b in zip(before, after) if a != b]
    assert len(before) == len(after) and len(changed) == 1
    assert changed[0][1] == ("| Resource bounds | defaults: max_message_chars=7 | "
                             "`.venv/bin/python -m pytest -q tests/reliability/test_limits.py` | 2030-01-02 03:04 |")
    assert run.stdout.splitlines()[0].endswith("regenerated 1 from " + str(results) + ": Resource bounds")
    assert "the hostile-case table" in run.stdout.splitlines()[1]  # kept, and said so


def test_a_doc_without_the_figures_markers_is_refused_in_one_line(tmp_path):
    doc = tmp_path / "notes.md"
    doc.write_text("# Notes\n\nno figures here\n", encoding="utf-8")

    run = report(tmp_path, "--doc", str(doc), "--results", str(tmp_path))

    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and "nothing written" in run.stderr
    assert doc.read_text(encoding="utf-8") == "# Notes\n\nno figures here\n"
