"""A whole memory in dicts: the opener that hands :class:`~zep_core.Memory` the three doubles of the store seam.

``Memory(config, stores=MemoryBackend())`` runs on :class:`~tests.stores.memory_records.MemoryRecordStore`
and the indexes of :mod:`tests.stores.memory_indexes`: no SQL, no Chroma, no Kùzu. It goes
through the seam real code uses (``stores=``, as a test would plug in a server's stores), so
what a core behaviour suite asserts on it, the domain code does through the Protocols alone.
The indexes are derived, as Chroma and Kùzu are: the outbox writes them after the records.

Example:
    >>> from zep_core import Memory, MemoryConfig, Message
    >>> from tests.core.fakes import HashEmbedder
    >>> with Memory(MemoryConfig(data_dir="/nowhere", embedder=HashEmbedder()), stores=MemoryBackend()) as m:
    ...     _ = m.conversation_end("s", [Message("I live in Paris.", name="Ann")], user_id="ann")
    ...     [f.content for f in m.facts("ann")]
    ['Ann lives in Paris.']

"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from zep_core.stores.opened import Stores

from tests.stores.memory_indexes import MemoryGraphIndex, MemoryVectorIndex
from tests.stores.memory_records import MemoryRecordStore

if TYPE_CHECKING:
    from zep_core import MemoryConfig


class MemoryBackend:
    """A :class:`~zep_core.stores.opened.StoreOpener` of stores in dicts, one set per data folder.

    The opener keeps each folder's stores after a memory closes them: opening the folder
    again finds what was stored, as on disk, and a new opener is a new, empty disk.
    """

    def __init__(self) -> None:
        self.folders: dict[Path, tuple[MemoryRecordStore, dict[str, Any], dict[str, Any]]] = {}

    def __call__(self, config: MemoryConfig) -> Stores:
        """The stores of ``config``'s folder: its record store, and indexes on its two shelves."""
        if config.data_path not in self.folders:
            self.folders[config.data_path] = (MemoryRecordStore(), {}, {})
        records, vectors, graph = self.folders[config.data_path]
        return Stores(records, MemoryVectorIndex(vectors), MemoryGraphIndex(graph), lock=None, derived=True)
