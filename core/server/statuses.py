"""Which HTTP status each error travels with: one table, read by the server, its OpenAPI document and the client.

:data:`STATUSES` is the only place that says it. The server answers an exception with
the status of the first row whose class the exception is an instance of (a subclass's
row comes before its parent's; anything that is not a :class:`~zep_core.ZepMemoryError`
is answered as the last row, ``internal error``), and the answer's ``type`` is the
nearest public class (:func:`public_class`: the two private classes below travel as
their parents). ``/openapi.json`` lists, for every endpoint, each status with what its
rows mean. :class:`~zep_core.server.RemoteMemory` raises the class an answer names; an
answer that names none it knows — a proxy's own page, a class of a newer server — is
raised as the class the table gives its status (:func:`error_class`).

docs/server.md shows the table to readers ("What each status means"); a test holds it
to this one.
"""

from __future__ import annotations

from typing import NamedTuple

from .. import errors as _errors
from ..errors import (
    ConfigError,
    ExtractionError,
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

__all__ = ["GATEWAY_STATUSES", "STATUSES", "BodyTooLarge", "Status", "Unauthenticated", "error_class",
           "public_class", "status_of"]


class Unauthenticated(PermissionDeniedError):
    """No API key, or one the server does not know (it travels as a ``PermissionDeniedError``)."""


class BodyTooLarge(ValidationError):
    """A request body over the server's ``max_body_bytes`` (it travels as a ``ValidationError``)."""


class Status(NamedTuple):
    """One row of the table: an error class, the HTTP status it is answered with, and what that means."""

    error: type[ZepMemoryError]
    status: int
    means: str


#: Every error the server answers with, in the order the server matches an exception against them.
STATUSES: tuple[Status, ...] = (
    Status(Unauthenticated, 401, "no API key, or one the server does not know: check api_key"),
    Status(PermissionDeniedError, 403, "a user this key is not bound to, or a whole-store verb without an "
                                       "admin key"),
    Status(BodyTooLarge, 413, "the request body is over the server's max_body_bytes"),
    Status(ValidationError, 422, "bad input (InvariantError included) or a malformed request; nothing was stored"),
    Status(NotFoundError, 404, "an unknown user, entity or episode (or another user's episode), or an unknown "
                               "endpoint"),
    Status(QueryError, 400, "a cypher() that is not read-only or does not parse"),
    Status(StoreLockedError, 503, "the data folder is held by another process"),
    Status(StoreUnavailableError, 503, "a store cannot work (a full or failing disk, a vector index that does "
                                       "not answer), or the server is stopping or at its --max-connections: retry "
                                       "once the cause is gone"),
    Status(ProviderError, 502, "the server's LLM or embedding provider failed"),
    Status(ExtractionError, 502, "the extractor failed (the episode stays pending)"),
    Status(StoreError, 500, "a store failed on the server (the record store, or the vector or graph index)"),
    Status(ConfigError, 500, "the server's configuration"),
    Status(ZepMemoryError, 500, "any other error; anything unexpected is 'internal error' (the server logs it)"),
)

#: HTTP's gateway statuses: what a proxy in front answers while the server behind it is down
#: or restarting. The client sends an idempotent call again after one of them, and raises one
#: that does not carry the server's error as a ``StoreError``, as it does a lost connection.
GATEWAY_STATUSES = frozenset({502, 503, 504})

_PUBLIC: dict[str, type[ZepMemoryError]] = {name: getattr(_errors, name) for name in _errors.__all__}


def public_class(cls: type[BaseException]) -> type[ZepMemoryError]:
    """The nearest class of :mod:`zep_core.errors` that ``cls`` is (``ZepMemoryError`` for any other class)."""
    for parent in cls.__mro__:
        if _PUBLIC.get(parent.__name__) is parent:
            return parent
    return ZepMemoryError


def status_of(cls: type[BaseException]) -> int:
    """The status an error of class ``cls`` is answered with: its first row, else the last (``internal error``)."""
    return next((row.status for row in STATUSES if issubclass(cls, row.error)), STATUSES[-1].status)


def error_class(name: object, status: int) -> type[ZepMemoryError]:
    """The class a client raises for an answer of ``status`` whose error says it is of class ``name``.

    ``name`` when it is a public error class; else :data:`GATEWAY_STATUSES` are a
    ``StoreError`` (the server could not be reached behind a proxy) and any other status
    the one class every row of it shares (``ZepMemoryError`` for a status the table lacks).
    """
    named = _PUBLIC.get(name) if isinstance(name, str) else None
    if named is not None:
        return named
    if status in GATEWAY_STATUSES:
        return StoreError
    classes = [public_class(row.error) for row in STATUSES if row.status == status]
    if not classes:
        return ZepMemoryError
    return next(parent for parent in classes[0].__mro__ if all(issubclass(c, parent) for c in classes))
