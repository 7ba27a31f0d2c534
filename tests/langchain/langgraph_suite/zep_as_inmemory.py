"""What LangGraph's own store suite imports as ``InMemoryStore``: a ``ZepStore`` on a fresh zep memory.

``tests/langchain/test_langgraph_suite.py`` runs langgraph-checkpoint's ``tests/test_store.py`` with its
``from langgraph.store.memory import InMemoryStore`` pointed here, so every store the suite builds
(``InMemoryStore()``, ``InMemoryStore(index={...})``, the one inside its batched wrapper) is a
``ZepStore`` on real SQLite, Chroma and Kùzu in a folder of its own.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from zep_core import Memory, MemoryConfig

from zep_langchain import ZepStore

_OPENED: list[Memory] = []


class InMemoryStore(ZepStore):
    """LangGraph's ``InMemoryStore(index=...)`` as the suite builds it, played by a ``ZepStore``."""

    def __init__(self, *, index: Any = None) -> None:
        folder = Path(tempfile.mkdtemp(prefix="store-", dir=os.environ["ZEP_SUITE_DATA"]))
        memory = Memory(MemoryConfig(data_dir=folder))
        _OPENED.append(memory)
        with open(os.environ["ZEP_SUITE_MADE"], "a") as made:  # the harness checks ZepStores were tested
            made.write(f"{type(self).__mro__[1].__name__}\n")
        super().__init__(memory, index=index)


@pytest.fixture(autouse=True)
def _close_the_memories():
    """Each test's memories are closed after it (their vector processes with them)."""
    yield
    while _OPENED:
        _OPENED.pop().close()
