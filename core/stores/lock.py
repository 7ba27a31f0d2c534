"""One writing process per data folder, with an error that names the holder.

Kùzu allows one process to open a database for writing, and Chroma's embedded
client is not safe across processes either, so a second process opening the same
folder gets an immediate :class:`StoreLockedError` naming the folder and the
process that holds it — never a hang, never corruption.

The lock is ``flock``: the kernel drops it when the holder dies, so a killed process
never blocks the next one. The file also says whether its last holder closed cleanly;
:attr:`DataDirLock.unclean_since` tells the next holder that it did not (and since
when it held the folder), so that it can check what a crash may have left half-written.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import time
from pathlib import Path

from ..errors import StoreError, StoreLockedError

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows: Kùzu's own lock still applies
    fcntl = None  # type: ignore[assignment]

__all__ = ["DataDirLock"]

#: The lock file's record is written in place, padded to this size: overwriting blocks the file
#: already has needs no free space, so on a full disk the record is still written.
_RECORD_BYTES = 512


class DataDirLock:
    """An exclusive, non-blocking advisory lock on ``<data>/.zep.lock``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        #: Set by :meth:`acquire` when the previous holder never released the lock (it
        #: crashed or was killed): when that holder took it, in epoch seconds.
        self.unclean_since: float | None = None
        #: Whether the vector index of the folder is to be rebuilt from SQLite: a holder found
        #: its disk failing (or killed a Chroma process mid-call), which can leave Chroma's
        #: files damaged without a word (:meth:`mark_repair`). Kept in the record until
        #: :meth:`clear_repair`, once the rebuild is recorded in SQLite.
        self.repair = False
        self._previous: dict = {}

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
                    "there (or stop that process) before opening it here, or use another data folder. "
                    "To share one memory between processes, serve it once (zep-memory serve --data "
                    f"{self.path.parent}) and connect each process with zep_core.server.RemoteMemory"
                ) from None
        self._previous = previous = self._read(fd)
        if previous.get("pid") is not None and not previous.get("closed"):
            started = previous.get("started")
            self.unclean_since = float(started) if isinstance(started, (int, float)) else 0.0
        self.repair = bool(previous.get("repair"))
        info = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.strftime("%Y-%m-%dT%H:%M:%S"),
                "started": time.time(), **({"repair": True} if self.repair else {})}
        try:
            self._write(fd, info)
        except OSError as exc:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            raise StoreError(f"cannot write the lock file {self.path}: {exc.strerror or exc}; "
                             + ("the disk holding the data folder is full: free space there and open it again"
                                if exc.errno == errno.ENOSPC else "check the data folder's file system")) from exc
        self._fd = fd

    @staticmethod
    def _read(fd: int) -> dict:
        try:
            info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        except (OSError, ValueError):
            return {}
        return info if isinstance(info, dict) else {}

    @staticmethod
    def _write(fd: int, info: dict) -> None:
        data = json.dumps(info).encode().ljust(_RECORD_BYTES)  # JSON reads trailing spaces as nothing
        os.pwrite(fd, data, 0)
        if os.fstat(fd).st_size > len(data):  # a longer record of an older version: shrinking needs no space
            os.ftruncate(fd, len(data))
        os.fsync(fd)

    def mark_repair(self) -> None:
        """Record now, in the lock file, that the vector index is to be rebuilt by the next open.

        Written at once (in place, so even on a full disk), so that it holds if this
        process is killed before it closes.
        """
        if self._fd is None or self.repair:
            return
        self.repair = True
        try:
            self._write(self._fd, {**self._read(self._fd), "repair": True})
        except OSError:  # the stores' own checks after an unclean shutdown are left
            pass

    def clear_repair(self) -> None:
        """The rebuild is recorded in SQLite now (it resumes from there if cut short)."""
        if self._fd is None or not self.repair:
            return
        self.repair = False
        record = self._read(self._fd)
        record.pop("repair", None)
        self._write(self._fd, record)

    @classmethod
    def _holder(cls, fd: int) -> str:
        info = cls._read(fd)
        if info.get("pid") is None:
            return "another process"
        return f"process {info.get('pid')} on {info.get('host')} (since {info.get('since')})"

    def release(self, *, clean: bool = True) -> None:
        """Release the lock (idempotent).

        Args:
            clean: record a clean close; ``False`` leaves the record unclean, for the next
                holder to check the stores: the unclean record this holder found (since
                the crash it did not recover from), or else its own (since it took the lock).

        """
        if self._fd is not None:
            try:
                current = self._read(self._fd)
                if clean:
                    self._write(self._fd, {**current, "closed": True})
                elif self.unclean_since is not None:
                    self._write(self._fd, {**self._previous, **({"repair": True} if current.get("repair") else {})})
            except OSError:  # the record stays unclean: the next holder will just check the stores once more
                pass
            if fcntl is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
