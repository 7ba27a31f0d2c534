"""The three stores: SQLite (records), Chroma (vectors), Kùzu (graph), opened together.

:func:`open_stores` is the one place that knows where each store lives and how a data
folder is opened: it checks that the folder can be written, takes the folder lock,
opens the record store, checks after a crash that Chroma's files will load, and opens
the two derived indexes.

A read-only data folder is refused with a :class:`~zep_core.StoreError` that says so,
even for a memory that is only to be read: every open writes to the folder (the lock
file, SQLite's write-ahead log and shared-memory files, Chroma's and Kùzu's own files),
so there is no read-only open. Copy the folder somewhere writable to inspect it.
:class:`zep_core.Memory` receives its stores from it — or from any function with the
same signature (``Memory(config, stores=my_open_stores)``), so a server-grade vector
or graph store plugs in without the domain code asking which backend it has.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..errors import StoreError
from .base import GraphIndex, VectorIndex
from .lock import DataDirLock
from .records import RecordStore

if TYPE_CHECKING:
    from ..config import MemoryConfig

__all__ = ["StoreOpener", "Stores", "open_postgres", "open_stores"]

log = logging.getLogger("zep_core")


@dataclass
class Stores:
    """The system of record and the two indexes derived from it.

    Attributes:
        records: SQLite, the system of record.
        vectors: the vector index (derived; rebuilt from ``records``).
        graph: the graph index (derived; rebuilt from ``records``).
        lock: the data folder's lock, released by :meth:`close`; None when the stores
            need none (e.g. server stores).
        derived: whether the indexes are copies of the records, kept up to date through the
            outbox (Chroma, Kùzu); False where they are the record tables themselves (PostgreSQL).

    """

    records: RecordStore
    vectors: VectorIndex
    graph: GraphIndex
    lock: DataDirLock | None = None
    derived: bool = True

    @property
    def recovering(self) -> bool:
        """Whether the last holder of the folder crashed and recovery has not finished yet."""
        return self.lock is not None and self.lock.unclean_since is not None

    def close(self, *, clean: bool = True) -> None:
        """Close every store (best effort) and release the lock.

        Args:
            clean: record a clean close; ``False`` keeps the crash record, so the next
                open checks the stores again.

        """
        _close_all([self.graph, self.vectors, self.records])
        if any(getattr(store, "needs_check", False) for store in (self.records, self.vectors, self.graph)):
            clean = False  # a full disk (or a Chroma child killed mid-call): see open_stores
        if self.lock is not None:
            self.lock.release(clean=clean)


class StoreOpener(Protocol):
    """Anything that opens the stores of a config (:func:`open_stores` is the default)."""

    def __call__(self, config: MemoryConfig) -> Stores:
        """Open the stores ``config`` names."""
        ...


def open_stores(config: MemoryConfig) -> Stores:
    """Open (or create) the data folder of ``config``: lock, SQLite, Chroma and Kùzu.

    Raises:
        StoreLockedError: another process has the folder open.
        StoreError: a store cannot be opened (the message names it).

    """
    from .graph import KuzuGraphIndex

    if config.database_url:
        return open_postgres(config)
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
        _close_all(reversed(opened))
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


def open_postgres(config: MemoryConfig) -> Stores:
    """The stores on PostgreSQL (``config.database_url``): the record store, and its tables as the two indexes.

    No folder lock: the database serializes its writers, and row-level security scopes each
    statement to its tenant (:mod:`zep_core.stores.postgres`). The data folder is made for
    this process's scratch (the Cypher sandbox's copies) only.
    """
    from .postgres import PgRecordStore
    from .postgres.hnsw import HnswIndexes
    from .postgres.indexes import PgGraphIndex, PgVectorIndex

    records = PgRecordStore(config.database_url, connect_timeout_s=config.busy_timeout_ms / 1000)
    try:
        config.data_path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        records.close()
        raise StoreError(f"cannot create the scratch folder {config.data_path}: {exc}") from exc
    hnsw = HnswIndexes(records, records.new_connection, exact_below=config.postgres_exact_below)
    records.on_facts_written, records.on_user_deleted = hnsw.written, hnsw.forgotten
    return Stores(records, PgVectorIndex(records, hnsw), PgGraphIndex(records), None, derived=False)


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


def _close_all(stores: Iterable[object]) -> None:
    for store in stores:
        try:
            store.close()
        except Exception:  # closing is best effort; the lock is what matters
            log.debug("closing %s failed", type(store).__name__, exc_info=True)
