"""The tenant key: a user id checked once, at the API boundary, and the only key the stores take.

Every row of the record store belongs to one user, and every read of it seeks a key led
by ``user_id`` (``tests/stores/test_query_plans.py``). What may stand in that place is a
:class:`Tenant`: made by :meth:`Tenant.of` from a user id that :func:`check_id` accepted
(what the public API does with the ``user_id`` it is given), or by :meth:`Tenant.stored`
from a user id the store's own rows hold (checked when it was written). The record store's
tenant methods refuse anything else (:func:`key`), so no path can hand a query a user id
that was never checked, or a string that only looks like one.

A tenant is a ``str`` (the id the tables hold): SQL parameters, dict keys, JSON and log
lines take it as they took the user id, and it compares equal to it.
"""

from __future__ import annotations

from typing import Any

from .validation import check_id

__all__ = ["Tenant", "check_ids", "key"]


class Tenant(str):
    """A checked user id (see the module): make one with :meth:`of`, never by calling the class."""

    __slots__ = ()

    def __new__(cls, *_: Any, **__: Any) -> Tenant:  # noqa: D102 - not to be called
        raise TypeError("make a Tenant with Tenant.of(user_id), which checks the id")

    @classmethod
    def of(cls, user_id: Any) -> Tenant:
        """The tenant of ``user_id``, once :func:`check_id` accepts it (a :class:`ValidationError` if not)."""
        if type(user_id) is cls:
            return user_id
        return str.__new__(cls, check_id(user_id, "user_id"))

    @classmethod
    def stored(cls, user_id: str) -> Tenant:
        """The tenant of a user id read back from the store's own rows (checked when it was written)."""
        if type(user_id) is cls:
            return user_id
        if not isinstance(user_id, str):
            raise TypeError(f"a stored user id is a string, got {type(user_id).__name__}")
        return str.__new__(cls, user_id)

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        # Pickled (to a child process: the Cypher sandbox, the vector process) it is the plain id:
        # the tenant is this process's word that the id was checked, and means nothing elsewhere.
        return str, (str(self),)


def key(tenant: Any) -> Tenant:
    """``tenant`` itself if it is a :class:`Tenant`; anything else is a programming error (``TypeError``)."""
    if type(tenant) is not Tenant:
        raise TypeError(f"the record store takes a Tenant (zep_core.tenant.Tenant.of(user_id)), "
                        f"not {type(tenant).__name__} {tenant!r}")
    return tenant


def check_ids(**ids: str | None) -> tuple[str, ...]:
    """Check each given id and return them in order; ``user_id`` as its :class:`Tenant` (what the façade does first)."""
    return tuple(Tenant.of(value) if name == "user_id" else check_id(value, name) for name, value in ids.items())
