"""What a backend opens: the record store and the two indexes, held and closed together.

:class:`Stores` is what :class:`zep_core.Memory` works on, whichever backend opened it
(:mod:`zep_core.stores.backends`); :class:`StoreOpener` is the signature of anything that
opens them (``Memory(config, stores=my_open_stores)``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from .base import GraphIndex, VectorIndex

if TYPE_CHECKING:
    from ..config import MemoryConfig
    from .lock import DataDirLock
    from .records import RecordStore

__all__ = ["StoreOpener", "Stores", "close_all"]

log = logging.getLogger("zep_core")


@dataclass
class Stores:
    """The system of record and the two indexes derived from it.

    Attributes:
        records: the record store, the system of record (every method of the Protocols in
            :mod:`zep_core.stores.record_protocols`).
        vectors: the vector index (derived; rebuilt from ``records``).
        graph: the graph index (derived; rebuilt from ``records``).
        lock: the data folder's lock, released by :meth:`close`; None when the stores
            need none (e.g. server stores).
        derived: whether the indexes are copies of the records, kept up to date through the
            outbox (Chroma, Kùzu); False where they are the record tables themselves (PostgreSQL).
        backend: the registry's name of the backend that opened them (``stats()["backend"]``);
            None for stores from an opener of one's own (``Memory(config, stores=...)``).

    """

    records: RecordStore
    vectors: VectorIndex
    graph: GraphIndex
    lock: DataDirLock | None = None
    derived: bool = True
    backend: str | None = None

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
        close_all([self.graph, self.vectors, self.records])
        if any(getattr(store, "needs_check", False) for store in (self.records, self.vectors, self.graph)):
            clean = False  # a full disk (or a Chroma child killed mid-call): see zep_core.stores.folder
        if self.lock is not None:
            self.lock.release(clean=clean)


class StoreOpener(Protocol):
    """Anything that opens the stores of a config (:func:`zep_core.stores.open_stores` is the default)."""

    def __call__(self, config: MemoryConfig) -> Stores:
        """Open the stores ``config`` names."""
        ...


def close_all(stores: Iterable[object]) -> None:
    """Close each store, best effort: one that fails to close does not keep the others open."""
    for store in stores:
        try:
            store.close()
        except Exception:  # closing is best effort; the lock is what matters
            log.debug("closing %s failed", type(store).__name__, exc_info=True)
