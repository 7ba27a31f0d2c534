"""The data folder: SQLite, the system of record, with the Chroma and Kùzu indexes beside it.

:func:`open_folder` is the one place that knows where each store lives in a folder and
how a folder is opened: it checks that the folder can be written, takes the folder lock
(:mod:`zep_core.stores.lock`), opens the record store, checks after a crash that Chroma's
files will load, and opens the two derived indexes. It is the default backend's opener
(:mod:`zep_core.stores.backends`), which also asks this module what a folder holds.

A read-only data folder is refused with a :class:`~zep_core.StoreError` that says so,
even for a memory that is only to be read: every open writes to the folder (the lock
file, SQLite's write-ahead log and shared-memory files, Chroma's and Kùzu's own files),
so there is no read-only open. Copy the folder somewhere writable to inspect it.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import StoreError
from .base import VectorIndex
from .lock import DataDirLock
from .opened import Stores, close_all
from .records import RecordStore

if TYPE_CHECKING:
    from ..config import MemoryConfig

__all__ = ["RECORDS_FILE", "disk_use", "missing", "open_folder", "remove_if_unused"]

log = logging.getLogger("zep_core")

#: The record store's file in a data folder: a folder without it holds no memory.
RECORDS_FILE = "zep.db"


def open_folder(config: MemoryConfig) -> Stores:
    """Open (or create) the data folder of ``config``: lock, SQLite, Chroma and Kùzu.

    Raises:
        StoreLockedError: another process has the folder open.
        StoreError: a store cannot be opened (the message names it).

    """
    from .graph import KuzuGraphIndex

    root = config.data_path
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise StoreError(f"cannot create the data folder {root}: the folder above it is read-only for this "
                             f"process ({exc.strerror}); choose a data folder you can write to, or make that one "
                             "writable") from exc
        raise StoreError(f"cannot create the data folder {root}: {exc}") from exc
    _check_writable(root)
    lock = DataDirLock(root / ".zep.lock")
    lock.acquire()
    opened: list[object] = []
    try:
        _check_records_present(root)
        records = RecordStore(root / "zep.db", busy_timeout_ms=config.busy_timeout_ms)
        opened.append(records)
        if lock.repair:
            _repair_indexes(records, root, lock, embedded_chroma=not config.chroma_url)
        elif lock.unclean_since is not None and not config.chroma_url:
            _check_chroma_files(records, root, lock.unclean_since)
        vectors = _open_vectors(root / "chroma", config, records)
        opened.append(vectors)
        graph = KuzuGraphIndex(root / "graph", buffer_pool_mb=config.graph_buffer_pool_mb)
        for store in (records, vectors, graph):  # a full disk seen by any store: the next open rebuilds the indexes
            if hasattr(store, "on_failure"):
                store.on_failure = lock.mark_repair
    except BaseException:
        close_all(reversed(opened))
        lock.release(clean=lock.unclean_since is None)  # a crash not yet recovered from stays one
        raise
    return Stores(records, vectors, graph, lock)


def _check_records_present(root: Path) -> None:
    """Refuse a folder whose indexes outlived its ``zep.db``: opened, it would be an empty memory over stale indexes.

    ``zep.db`` is written first, so indexes without it mean it was deleted or moved, not a
    first open cut short.
    """
    if (root / "zep.db").exists():
        return
    left = [name for name in ("graph", "chroma") if (root / name).exists()]
    if left:
        raise StoreError(f"{root / 'zep.db'}, the record store of this memory, is missing, while "
                         f"{' and '.join(f'{n}/' for n in left)} of an earlier memory are still in {root}: it was "
                         "deleted or moved, and everything the indexes hold is derived from it. Put zep.db back "
                         "(from a backup) to open that memory; or, to start an empty memory in this folder, "
                         f"remove {' and '.join(str(root / n) for n in left)} first")


def _open_vectors(path: Path, config: MemoryConfig, records: RecordStore) -> VectorIndex:
    """The vector index: exact search in SQLite for small users, Chroma (opened lazily) for large ones.

    Chroma is a server, or the embedded client (in a child process where it can be);
    see :mod:`zep_core.stores.tiered` for the two tiers.
    """
    from .tiered import TieredVectorIndex

    return TieredVectorIndex(records, lambda: _open_chroma(path, config), exact_below=config.vector_exact_below,
                             max_open=config.vector_collections_open,
                             chroma_path=None if config.chroma_url else path)


def _open_chroma(path: Path, config: MemoryConfig) -> VectorIndex:
    """The Chroma index: a server, or the embedded client (in a child process where it can be)."""
    from . import vector_process
    from .vectors import ChromaVectorIndex

    if config.chroma_url or not config.chroma_process or not vector_process.available():
        return ChromaVectorIndex(path, url=config.chroma_url)
    return vector_process.ChromaProcess(path, timeout_s=config.vector_timeout_s)


#: What an open writes to, relative to the data folder (those that exist are checked).
_WRITTEN = (".zep.lock", "zep.db", "zep.db-wal", "zep.db-shm", "chroma", "chroma/chroma.sqlite3", "graph", "graph.wal")


def _check_writable(root: Path) -> None:
    """Refuse a data folder this process cannot write to, naming what is read-only and what to do."""
    if not os.access(root, os.R_OK | os.X_OK):
        raise StoreError(f"the data folder {root} cannot be read by this process (permission denied); give this "
                         "user read and write access to it (chmod/chown), or open another folder")
    blocked = [name for name in _WRITTEN if (root / name).exists() and not os.access(root / name, os.W_OK)]
    if not os.access(root, os.W_OK):
        blocked.insert(0, "the folder itself")
    if blocked:
        raise StoreError(
            f"the data folder {root} is read-only for this process (not writable: {', '.join(blocked)}). "
            "zep-memory writes to its data folder even to read (the folder lock, SQLite's write-ahead log, "
            "the indexes' files), so it cannot open a read-only one: make it writable for this user "
            "(chmod/chown, or mount it read-write), or copy the folder somewhere writable and open the copy")


def _check_chroma_files(records: RecordStore, root: Path, since: float) -> None:
    """After a crash, make sure Chroma's files will not crash this process.

    Chroma writes its HNSW files in place, so a process killed meanwhile can leave
    files that segfault the next reader. They are loaded in a child process first
    (see :mod:`zep_core.stores.chroma_check`); if that fails they are deleted and a
    rebuild from SQLite is recorded as pending, to run once the stores are open.
    """
    from .chroma_check import chroma_loads
    from .vector_process import wait_for_owner

    chroma_dir = root / "chroma"
    if not wait_for_owner(chroma_dir):  # a child of the crashed memory finishes its write, or is killed
        raise StoreError(f"another process still has {chroma_dir} open, and it is not a Chroma process left by "
                         f"an earlier holder of {root} that could be stopped; stop it and open the folder again")
    if chroma_loads(chroma_dir, since):
        return
    log.warning("rebuilding the vector index of %s from SQLite after an unclean shutdown", root)
    records.set_meta("rebuild", "pending")
    shutil.rmtree(chroma_dir, ignore_errors=True)


def _repair_indexes(records: RecordStore, root: Path, lock: DataDirLock, *, embedded_chroma: bool) -> None:
    """The last holder saw its disk fail: rebuild both indexes from SQLite on this open.

    Neither index's files are trusted then. On a full disk Chroma 1.5 can leave a
    collection it could not compact unreadable, or readable but refusing every later
    write, without reporting anything at the time; Kùzu's log may end in a torn record
    (both seen on a full tmpfs). Their files are deleted and the rebuild recorded in
    SQLite first, where :class:`~zep_core.Memory` resumes it if it is cut short.
    """
    from .vector_process import wait_for_owner

    chroma_dir = root / "chroma"
    log.warning("the last holder of %s found its disk full or failing: rebuilding the indexes from SQLite", root)
    records.set_meta("rebuild", "pending")  # on a disk still full this fails, and the mark stays for the next open
    if embedded_chroma:
        if not wait_for_owner(chroma_dir):
            raise StoreError(f"another process still has {chroma_dir} open, and it is not a Chroma process left "
                             f"by an earlier holder of {root} that could be stopped; stop it and open the folder again")
        shutil.rmtree(chroma_dir, ignore_errors=True)
    for name in ("graph", "graph.wal"):
        path = root / name
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        elif path.exists():
            path.unlink()
    lock.clear_repair()




def missing(root: Path) -> str | None:
    """Why ``root`` holds no memory to open (None: it holds one); opening it would start an empty one."""
    if (root / RECORDS_FILE).is_file():
        return None
    if not root.exists():
        return f"the data folder {root} does not exist"
    return f"the data folder {root} holds no memory (no {RECORDS_FILE})"


def remove_if_unused(root: Path) -> Callable[[], None] | None:
    """For a folder about to get a new memory: what removes what that open made, if nothing was stored since.

    None when ``root`` holds a memory already (nothing new is made there). The function
    removes the folder if the open created it, else only the files and folders it added,
    and leaves everything if the record store holds an episode, a chat turn or a fact (or
    cannot be read: then it is the user's to look at).
    """
    if (root / RECORDS_FILE).is_file():
        return None
    before = set(root.iterdir()) if root.is_dir() else None

    def remove() -> None:
        try:
            with contextlib.closing(sqlite3.connect(f"file:{root / RECORDS_FILE}?mode=ro", uri=True)) as db:
                stored = sum(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                             for table in ("episodes", "session_messages", "facts"))
        except sqlite3.Error:
            return  # unreadable: leave it for the user to look at
        if stored:
            return
        if before is None:
            shutil.rmtree(root, ignore_errors=True)
            return
        for path in set(root.iterdir()) - before:
            shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)

    return remove


def disk_use(root: Path) -> dict[str, int | None]:
    """Bytes on disk: ``sqlite`` (the record store and its logs), ``chroma`` (None: no folder), ``graph``, ``total``."""
    def size(path: Path) -> int:
        if path.is_file():
            return path.stat().st_size
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0

    return {"sqlite": sum(size(root / f"{RECORDS_FILE}{suffix}") for suffix in ("", "-wal", "-shm")),
            "chroma": size(root / "chroma") if (root / "chroma").exists() else None,
            "graph": size(root / "graph"), "total": size(root)}
