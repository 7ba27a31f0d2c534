"""The README's test command: the default selection leaves CI's full matrix out, says its time, never exits 5.

``full_matrix`` tests (most adapter suites on PostgreSQL, the reliability runs on
PostgreSQL, the wheel in a fresh venv, cli.md's LoCoMo sample) are deselected unless
``ZEP_TEST_FULL=1`` (``scripts/test.sh --full``, what ``.ci/run`` runs), or unless they are all
that was asked for. ``scripts/test.sh`` prints how long pytest took and turns pytest's
"no tests ran" (exit 5) into a one-line error.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def collect(*args: str, full: bool = False) -> list[str]:
    env = {**os.environ, "ZEP_TEST_FULL": "1" if full else "0"}
    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    return [line for line in run.stdout.splitlines() if "::" in line]


def test_the_default_keeps_the_representative_postgres_suites_and_leaves_the_rest_to_the_full_matrix():
    paths = ("tests/mcp/test_mcp_server.py", "tests/langchain/test_tools.py")
    default, full = collect(*paths), collect(*paths, full=True)

    assert any("test_mcp_server.py" in t and "[postgres" in t for t in default)  # representative: kept
    assert not any("test_tools.py" in t and "[postgres" in t for t in default)  # CI's full matrix
    assert any("test_tools.py" in t and "[postgres" in t for t in full)
    assert set(default) < set(full) and {t for t in full if "[postgres" not in t} <= set(default)


def test_a_full_matrix_test_named_alone_runs_and_ci_runs_the_full_matrix():
    assert collect("tests/cli/test_docs_samples.py") == collect("tests/cli/test_docs_samples.py", full=True) != []
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "bash scripts/test.sh --full" in ci


def test_the_script_says_its_time_and_a_selection_of_nothing_is_an_error_not_exit_5():
    env = {k: v for k, v in os.environ.items() if k != "ZEP_TEST_FULL"}  # CI runs the suite with --full
    env["ZEP_TEST_NO_INSTALL"] = "1"
    run = subprocess.run(["bash", "scripts/test.sh", "tests/core/test_module_sizes.py", "-k", "no_test_is_named_this",
                          "-p", "no:cacheprovider"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)

    assert run.returncode == 1
    assert "scripts/test.sh: pytest took 0 min" in run.stdout and "the default selection" in run.stdout
    assert "no test matched the arguments" in run.stderr


def test_the_readme_states_how_many_tests_this_run_has(request):
    from tests.conftest import SUITE_SIZE

    if SUITE_SIZE not in request.config.stash:
        pytest.skip("the README's test counts are checked when the whole suite runs")
    count, full = request.config.stash[SUITE_SIZE]
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    pattern = r"full matrix \(`bash scripts/test.sh --full`, about ([\d,]+) tests" if full else \
        r"default selection \(about ([\d,]+) tests"
    stated = int(re.search(pattern, readme).group(1).replace(",", ""))
    assert abs(stated - count) <= count * 0.05, f"the README says about {stated} tests; this run has {count}"
