"""Run `zep-memory` in-process through its real entry point, on data folders built with the library."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from zep_core import Memory, MemoryConfig
from zep_core.cli import main
from zep_core.demo import SESSION_1, SESSION_2

from tests.core.test_recovery import read_only_memory  # noqa: F401  (the read-only folder fixture, for test_doctor)


@dataclass
class Result:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys):
    """``cli("history", "Alice", ...)`` runs ``main([...])`` and returns its exit code, stdout and stderr."""

    def run(*argv: str) -> Result:
        capsys.readouterr()
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:  # argparse: --help, usage errors
            code = exc.code if isinstance(exc.code, int) else 2
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


@pytest.fixture
def open_memory(embedder):
    """Open a data folder with the library (closed after the test, or by the caller)."""
    opened: list[Memory] = []

    def open_(data_dir, **options) -> Memory:
        memory = Memory(MemoryConfig(data_dir=data_dir, embedder=options.pop("embedder", embedder), **options))
        opened.append(memory)
        return memory

    yield open_
    for memory in opened:
        memory.close()


@pytest.fixture(scope="session")
def alice_template(tmp_path_factory, embedder):
    """The README demo's data folder, built once: Alice moves from Paris to Berlin (user 'alice')."""
    data = tmp_path_factory.mktemp("alice") / "data"
    # alice gets a Chroma collection (vector_exact_below=0: she stays promoted whatever the CLI's threshold),
    # so the tests of a lost vector index have one to lose
    with Memory(MemoryConfig(data_dir=data, embedder=embedder, vector_exact_below=0)) as memory:
        memory.conversation_end("session-1", SESSION_1, user_id="alice", episode_id="session-1")
        memory.conversation_end("session-2", SESSION_2, user_id="alice", episode_id="session-2")
        memory.refresh_entities()
    return data


@pytest.fixture
def alice_data(tmp_path, alice_template):
    """A fresh copy of the demo's data folder for one test (closed: the CLI can open it)."""
    return Path(shutil.copytree(alice_template, tmp_path / "data"))
