"""LangChain fixtures: a memory with Alice's story in it, and async tests that run under asyncio."""

from __future__ import annotations

import inspect
from datetime import datetime, timedelta, timezone

import pytest
from zep_core import Memory, MemoryConfig, Message

UTC = timezone.utc

ALICE_SESSIONS = [
    ("s1", datetime(2024, 1, 1, 12, tzinfo=UTC),
     ["I live in Paris.", "I work at Acme.", "I like jazz."]),
    ("s2", datetime(2024, 3, 1, 12, tzinfo=UTC),
     ["I moved to Berlin.", "My sister Anna lives in Rome."]),
]


@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_pycollect_makeitem(collector, name, obj):
    """Mark async tests (the langchain-tests suites have some) for pytest-asyncio in strict mode.

    ``trylast`` makes this wrapper the innermost one, so pytest-asyncio, wrapping it,
    sees the marker when it turns the item into an asyncio test.
    """
    outcome = yield
    items = outcome.get_result()
    for item in items if isinstance(items, list) else [items]:
        if (isinstance(item, pytest.Function) and inspect.iscoroutinefunction(item.obj)
                and item.get_closest_marker("asyncio") is None):
            item.add_marker(pytest.mark.asyncio)


def tell(memory: Memory, user_id: str, name: str, sessions=ALICE_SESSIONS) -> None:
    """Ingest sessions of things ``name`` said, each at its own time."""
    for session_id, when, texts in sessions:
        messages = [Message(t, name=name, timestamp=when + timedelta(minutes=i)) for i, t in enumerate(texts)]
        memory.conversation_end(session_id, messages, user_id=user_id)


@pytest.fixture(scope="module")
def alice_memory(tmp_path_factory, embedder):
    """A memory holding Alice's two sessions (Paris, then Berlin); read-only for the tests."""
    memory = Memory(MemoryConfig(data_dir=tmp_path_factory.mktemp("alice"), embedder=embedder),
                    clock=lambda: datetime(2024, 6, 1, tzinfo=UTC))
    tell(memory, "alice", "Alice")
    yield memory
    memory.close()


def pytest_generate_tests(metafunc):
    """The adapters' tests run on both backends (their memories come from ``make_memory``)."""
    from tests.pg import both_backends

    both_backends(metafunc)
