"""`--help` on every example and on the demo prints its usage and runs nothing: no data folder appears.

An example parses its command line before its imports: ``--help`` answers before LangChain,
LlamaIndex or zep-memory is imported (they took 4-5 s), so it is as quick as Python starts.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "examples").glob("*.py"))
HEAVY = ("zep_core", "zep_langchain", "zep_llamaindex", "langchain", "langchain_core", "llama_index")


@pytest.mark.parametrize("command", [[str(p)] for p in SCRIPTS] + [["-m", "zep_core.demo"]],
                         ids=[p.stem for p in SCRIPTS] + ["zep_core.demo"])
def test_help_prints_usage_and_creates_nothing(command, tmp_path):
    proc = subprocess.run([sys.executable, *command, "--help"], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("usage:") and "--help" in proc.stdout
    assert list(tmp_path.iterdir()) == []  # no "./--help/" data folder, nothing else either


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_an_example_answers_help_before_its_heavy_imports(script, tmp_path):
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-X", "importtime", str(script), "--help"], capture_output=True,
                          text=True, timeout=60, cwd=tmp_path)
    took = time.monotonic() - started

    assert proc.returncode == 0 and proc.stdout.startswith("usage:"), proc.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time")}
    assert sorted(imported & set(HEAVY)) == []
    assert took < 3, f"--help took {took:.1f} s"  # Python's start and argparse; the heavy imports took 4-5 s
