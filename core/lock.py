"""The data folder's lock, now :mod:`zep_core.stores.lock` (the data folder is a backend's); re-exported here."""

from __future__ import annotations

from .stores.lock import DataDirLock

__all__ = ["DataDirLock"]
