"""Who may do what: a request's key becomes a :class:`~zep_core.server.keys.Principal`, its body a :class:`Scope`.

Every verb says which users (or the whole store) a request touches (:attr:`Verb.scope
<zep_core.server.verbs.Verb.scope>`, one of the functions below); :func:`authorize`
refuses what the key may not touch before anything is read or written. A verb of one
user whose request names none is for the key's user when the key is bound to one
(:func:`named_user`); there is no shared default user.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, Protocol

from ..errors import PermissionDeniedError, ValidationError
from . import wire
from .keys import OPEN, KeyRing, Principal
from .statuses import Unauthenticated

__all__ = ["Scope", "authenticator", "bearer", "authorize", "episode_scope", "episodes_users", "named_user", "one_user",
           "user_or_all", "whole_store"]


class Scope(NamedTuple):
    """What a request touches: these users, the whole store (``admin``), or nothing to check (both empty).

    "Nothing to check" is for verbs that filter their own answer to the key's users
    (``users``, ``get_episode`` without a user).
    """

    users: tuple[str, ...] = ()
    admin: bool = False


def authenticator(keys: KeyRing | None, *, how: str = "RemoteMemory(url, api_key=...)",
                  server: str = "this server") -> Callable[[str | None], Principal]:
    """``principal_of(key)``: whom a request's bearer key (None: no key) stands for under ``keys``.

    ``keys=None`` lets every request use every user (:data:`~zep_core.server.keys.OPEN`).
    The function raises :class:`~zep_core.server.statuses.Unauthenticated` (401) for no
    key, or one the server does not know. ``how`` (where a client sets the key) and
    ``server`` (what the server is) are for the message.
    """

    def principal_of(key: str | None) -> Principal:
        if keys is None:
            return OPEN
        if key is None:
            raise Unauthenticated(f"{server} needs an API key: send 'Authorization: Bearer <key>' ({how})")
        principal = keys.authenticate(key)
        if principal is None:
            raise Unauthenticated("unknown API key: the server does not accept it; check the key")
        return principal

    return principal_of


def bearer(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """The key of an ``Authorization: Bearer <key>`` header among raw ASGI ``headers``; None without one.

    Read as FastAPI's ``HTTPBearer`` reads it: the scheme in any case, the key stripped.
    """
    for name, value in headers:
        if name == b"authorization":
            scheme, _, key = value.decode("latin-1").partition(" ")
            key = key.strip()
            return key if scheme.lower() == "bearer" and key else None
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def authorize(principal: Principal, scope: Scope) -> None:
    """Refuse a request its key may not make, before anything is read or written.

    Raises:
        PermissionDeniedError: a user the key is not bound to, or a whole-store verb
            without an admin key.

    """
    if scope.admin and not principal.admin:
        raise PermissionDeniedError("this request reads or changes every user's memory and needs an admin key; "
                                    "name one of this key's users (user_id) where the verb takes one")
    for user in scope.users:
        if not principal.may(user):
            raise PermissionDeniedError(f"this API key may not read or write user {_short(user)}; "
                                        "use a key bound to that user")


def one_user(body: Any) -> Scope:
    """A verb of the one user the body names (``user_id``)."""
    return Scope((body.user_id,))


def user_or_all(body: Any) -> Scope:
    """A verb of the user the body names, or of every user (admin keys only) when it names none."""
    return Scope((body.user_id,)) if body.user_id is not None else Scope(admin=True)


def whole_store(body: Any) -> Scope:
    """A verb over the whole store: admin keys only."""
    return Scope(admin=True)


def episodes_users(body: wire.ConversationEndManyRequest) -> Scope:
    """``conversation_end_many``: the user of each episode."""
    return Scope(tuple(dict.fromkeys(e.user_id for e in body.episodes)))


def episode_scope(body: wire.EpisodeRequest) -> Scope:
    """``get_episode``: the user it names; else nothing to check (the verb hides other users' episodes)."""
    return Scope((body.user_id,)) if body.user_id is not None else Scope()


def _key_user(principal: Principal) -> str:
    """The user a request that names none is for: the key's only user; any other key must name one."""
    if not principal.admin and len(principal.users) == 1:
        return next(iter(principal.users))
    may = "any user" if principal.admin else f"{len(principal.users)} users"
    raise ValidationError(f"user_id is required: this key may use {may}, so say which one (there is no shared "
                          "default user; a key bound to one user may leave it out)")


class _Scoped(Protocol):
    """What :func:`named_user` reads of a verb (:class:`zep_core.server.verbs.Verb`): its scope function."""

    scope: Callable[[Any], Scope]


def named_user(verb: _Scoped, body: Any, principal: Principal) -> Any:
    """``body`` with the key's user where a verb of one user names none (:func:`_key_user`).

    Raises:
        ValidationError: the request names no user and the key is not bound to exactly one.

    """
    if verb.scope is one_user and body.user_id is None:
        return body.model_copy(update={"user_id": _key_user(principal)})
    if verb.scope is episodes_users and any(e.user_id is None for e in body.episodes):
        user = _key_user(principal)
        return body.model_copy(update={"episodes": [e if e.user_id is not None else e.model_copy(
            update={"user_id": user}) for e in body.episodes]})
    return body
