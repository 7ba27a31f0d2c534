"""Which layers may import which: the stores and the providers only the layer below, the adapters the public API.

The import cycle test (``test_import_cycles.py``) says that the dependencies run one way;
this one says which way. From the bottom:

- **the foundation**: ``errors``, ``models``, ``validation``, ``tenant``, ``config`` (with
  ``settings`` and ``mnm``, which it is made of), ``names`` (how names are compared), and
  the two registries of rules, ``predicates`` and ``attributes``. It imports nothing above
  itself.
- **the stores** (``zep_core.stores``) and **the providers** (``zep_core.providers``):
  besides their own modules, only the foundation; and neither imports the other.
- everything else in ``zep_core`` (the update rules, ingest, retrieval, sync, the façade,
  the CLI and the server) above them.
- **the adapters** (``zep_langchain``, ``zep_llamaindex``): ``zep_core``'s public names (its
  ``__all__``), the adapters' kit (``sessions``, ``tools``), and the leaf helpers the public
  records come with (:data:`ADAPTER_HELPERS`); never the stores, the façade's parts, nor
  the rules behind it.

Every import counts, wherever it stands (the reader is ``test_import_cycles``'s).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import zep_core

from tests.core.test_import_cycles import MODULES, _imports

FOUNDATION = {f"zep_core.{name}" for name in (
    "errors", "models", "validation", "tenant", "config", "settings", "mnm", "names", "predicates", "attributes")}
LOWER = ("zep_core.stores", "zep_core.providers")
#: What an adapter may import of zep_core beside its public names: the kit made for adapters, the
#: public client (``zep_core.server.RemoteMemory``), and helpers over the public records that import
#: nothing above the foundation (async calls, time and id checks, a fact's metadata).
ADAPTER_KIT = {"zep_core.sessions", "zep_core.tools", "zep_core.server"}
ADAPTER_HELPERS = {"zep_core.aio", "zep_core.models", "zep_core.validation", "zep_core.serialize"}
ADAPTERS = [Path(zep_core.__file__).resolve().parent.parent / name for name in ("zep_langchain", "zep_llamaindex")]


def _in(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_the_foundation_imports_nothing_above_it():
    for name in FOUNDATION:
        assert _imports(name) <= FOUNDATION, (name, sorted(_imports(name) - FOUNDATION))


@pytest.mark.parametrize("layer", LOWER)
def test_the_stores_and_the_providers_import_only_the_foundation(layer):
    above = {}
    for name in MODULES:
        if _in(name, layer):
            outside = {target for target in _imports(name) if not _in(target, layer)} - FOUNDATION
            if outside:
                above[name] = sorted(outside)
    assert not above, f"{layer} reaches above the foundation: {above}"


def test_the_stores_and_the_providers_do_not_import_each_other():
    for layer, other in (LOWER, LOWER[::-1]):
        reached = {name: target for name in MODULES if _in(name, layer)
                   for target in _imports(name) if _in(target, other)}
        assert not reached, reached


def test_the_adapter_helpers_are_leaves():
    for name in ADAPTER_HELPERS:
        assert _imports(name) <= FOUNDATION, (name, sorted(_imports(name) - FOUNDATION))


def _adapter_imports(path: Path) -> list[tuple[str, str]]:
    """``(zep_core module, name imported from it)`` of every import of zep_core in ``path``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and _in(node.module, "zep_core"):
            out += [(node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            out += [(alias.name, "") for alias in node.names if _in(alias.name, "zep_core")]
    return out


@pytest.mark.parametrize("package", ADAPTERS, ids=lambda p: p.name)
def test_the_adapters_import_only_the_public_api_and_the_adapters_kit(package):
    allowed = ADAPTER_KIT | ADAPTER_HELPERS
    wrong = []
    for path in sorted(package.rglob("*.py")):
        for module, name in _adapter_imports(path):
            if module == "zep_core":  # ``from zep_core import X``: a public name, or an allowed module
                ok = name in zep_core.__all__ or f"zep_core.{name}" in allowed
            else:
                ok = any(_in(module, kit) for kit in allowed)
            if not ok:
                wrong.append(f"{path.name}: {module} {name}".strip())
    assert not wrong, wrong


def test_the_reader_of_adapter_imports_sees_them():
    found = _adapter_imports(ADAPTERS[1] / "memory.py")
    assert ("zep_core", "Memory") in found and ("zep_core.sessions", "memory_reference") in found
    assert ("zep_core.server", "RemoteMemory") in found  # an import inside a function counts too
