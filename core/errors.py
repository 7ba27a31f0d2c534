"""One exception tree for zep-memory.

Every error raised on purpose by the library derives from :class:`ZepMemoryError`,
so callers can catch one type; store errors are wrapped at the store boundary.

::

    ZepMemoryError
     ├── ValidationError        bad input: message, date, confidence, id, size
     │    └── InvariantError    a record breaks the spec's invariant (valid_from <= valid_until)
     ├── NotFoundError          unknown user, entity or episode
     ├── ConfigError            bad configuration, or a data folder built with another embedder
     ├── StoreError             SQLite, Chroma or Kùzu failed
     │    └── StoreLockedError  another process holds the data folder
     ├── ExtractionError        the extractor failed (the episode stays pending)
     ├── ProviderError          an LLM or embedding endpoint failed after retries
     ├── QueryError             a Cypher query was refused or failed
     └── PermissionDeniedError  a memory server refused the API key, or the user it asked for
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "ExtractionError",
    "InvariantError",
    "NotFoundError",
    "PermissionDeniedError",
    "ProviderError",
    "QueryError",
    "StoreError",
    "StoreLockedError",
    "ValidationError",
    "ZepMemoryError",
]


class ZepMemoryError(Exception):
    """Base of every error zep-memory raises on purpose."""


class ValidationError(ZepMemoryError, ValueError):
    """Input was malformed; the message says what and how to fix it."""


class InvariantError(ValidationError):
    """A record violates ``valid_from <= valid_until or valid_until is None``."""


class NotFoundError(ZepMemoryError, LookupError):
    """An unknown user, entity or episode was asked for."""


class ConfigError(ZepMemoryError):
    """The configuration is invalid or does not match the data folder."""


class StoreError(ZepMemoryError):
    """One of the three stores (SQLite, Chroma, Kùzu) failed."""


class StoreLockedError(StoreError):
    """Another process holds the data folder open for writing."""


class ExtractionError(ZepMemoryError):
    """Fact extraction failed; the episode and its messages remain stored, pending."""


class ProviderError(ZepMemoryError):
    """An LLM or embedding endpoint failed after bounded retries."""


class QueryError(ZepMemoryError):
    """A Cypher query was refused (write clause, missing scope) or failed."""


class PermissionDeniedError(ZepMemoryError):
    """A memory server (``zep-memory serve``) refused the request.

    The API key was missing or unknown (HTTP 401), or it may not use the user the
    request names, or the verb needs an admin key (HTTP 403). Nothing was read or written.
    """


def install_hint(extra: str) -> str:
    """How to install an optional extra, for an installed package and for a clone of the repository."""
    return f"pip install 'zep-memory[{extra}]' (from a clone of the repository: pip install -e '.[{extra}]')"
