"""`--help` on every example and on the demo prints its usage and runs nothing: no data folder appears."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "examples").glob("*.py"))


@pytest.mark.parametrize("command", [[str(p)] for p in SCRIPTS] + [["-m", "zep_core.demo"]],
                         ids=[p.stem for p in SCRIPTS] + ["zep_core.demo"])
def test_help_prints_usage_and_creates_nothing(command, tmp_path):
    proc = subprocess.run([sys.executable, *command, "--help"], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("usage:") and "--help" in proc.stdout
    assert list(tmp_path.iterdir()) == []  # no "./--help/" data folder, nothing else either
