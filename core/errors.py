"""One exception tree for zep-memory.

Every error raised on purpose by the library derives from :class:`ZepMemoryError`,
so callers can catch one type; store errors are wrapped at the store boundary.

::

    ZepMemoryError
     ├── ValidationError        bad input: message, date, confidence, id, size
     │    └── InvariantError    a record breaks the spec's invariant (valid_from <= valid_until)
     ├── NotFoundError          unknown user, entity or episode
     ├── ConfigError            bad configuration, or a data folder built with another embedder
     ├── StoreError             a store failed: the record store, or the vector or graph index
     │    ├── RecordStoreError  the record store failed (the system of record; a server answers it as a
     │    │                     StoreError, so it is not among the public names below)
     │    ├── StoreLockedError  another process holds the data folder
     │    └── StoreUnavailableError  a store could not work at all (disk full, I/O error, a call that never
     │                          returned): nothing acknowledged is lost; retry once the cause is gone
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
    "StoreUnavailableError",
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
    """A store failed: the record store, or the vector or graph index derived from it."""


class RecordStoreError(StoreError):
    """A read or write of the record store failed: the store's failure, never that of the rows handed to it.

    Each record store raises it for its database's own errors (it wraps them, whatever
    the driver), so the code above tells the system of record failing from an index
    refusing one row without asking which backend it has.
    """


class StoreLockedError(StoreError):
    """Another process holds the data folder open for writing."""


class StoreUnavailableError(StoreError):
    """A store could not do its work at all, through no fault of what was being written.

    The disk holding the data folder is full, the file system failed, or the vector
    index's process did not answer within ``MemoryConfig.vector_timeout_s``. What was
    acknowledged before is kept; index writes stay queued in the record store. Retry once the cause
    is gone (free space, say); the next open checks and repairs the derived indexes.
    """


#: How SQLite, Kùzu and Chroma word a full disk or a failed file write. Chroma 1.5 reports
#: some writes that failed for want of space only as a compaction that could not apply its
#: log (seen on a full tmpfs): its own store failed, not the vectors it was given.
_IO_FAILURES = ("database or disk is full", "no space left on device", "disk i/o error", "io exception",
                "cannot write to file", "read-only file system", "quota exceeded", "error in compaction",
                "failed to apply logs")


def is_io_failure(message: str) -> bool:
    """Whether a store's error message says the disk or the file system failed (not the data)."""
    text = message.lower()
    return any(words in text for words in _IO_FAILURES)


def store_error(message: str, kind: type[StoreError] = StoreError) -> StoreError:
    """The error for a store's failure: :class:`StoreUnavailableError`, saying what to do, when the store is at fault.

    That is a disk that failed, or a database another connection kept locked (Chroma's own
    stays so after its disk filled up): neither says anything about the data written.
    Any other failure is a ``kind`` (:class:`RecordStoreError` from a record store).
    """
    if is_io_failure(message):
        return StoreUnavailableError(f"{message}. The disk holding the data folder is full or failing: free space "
                                     "there (or fix the file system) and retry; nothing acknowledged was lost")
    if "database is locked" in message.lower():
        return StoreUnavailableError(f"{message}. Another connection held the database past the busy timeout; "
                                     "retry (nothing acknowledged was lost)")
    return kind(message)


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
    """How to install an optional extra: in a clone, and from a wheel or a git URL (nothing is on an index)."""
    return (f"pip install -e '.[{extra}]' in a clone of zep-memory (from a wheel or a git URL, install it again "
            f"with [{extra}]: docs/install.md)")
