"""One writing process per data folder, with an error that names the holder.

Kùzu allows one process to open a database for writing, and Chroma's embedded
client is not safe across processes either, so a second process opening the same
folder gets an immediate :class:`StoreLockedError` naming the folder and the
process that holds it — never a hang, never corruption.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

from .errors import StoreError, StoreLockedError

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows: Kùzu's own lock still applies
    fcntl = None  # type: ignore[assignment]

__all__ = ["DataDirLock"]


class DataDirLock:
    """An exclusive, non-blocking advisory lock on ``<data>/.zep.lock``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock or raise :class:`StoreLockedError` at once."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot create the lock file {self.path}: {exc}") from exc
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holder = self._holder(fd)
                os.close(fd)
                raise StoreLockedError(
                    f"the data folder {self.path.parent} is in use by {holder}; close the Memory "
                    "there (or stop that process) before opening it here, or use another data folder"
                ) from None
        info = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.strftime("%Y-%m-%dT%H:%M:%S")}
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(info).encode())
        os.fsync(fd)
        self._fd = fd

    @staticmethod
    def _holder(fd: int) -> str:
        try:
            info = json.loads(os.pread(fd, 4096, 0) or b"{}")
            return f"process {info.get('pid')} on {info.get('host')} (since {info.get('since')})"
        except (OSError, ValueError):
            return "another process"

    def release(self) -> None:
        """Release the lock (idempotent)."""
        if self._fd is not None:
            if fcntl is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
