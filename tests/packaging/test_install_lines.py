"""Install lines that work where the user stands: none asks an index for zep-memory, every extra named exists.

zep-memory is not published, so ``pip install 'zep-memory[server]'`` fails for everyone who
is not in a clone. What a new user reads — the README, the docs, the examples, the
command's help and the errors that say what to install — gives the clone, wheel or git-URL
forms of docs/install.md, and names only extras that pyproject.toml declares.
"""

from __future__ import annotations

import importlib.metadata as metadata
import re
from pathlib import Path

from zep_core.errors import install_hint

from tests.test_docs_blocks import extras_named

ROOT = Path(__file__).resolve().parents[2]
READ_BY_USERS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "examples").glob("*.py")),
                 *sorted((ROOT / "core" / "cli").glob("*.py"))]
DECLARED = set(metadata.metadata("zep-memory").get_all("Provides-Extra"))


def index_installs(text: str) -> list[str]:
    """``pip install`` lines that ask an index for zep-memory (a name, not a path or ``name @ URL``)."""
    found = []
    for m in re.finditer(r"pip install (?:-[\w-]+ +)*['\"]?zep-memory\b", text):
        rest = re.sub(r"^\[[^\]]*\]", "", text[m.end():])
        if not rest.lstrip(" ").startswith("@"):
            found.append(text[m.start():].splitlines()[0])
    return found


def test_no_install_line_asks_an_index_for_zep_memory():
    found = {path.relative_to(ROOT).as_posix(): index_installs(path.read_text(encoding="utf-8"))
             for path in READ_BY_USERS}
    found["core/errors.py install_hint"] = index_installs(install_hint("server"))
    assert {where: lines for where, lines in found.items() if lines} == {}
    # the checker itself tells them apart
    assert index_installs("pip install 'zep-memory[server]'") and index_installs('pip install -U "zep-memory"')
    assert not index_installs("pip install 'zep-memory[server] @ git+https://example.invalid/zep-memory.git'")
    assert not index_installs("pip install -e '.[server]'")


def test_every_extra_a_page_names_is_declared_and_install_md_lists_them_all():
    named = {path.relative_to(ROOT).as_posix(): extras_named(path.read_text(encoding="utf-8"))
             for path in READ_BY_USERS}
    assert {where: sorted(extras - DECLARED) for where, extras in named.items() if extras - DECLARED} == {}
    table = (ROOT / "docs" / "install.md").read_text(encoding="utf-8").split("## The extras")[1]
    listed = {name for row in re.findall(r"^\| (.*?) \|", table, flags=re.MULTILINE)
              for name in re.findall(r"`([a-z-]+)`", row)}
    assert sorted(DECLARED - listed) == []
