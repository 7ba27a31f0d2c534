"""What each part of the memory needs from the record store: one small Protocol per consumer.

The SQLite record store (:class:`~zep_core.stores.records.RecordStore`) is one
implementation of all of them; a second backend implements the same methods. Each
consumer names the Protocol it reads and writes through, so what a backend must offer is
what these list, and nothing a consumer does not call. ``tests/stores/test_record_protocols.py``
checks that the SQLite store satisfies each, and that each lists exactly what its consumer calls.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np

    from ..models import Entity, Episode, Fact, Message
    from ..tenant import Tenant
    from .rows import RankingRow, StoredFact

__all__ = ["FacadeRecords", "GraphRecords", "IngestRecords", "MaintenanceRecords", "RetrievalRecords", "SessionRecords",
           "SyncRecords", "TransferRecords", "VectorTierRecords"]


@runtime_checkable
class RetrievalRecords(Protocol):
    """What retrieval reads (:mod:`zep_core.retrieval`): rankings, candidate rows, hops, the history."""

    def entity_ids_for_aliases(self, tenant: Tenant, aliases: Sequence[str]) -> dict[str, str]:
        """Map normalized aliases to entity ids, for the ones that exist."""

    def facts_touching(self, tenant: Tenant, entity_ids: Sequence[str], *, as_of: str | None = None,
                       among: Iterable[str] | None = None, limit: int = 20_000) -> list[str]:
        """Ids of current (or as-of) facts whose subject or object is in ``entity_ids``."""

    def count_facts_touching(self, tenant: Tenant, entity_ids: Sequence[str], *, upto: int,
                             as_of: str | None = None) -> int:
        """How many facts :meth:`facts_touching` would find: exact below ``upto``, at least ``upto`` otherwise."""

    def get_entities(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, Entity]:
        """Entities by id, with their aliases, for one user only."""

    def history_search(self, tenant: Tenant, vector: np.ndarray, k: int, as_of: str) -> list[tuple[str, float]]:
        """The ``k`` superseded facts of a user valid at ``as_of`` nearest to ``vector``: ``(id, cosine)``."""

    def lexical_ranking(self, tenant: Tenant, text: str, *, limit: int, as_of: str | None = None,
                        context_weight: float = 1.0) -> list[tuple[str, float]]:
        """The user's best ``limit`` current (or as-of) facts by the words of ``text``: ``(fact id, BM25)``."""

    def neighbours(self, tenant: Tenant, entity_ids: Sequence[str], *, as_of: str | None = None,
                   limit: int = 200) -> set[str]:
        """Entities one hop from ``entity_ids`` over the user's current (or as-of) facts."""

    def ranking_rows(self, tenant: Tenant, ids: Sequence[str]) -> list[RankingRow]:
        """Some facts of one user by id, as plain values: what ranking needs, and the fact itself."""


