"""No code outside ``zep_core.stores`` names a backend: it asks the registry (:mod:`zep_core.stores.backends`).

Read from each module's syntax tree, docstrings aside (they may say what the default
backend is), in the core outside the stores and in both adapters. Naming a backend is:

- importing one of its modules (anything in ``zep_core.stores`` but the seam every backend
  shares: :data:`SHARED`) or its driver (:data:`DRIVERS`);
- a string that is one of the registry's URL schemes, bare or with ``://`` (what a test of a
  URL's scheme is written with: ``url.startswith("postgresql://")``);
- testing whether the config has a ``database_url`` (``if config.database_url``, ``... is
  None``): which backend a config has is :func:`~zep_core.stores.backends.backend_for`'s to say.

What the settings and the help text say of the backends is prose, and not read here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import zep_core
from zep_core.stores.backends import BACKENDS

from tests.core.test_import_cycles import MODULES, _imports

#: The stores' modules every backend shares, which the rest of zep_core may import: the
#: opener and the registry, the Protocols, the row format, and the Cypher sandbox.
SHARED = {"zep_core.stores", "zep_core.stores.backends", "zep_core.stores.opened", "zep_core.stores.base",
          "zep_core.stores.record_protocols", "zep_core.stores.rows", "zep_core.stores.sandbox"}
DRIVERS = {"sqlite3", "sqlite_utils", "psycopg", "psycopg_pool", "pgvector", "chromadb", "kuzu"}
SCHEMES = {s for b in BACKENDS for s in b.schemes} | {f"{s}://" for b in BACKENDS for s in b.schemes}
ROOT = Path(zep_core.__file__).resolve().parent
OUTSIDE = sorted(path for package in (ROOT, ROOT.parent / "zep_langchain", ROOT.parent / "zep_llamaindex")
                 for path in package.rglob("*.py") if "stores" not in path.relative_to(ROOT.parent).parts[1:2])


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string nodes that are docstrings (a module's, a class's, a function's)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _tested(node: ast.AST) -> list[ast.AST]:
    """The expressions ``node`` tests for truth or None-ness."""
    if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
        return [node.test]
    if isinstance(node, ast.BoolOp):
        return list(node.values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return [node.operand]
    if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
        return [node.left, *node.comparators]
    if isinstance(node, ast.comprehension):
        return list(node.ifs)
    return []


def names_a_backend(path: Path) -> list[str]:
    """Where the code of ``path`` names a backend, as ``"line N: what"``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"line {node.lineno}: imports {a.name}" for a in node.names if a.name.split(".")[0] in DRIVERS]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] in DRIVERS:
            found.append(f"line {node.lineno}: imports from {node.module}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            if node.value.lower() in SCHEMES:
                found.append(f"line {node.lineno}: the scheme {node.value!r}")
        for tested in _tested(node):
            if isinstance(tested, ast.Attribute) and tested.attr == "database_url":
                found.append(f"line {node.lineno}: tests .database_url")
    return found


def test_the_files_read_are_the_code_outside_the_stores():
    names = {path.relative_to(ROOT.parent).as_posix() for path in OUTSIDE}
    assert {"core/memory.py", "core/cli/options.py", "zep_llamaindex/memory.py"} <= names
    assert not any(name.startswith("core/stores/") for name in names)


def test_no_code_outside_the_stores_names_a_backend():
    found = {path.relative_to(ROOT.parent).as_posix(): names_a_backend(path) for path in OUTSIDE}
    assert {name: where for name, where in found.items() if where} == {}


def test_no_module_outside_the_stores_imports_a_backends_module():
    reached = {name: sorted(target for target in _imports(name)
                            if target.startswith("zep_core.stores") and target not in SHARED)
               for name in MODULES if not name.startswith("zep_core.stores")}
    assert {name: targets for name, targets in reached.items() if targets} == {}


def test_the_reading_finds_each_way_of_naming_a_backend(tmp_path):
    """The test above is only as good as this reading: each way of naming a backend is found, prose is not."""
    sample = tmp_path / "sample.py"
    sample.write_text('''"""Kept in PostgreSQL (postgresql://…) or SQLite: a docstring may say so."""
import sqlite3
from psycopg import sql


def choose(config, url):
    if config.database_url:
        return url.startswith(("postgresql://", "postgres://"))
    return config.database_url is None or not config.storage.database_url
''', encoding="utf-8")
    assert sorted(names_a_backend(sample)) == [
        "line 2: imports sqlite3", "line 3: imports from psycopg", "line 7: tests .database_url",
        "line 8: the scheme 'postgres://'", "line 8: the scheme 'postgresql://'",
        "line 9: tests .database_url", "line 9: tests .database_url"]
