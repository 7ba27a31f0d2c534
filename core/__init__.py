"""zep-memory core: a temporal knowledge-graph memory for LLM agents.

Facts learned from conversations are kept with time — when each became true, when
it stopped, what replaced it — in a record store with a vector and a graph index (a
data folder's SQLite, Chroma and Kùzu, or PostgreSQL), and handed back by relevance in
milliseconds.

Example:
    >>> from zep_core import Memory, Message
    >>> memory = Memory.open("./data")                                     # doctest: +SKIP
    >>> memory.conversation_end("s1", [Message("I live in Paris", name="Ada")], user_id="ada")
    >>> memory.conversation_end("s2", [Message("I moved to Berlin", name="Ada")], user_id="ada")
    >>> [f.content for f in memory.get_context("Where does Ada live?", user_id="ada")]
    ['Ada lives in Berlin.', ...]

Importing this package has no side effects: no files, no sockets, no telemetry;
the stores and the embedding model are opened by :class:`Memory`.

"""

from .config import (
    DEFAULT_SINGLE_VALUED,
    SPEC_SCORING,
    LimitSettings,
    MemoryConfig,
    ProviderSettings,
    ScoringSettings,
    StorageSettings,
)
from .errors import (
    ConfigError,
    ExtractionError,
    InvariantError,
    NotFoundError,
    PermissionDeniedError,
    ProviderError,
    QueryError,
    StoreError,
    StoreLockedError,
    StoreUnavailableError,
    ValidationError,
    ZepMemoryError,
)
from .maintenance import MaintenanceReport
from .memory import Memory
from .models import Discarded, Entity, Episode, Fact, IngestResult, Message

__all__ = [
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

__version__ = "0.1.0"
