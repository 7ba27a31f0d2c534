"""The backends a memory lives on, one registry entry each: the one place a config's backend is chosen.

``database_url`` chooses a backend by its URL scheme (``postgresql://``); without one, the
memory lives in its data folder (SQLite with Chroma and Kùzu beside it). Each entry, a
:class:`Backend`, knows how to open its stores, how to describe them (what holds the memory,
what ``doctor`` compares, how much disk it takes) and how to show or save its URL without
the password. Code outside :mod:`zep_core.stores` asks :func:`backend_for`: it never
imports a backend's modules, nor tests a URL or a setting to tell the backends apart
(``tests/core/test_backend_names.py`` keeps it so). Each backend's code is imported only
when a config chooses it.

Example:
    >>> from zep_core import MemoryConfig
    >>> config = MemoryConfig(database_url="postgresql://zep:secret@db/memory")
    >>> backend = backend_for(config)
    >>> backend.name, backend.public_url(config), backend.reference(config)["database_url"]
    ('postgres', 'postgresql://zep:***@db/memory', 'postgresql://zep@db/memory')
    >>> backend_for(MemoryConfig()).name
    'sqlite'

"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from ..errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..config import MemoryConfig
    from .opened import Stores

__all__ = ["BACKENDS", "Backend", "backend_for", "is_database_url"]

#: ``scheme://`` at the start of a text: a URL, not a folder (a Windows drive's ``C:\\`` is not one).
_URL = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://")


class Backend:
    """A backend: how a config chooses it, opens it, describes it and names it without a password.

    The class attributes are what ``stats``, ``doctor`` and ``rebuild`` say of it; each is
    true of this backend only.
    """

    #: The registry's name of the backend (``stats()["backend"]``).
    name: ClassVar[str]
    #: The URL schemes of ``database_url`` that choose it; none: the default, chosen without a URL.
    schemes: ClassVar[tuple[str, ...]] = ()
    #: What the first line of ``stats`` names the memory's place.
    place: ClassVar[str]
    #: ``(key, label)`` of each part :meth:`disk_use` measures besides ``total``.
    parts: ClassVar[tuple[tuple[str, str], ...]]
    #: What keeps the records, as ``stats`` names it; and where a small user's vectors are searched.
    records: ClassVar[str]
    #: Where a large user's vectors are searched: ``{users}`` is how many users that is.
    own_vector_index: ClassVar[str]
    #: What ``stats`` calls the graph index.
    graph: ClassVar[str]
    #: What ``doctor`` says when every check passes.
    agree: ClassVar[str]
    #: What ``rebuild`` recreates, and from what (``doctor``'s repair); and what ``rebuild`` says it did.
    rebuilds: ClassVar[str]
    rebuilt: ClassVar[str]

    def open(self, config: MemoryConfig) -> Stores:
        """Open (or create) the stores ``config`` names."""
        raise NotImplementedError

    def public_url(self, config: MemoryConfig) -> str | None:
        """The URL of the memory as it may be shown, its password as ``***``; None for a memory with no URL."""
        return None

    def saved_url(self, config: MemoryConfig) -> str | None:
        """The URL as a saved reference keeps it: no password at all (None: no URL).

        The process that opens it again gives the password the way the backend's own clients
        do (for PostgreSQL ``PGPASSWORD`` or ``~/.pgpass``), never the saved data.
        """
        return None

    def where(self, config: MemoryConfig) -> str:
        """Where the memory is, as a person reads it: the public URL, else the data folder."""
        return self.public_url(config) or str(config.data_path)

    def reference(self, config: MemoryConfig) -> dict[str, str]:
        """What a saved context keeps to open this memory again: ``data_dir``, and ``database_url`` if any."""
        url = self.saved_url(config)
        return {"database_url": url, "data_dir": str(config.data_path)} if url else {"data_dir": str(config.data_path)}

    def missing(self, config: MemoryConfig) -> str | None:
        """Why there is no memory at ``config``'s place to open (None: there is one, or only opening can tell)."""
        return None

    def remove_if_unused(self, config: MemoryConfig) -> Callable[[], None] | None:
        """What undoes a first open that stored nothing (None: it leaves nothing to undo)."""
        return None

    def disk_use(self, config: MemoryConfig) -> dict[str, int | None]:
        """Bytes each of :attr:`parts` takes (None: not there), and ``total``."""
        raise NotImplementedError


