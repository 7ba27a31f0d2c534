"""API keys of the memory server: each bound to the user ids it may read and write, or an admin key.

Keys reach the server in a JSON file (``zep-memory serve --keys FILE``, or the
environment variable ``ZEP_MEMORY_KEYS_FILE`` naming one) or as JSON text in the
environment variable ``ZEP_MEMORY_API_KEYS`` — never as a command-line value, which
``ps`` would show to every user of the machine::

    {"keys": [
        {"key": "k7Vd…", "users": ["alice", "bob"], "name": "chat-bot"},
        {"key": "Zq0w…", "admin": true, "name": "nightly-maintain"}
    ]}

A key bound to ``users`` may use only those user ids; an ``admin`` key may use any
user and the verbs that touch the whole store (``maintain``, ``flush``, ``rebuild``,
``stats`` and ``check_consistency`` of every user, every user's episode ids). ``name``
(optional) labels the key in the server's log; the key itself is never logged or
shown in an error. Keys are at least 16 characters (``python -c "import secrets;
print(secrets.token_urlsafe(32))"`` makes a good one); the ring keeps only their
SHA-256 digests and compares those with :func:`hmac.compare_digest`.

Example:
    >>> ring = KeyRing.from_json('{"keys": [{"key": "alice-key-0123456789", "users": ["alice"]}]}')
    >>> ring.authenticate("alice-key-0123456789").may("alice")
    True
    >>> ring.authenticate("wrong") is None
    True

"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, ValidationError
from ..validation import check_id

__all__ = ["ENV_KEYS", "ENV_KEYS_FILE", "MIN_KEY_CHARS", "ApiKey", "KeyRing", "Principal"]

#: The environment variable holding the keys as JSON text.
ENV_KEYS = "ZEP_MEMORY_API_KEYS"
#: The environment variable naming a keys file.
ENV_KEYS_FILE = "ZEP_MEMORY_KEYS_FILE"
#: The shortest key accepted: shorter ones can be guessed.
MIN_KEY_CHARS = 16
_ENTRY_FIELDS = ("key", "users", "admin", "name")


@dataclass(frozen=True)
class Principal:
    """Who a request comes from: the users its key may use, or an admin.

    Attributes:
        name: the key's label (for the log), never the key itself.
        users: the user ids the key may read and write (empty for an admin).
        admin: any user, and the whole-store verbs.

    """

    name: str
    users: frozenset[str] = frozenset()
    admin: bool = False

    def may(self, user_id: Any) -> bool:
        """Whether this key may read and write ``user_id``."""
        return self.admin or (isinstance(user_id, str) and user_id in self.users)


#: The principal of every request when the server runs with no keys (allowed on loopback only).
OPEN = Principal("no keys configured", admin=True)


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8")).digest()


@dataclass(frozen=True)
class ApiKey:
    """One key of a :class:`KeyRing`: the digest of its secret and what it may do."""

    digest: bytes
    principal: Principal

    @classmethod
    def of(cls, key: str, *, users: Iterable[str] = (), admin: bool = False, name: str | None = None) -> ApiKey:
        """A key from its secret text (kept only as a digest).

        Raises:
            ConfigError: a key that is too short or holds whitespace, an empty or malformed
                user list, or both ``users`` and ``admin``.

        """
        entry: dict[str, Any] = {"key": key, "admin": admin, "name": name}
        users = list(users)
        if users or not admin:
            entry["users"] = users
        return _entry(entry, 0, "ApiKey.of")


class KeyRing:
    """The API keys a server accepts.

    Args:
        keys: the keys; at least one, no secret twice.

    Raises:
        ConfigError: no keys, or the same key twice.

    """

    def __init__(self, keys: Iterable[ApiKey]) -> None:
        self._keys = tuple(keys)
        if not self._keys:
            raise ConfigError("the key ring holds no keys; add at least one, or run the server without keys "
                              "(allowed on 127.0.0.1 only)")
        digests = [k.digest for k in self._keys]
        if len(set(digests)) != len(digests):
            raise ConfigError("the same API key is listed twice; give each client its own key")

    def __len__(self) -> int:
        return len(self._keys)

    def __repr__(self) -> str:
        return f"KeyRing({len(self._keys)} keys: {', '.join(k.principal.name for k in self._keys)})"

    def authenticate(self, presented: str | None) -> Principal | None:
        """The principal of the key ``presented`` (a Bearer token), or None when it is not one of ours.

        Every key is compared, in constant time, whatever matches.
        """
        if not isinstance(presented, str) or not presented:
            return None
        digest = _digest(presented)
        found = None
        for key in self._keys:
            if hmac.compare_digest(key.digest, digest):
                found = key.principal
        return found

    def serves(self, user_id: str) -> bool:
        """Whether some key of the ring may read and write ``user_id`` (one bound to it, or an admin key)."""
        return any(key.principal.may(user_id) for key in self._keys)

    @classmethod
    def from_data(cls, data: Any, source: str = "the keys") -> KeyRing:
        """A ring from decoded JSON: ``{"keys": [{"key": …, "users": […]} | {"key": …, "admin": true}]}``.

        Args:
            data: the decoded document.
            source: where it came from, named in error messages (a file, an env variable).

        Raises:
            ConfigError: naming the source, the entry (by position and name, never by its
                secret) and what is wrong with it.

        """
        if not isinstance(data, Mapping) or set(data) != {"keys"}:
            raise ConfigError(f"{source}: expected an object with one field, 'keys', a list of "
                              '{"key": ..., "users": [...]} or {"key": ..., "admin": true} entries')
        entries = data["keys"]
        if not isinstance(entries, list) or not entries:
            raise ConfigError(f"{source}: 'keys' must be a non-empty list of key entries")
        keys = [_entry(entry, i, source) for i, entry in enumerate(entries)]
        try:
            return cls(keys)
        except ConfigError as exc:
            raise ConfigError(f"{source}: {exc}") from None

    @classmethod
    def from_json(cls, text: str, source: str = "the keys") -> KeyRing:
        """A ring from JSON text (see :meth:`from_data`).

        Raises:
            ConfigError: the text is not JSON, or not a valid key list.

        """
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, TypeError) as exc:
            raise ConfigError(f"{source} is not valid JSON ({exc}); expected "
                              '{"keys": [{"key": ..., "users": [...]}]}') from None
        return cls.from_data(data, source)

    @classmethod
    def from_file(cls, path: str | Path) -> KeyRing:
        """A ring from a JSON file (see :meth:`from_data`).

        Raises:
            ConfigError: the file cannot be read, is not JSON, or is not a valid key list.

        """
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read the keys file {path}: {exc}") from None
        return cls.from_json(text, f"keys file {path}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> KeyRing | None:
        """The ring ``ZEP_MEMORY_API_KEYS`` (JSON) or ``ZEP_MEMORY_KEYS_FILE`` (a path) holds; None if neither is set.

        Raises:
            ConfigError: both are set, or the one set is not a valid key list.

        """
        env = os.environ if environ is None else environ
        text, path = env.get(ENV_KEYS), env.get(ENV_KEYS_FILE)
        if text and path:
            raise ConfigError(f"both {ENV_KEYS} and {ENV_KEYS_FILE} are set; set one of them")
        if text:
            return cls.from_json(text, ENV_KEYS)
        if path:
            return cls.from_file(path)
        return None


def _entry(entry: Any, position: int, source: str) -> ApiKey:
    """One entry of the ``keys`` list, checked; errors name it by position and name, never by its secret."""
    label = f"{source}: keys[{position}]"
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{label} must be an object with 'key' and 'users' (or 'admin': true)")
    name = entry.get("name")
    if name is not None:
        if not isinstance(name, str) or not name.strip() or len(name) > 100:
            raise ConfigError(f"{label}: 'name' must be a short non-empty string")
        label += f" ({name})"
    unknown = [k for k in entry if k not in _ENTRY_FIELDS]
    if unknown:
        raise ConfigError(f"{label}: unknown field {str(unknown[0])[:40]!r}; an entry has "
                          f"{', '.join(_ENTRY_FIELDS)}")
    key = entry.get("key")
    if not isinstance(key, str):
        raise ConfigError(f"{label}: 'key' must be a string (the secret the client sends as a Bearer token)")
    if len(key) < MIN_KEY_CHARS:
        raise ConfigError(f"{label}: the key is {len(key)} characters; use at least {MIN_KEY_CHARS} "
                          "(python -c \"import secrets; print(secrets.token_urlsafe(32))\")")
    if any(c.isspace() or not c.isprintable() or not c.isascii() for c in key):
        raise ConfigError(f"{label}: the key holds whitespace, control or non-ASCII characters; an HTTP "
                          "header cannot carry them")
    admin = entry.get("admin", False)
    if not isinstance(admin, bool):
        raise ConfigError(f"{label}: 'admin' must be true or false")
    users = entry.get("users")
    if admin and users is not None:
        raise ConfigError(f"{label}: an admin key may use every user; drop 'users', or 'admin'")
    if not admin:
        if not isinstance(users, list) or not users:
            raise ConfigError(f"{label}: 'users' must be a non-empty list of user ids (or set 'admin': true)")
        for i, user in enumerate(users):
            try:
                check_id(user, "user id")
            except ValidationError as exc:
                raise ConfigError(f"{label}: users[{i}]: {exc}") from None
    principal = Principal(name or f"key {position}", frozenset(users or ()), admin)
    return ApiKey(_digest(key), principal)
