"""What docs/cli.md shows a command printing is what it prints: its LoCoMo ingest sample, run for real.

The sample's fact counts come from the extractor and drift whenever its rules change; this
runs the page's two ``$ zep-memory ingest`` lines on the LoCoMo dev file (``../shared/data``)
and compares every line. About 15 s on 2 idle cores: CI's full run, not the default command.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.common import LOCOMO_DEV

ROOT = Path(__file__).resolve().parents[2]
STDERR = "# progress, on stderr"


def sample(text: str) -> list[tuple[str, list[str], list[str]]]:
    """``(arguments, stdout lines, stderr lines)`` of each ``$ zep-memory`` line of the LoCoMo ingest sample."""
    block = re.search(r"```bash\n(\$ zep-memory ingest locomo_dev\.json.*?)```", text, re.DOTALL).group(1)
    runs = []
    for part in block.split("$ zep-memory ")[1:]:
        command, *lines = part.splitlines()
        out = [line for line in lines if STDERR not in line]
        err = [line.split(STDERR)[0].rstrip() for line in lines if STDERR in line]
        runs.append((command.split("#")[0].strip(), out, err))
    return runs


@pytest.mark.full_matrix
def test_the_locomo_ingest_sample_of_cli_md_is_what_the_command_prints(tmp_path):
    if not LOCOMO_DEV.exists():
        pytest.skip(f"the LoCoMo dev file is not here ({LOCOMO_DEV}); the sample cannot be run")
    runs = sample((ROOT / "docs" / "cli.md").read_text(encoding="utf-8"))
    assert len(runs) == 2
    for command, out, err in runs:
        args = command.replace("locomo_dev.json", str(LOCOMO_DEV)).replace("./locomo", str(tmp_path / "locomo"))
        run = subprocess.run([sys.executable, "-m", "zep_core", *args.split()], capture_output=True, text=True,
                             timeout=600, cwd=tmp_path)
        assert run.returncode == 0, run.stderr[-2000:]
        assert run.stdout.splitlines() == out
        if err:  # the sample shows the last progress line of the first run
            assert run.stderr.splitlines()[-1:] == err[-1:]
