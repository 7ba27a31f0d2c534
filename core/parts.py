"""The parts of an open memory, built once per data folder in a process and shared by every Memory on it.

:class:`Parts` opens the stores (:func:`zep_core.stores.open_stores`, or the opener
given), builds the providers, and wires the modules that do the work: the write step
(:mod:`~zep_core.sync`), ``conversation_end`` (:mod:`~zep_core.ingest`), GetContext
(:mod:`~zep_core.retrieval`), chat sessions (:mod:`~zep_core.sessions`), refresh and
checks (:mod:`~zep_core.maintenance`) and the Cypher sandbox; then it starts the
background threads (:mod:`~zep_core.workers`): the WAL checkpoint, the indexer and the
entity-refresh schedule. :meth:`Parts.close` stops them and releases the stores.

One process opens a data folder once. :func:`attach` gives a new :class:`zep_core.Memory`
the parts of its folder: it builds them on a first Memory of its own (the owner, the one
that closes them) or, when this process has the folder open already, shares the owner's
after checking that the settings are the same (:func:`check_same`). :func:`detach` lets
go of one handle; the last one closes the owner.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import fields, is_dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .config import MemoryConfig
from .errors import ConfigError, ZepMemoryError
from .ingest import Ingestor
from .maintenance import Maintenance
from .models import to_utc
from .providers.factory import build_providers
from .retrieval import Retriever
from .sessions import SessionBuffer
from .stores import StoreOpener, Stores
from .stores.sandbox import GRAPH_SCHEMA, CypherSandbox, SandboxLimits
from .sync import IndexSync
from .workers import Workers

__all__ = ["CHECKPOINT_S", "Parts", "attach", "check_same", "detach", "forget"]

log = logging.getLogger("zep_core")

#: How often a thread checkpoints the record store's write-ahead log (SQLite's), so that no commit does it
#: (:meth:`RecordStore.checkpoint_in_background`): a quarter second of writes is at most a few MB of log.
CHECKPOINT_S = 0.25


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


class Parts:
    """What every Memory on one data folder shares: the stores, the providers and the modules that do the work.

    Args:
        config: the settings.
        clock: returns "now"; ``None`` is the system clock in UTC.
        opener: opens the stores (:func:`zep_core.stores.open_stores` by default).
        owner: the Memory closed at interpreter exit while the background threads run.
        refresh: what the entity-refresh schedule runs (``auto_refresh``).

    """

    def __init__(self, config: MemoryConfig, clock: Callable[[], datetime] | None, opener: StoreOpener, *,
                 owner: object, refresh: Callable[[], object]) -> None:
        self.config, self.clock, self.opener = config, clock or _utc_now, opener
        #: Set once :meth:`close` has closed the indexes: every Memory on the parts refuses work from then on.
        self.closed = False
        self.embedder, self.extractor, self.summarizer = build_providers(config)
        self.data_dir = config.data_path
        self.stores: Stores = opener(config)
        records = self.stores.records
        try:
            self.sync = IndexSync(self.stores, apply_at_commit=config.index_writes == "sync")
            self.ingest = Ingestor(config, records, self.sync, self.embedder, self.extractor, self.now,
                                   self.check_open)
            self.retrieval = Retriever(records, self.stores.vectors, self.stores.graph, self.embedder,
                                       self.sync.catch_up, assistant=config.assistant_speaker)
            self.sessions = SessionBuffer(config, records, self.ingest, self.now)
            self.maintenance = Maintenance(config, self.stores, self.sync, self.ingest, self.embedder,
                                           self.summarizer, self.now)
            self.maintenance.open(self.data_dir)
            limits = config.limits
            self.sandbox = CypherSandbox(records, GRAPH_SCHEMA, self.data_dir / "cypher", SandboxLimits(
                timeout_s=limits.cypher_timeout_s, max_rows=limits.cypher_max_rows,
                memory_mb=limits.cypher_memory_mb, tenants=limits.cypher_cache_tenants))
            try:
                self.workers = self._start(owner, refresh)
            except BaseException:
                self.sandbox.close()
                raise
        except BaseException:  # nothing is left open: the stores, the folder lock, a started thread
            self.closed = True
            self.stores.close(clean=not self.stores.recovering)  # a crash not yet recovered from stays one
            raise

    def _start(self, owner: object, refresh: Callable[[], object]) -> Workers:
        """The background threads: the WAL checkpoint, the indexer, the entity-refresh schedule.

        A thread that cannot start stops the ones started before it, and the error is raised.
        """
        workers = Workers(owner)
        records = self.stores.records
        try:
            records.checkpoint_in_background()
            workers.every("zep-checkpoint", CHECKPOINT_S, records.checkpoint)
            if self.config.index_writes == "background" and self.stores.derived:  # nothing to index on PostgreSQL
                workers.start("zep-indexer", self.sync.run_indexer, wake=self.sync.wake)
            if self.config.auto_refresh:
                interval = max(self.config.entity_refresh_interval.total_seconds(), 0.05)
                workers.every("zep-entity-refresh", interval, refresh)
        except BaseException:
            workers.stop()
            raise
        return workers

    def now(self) -> datetime:
        """The memory's clock (timezone-aware UTC)."""
        return to_utc(self.clock(), "clock()")

    def check_open(self) -> None:
        """Raise if the parts were closed (a write that finds them closed meanwhile stops there)."""
        if self.closed:
            raise ZepMemoryError("this Memory is closed; open a new one")

    def close(self) -> None:
        """Stop background work, apply what is queued, release the stores and the folder lock."""
        if self.config.end_left_sessions and not self.workers.exiting:  # at exit the embedder's threads are gone
            self._end_left_sessions()
        self.workers.stop()
        self.sandbox.close()
        with self.sync.exclusive():  # a writer still running finishes first; none starts after
            self.sync.close()
            self.closed = True
            self.stores.close()

    def _end_left_sessions(self) -> None:
        """At close: learn from every session with turns waiting (nothing can add to them through this memory)."""
        try:
            ended = self.sessions.end_waiting()
        except Exception as exc:  # noqa: BLE001 - the turns stay stored; a later maintain() or close ends them
            log.warning("could not end the chat sessions left waiting at close: %s", exc)
            return
        if ended:
            log.info("closing: learned from %d chat sessions left waiting", len(ended))


