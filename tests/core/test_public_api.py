"""The public names of zep_core are a contract: adding or dropping one is a deliberate change."""

from __future__ import annotations

import inspect

import zep_core
from zep_core import Memory

EXPECTED_ALL = [
    "DEFAULT_SINGLE_VALUED",
    "SPEC_SCORING",
    "ConfigError",
    "Discarded",
    "Entity",
    "Episode",
    "ExtractionError",
    "Fact",
    "IngestResult",
    "InvariantError",
    "LimitSettings",
    "MaintenanceReport",
    "Memory",
    "MemoryConfig",
    "Message",
    "NotFoundError",
    "PermissionDeniedError",
    "ProviderError",
    "ProviderSettings",
    "QueryError",
    "ScoringSettings",
    "StorageSettings",
    "StoreError",
    "StoreLockedError",
    "StoreUnavailableError",
    "ValidationError",
    "ZepMemoryError",
]

#: The façade verbs DESIGN.md names, plus what the adapters, the CLI and the tools use.
FACADE = {
    "open", "close", "conversation_end", "get_context", "context_block", "entity_history", "related_entities",
    "cypher", "refresh_entities", "forget_user", "rebuild", "get_entity", "get_episode", "has_user", "users",
    "episode_ids", "facts", "export_records", "export_user", "import_user", "add_messages", "get_messages",
    "unended_count", "clear_messages", "end_session", "maintain", "flush", "check_consistency", "stats", "now",
}


def test_all_is_pinned():
    assert sorted(zep_core.__all__) == sorted(EXPECTED_ALL)
    for name in EXPECTED_ALL:
        assert getattr(zep_core, name) is not None


def test_the_facade_has_its_verbs_and_keeps_its_stores_private():
    public = {name for name, _ in inspect.getmembers(Memory) if not name.startswith("_")}
    assert FACADE <= public, sorted(FACADE - public)
    assert not public & {"records", "vectors", "graph"}
