"""The record store's seam: one Protocol per consumer, each what that consumer calls, each met by the SQLite store."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from zep_core.stores import record_protocols
from zep_core.stores.records import RecordStore

CORE = Path(record_protocols.__file__).resolve().parents[1]
#: Each protocol's consumer: the modules its code is written in.
CONSUMERS = {
    "RetrievalRecords": ("retrieval.py",),
    "IngestRecords": ("ingest.py", "ingest_rules.py", "named.py", "corrections.py"),
    "SessionRecords": ("sessions.py",), "SyncRecords": ("sync.py", "indexing.py"),
    "VectorTierRecords": ("stores/tiered.py",), "GraphRecords": ("stores/sandbox.py",),
    "MaintenanceRecords": ("maintenance.py",), "TransferRecords": ("transfer.py",),
    "FacadeRecords": ("memory.py", "admin.py", "parts.py"),
}


def _methods(protocol: type) -> set[str]:
    return {name for name, value in vars(protocol).items() if callable(value) and not name.startswith("_")}


def test_every_protocol_has_its_consumer():
    assert set(CONSUMERS) == set(record_protocols.__all__)


@pytest.mark.parametrize("name", sorted(CONSUMERS))
def test_a_protocol_lists_what_its_consumer_calls_and_nothing_else(name):
    source = "\n".join((CORE / module).read_text() for module in CONSUMERS[name])
    called = {m for m in re.findall(r"records\.(\w+)\b", source) if hasattr(RecordStore, m)}
    assert _methods(getattr(record_protocols, name)) == called


@pytest.mark.parametrize("name", sorted(CONSUMERS))
def test_the_sqlite_store_meets_each_protocol_with_the_same_signatures(name, tmp_path):
    protocol = getattr(record_protocols, name)
    store = RecordStore(tmp_path / "zep.db")
    try:
        assert isinstance(store, protocol)
    finally:
        store.close()
    for method in _methods(protocol):
        wanted = inspect.signature(getattr(protocol, method))
        given = inspect.signature(getattr(RecordStore, method))
        assert [(p.name, p.kind, p.default) for p in wanted.parameters.values()] == [
            (p.name, p.kind, p.default) for p in given.parameters.values()], method


def _postgres_store() -> type:
    from zep_core.stores.postgres import PgRecordStore

    return PgRecordStore


def _memory_store() -> type:
    from tests.stores.memory_records import MemoryRecordStore

    return MemoryRecordStore


@pytest.mark.parametrize("store_class", [_postgres_store, _memory_store], ids=["postgres", "memory"])
@pytest.mark.parametrize("name", sorted(CONSUMERS))
def test_every_other_store_meets_each_protocol_with_the_same_signatures(name, store_class):
    """The PostgreSQL store, and the double in dicts the record contract also runs on."""
    store = store_class()
    protocol = getattr(record_protocols, name)
    for method in _methods(protocol):
        assert hasattr(store, method), f"{store.__name__} lacks {name}.{method}"
        wanted = inspect.signature(getattr(protocol, method))
        given = inspect.signature(getattr(store, method))
        assert [(p.name, p.kind, p.default) for p in wanted.parameters.values()] == [
            (p.name, p.kind, p.default) for p in given.parameters.values()], method
