"""The zep_core modules depend on each other one way: no module imports, however indirectly, one that imports it.

The dependencies are read from each module's import statements (``ast``): at module level,
inside functions (a lazy import is still a dependency, and a lazy import that closes a
cycle only hides it), and under ``if TYPE_CHECKING:``. A TYPE_CHECKING-only import never
runs, so it is no runtime cycle, but it still makes each module need the other to be read
and changed, so it counts here too: a module that wants to name the type of something
above it says what it needs with a small Protocol (``sessions.AdapterMemory``,
``transfer.Transferable``) instead of importing it. Nothing is exempt.

What is not an edge: a module's own parent packages, which Python imports first whatever
the module says (``zep_core/__init__`` re-exports the façade, so every module would
otherwise be in a cycle with it). An explicit ``from .. import name`` of a package is an
edge to that package's ``__init__``.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest
import zep_core

ROOT = Path(zep_core.__file__).resolve().parent
#: ``python -m`` entry points run the zep-memory command when imported: this test reads them, never imports them.
ENTRY_POINTS = {"zep_core.__main__", "zep_core.cli.__main__"}


def _modules() -> dict[str, tuple[Path, bool]]:
    """Every module of the package: its dotted name -> (file, whether it is a package's ``__init__``)."""
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        found[".".join(["zep_core", *parts])] = (path, is_package)
    return found


MODULES = _modules()


def _imports(name: str) -> set[str]:
    """The zep_core modules ``name`` imports, wherever the import statement stands."""
    path, is_package = MODULES[name]
    package = name.split(".") if is_package else name.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            # ``from pkg import sub`` imports the submodule; ``from pkg import name`` the package itself
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:  # ``import zep_core.stores.graph.x`` names the module above
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                group.append(other)
                if other == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def test_the_entry_points_left_unimported_are_modules():
    assert ENTRY_POINTS <= set(MODULES)


@pytest.mark.parametrize("name", sorted(set(MODULES) - ENTRY_POINTS))
def test_every_module_imports_on_its_own(name):
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and not exc.name.startswith("zep_core"):
            pytest.skip(f"{name} needs the optional {exc.name!r}")
        raise


def test_the_reader_sees_the_imports_that_matter():
    """The graph below is only as good as the reading: it sees each kind of import statement."""
    assert {"zep_core.admin", "zep_core.parts", "zep_core.cypher"} <= _imports("zep_core.memory")
    assert "zep_core.memory" in _imports("zep_core")  # ``from .memory import Memory`` in the package
    assert "zep_core.config" in _imports("zep_core.stores")  # under TYPE_CHECKING
    assert "zep_core.stores.vectors" in _imports("zep_core.stores.folder")  # inside a function
    assert "zep_core" in _imports("zep_core.cli.commands")  # ``from .. import ConfigError``


def test_no_module_imports_one_that_imports_it():
    graph = {name: _imports(name) for name in MODULES}
    cycles = _cycles(graph)
    assert not cycles, "modules that import each other: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_sessions_and_transfer_never_reach_the_facade():
    """The façade uses them; what they need of a memory they name by a Protocol."""
    graph = {name: _imports(name) for name in MODULES}
    for part in ("zep_core.sessions", "zep_core.transfer"):
        reached, todo = set(), [part]
        while todo:
            for other in graph[todo.pop()] - reached:
                reached.add(other)
                todo.append(other)
        assert not reached & {"zep_core", "zep_core.memory", "zep_core.admin", "zep_core.parts"}, part
