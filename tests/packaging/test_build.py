"""The distribution builds without a warning of our own making, and ships the embedding model."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_wheel_builds_without_setuptools_warnings_and_carries_the_model(tmp_path):
    # --no-build-isolation: the venv's own setuptools, so the test needs no index
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-v",
                           "-w", str(tmp_path / "dist"), str(ROOT)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    warnings = [line.strip() for line in out.splitlines()
                if "Warning" in line and "byte-compiling is disabled" not in line]
    assert warnings == [], "\n".join(warnings)
    wheel = next((tmp_path / "dist").glob("zep_memory-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert any(n.startswith("zep_core/providers/models/") and n.endswith("/model.onnx") for n in names)
    assert "zep_core/viz/graph.html" in names
    # typed packages (PEP 561) and the license travel with the wheel
    assert {"zep_core/py.typed", "zep_langchain/py.typed", "zep_llamaindex/py.typed"} <= names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    # every module of the source tree is in the wheel (a subpackage left out of pyproject's
    # list installs fine in editable mode and breaks `import zep_core` from the wheel)
    sources = {f"zep_core/{p.relative_to(ROOT / 'core').as_posix()}" for p in (ROOT / "core").rglob("*.py")}
    for package in ("zep_langchain", "zep_llamaindex"):
        sources |= {p.relative_to(ROOT).as_posix() for p in (ROOT / package).rglob("*.py")}
    assert sorted(sources - names) == []