@runtime_checkable
class IngestRecords(Protocol):
    """What ingest writes and the update rules read (:mod:`zep_core.ingest`)."""

    def add_aliases(self, rows: Iterable[tuple[str, str, str]]) -> None:
        """Add ``(user_id, alias, entity_id)``; an alias already taken keeps its entity."""

    def current_facts_about(self, tenant: Tenant, entity_ids: Sequence[str], *, limit: int = 10_000) -> list[Fact]:
        """Current facts whose subject is one of ``entity_ids``."""

    def entity_ids_for_aliases(self, tenant: Tenant, aliases: Sequence[str]) -> dict[str, str]:
        """Map normalized aliases to entity ids, for the ones that exist."""

    def episode_owner(self, episode_id: str) -> Tenant | None:
        """The user an episode id belongs to, or None if unknown."""

    def facts_from_messages(self, tenant: Tenant, subject_ids: Sequence[str], message_ids: Collection[str], *,
                            exclude: Collection[str] = ()) -> list[Fact]:
        """The current facts of these subjects drawn from any of ``message_ids`` (``exclude`` left out)."""

    def get_episode(self, tenant: Tenant, episode_id: str) -> Episode | None:
        """Load one of the tenant's episodes with its messages (caller ids restored), or None."""

    def get_facts(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, Fact]:
        """Facts by id, for one user only."""

    def insert_entities(self, rows: Iterable[tuple[Entity, np.ndarray]], changed_at: str) -> None:
        """Create entities with their vectors (call inside :meth:`transaction`)."""

    def insert_episode(self, episode: Episode, message_ids: Sequence[str]) -> bool:
        """Store an episode and every message unless its id is taken; whether it was (inside :meth:`transaction`)."""

    def episode_status(self, tenant: Tenant, episode_id: str) -> str | None:
        """The status of one of the tenant's episodes, or None if it has none."""

    def claim_episode(self, tenant: Tenant, episode_id: str) -> bool:
        """Whether this process may extract the episode now: no other process on the store does.

        The claim goes with the process (or its connection); give it back with :meth:`release_episode`.
        """

    def release_episode(self, tenant: Tenant, episode_id: str) -> None:
        """Give back :meth:`claim_episode`."""

    def lock_tenants(self, tenants: Iterable[Tenant]) -> None:
        """Inside a write that names several tenants: hold each one's write lock from now to its end.

        A store whose writes of a tenant can come from several processes serialises them per
        tenant (the update rules read, then write); the locks are taken in one order here, so
        that two writers of several tenants never wait for each other.
        """

    def lexical_search(self, tenant: Tenant, text: str, *, limit: int, as_of: str | None = None,
                       context_weight: float = 1.0) -> dict[str, float]:
        """The tenant's best ``limit`` current facts by the words of ``text``: ``{fact id: BM25}``, best first."""

    def mark_entities_changed(self, tenant: Tenant, entity_ids: Iterable[str], when: str) -> None:
        """Flag entities for the next summary refresh."""

    def record_owners(self, table: str, ids: Sequence[str]) -> dict[str, Tenant]:
        """The user each stored fact, entity or episode id belongs to (ids not stored are absent)."""

    def rule_candidates(self, tenant: Tenant, subject_ids: Sequence[str], *, rivals: Sequence[str],
                        restated: Sequence[tuple[str, str]], ids: Sequence[str] = (),
                        attributes: Sequence[str] = ()) -> list[Fact]:
        """The current facts of these subjects a proposed fact can reinforce, end or supersede."""

    def set_episode_status(self, tenant: Tenant, episode_id: str, status: str, *, error: str | None = None,
                           summary: str | None = None, usage: dict | None = None) -> None:
        """Record the outcome of an extraction attempt."""

    def told_at(self, tenant: Tenant, facts: Iterable[Fact]) -> dict[str, datetime]:
        """When each fact's first source message was said: its timestamp, else its episode's time."""

    def transaction(self) -> AbstractContextManager[None]:
        """One atomic write: everything inside commits together or not at all."""

    def update_facts(self, facts: Iterable[Fact]) -> None:
        """Rewrite the mutable columns of stored facts (supersession, reinforcement)."""

    def write_facts(self, facts: Iterable[StoredFact]) -> None:
        """Insert or replace fact rows and index them lexically (call inside :meth:`transaction`)."""


@runtime_checkable
class SessionRecords(Protocol):
    """The adapters' chat history (:mod:`zep_core.sessions`)."""

    def add_session_messages(self, tenant: Tenant, session_id: str, messages: Sequence[Message]) -> None:
        """Append chat turns to a session's history at once."""

    def clear_session(self, tenant: Tenant, session_id: str) -> None:
        """Forget a session's chat turns (episodes already stored stay)."""

    def has_session(self, tenant: Tenant, session_id: str) -> bool:
        """Whether the session has any stored turn."""

    def mark_session_ended(self, tenant: Tenant, session_id: str, up_to_seq: int, episode_id: str) -> None:
        """Record that turns up to ``up_to_seq`` went into ``episode_id``."""

    def session_messages(self, tenant: Tenant, session_id: str, *, unended: bool = False,
                         limit: int | None = None) -> list[tuple[int, Message]]:
        """A session's turns ``(seq, message)`` in order; the last ``limit`` if given."""

    def waiting_sessions(self, tenant: Tenant | None = None) -> list[tuple[str, str, datetime | None]]:
        """``(user_id, session_id, time of its last waiting turn)`` of every session with turns not yet learned from."""


