"""Keeping a memory healthy: entity refresh (the spec's ``every 6h``), retries, checks, rebuilds.

* :meth:`Maintenance.refresh_entities` regenerates summary, fact_count and
  last_updated from EntityHistory for entities that changed (spec ``update Entity``).
* :meth:`Maintenance.maintain` replays index writes, retries pending extractions and
  refreshes entities (``zep-memory maintain`` for cron). An episode whose extraction
  failed ``max_extraction_attempts`` times is marked ``failed`` with its last error and
  no longer retried; it keeps its messages.
* :meth:`Maintenance.check_consistency` compares the record store with both indexes (and lists the
  quarantined index writes, :mod:`zep_core.sync`), and :meth:`Maintenance.stats` counts
  what each store holds.
* :meth:`Maintenance.rebuild` recreates the indexes from the record store, re-embedding the
  stored texts when the embedder changed; :meth:`Maintenance.open` checks the
  embedder identity, finishes what a crash cut short, and notices indexes that are
  missing (``on_missing_index``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from .config import MemoryConfig
from .errors import ConfigError, NotFoundError, StoreError
from .ingest import Ingestor
from .outbox import OutboxOp
from .providers.base import Embedder, Summarizer
from .stores import Stores
from .stores.base import RETIRED_VECTOR_KINDS, VECTOR_KINDS
from .stores.record_protocols import MaintenanceRecords
from .stores.rows import iso
from .sync import IndexSync
from .temporal import STATEMENT, normalize_name
from .tenant import Tenant

__all__ = ["MaintenanceReport", "Maintenance"]

log = logging.getLogger("zep_core")


def _rivals(rows: Iterable[tuple[str, str, str, str, str]], single_valued: Collection[str]) -> list[str]:
    """The ids of the current facts that a newer current fact should have retired or reinforced.

    ``rows`` are ``(id, subject_id, predicate, object, valid_from)`` of a user's current facts.
    Two current facts of one subject and predicate are rivals when the predicate holds one
    value at a time (two homes), or when they say the same thing (the same object twice: a
    restatement reinforces, it never adds a row). Each group's newest is not listed.
    """
    groups: dict[tuple[str, str, str], list[tuple[str, str]]] = {}
    for fid, subject_id, predicate, obj, valid_from in rows:
        p = normalize_name(predicate)
        groups.setdefault((subject_id, p, "" if p in single_valued and p != STATEMENT else normalize_name(obj)),
                          []).append((valid_from, fid))
    return [fid for group in groups.values() if len(group) > 1 for _, fid in sorted(group)[:-1]]


@dataclass(frozen=True)
class MaintenanceReport:
    """What :meth:`Memory.maintain` did.

    Attributes:
        retried: pending episodes whose extraction was tried again.
        completed: of those, how many are now done.
        still_pending: episodes still pending (retried by the next ``maintain``).
        entities_refreshed: entity summaries regenerated.
        index_writes_replayed: queued index writes applied.
        failed: every episode marked ``failed`` (this run or before): its extraction
            failed ``max_extraction_attempts`` times, so it is no longer retried; it keeps
            its messages and its last error (``get_episode(id).error``).
        sessions_ended: chat sessions left idle that were ended (learned from) first.

    """

    retried: int
    completed: int
    still_pending: tuple[str, ...]
    entities_refreshed: int
    index_writes_replayed: int
    failed: tuple[str, ...] = ()
    sessions_ended: int = 0


class Maintenance:
    """Refresh, retry, check, count and rebuild, for one memory's stores."""

    def __init__(self, config: MemoryConfig, stores: Stores, sync: IndexSync, ingest: Ingestor,
                 embedder: Embedder, summarizer: Summarizer, clock: Callable[[], datetime]) -> None:
        self.config, self.sync, self.ingest = config, sync, ingest
        self.records: MaintenanceRecords = stores.records
        self.vectors, self.graph = stores.vectors, stores.graph
        self.embedder, self.summarizer, self._now = embedder, summarizer, clock

    @property
    def _identity(self) -> str:
        return f"{self.embedder.name}|{self.embedder.dimension}"

    def open(self, data_dir: Path) -> None:
        """On open: check the embedder, resume or run a rebuild, notice missing indexes, replay the outbox.

        Raises:
            StoreError: an index is missing and ``on_missing_index`` is ``error``.

        """
        reembed = self._check_embedder(data_dir)
        if reembed or self.records.get_meta("rebuild") == "pending":  # asked for, or one a crash cut short
            self.rebuild(reembed=reembed)
        elif self.config.on_missing_index != "ignore":
            self._check_indexes(data_dir)
        self._drop_retired_vectors()
        self._settle_vector_tiers()
        self.sync.drain()

    def _drop_retired_vectors(self) -> None:
        """Once per folder and retired kind: delete the collections older versions wrote and nothing reads now.

        Entity-name vectors (never read), and the superseded facts' collections (``as_of``
        searches the record store now). The meta value names the kinds dropped, so a kind retired
        later is dropped once more.
        """
        drop = getattr(self.vectors, "drop_retired", None)
        done = ",".join(RETIRED_VECTOR_KINDS)
        if drop is None or self.records.get_meta("retired_vectors") == done:
            return
        dropped = drop()
        if dropped:
            log.info("dropped %d vector collections of kinds nothing reads (%s)", dropped, done)
        self.records.set_meta("retired_vectors", done)

    def _settle_vector_tiers(self) -> None:
        """Once per folder from before the vector tiers: drop the collections of users now searched exactly."""
        settle = getattr(self.vectors, "settle", None)
        if settle is None or self.vectors.settled():
            return
        dropped = settle(self.records.users())
        if dropped:
            log.info("dropped %d vector collections of users now searched exactly in the record store", dropped)

    def missing_indexes(self) -> list[str]:
        """The indexes that hold nothing of what the record store says they must, looked up by key (cheap).

        The vector index must hold fact vectors of the user of the oldest fact whose index
        write was applied (none queued or quarantined); the graph must hold the edge of the
        oldest such fact between two entities (or, with no such fact, the nodes of the user
        of the oldest applied entity). An index that was deleted, emptied or never copied
        holds neither.
        """
        entity, fact = self.records.indexed_entity_sample(), self.records.indexed_fact_sample()
        if entity is None and fact is None:
            return []
        missing = []
        lost = getattr(self.vectors, "lost_collections", None)  # tiered: a large user's collection is gone
        if fact is not None and (not any(self.vectors.count(fact[0], kind) for kind in VECTOR_KINDS)
                                 or (lost is not None and lost())):
            missing.append("the vector index (Chroma)")
        edge = self.records.indexed_edge_sample()
        if edge is not None:
            graph_empty = not self.graph.related(edge[0], edge[1], hops=1, limit=1)
        else:
            graph_empty = entity is not None and not self.graph.snapshot(entity[0])[0]
        if graph_empty:
            missing.append("the graph index (Kùzu)")
        return missing

    def _check_indexes(self, data_dir: Path) -> None:
        missing = self.missing_indexes()
        if not missing:
            return
        facts = self.records.table_counts()["facts"]
        what = f"{' and '.join(missing)} of {data_dir} hold{'s' if len(missing) == 1 else ''} nothing " \
               f"while the record store holds {facts} facts (deleted, emptied, or a data folder copied without them)"
        if self.config.on_missing_index == "error":
            raise StoreError(f"{what}; run `zep-memory rebuild --data {data_dir}` to recreate the indexes from "
                             "the record store (or open with on_missing_index='rebuild')")
        log.warning("%s: rebuilding the indexes from the record store", what)
        counts = self.rebuild(progress=_log_progress(data_dir))
        log.warning("rebuilt the indexes of %s from the record store: %d facts, %d entities", data_dir, counts["facts"],
                    counts["entities"])

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

    def forget_user(self, user_id: Tenant) -> None:
        """Remove every trace of a known user: its rows, then (at once) its vectors and graph."""
        with self.sync.transaction(apply_now=True) as ops:
            self.records.delete_user(user_id)
            ops.append(OutboxOp.forget_user(user_id))

    def maintain(self) -> MaintenanceReport:
        """Replay index writes, retry pending extractions (giving up after a bound), refresh stale entities."""
        replayed = self.sync.drain()
        pending = self.records.episodes_with_status("pending")
        completed = retried = 0
        for eid, user in pending:
            if self._give_up(user, eid):
                continue
            retried += 1
            if self._retry(user, eid) == "done":
                completed += 1
            else:
                self._give_up(user, eid)
        still = tuple(self.records.episode_ids(status="pending"))
        refreshed = self.refresh_entities(user_id=None, max_age=None, batch_size=50)
        return MaintenanceReport(retried=retried, completed=completed, still_pending=still,
                                 entities_refreshed=refreshed, index_writes_replayed=replayed,
                                 failed=tuple(self.records.episode_ids(status="failed")))

    def _retry(self, user: Tenant, episode_id: str) -> str:
        """Run one more extraction of a pending episode; return its status afterwards.

        Whatever the episode makes fail — the extractor, or the rules on what it
        returned — counts as an attempt with its error. A store failure is not the
        episode's fault: it is raised.
        """
        episode = self.records.get_episode(user, episode_id)
        if episode is None:
            return "gone"
        try:
            return self.ingest.process(episode, self._now()).status
        except (StoreError, NotFoundError):
            if self.records.get_episode(user, episode_id) is None:  # its user was forgotten meanwhile
                return "gone"
            raise
        except Exception as exc:
            error = " ".join(f"{type(exc).__name__}: {exc}".split())
            log.warning("retrying episode %s failed: %s", episode_id, error)
            self.records.set_episode_status(user, episode_id, "pending", error=error)
            return "pending"

    def _give_up(self, user: Tenant, episode_id: str) -> bool:
        """Mark a pending episode ``failed`` once it has had its attempts; return whether it was."""
        attempts = self.records.episode_attempts(user, episode_id)
        limit = self.config.max_extraction_attempts
        if attempts < limit:
            return False
        episode = self.records.get_episode(user, episode_id)
        last = episode.error if episode is not None and episode.error else "no error recorded"
        reason = f"gave up after {attempts} extraction attempts (max_extraction_attempts={limit}): {last}"
        log.warning("episode %s failed: %s", episode_id, reason)
        self.records.mark_episode_failed(user, episode_id, reason)
        return True

    def rebuild(self, *, reembed: bool = False, batch_size: int = 1000,
                progress: Callable[[str, int, int], None] | None = None) -> dict[str, int]:
        """Recreate the indexes from the record store; with ``reembed``, embed the stored texts again first."""
        return self.sync.rebuild(batch_size=batch_size, before=self._reembed if reembed else None,
                                 progress=progress)

    def _reembed(self) -> None:
        for user in self.records.record_users():
            for table, ids_iter in (("facts", self.records.iter_fact_ids(user)),
                                    ("entities", self.records.iter_entity_ids(user))):
                for ids in ids_iter:
                    texts = self.records.texts(user, table, ids)
                    vectors = self.embedder.embed([texts[i] for i in ids])
                    with self.records.transaction():
                        self.records.set_embeddings(user, table, zip(ids, vectors))
        self.records.set_meta("embedder", self._identity)

    def check_consistency(self, users: Iterable[str], user_id: str | None) -> dict[str, list[str]]:
        """Compare the three stores for ``users``; problem kinds mapped to the ids concerned.

        Records whose index write is quarantined are listed once, under
        ``quarantined_index_writes`` (``"<op> <id> of <user>: <why and what to do>"``), and
        not again as missing from an index. ``rival_current_facts`` are the older of current
        facts that the update rules never leave current together (:func:`_rivals`).
        """
        self.sync.catch_up()
        users = list(users)
        problems: dict[str, list[str]] = {}
        held = self.records.quarantined(user_id)
        set_aside = {q["ref_id"] for q in held}

        def note(kind: str, ids: Iterable[str]) -> None:
            ids = sorted(set(ids) - set_aside) if kind.endswith(_MISSING) else sorted(ids)
            if ids:
                problems.setdefault(kind, []).extend(ids)

        problems_held = [f"{q['op']} {q['ref_id']} of {q['user_id']}: {q['error']}" for q in held]
        if problems_held:
            problems["quarantined_index_writes"] = problems_held

        g_nodes, g_edges = self.graph.snapshot(user_id)
        all_entities: set[str] = set()
        known_edges: set[str] = set()
        for user in users:
            note("rival_current_facts", _rivals(self.records.current_fact_keys(user),
                                                self.config.single_valued_predicates))
            current, edges = set(), {}
            for ids in self.records.iter_fact_ids(user):
                known_edges.update(ids)
                for fid, s in self.records.stored_facts(user, ids).items():
                    if s.fact.is_current:
                        current.add(fid)
                    if s.object_id:
                        edges[fid] = s.fact.is_current
            entities = {i for ids in self.records.iter_entity_ids(user) for i in ids}
            all_entities |= entities
            in_chroma = self.vectors.ids(user, "current")  # superseded facts are searched in the record store
            note("current_missing_in_chroma", current - in_chroma)
            note("stale_in_chroma_current", in_chroma - current)
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
        tiers = self.records.vector_tiers()
        own = [u for u in users if tiers.get(u) == "ready"]  # searched in an index of their own, not exactly
        out: dict[str, Any] = {
            "records": self.records.table_counts(), "facts": self.records.count_facts(),
            "vectors": {kind: sum(self.vectors.count(u, kind) for u in users) for kind in VECTOR_KINDS},
            "own_vector_index": {"users": len(own), "current": sum(self.vectors.count(u, "current") for u in own)},
            "graph": {"entities": len(nodes), "facts": len(edges)},
            "users": len(users),
            "pending_episodes": len(self.records.episode_ids(status="pending")),
            "failed_episodes": len(self.records.episode_ids(status="failed")),
            "pending_index_writes": self.records.outbox_size(),
            "quarantined_index_writes": self.records.quarantine_size(),
            "rebuild": self.records.get_meta("rebuild"),
            "embedder": {"name": self.embedder.name, "dimension": self.embedder.dimension},
        }
        if user_id is not None:
            out["user"] = {"user_id": user_id, "known": user_id in users,
                           "episodes": len(self.records.episode_ids(user_id)),
                           "facts": self.records.count_facts(user_id),
                           "entities": sum(len(ids) for ids in self.records.iter_entity_ids(user_id))}
        return out


#: Problem kinds that say a record is missing from an index (a quarantined record is reported as such instead).
_MISSING = ("_missing_in_chroma", "_missing_in_graph")


def _log_progress(data_dir: Path) -> Callable[[str, int, int], None]:
    """Log a rebuild's progress each time another tenth of a kind is done."""
    tenths: dict[str, int] = {}

    def progress(kind: str, done: int, total: int) -> None:
        tenth = done * 10 // max(total, 1)
        if tenths.get(kind) != tenth:
            tenths[kind] = tenth
            log.info("rebuilding the indexes of %s: %d/%d %s", data_dir, done, total, kind)

    return progress
