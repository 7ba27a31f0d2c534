"""Docs snippets are code: every ```python block of README.md and docs/*.md runs as written, offline.

The blocks of one page run in order in one namespace (as a reader pastes them into one
session), in an empty working folder, with no OpenAI key in the environment. A block that
needs a real provider says so in its own code (``if os.environ.get("OPENAI_API_KEY"):``)
and is still executed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def python_blocks(text: str) -> list[tuple[int, str]]:
    """``(line, code)`` of each fenced python block."""
    return [(text.count("\n", 0, m.start()) + 2, m.group(1))
            for m in re.finditer(r"^```python\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)]


@pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning")  # LlamaIndex's own
@pytest.mark.parametrize("page", [p for p in PAGES if python_blocks(p.read_text(encoding="utf-8"))],
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_python_block_runs(page, tmp_path, monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ZEP_MEMORY_API_KEYS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    opened = []
    try:
        for line, code in python_blocks(page.read_text(encoding="utf-8")):
            source = "\n" * (line - 1) + code  # tracebacks point at the page's own lines
            exec(compile(source, str(page), "exec"), namespace)
            opened += [v for v in namespace.values() if hasattr(v, "close") and type(v).__name__ == "Memory"]
    finally:
        for memory in {id(m): m for m in opened}.values():
            memory.close()
