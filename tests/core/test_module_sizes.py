"""Every module we ship is short enough to read in one sitting, and the façade shorter still.

STYLE.md: one module per concept, each short enough to read in one sitting. A module that
grows past :data:`MAX_LINES` is split by job, the new module named for its job, and the old
one re-exports what it had, so every import keeps working (sync.py became sync, outbox and
indexing; transfer.py transfer and export_format). ``memory.py``, the façade, only checks
what comes in and hands the work on, so it stays under :data:`MAX_FACADE_LINES`. The adapter
packages are held to the same limit (``zep_langchain/store.py`` became store, _namespaces and
_values).
"""

from __future__ import annotations

from pathlib import Path

import zep_core

ROOT = Path(zep_core.__file__).resolve().parent
#: Every package the wheel ships: the core and the adapters beside it.
PACKAGES = (ROOT, ROOT.parent / "zep_langchain", ROOT.parent / "zep_llamaindex")
MAX_LINES = 500
MAX_FACADE_LINES = 400


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_module_is_over_the_limit():
    sizes = {path.relative_to(ROOT.parent).as_posix(): _lines(path) for package in PACKAGES
             for path in package.rglob("*.py")}
    assert any(name.startswith("zep_langchain/") for name in sizes)
    over = {name: n for name, n in sorted(sizes.items()) if n > MAX_LINES}
    assert over == {}, f"split these by job (at most {MAX_LINES} lines a module): {over}"


def test_the_facade_is_under_its_own_limit():
    assert _lines(ROOT / "memory.py") <= MAX_FACADE_LINES