class DataFolder(Backend):
    """The default: SQLite, the system of record, and the Chroma and Kùzu indexes, in one data folder."""

    name = "sqlite"
    place = "data folder"
    parts = (("sqlite", "SQLite"), ("chroma", "Chroma"), ("graph", "Kùzu"))
    records = "SQLite"
    own_vector_index = "Chroma, the collections of {users} users past vector_exact_below"
    graph = "Kùzu"
    agree = "SQLite, Chroma and Kùzu agree"
    rebuilds = "recreates Chroma and Kùzu from SQLite, the system of record"
    rebuilt = "rebuilt the Chroma and Kùzu indexes from SQLite"

    def open(self, config: MemoryConfig) -> Stores:
        """Lock the folder, open SQLite, check what a crash left, open Chroma and Kùzu (:mod:`.folder`)."""
        from .folder import open_folder

        stores = open_folder(config)
        stores.backend = self.name
        return stores

    def missing(self, config: MemoryConfig) -> str | None:
        """Why the folder holds no memory: it does not exist, or has no record store."""
        from .folder import missing

        return missing(Path(config.data_dir))  # named as the user gave it

    def remove_if_unused(self, config: MemoryConfig) -> Callable[[], None] | None:
        """For a new folder: what removes what the open made there, if nothing was stored."""
        from .folder import remove_if_unused

        return remove_if_unused(Path(config.data_dir))

    def disk_use(self, config: MemoryConfig) -> dict[str, int | None]:
        """The files of the folder: SQLite's (with its logs), Chroma's (None: no folder), Kùzu's."""
        from .folder import disk_use

        return disk_use(config.data_path)


class Postgres(Backend):
    """PostgreSQL with pgvector: the records, and their own tables as the vector and graph indexes."""

    name = "postgres"
    schemes = ("postgresql", "postgres")
    place = "database"
    parts = (("postgres", "PostgreSQL"),)
    records = "PostgreSQL"
    own_vector_index = "the HNSW indexes of {users} users past postgres_exact_below"
    graph = "graph"
    agree = "PostgreSQL's records, HNSW copies and lexical index agree"
    rebuilds = "rebuilds the lexical index and the HNSW indexes from the records"
    rebuilt = "rebuilt the lexical index and the HNSW indexes from the records"

    def open(self, config: MemoryConfig) -> Stores:
        """Connect, migrate the schema if it is older, and use the record tables as the indexes."""
        from .postgres.backend import open_database

        stores = open_database(config)
        stores.backend = self.name
        return stores

    def public_url(self, config: MemoryConfig) -> str | None:
        """``database_url`` with its password (in the user part or a parameter) as ``***``."""
        from .postgres.connection import public_url

        return public_url(_url(config))

    def saved_url(self, config: MemoryConfig) -> str | None:
        """``database_url`` with no password."""
        from .postgres.connection import url_without_password

        return url_without_password(_url(config))

    def disk_use(self, config: MemoryConfig) -> dict[str, int | None]:
        """The bytes of zep-memory's tables and their indexes in the database (on a connection of its own)."""
        from .postgres.backend import database_bytes

        size = database_bytes(_url(config), connect_timeout_s=config.busy_timeout_ms / 1000)
        return {"postgres": size, "total": size}


#: Every backend, the default (chosen without a URL) first.
BACKENDS: tuple[Backend, ...] = (DataFolder(), Postgres())


def backend_for(config: MemoryConfig) -> Backend:
    """The backend ``config`` chooses: by the scheme of ``database_url``, else the data folder.

    Raises:
        ConfigError: ``database_url`` is not a URL, or its scheme is one no backend takes
            (the message names the known ones, and never shows the URL: it may hold a password).

    """
    url = config.database_url
    if url is None:
        return BACKENDS[0]
    return _by_scheme(url, "database_url")


def is_database_url(text: str) -> bool:
    """Whether ``text`` names a database by its URL (``scheme://…``) rather than a data folder.

    Raises:
        ConfigError: ``text`` is a URL whose scheme no backend takes.

    """
    if _URL.match(text) is None:
        return False
    _by_scheme(text, "data_dir")
    return True


def _by_scheme(url: str, what: str) -> Backend:
    match = _URL.match(url)
    scheme = match.group("scheme").lower() if match else None
    for backend in BACKENDS:
        if scheme in backend.schemes:
            return backend
    known = ", ".join(f"{s}:// ({b.records})" for b in BACKENDS for s in b.schemes)
    got = f"it starts {scheme + '://'!r}" if scheme else "it is not a URL (scheme://…)"
    raise ConfigError(f"{what} names no database zep-memory knows: {got}, and the known ones are {known}; "
                      "without a URL the memory lives in its data folder")


def _url(config: MemoryConfig) -> str:
    """The config's database URL (a backend with schemes is only chosen with one)."""
    if config.database_url is None:  # pragma: no cover - backend_for never chooses a URL backend without one
        raise ConfigError("this backend needs database_url")
    return config.database_url
