"""Keeping a memory healthy: entity refresh (the spec's ``every 6h``), retries, checks, rebuilds.

* :meth:`Maintenance.refresh_entities` regenerates summary, fact_count and
  last_updated from EntityHistory for entities that changed (spec ``update Entity``).
* :meth:`Maintenance.maintain` replays index writes, retries pending extractions and
  refreshes entities (``zep-memory maintain`` for cron).
* :meth:`Maintenance.check_consistency` compares SQLite with both indexes, and
  :meth:`Maintenance.stats` counts what each store holds.
* :meth:`Maintenance.rebuild` recreates the indexes from SQLite, re-embedding the
  stored texts when the embedder changed; :meth:`Maintenance.open` checks the
  embedder identity and finishes what a crash cut short.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from .config import MemoryConfig
from .errors import ConfigError
from .ingest import Ingestor
from .providers.base import Embedder, Summarizer
from .stores import Stores
from .stores.base import VECTOR_KINDS
from .stores.records import iso
from .sync import IndexSync

__all__ = ["MaintenanceReport", "Maintenance"]


@dataclass(frozen=True)
class MaintenanceReport:
    """What :meth:`Memory.maintain` did."""

    retried: int
    completed: int
    still_pending: tuple[str, ...]
    entities_refreshed: int
    index_writes_replayed: int


class Maintenance:
    """Refresh, retry, check, count and rebuild, for one memory's stores."""

    def __init__(self, config: MemoryConfig, stores: Stores, sync: IndexSync, ingest: Ingestor,
                 embedder: Embedder, summarizer: Summarizer, clock: Callable[[], datetime]) -> None:
        self.config, self.sync, self.ingest = config, sync, ingest
        self.records, self.vectors, self.graph = stores.records, stores.vectors, stores.graph
        self.embedder, self.summarizer, self._now = embedder, summarizer, clock

    @property
    def _identity(self) -> str:
        return f"{self.embedder.name}|{self.embedder.dimension}"

    def open(self, data_dir: Path) -> None:
        """On open: check the embedder, resume or run a rebuild, replay the outbox."""
        reembed = self._check_embedder(data_dir)
        if reembed or self.records.get_meta("rebuild") == "pending":  # asked for, or one a crash cut short
            self.rebuild(reembed=reembed)
        self.sync.drain()

    def _check_embedder(self, data_dir: Path) -> bool:
        stored = self.records.get_meta("embedder")
        if stored is None:
            self.records.set_meta("embedder", self._identity)
            return False
        if stored == self._identity:
            return False
        if self.config.on_embedder_mismatch == "reembed":
            return True
        name, _, dim = stored.rpartition("|")
        raise ConfigError(
            f"the data folder {data_dir} was built with the embedder {name} ({dim}-d) but this "
            f"memory uses {self.embedder.name} ({self.embedder.dimension}-d); vectors cannot be mixed. "
            "Open it with the same embedder, or with on_embedder_mismatch='reembed' to re-embed the "
            "stored texts.")

    def refresh_entities(self, *, user_id: str | None, max_age: timedelta | None, batch_size: int) -> int:
        """Regenerate the summaries of entities changed since their last refresh; return how many."""
        now = self._now()
        max_age = self.config.entity_refresh_interval if max_age is None else max_age
        total = 0
        while True:
            stale = self.records.stale_entities(user_id, iso(now - max_age), limit=batch_size)
            if not stale:
                return total
            items = []
            for user, eid in stale:
                entity = self.records.get_entities(user, [eid])[eid]
                items.append((entity, self.records.entity_history(user, eid)))
            summaries = self.summarizer.summarize_entities(items)
            stamp = iso(now)
            with self.sync.transaction():
                self.records.set_entity_summaries(
                    (e.user_id, e.id, s, len(facts), stamp) for (e, facts), s in zip(items, summaries))
            total += len(items)
            if len(stale) < batch_size:
                return total

    def maintain(self) -> MaintenanceReport:
        """Replay index writes, retry pending extractions, refresh stale entities."""
        replayed = self.sync.drain()
        pending = self.records.episode_ids(status="pending")
        completed = 0
        for eid in pending:
            episode = self.records.get_episode(eid)
            if episode is not None and self.ingest.process(episode, self._now()).status == "done":
                completed += 1
        still = tuple(self.records.episode_ids(status="pending"))
        refreshed = self.refresh_entities(user_id=None, max_age=None, batch_size=50)
        return MaintenanceReport(retried=len(pending), completed=completed, still_pending=still,
                                 entities_refreshed=refreshed, index_writes_replayed=replayed)

    def rebuild(self, *, reembed: bool = False, batch_size: int = 1000) -> dict[str, int]:
        """Recreate Chroma and Kùzu from SQLite; with ``reembed``, embed the stored texts again first."""
        return self.sync.rebuild(batch_size=batch_size, before=self._reembed if reembed else None)

    def _reembed(self) -> None:
        for table, ids_iter in (("facts", self.records.iter_fact_ids()), ("entities", self.records.iter_entity_ids())):
            for ids in ids_iter:
                texts = self.records.texts(table, ids)
                vectors = self.embedder.embed([texts[i] for i in ids])
                with self.records.transaction():
                    self.records.set_embeddings(table, zip(ids, vectors))
        self.records.set_meta("embedder", self._identity)

    def check_consistency(self, users: Iterable[str], user_id: str | None) -> dict[str, list[str]]:
        """Compare the three stores for ``users``; problem kinds mapped to the ids concerned."""
        self.sync.catch_up()
        users = list(users)
        problems: dict[str, list[str]] = {}

        def note(kind: str, ids: Iterable[str]) -> None:
            ids = sorted(ids)
            if ids:
                problems.setdefault(kind, []).extend(ids)

        g_nodes, g_edges = self.graph.snapshot(user_id)
        all_entities: set[str] = set()
        known_edges: set[str] = set()
        for user in users:
            current, history, edges = set(), set(), {}
            for ids in self.records.iter_fact_ids(user):
                known_edges.update(ids)
                for fid, s in self.records.stored_facts(ids).items():
                    (current if s.fact.is_current else history).add(fid)
                    if s.object_id:
                        edges[fid] = s.fact.is_current
            entities = {i for ids in self.records.iter_entity_ids(user) for i in ids}
            all_entities |= entities
            c_cur, c_hist = self.vectors.ids(user, "current"), self.vectors.ids(user, "history")
            note("current_missing_in_chroma", current - c_cur)
            note("stale_in_chroma_current", c_cur - current)
            note("history_missing_in_chroma", history - c_hist)
            note("stale_in_chroma_history", c_hist - history)
            note("entities_missing_in_chroma", entities - self.vectors.ids(user, "entity"))
            note("edges_missing_in_graph", set(edges) - set(g_edges))
            note("edge_state_differs", {f for f, cur in edges.items() if f in g_edges and g_edges[f] != cur})
            note("entities_missing_in_graph", entities - g_nodes)
        for kind, ids in self.records.lexical_problems(user_id).items():
            note(kind, ids)
        note("stale_edges_in_graph", set(g_edges) - known_edges)
        note("stale_entities_in_graph", g_nodes - all_entities)
        return problems

    def stats(self, users: list[str], user_id: str | None) -> dict[str, Any]:
        """Counts per store, pending work and the embedder identity (and one user's counts)."""
        self.sync.catch_up()
        nodes, edges = self.graph.snapshot()
        out: dict[str, Any] = {
            "records": self.records.table_counts(), "facts": self.records.count_facts(),
            "vectors": {kind: sum(self.vectors.count(u, kind) for u in users) for kind in VECTOR_KINDS},
            "graph": {"entities": len(nodes), "facts": len(edges)},
            "users": len(users),
            "pending_episodes": len(self.records.episode_ids(status="pending")),
            "pending_index_writes": self.records.outbox_size(),
            "rebuild": self.records.get_meta("rebuild"),
            "embedder": {"name": self.embedder.name, "dimension": self.embedder.dimension},
        }
        if user_id is not None:
            out["user"] = {"user_id": user_id, "known": user_id in users,
                           "episodes": len(self.records.episode_ids(user_id=user_id)),
                           "facts": self.records.count_facts(user_id),
                           "entities": sum(len(ids) for ids in self.records.iter_entity_ids(user_id))}
        return out
