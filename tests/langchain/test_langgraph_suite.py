"""LangGraph's own store test-suite, run against ``ZepStore``.

langgraph-checkpoint ships its store tests (``tests/test_store.py``) only in its source
distribution. This test takes that sdist from the package index for the installed
version (or from ``ZEP_LANGGRAPH_SDIST``, a path to it, on a machine without the index),
points the suite's ``InMemoryStore`` at ``ZepStore`` on a fresh zep memory
(``langgraph_suite/zep_as_inmemory.py``), runs it with pytest in a child process, and
fails on any test of theirs that does not pass.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from importlib.metadata import version
from pathlib import Path

import pytest

HERE = Path(__file__).parent
PACKAGE = "langgraph-checkpoint"
THEIR_IMPORT = "from langgraph.store.memory import InMemoryStore"
OURS = "from zep_as_inmemory import InMemoryStore"
SUITE_FILES = ("tests/__init__.py", "tests/embed_test_utils.py", "tests/test_store.py")


def _sdist(folder: Path) -> Path:
    """The sdist of the installed langgraph-checkpoint: ZEP_LANGGRAPH_SDIST, else downloaded from the index."""
    given = os.environ.get("ZEP_LANGGRAPH_SDIST")
    if given:
        return Path(given)
    wanted = version(PACKAGE)
    got = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                          "--disable-pip-version-check", "-d", str(folder), f"{PACKAGE}=={wanted}"],
                         capture_output=True, text=True, timeout=300)
    found = sorted(folder.glob("langgraph_checkpoint-*.tar.gz"))
    if got.returncode or not found:
        pytest.skip(f"LangGraph's store suite ships only in the {PACKAGE}=={wanted} sdist on the package index, "
                    f"which pip could not download here ({got.stderr.strip().splitlines()[-1:]}); download it "
                    f"and set ZEP_LANGGRAPH_SDIST to its path to run the suite")
    return found[0]


def _unpack(sdist: Path, suite: Path) -> Path:
    """Their store tests in ``suite/tests``, with ``InMemoryStore`` imported from our stand-in."""
    with tarfile.open(sdist) as archive:
        members = {m.name.split("/", 1)[1]: m for m in archive.getmembers() if "/" in m.name}
        for name in SUITE_FILES:
            assert name in members, f"{sdist.name} has no {name}: LangGraph moved its store suite"
            target = suite / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(archive.extractfile(members[name]).read())
    tests = suite / "tests" / "test_store.py"
    source = tests.read_text()
    assert source.count(THEIR_IMPORT) == 1, "their suite no longer imports InMemoryStore as it did: update the swap"
    tests.write_text(source.replace(THEIR_IMPORT, OURS))
    (suite / "conftest.py").write_text("from zep_as_inmemory import _close_the_memories  # noqa: F401\n")
    return tests


def test_langgraphs_own_store_suite_passes_on_zep_store(tmp_path):
    tests = _unpack(_sdist(tmp_path / "sdist"), tmp_path / "suite")
    (tmp_path / "data").mkdir()
    report, made = tmp_path / "report.xml", tmp_path / "made.txt"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE / "langgraph_suite"), str(tmp_path / "suite")]),
           "ZEP_SUITE_DATA": str(tmp_path / "data"), "ZEP_SUITE_MADE": str(made)}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "asyncio_mode=auto",
                          "-o", "asyncio_default_fixture_loop_scope=function", f"--junitxml={report}",
                          "--rootdir", str(tmp_path / "suite"), str(tests)],
                         cwd=tmp_path / "suite", env=env, capture_output=True, text=True, timeout=900)
    cases = ET.parse(report).getroot().iter("testcase")
    outcomes = {f"{c.get('name')}": next((x.tag for x in c if x.tag in ("failure", "error", "skipped")), "passed")
                for c in cases}
    failed = sorted(name for name, outcome in outcomes.items() if outcome in ("failure", "error"))
    assert not failed, f"LangGraph's store suite failed on ZepStore: {failed}\n{run.stdout[-6000:]}"
    assert run.returncode == 0, run.stdout[-6000:]
    skipped = sorted(name for name, outcome in outcomes.items() if outcome == "skipped")
    assert not skipped, f"their tests skipped: {skipped}"
    assert len(outcomes) >= 30, f"only {len(outcomes)} of LangGraph's store tests ran:\n{run.stdout[-3000:]}"
    stores = made.read_text().split()
    assert len(stores) >= 20 and set(stores) == {"ZepStore"}, "the suite did not build ZepStores"
