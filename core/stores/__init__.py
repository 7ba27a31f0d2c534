"""The stores: the record store and the vector and graph indexes, opened together by the config's backend.

:func:`open_stores` opens what the config names through the registry of backends
(:mod:`zep_core.stores.backends`): the data folder by default (SQLite, Chroma and Kùzu:
:mod:`zep_core.stores.folder`), or a database by its URL (PostgreSQL:
:mod:`zep_core.stores.postgres`). :class:`zep_core.Memory` receives its stores from it — or
from any function with the same signature (``Memory(config, stores=my_open_stores)``), so a
server-grade vector or graph store plugs in without the domain code asking which backend it has.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .backends import backend_for
from .opened import StoreOpener, Stores

if TYPE_CHECKING:
    from ..config import MemoryConfig

__all__ = ["StoreOpener", "Stores", "open_postgres", "open_stores"]


def open_stores(config: MemoryConfig) -> Stores:
    """Open (or create) the stores of ``config``'s backend (:func:`~zep_core.stores.backends.backend_for`).

    Raises:
        ConfigError: ``database_url`` names no backend zep-memory knows.
        StoreLockedError: another process has the data folder open.
        StoreError: a store cannot be opened (the message names it).

    """
    return backend_for(config).open(config)


def open_postgres(config: MemoryConfig) -> Stores:
    """The stores on PostgreSQL (``config.database_url``); :func:`open_stores` opens them too, by the URL."""
    from .postgres.backend import open_database

    return open_database(config)