# -- one folder, opened once per process: the handles of its shared parts ----------------------

#: The memories this process has open, by (process, data folder): the owner of the parts
#: and how many handles use them. The pid keeps a forked child from using its parent's stores.
_OPEN: dict[tuple[int, Path, str | None], list[Any]] = {}
_OPEN_LOCK = threading.RLock()


def _open_key(config: MemoryConfig) -> tuple[int, Path, str | None]:
    """What one set of open stores is shared by, in this process: the folder, and the database if any."""
    return os.getpid(), config.data_path, config.database_url


def attach(handle: Any, config: MemoryConfig, clock: Callable[[], datetime] | None, opener: StoreOpener,
           *, same_settings: bool) -> None:
    """Make ``handle`` (a new Memory) one on ``config``'s folder: on the parts already open here, or new ones.

    New parts are built by an owner of the handle's class (its ``_build``), which this
    module keeps; the handle takes the owner's attributes and keeps its own flags.
    """
    key = _open_key(config)
    with _OPEN_LOCK:
        entry = _OPEN.get(key)
        if entry is None:
            owner = type(handle).__new__(type(handle))
            owner._build(config, clock, opener)
            entry = _OPEN[key] = [owner, 0]
        elif same_settings:
            check_same(entry[0]._parts, config, clock, opener)
        entry[1] += 1
    owner = entry[0]
    handle.__dict__.update(owner.__dict__)  # the shared parts; the flags below are the handle's own
    handle._owner, handle._closed = owner, False


def detach(owner: Any) -> None:
    """One handle of ``owner`` closed: the last one closes the owner (under the lock, so no open joins it meanwhile)."""
    with _OPEN_LOCK:
        entry = _OPEN.get(_open_key(owner.config))
        if entry is None or entry[0] is not owner:
            return  # the owner is closed already (at interpreter exit)
        entry[1] -= 1
        if entry[1] == 0:
            owner.close()


def forget(owner: Any) -> None:
    """The owner is closing: a later open builds new parts."""
    with _OPEN_LOCK:
        key = _open_key(owner.config)
        if key in _OPEN and _OPEN[key][0] is owner:
            del _OPEN[key]


def check_same(parts: Parts, config: MemoryConfig, clock: Callable[[], datetime] | None,
               opener: StoreOpener) -> None:
    """Refuse a second open of a folder with other settings than the open one has."""
    first = parts.config
    differ = []
    for f in fields(MemoryConfig):
        mine, theirs = getattr(config, f.name), getattr(first, f.name)
        if f.name == "data_dir" or mine == theirs:
            continue
        if is_dataclass(mine):  # a settings group: name the settings that differ
            differ += [g.name for g in fields(mine) if getattr(mine, g.name) != getattr(theirs, g.name)]
        else:
            differ.append(f.name)
    if clock is not None and clock is not parts.clock:
        differ.append("clock")
    if opener is not parts.opener:
        differ.append("stores")
    if differ:
        raise ConfigError(
            f"the data folder {parts.data_dir} is in use by this process with other settings "
            f"({', '.join(differ)} differ); a second Memory on it shares the open one's stores, so open it with "
            "the same settings (or Memory.open(data_dir) with none, to join it as it is), or close the other "
            "Memory first")