@runtime_checkable
class SyncRecords(Protocol):
    """What the index sync reads and queues (:mod:`zep_core.sync`): the outbox and the rows it indexes."""

    def add_outbox(self, rows: Iterable[tuple[str, str, str | None, dict | None]]) -> None:
        """Queue index writes ``(op, user_id, ref_id, payload)`` (inside :meth:`transaction`)."""

    def clear_outbox(self, up_to_seq: int) -> None:
        """Mark index writes done, up to and including ``up_to_seq``."""

    def clear_outbox_rows(self, seqs: Sequence[int]) -> None:
        """Mark these index writes done (a drain of some users' writes only)."""

    def clear_quarantine(self, tenant: Tenant | None = None) -> None:
        """Empty the quarantine, or one user's part of it."""

    def entity_rows(self, tenant: Tenant, ids: Sequence[str]) -> list[tuple[Entity, np.ndarray]]:
        """Entities of one user with their vectors (what the outbox writes to the indexes, and exports)."""

    def get_meta(self, key: str) -> str | None:
        """Read one metadata value (schema version, embedder identity…)."""

    def iter_entity_ids(self, tenant: Tenant, batch: int = 2000) -> Iterator[list[str]]:
        """Every entity id of one user, in batches."""

    def iter_fact_ids(self, tenant: Tenant, batch: int = 2000) -> Iterator[list[str]]:
        """Every fact id of one user, in batches (for rebuilds, checks and exports)."""

    def known_ids(self, tenant: Tenant, table: str, ids: Sequence[str]) -> set[str]:
        """Which of these fact, entity or episode ids the tenant holds."""

    def last_outbox_seq(self) -> int:
        """The newest queued index write's seq (0 when none is queued)."""

    def outbox_size(self, tenant: Tenant | None = None) -> int:
        """How many index writes are pending (of ``user_id`` only, when given)."""

    def pending_outbox(self, limit: int = 5000, *, up_to: int | None = None, users: Collection[str] | None = None,
                       ) -> list[tuple[int, str, str, str | None, dict | None]]:
        """Oldest pending index writes, only those up to seq ``up_to`` and of ``users`` if given."""

    def quarantine_outbox(self, rows: Iterable[tuple[int | None, str, str, str, dict | None, str]]) -> None:
        """Set aside index writes ``(seq, op, user_id, ref_id, payload, error)`` that could not be applied."""

    def quarantine_size(self, tenant: Tenant | None = None) -> int:
        """How many index writes are quarantined (of one user, if given)."""

    def rebuild_lexical(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Rebuild the lexical index from the facts (call inside :meth:`transaction`); returns its rows."""

    def record_users(self) -> list[Tenant]:
        """Every user with a stored fact or entity (every user's: rebuilds walk them one by one)."""

    def release_quarantined(self, keys: Iterable[tuple[str, str]]) -> None:
        """Take ``(op, ref_id)`` out of the quarantine (they were applied since)."""

    def set_meta(self, key: str, value: str) -> None:
        """Write one metadata value."""

    def stored_facts(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, StoredFact]:
        """Facts of one user by id, with entity ids and vectors (what the outbox writes to the indexes)."""

    def table_counts(self) -> dict[str, int]:
        """Row counts of the main tables."""

    def transaction(self) -> AbstractContextManager[None]:
        """One atomic write: everything inside commits together or not at all."""


@runtime_checkable
class VectorTierRecords(Protocol):
    """What the vector tiers read (:mod:`zep_core.stores.tiered`): current vectors and the tier marks."""

    def clear_vector_tier(self, tenant: Tenant | None = None) -> None:
        """Forget one user's collection mark, or every user's (None)."""

    def current_fact_count(self, tenant: Tenant) -> int:
        """How many current facts one user has (counted in ``facts_current``, no fact row read)."""

    def current_vectors(self, tenant: Tenant) -> list[tuple[str, bytes]]:
        """``(id, float32 blob)`` of every current fact of one user, in id order (one read by ``facts_current``)."""

    def get_meta(self, key: str) -> str | None:
        """Read one metadata value (schema version, embedder identity…)."""

    def set_meta(self, key: str, value: str) -> None:
        """Write one metadata value."""

    def set_vector_tier(self, tenant: Tenant, state: str) -> None:
        """Record that a user's collection is being built (``building``) or complete (``ready``)."""

    def vector_tiers(self) -> dict[Tenant, str]:
        """Every user whose vectors have (or are getting) a Chroma collection: ``{user: 'building' | 'ready'}``."""


@runtime_checkable
class GraphRecords(Protocol):
    """What the Cypher sandbox builds a tenant's graph from (:mod:`zep_core.stores.sandbox`)."""

    def graph_rows(self, tenant: Tenant) -> tuple[list[tuple], list[tuple]]:
        """One user's graph as SQLite holds it: entity rows and relationship rows, nothing of anyone else."""


@runtime_checkable
class MaintenanceRecords(Protocol):
    """What maintenance, checks and re-embedding use (:mod:`zep_core.maintenance`)."""

    def current_fact_keys(self, tenant: Tenant) -> list[tuple[str, str, str, str, str]]:
        """``(id, subject_id, predicate, object, valid_from)`` of every current fact of one user (for checks)."""

    def count_facts(self, tenant: Tenant | None = None) -> dict[str, int]:
        """Counts of current and superseded facts."""

    def delete_user(self, tenant: Tenant) -> None:
        """Delete every row of a user, and their lexical index (call inside :meth:`transaction`)."""

    def entity_history(self, tenant: Tenant, entity_id: str) -> list[Fact]:
        """Every fact with the entity as subject or object, by valid_from ascending."""

    def episode_attempts(self, tenant: Tenant, episode_id: str) -> int:
        """How many extraction attempts one of the tenant's episodes has had (0 when unknown)."""

    def episode_ids(self, tenant: Tenant | None = None, *, status: str | None = None,
                    limit: int = 1_000_000) -> list[str]:
        """Episode ids, oldest first: of the tenant, or of every user (None); of one status if given."""

    def episodes_with_status(self, status: str, *, limit: int = 1_000_000) -> list[tuple[str, Tenant]]:
        """``(episode_id, user)`` of every user's episodes of one status, oldest first (for maintenance)."""

    def get_entities(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, Entity]:
        """Entities by id, with their aliases, for one user only."""

    def get_episode(self, tenant: Tenant, episode_id: str) -> Episode | None:
        """Load one of the tenant's episodes with its messages (caller ids restored), or None."""

    def get_meta(self, key: str) -> str | None:
        """Read one metadata value (schema version, embedder identity…)."""

    def indexed_edge_sample(self, scan: int = 50) -> tuple[str, str] | None:
        """``(user_id, subject_id)`` of the oldest fact between two entities that the graph must already hold."""

    def vector_tiers(self) -> dict[Tenant, str]:
        """Every user whose vectors have (or are getting) an index of their own: ``{user: 'building' | 'ready'}``."""

    def indexed_entity_sample(self, scan: int = 50) -> tuple[str, str] | None:
        """``(user_id, entity_id)`` of the oldest entity both indexes must already hold, if any."""

    def indexed_fact_sample(self, scan: int = 50) -> tuple[str, str] | None:
        """``(user_id, fact_id)`` of the oldest current fact the vector index must already hold, if any."""

    def iter_entity_ids(self, tenant: Tenant, batch: int = 2000) -> Iterator[list[str]]:
        """Every entity id of one user, in batches."""

    def iter_fact_ids(self, tenant: Tenant, batch: int = 2000) -> Iterator[list[str]]:
        """Every fact id of one user, in batches (for rebuilds, checks and exports)."""

    def lexical_problems(self, tenant: Tenant | None = None) -> dict[str, list[str]]:
        """What is wrong with the lexical index."""

    def mark_episode_failed(self, tenant: Tenant, episode_id: str, reason: str) -> None:
        """Give up on a pending episode: status ``failed`` with the reason; its messages stay."""

    def outbox_size(self, tenant: Tenant | None = None) -> int:
        """How many index writes are pending (of ``user_id`` only, when given)."""

    def quarantine_size(self, tenant: Tenant | None = None) -> int:
        """How many index writes are quarantined (of one user, if given)."""

    def quarantined(self, tenant: Tenant | None = None, *, limit: int = 1_000_000) -> list[dict[str, Any]]:
        """The quarantined index writes, oldest first, as dicts of ``op, user_id, ref_id, error, quarantined_at``."""

    def record_users(self) -> list[Tenant]:
        """Every user with a stored fact or entity (every user's: rebuilds walk them one by one)."""

    def set_embeddings(self, tenant: Tenant, table: str, rows: Iterable[tuple[str, np.ndarray]]) -> None:
        """Replace stored vectors of one user's facts or entities (re-embedding after an embedder change)."""

    def set_entity_summaries(self, rows: Iterable[tuple[str, str, str, int, str | None]]) -> None:
        """Write ``(user_id, entity_id, summary, fact_count, last_updated)``; only the user's own entities."""

    def set_episode_status(self, tenant: Tenant, episode_id: str, status: str, *, error: str | None = None,
                           summary: str | None = None, usage: dict | None = None) -> None:
        """Record the outcome of an extraction attempt."""

    def set_meta(self, key: str, value: str) -> None:
        """Write one metadata value."""

    def stale_entities(self, tenant: Tenant | None, older_than: str, limit: int = 1000) -> list[tuple[str, str]]:
        """``(user_id, entity_id)`` of entities changed since their last refresh and due."""

    def stored_facts(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, StoredFact]:
        """Facts of one user by id, with entity ids and vectors (what the outbox writes to the indexes)."""

    def table_counts(self) -> dict[str, int]:
        """Row counts of the main tables."""

    def texts(self, tenant: Tenant, table: str, ids: Sequence[str]) -> dict[str, str]:
        """The texts one user's vectors are made from: fact content or entity name."""

    def transaction(self) -> AbstractContextManager[None]:
        """One atomic write: everything inside commits together or not at all."""

    def users(self) -> list[Tenant]:
        """Every user with stored episodes or chat messages (every user's: for maintenance)."""


@runtime_checkable
class TransferRecords(Protocol):
    """What export and import read and write (:mod:`zep_core.transfer`)."""

    def add_aliases(self, rows: Iterable[tuple[str, str, str]]) -> None:
        """Add ``(user_id, alias, entity_id)``; an alias already taken keeps its entity."""

    def delete_user(self, tenant: Tenant) -> None:
        """Delete every row of a user, and their lexical index (call inside :meth:`transaction`)."""

    def entity_changed_at(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, str | None]:
        """When each of a user's entities last changed (its refresh mark), as stored (for export)."""

    def entity_rows(self, tenant: Tenant, ids: Sequence[str]) -> list[tuple[Entity, np.ndarray]]:
        """Entities of one user with their vectors (what the outbox writes to the indexes, and exports)."""

    def episode_ids(self, tenant: Tenant | None = None, *, status: str | None = None,
                    limit: int = 1_000_000) -> list[str]:
        """Episode ids, oldest first: of the tenant, or of every user (None); of one status if given."""

    def get_entities(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, Entity]:
        """Entities by id, with their aliases, for one user only."""

    def get_episode(self, tenant: Tenant, episode_id: str) -> Episode | None:
        """Load one of the tenant's episodes with its messages (caller ids restored), or None."""

    def has_records(self, tenant: Tenant) -> bool:
        """Whether any row of the tenant is stored: episode, chat turn, fact, entity or alias (imports check it)."""

    def insert_entities(self, rows: Iterable[tuple[Entity, np.ndarray]], changed_at: str) -> None:
        """Create entities with their vectors (call inside :meth:`transaction`)."""

    def insert_episode(self, episode: Episode, message_ids: Sequence[str]) -> bool:
        """Store an episode and every message unless its id is taken; whether it was (inside :meth:`transaction`)."""

    def lock_tenants(self, tenants: Iterable[Tenant]) -> None:
        """Inside a write that names several tenants: hold each one's write lock from now to its end.

        A store whose writes of a tenant can come from several processes serialises them per
        tenant (the update rules read, then write); the locks are taken in one order here, so
        that two writers of several tenants never wait for each other.
        """

    def insert_session_rows(self, tenant: Tenant, rows: Iterable[tuple[str, Message, str | None]]) -> None:
        """Append chat turns with their episode marks, as :meth:`session_rows` gives them (for import)."""

    def iter_entity_ids(self, tenant: Tenant, batch: int = 2000) -> Iterator[list[str]]:
        """Every entity id of one user, in batches."""

    def iter_fact_ids(self, tenant: Tenant, batch: int = 2000) -> Iterator[list[str]]:
        """Every fact id of one user, in batches (for rebuilds, checks and exports)."""

    def record_owners(self, table: str, ids: Sequence[str]) -> dict[str, Tenant]:
        """The user each stored fact, entity or episode id belongs to (ids not stored are absent)."""

    def session_rows(self, tenant: Tenant) -> list[tuple[str, Message, str | None]]:
        """Every chat turn of a user ``(session_id, message, episode_id)`` in order (for export)."""

    def set_entity_summaries(self, rows: Iterable[tuple[str, str, str, int, str | None]]) -> None:
        """Write ``(user_id, entity_id, summary, fact_count, last_updated)``; only the user's own entities."""

    def set_episode_status(self, tenant: Tenant, episode_id: str, status: str, *, error: str | None = None,
                           summary: str | None = None, usage: dict | None = None) -> None:
        """Record the outcome of an extraction attempt."""

    def stored_facts(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, StoredFact]:
        """Facts of one user by id, with entity ids and vectors (what the outbox writes to the indexes)."""

    def write_facts(self, facts: Iterable[StoredFact]) -> None:
        """Insert or replace fact rows and index them lexically (call inside :meth:`transaction`)."""


@runtime_checkable
class FacadeRecords(Protocol):
    """What the façade reads itself (:mod:`zep_core.memory`, :mod:`zep_core.admin`) and :mod:`zep_core.parts` asks."""

    def checkpoint(self) -> int:
        """Copy what the store's own log holds into its files, if it keeps one; the log pages left (0: none)."""

    def checkpoint_in_background(self) -> None:
        """Leave the log's checkpoints to :meth:`checkpoint`, called from a thread of its own (or nothing to do)."""

    def entity_history(self, tenant: Tenant, entity_id: str) -> list[Fact]:
        """Every fact with the entity as subject or object, by valid_from ascending."""

    def episode_ids(self, tenant: Tenant | None = None, *, status: str | None = None,
                    limit: int = 1_000_000) -> list[str]:
        """Episode ids, oldest first: of the tenant, or of every user (None); of one status if given."""

    def episode_owner(self, episode_id: str) -> Tenant | None:
        """The user an episode id belongs to, or None if unknown."""

    def get_entities(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, Entity]:
        """Entities by id, with their aliases, for one user only."""

    def get_episode(self, tenant: Tenant, episode_id: str) -> Episode | None:
        """Load one of the tenant's episodes with its messages (caller ids restored), or None."""

    def get_facts(self, tenant: Tenant, ids: Sequence[str]) -> dict[str, Fact]:
        """Facts by id, for one user only."""

    def has_user(self, tenant: Tenant) -> bool:
        """Whether anything (an episode or a chat turn) was ever stored for the tenant."""

    def iter_fact_ids(self, tenant: Tenant, batch: int = 2000) -> Iterator[list[str]]:
        """Every fact id of one user, in batches."""

    def users(self) -> list[Tenant]:
        """Every user with stored episodes or chat messages."""
