"""Memory: the façade. It checks what comes in and hands the work to the module that owns it.

``conversation_end`` → :mod:`~zep_core.ingest`; the write step (records, then the
outbox into Chroma and Kùzu) → :mod:`~zep_core.sync`; GetContext and the context
block → :mod:`~zep_core.retrieval`; refresh (``every 6h``), maintain, checks and
rebuilds → :mod:`~zep_core.maintenance`; chat sessions → :mod:`~zep_core.sessions`;
export/import → :mod:`~zep_core.transfer`; read-only Cypher → :mod:`~zep_core.cypher`;
threads → :mod:`~zep_core.workers`; the stores → :func:`zep_core.stores.open_stores`.

Example:
    >>> from zep_core import Memory
    >>> with Memory.open("./data") as memory:                     # doctest: +SKIP
    ...     memory.conversation_end("s1", [{"role": "user", "content": "I live in Paris"}])
    ...     memory.conversation_end("s2", [{"role": "user", "content": "I moved to Berlin"}])
    ...     print(memory.context_block("Where do I live?"))

"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import fields, is_dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, TextIO

from . import cypher as _cypher
from . import transfer
from .aio import in_thread
from .config import MemoryConfig
from .errors import ConfigError, NotFoundError, ValidationError, ZepMemoryError
from .ingest import EpisodeSpec, Ingestor
from .maintenance import Maintenance, MaintenanceReport
from .models import Entity, Episode, Fact, IngestResult, Message, to_utc
from .providers.factory import build_providers
from .retrieval import ContextQuery, Retriever
from .sessions import SessionBuffer
from .stores import StoreOpener, open_stores
from .stores.graph import SCHEMA as GRAPH_SCHEMA
from .stores.sandbox import CypherSandbox, SandboxLimits
from .sync import IndexSync, OutboxOp
from .tenant import Tenant
from .validation import check_episodes, check_flag, check_id, check_limit
from .workers import Workers

__all__ = ["MaintenanceReport", "Memory"]

log = logging.getLogger("zep_core")

#: What ``Episode.status`` can be: stored and extraction to come, extracted, or given up on.
EPISODE_STATUSES = ("pending", "done", "failed")
#: How often a thread checkpoints SQLite's write-ahead log, so that no commit does it
#: (:meth:`RecordStore.checkpoint_in_background`): a quarter second of writes is at most a few MB of log.
CHECKPOINT_S = 0.25


class Memory:
    """A temporal knowledge-graph memory on SQLite + Chroma + Kùzu.

    One process opens a data folder once: a second ``Memory`` (or :meth:`open`) on a
    folder this process already has open shares the first one's stores, so any number
    of adapters in one process use one memory. Each is closed on its own; the last
    ``close()`` releases the stores and the folder lock. The second must ask for the
    same settings (and clock and store opener), or it gets a :class:`ConfigError`.
    Another process still gets :class:`StoreLockedError` (or uses ``zep-memory serve``).

    Args:
        config: a :class:`MemoryConfig`; ``None`` uses the offline defaults in ``./data``.
        clock: returns "now" (timezone-aware); tests pass a fixed clock.
        stores: opens the stores (default :func:`zep_core.stores.open_stores`); pass your
            own to plug in other vector or graph stores.

    Raises:
        StoreLockedError: another process has the data folder open.
        ConfigError: the data folder was built with another embedder, or this process
            has it open with other settings.

    Example:
        >>> memory = Memory(MemoryConfig(data_dir=tmp))                # doctest: +SKIP
        >>> memory.conversation_end("s1", [Message("I live in Paris", name="Alice")])

    """

    def __init__(self, config: MemoryConfig | None = None, *, clock: Callable[[], datetime] | None = None,
                 stores: StoreOpener = open_stores) -> None:
        _attach(self, config or MemoryConfig(), clock, stores, same_settings=True)

    def _build(self, config: MemoryConfig, clock: Callable[[], datetime] | None, stores: StoreOpener) -> None:
        """Open the stores and build the parts: what every handle on this folder shares."""
        self.config = config
        self._clock = clock or (lambda: datetime.now(timezone.utc))
        self._opener = stores
        self._closed = False
        self._owner: Memory | None = None
        self.embedder, self.extractor, self.summarizer = build_providers(self.config)
        self.data_dir = self.config.data_path
        self._stores = stores(self.config)
        records = self._stores.records
        try:
            self._sync = IndexSync(self._stores, apply_at_commit=self.config.index_writes == "sync")
            self._ingest = Ingestor(self.config, records, self._sync, self.embedder, self.extractor, self.now,
                                    self._check_open)
            self._retrieval = Retriever(records, self._stores.vectors, self._stores.graph, self.embedder,
                                        self._sync.catch_up, assistant=self.config.assistant_speaker)
            self._sessions = SessionBuffer(self.config, records, self._ingest, self.now)
            self._maintenance = Maintenance(self.config, self._stores, self._sync, self._ingest, self.embedder,
                                            self.summarizer, self.now)
            self._maintenance.open(self.data_dir)
        except BaseException:
            self._closed = True
            self._stores.close(clean=not self._stores.recovering)  # a crash not yet recovered from stays one
            raise
        limits = self.config.limits
        self._sandbox = CypherSandbox(records, GRAPH_SCHEMA, self.data_dir / "cypher", SandboxLimits(
            timeout_s=limits.cypher_timeout_s, max_rows=limits.cypher_max_rows, memory_mb=limits.cypher_memory_mb,
            tenants=limits.cypher_cache_tenants))
        self._workers = Workers(self)
        records.checkpoint_in_background()
        self._workers.every("zep-checkpoint", CHECKPOINT_S, records.checkpoint)
        if self.config.index_writes == "background":
            self._workers.start("zep-indexer", self._sync.run_indexer, wake=self._sync.wake)
        if self.config.auto_refresh:
            interval = max(self.config.entity_refresh_interval.total_seconds(), 0.05)
            self._workers.every("zep-entity-refresh", interval, self.refresh_entities)

    @classmethod
    def open(cls, data_dir: str | Path = "./data", **options: Any) -> Memory:
        """Open (or create) a memory in ``data_dir`` with the offline defaults.

        A folder this process already has open is not opened again: the new Memory
        shares its stores (see :class:`Memory`). Without ``options`` it joins that
        memory whatever settings it was opened with; with ``options`` they must match.

        Args:
            data_dir: the data folder; or a PostgreSQL URL (``postgresql://…``), which is
                ``database_url=`` with the default folder for this process's scratch.
            **options: any :class:`MemoryConfig` field, e.g. ``semantic_threshold=0.5``.

        Raises:
            StoreLockedError: another process has the data folder open.
            ConfigError: the folder is open in this process with other settings than ``options``.

        """
        if isinstance(data_dir, str) and data_dir.startswith(("postgresql://", "postgres://")):
            config = MemoryConfig(database_url=data_dir, **options)
        else:
            config = MemoryConfig(data_dir=data_dir, **options)
        memory = cls.__new__(cls)
        _attach(memory, config, None, open_stores, same_settings=bool(options))
        return memory

    # -- lifecycle ----------------------------------------------------------------

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop background work, apply what is queued, release the stores and the folder lock.

        With several Memory objects open on one folder in this process, each ``close()``
        closes that object only; the last one releases the stores and the lock.
        """
        if self._closed:
            return
        owner = self._owner
        if owner is not None:  # a handle: the shared parts go when the last handle goes
            self._closed = True
            _detach(owner)
            return
        _forget(self)
        if self.config.end_left_sessions and not self._workers.exiting:  # at exit the embedder's threads are gone
            self._end_left_sessions()
        self._workers.stop()
        self._sandbox.close()
        with self._sync.exclusive():  # a writer still running finishes first; none starts after
            self._sync.close()
            self._closed = True
            self._stores.close()

    def _end_left_sessions(self) -> None:
        """At close: learn from every session with turns waiting (nothing can add to them through this memory)."""
        try:
            ended = self._sessions.end_waiting()
        except Exception as exc:  # noqa: BLE001 - the turns stay stored; a later maintain() or close ends them
            log.warning("could not end the chat sessions left waiting at close: %s", exc)
            return
        if ended:
            log.info("closing: learned from %d chat sessions left waiting", len(ended))

    def _check_open(self) -> None:
        if self._closed or (self._owner is not None and self._owner._closed):
            raise ZepMemoryError("this Memory is closed; open a new one")

    def now(self) -> datetime:
        """The memory's clock (timezone-aware UTC); adapters stamp turns with it."""
        return to_utc(self._clock(), "clock()")

    # -- the handler -----------------------------------------------------------------

    def conversation_end(self, session_id: str, messages: Sequence[Any], *, user_id: str = "default",
                         episode_id: str | None = None) -> IngestResult:
        """The spec's handler: store the episode, then summarize, extract and apply the rules.

        The episode and every message are committed before extraction runs, so a
        failing extractor loses nothing: the episode stays ``pending`` and
        :meth:`maintain` retries it. Sending the same ``episode_id`` twice is a no-op.

        Args:
            session_id: the conversation.
            messages: :class:`Message` objects, dicts with ``role``/``content``, or pairs.
            user_id: the tenant.
            episode_id: a caller-chosen id that makes retries idempotent.

        Returns:
            An :class:`IngestResult` listing facts added, reinforced, superseded, discarded.

        Raises:
            ValidationError: malformed messages or ids, or input over the configured limits.

        """
        self._check_open()
        session_id, user_id = _check_ids(session_id=session_id, user_id=user_id)
        if episode_id is not None:
            check_id(episode_id, "episode_id")
        return self._ingest.conversation_end(session_id, messages, user_id=user_id, episode_id=episode_id)

    def conversation_end_many(self, episodes: Iterable[Any], *, batch_size: int = 256,
                              progress: Callable[[int, IngestResult], None] | None = None) -> list[IngestResult]:
        """:meth:`conversation_end` for many episodes at once, a batch at a time: the bulk import.

        Everything is checked before anything is written. The batches take each user's
        episodes together (users in order of first appearance, each user's episodes in
        input order: users never touch each other's facts, so every result is the same as
        in input order). Then, per batch of ``batch_size`` episodes: every new episode is
        stored (``pending``) in one transaction before any extraction, so a failing
        extractor loses nothing; each is extracted (a failure leaves that one ``pending``
        with its error, the others go on); the facts and new entity names of the whole
        batch are embedded in one call; and the update rules are applied episode by
        episode in one transaction — a later episode supersedes or reinforces an earlier
        one's facts exactly as one call per episode would. An extractor that
        ``needs_known_facts`` (the LLM extractor: what it is shown depends on the episodes
        before) processes the stored batch one episode at a time instead, with the same
        results. Each user's Chroma collection and graph are written once per call: the
        background indexer writes a user's as soon as the batch holding its last episode
        has committed, while the next batches are processed, and the rest at the end (the
        last batch is cut to a quarter of ``batch_size``, so that rest is small); a read in
        between still sees every committed batch.
        Episode ids already stored for the user are ``duplicate``: running an import
        again adds nothing.

        Args:
            episodes: :class:`~zep_core.ingest_files.EpisodeInput` tuples, or mappings (or
                objects) with ``session_id``, ``messages``, and optionally ``user_id``
                (default ``"default"``) and ``episode_id`` (as for :meth:`conversation_end`).
            batch_size: episodes per batch, at most (1..100000): stored, embedded and
                committed together.
            progress: called after each batch commits as ``progress(position, result)`` for
                each of its episodes (``position`` in the input, from 0; batches group each
                user's episodes, so positions can come out of order).

        Returns:
            One :class:`IngestResult` per episode, in input order, each what
            :meth:`conversation_end` would have returned for it.

        Raises:
            ValidationError: an episode is malformed (ids, messages, limits), an episode id
                repeats within the call or belongs to another user; the message names the
                episode by position (``"episode 3: ..."``, from 0) and nothing is written.
            NotFoundError: a user was forgotten while its episodes were being processed;
                that batch's episodes stay stored ``pending`` and :meth:`maintain` finishes them.

        Example:
            >>> results = memory.conversation_end_many([                 # doctest: +SKIP
            ...     {"session_id": "s1", "user_id": "alice", "episode_id": "alice-s1",
            ...      "messages": [Message("I live in Paris.", name="Alice")]},
            ...     {"session_id": "s2", "user_id": "alice", "episode_id": "alice-s2",
            ...      "messages": [Message("I moved to Berlin.", name="Alice")]},
            ... ])
            >>> [r.status for r in results]                               # doctest: +SKIP
            ['done', 'done']

        """
        self._check_open()
        batch_size = check_limit(batch_size, "batch_size", maximum=100_000)
        check_episodes(episodes, progress)
        specs = [_episode_spec(item, i) for i, item in enumerate(episodes)]
        return self._ingest.conversation_end_many(specs, batch_size=batch_size, progress=progress)

    # -- queries ----------------------------------------------------------------------

    def get_context(self, input: str, *, user_id: str = "default", limit: int | None = None,
                    as_of: datetime | str | None = None, require_both: bool | None = None,
                    threshold: float | None = None, speaker: str | None = None) -> list[Fact]:
        """The spec's GetContext: the most relevant current facts for ``input``.

        Candidates match semantically (cosine >= ``threshold``) or lie within
        ``graph_hops`` of an entity named in the input; they are ranked by
        ``semantic_weight * sm + graph_weight * gm``. Each returned fact carries
        ``score``, ``semantic_score`` and ``graph_score``.

        Args:
            input: the user's text or question.
            user_id: the tenant; only its facts are searched.
            limit: how many facts (default ``config.context_limit``).
            as_of: return what was true at that time instead of now.
            require_both: the spec's literal AND of both matches.
            threshold: override ``config.semantic_threshold``.
            speaker: who is asking; "I/me/my" in the input mean this entity (default
                ``config.default_speaker``), as they did when the facts were extracted.

        A user with nothing stored yet has no facts: ``[]`` (the arguments are checked all the same).

        """
        query = self._query(input, user_id, limit=limit, as_of=as_of, speaker=speaker, require_both=require_both,
                            threshold=threshold)
        if not self._stores.records.has_user(query.user_id):
            return []
        return self._retrieval.get_context(query)

    def context_block(self, input: str, *, user_id: str = "default", limit: int | None = None,
                      as_of: datetime | str | None = None, max_entities: int = 5,
                      speaker: str | None = None) -> str:
        """A prompt-ready string: the GetContext facts with dates, and entity summaries (``""`` for none)."""
        query = self._query(input, user_id, limit=limit, as_of=as_of, speaker=speaker)
        max_entities = check_limit(max_entities, "max_entities", minimum=0)
        if not self._stores.records.has_user(query.user_id):
            return ""
        return self._retrieval.context_block(query, max_entities=max_entities)

    # -- the same, awaited ---------------------------------------------------------------

    async def aget_context(self, input: str, *, user_id: str = "default", limit: int | None = None,
                           as_of: datetime | str | None = None, require_both: bool | None = None,
                           threshold: float | None = None, speaker: str | None = None) -> list[Fact]:
        """:meth:`get_context`, awaited: it runs in :func:`zep_core.aio.pool`, so concurrent calls overlap."""
        return await in_thread(self.get_context, input, user_id=user_id, limit=limit, as_of=as_of,
                               require_both=require_both, threshold=threshold, speaker=speaker)

    async def acontext_block(self, input: str, *, user_id: str = "default", limit: int | None = None,
                             as_of: datetime | str | None = None, max_entities: int = 5,
                             speaker: str | None = None) -> str:
        """:meth:`context_block`, awaited (in :func:`zep_core.aio.pool`)."""
        return await in_thread(self.context_block, input, user_id=user_id, limit=limit, as_of=as_of,
                               max_entities=max_entities, speaker=speaker)

    async def aconversation_end(self, session_id: str, messages: Sequence[Any], *, user_id: str = "default",
                                episode_id: str | None = None) -> IngestResult:
        """:meth:`conversation_end`, awaited (in :func:`zep_core.aio.pool`)."""
        return await in_thread(self.conversation_end, session_id, messages, user_id=user_id, episode_id=episode_id)

    def _query(self, input: Any, user_id: str, **options: Any) -> ContextQuery:
        user_id = Tenant.of(user_id)
        self._check_open()
        return ContextQuery.parse(self.config, input, user_id=user_id, now=self.now(), **options)

    def entity_history(self, name: str, *, user_id: str = "default") -> list[Fact]:
        """The spec's EntityHistory: every fact about the entity, superseded ones too, oldest first.

        Raises:
            NotFoundError: unknown user or entity.

        """
        user_id = self._require_user(user_id)
        return self._stores.records.entity_history(user_id, self._retrieval.entity_id(name, user_id))

    def related_entities(self, name: str, *, user_id: str = "default", limit: int = 10) -> list[Entity]:
        """The spec's RelatedEntities: distinct entities 1..2 hops away in the graph, at most ``limit``.

        Raises:
            NotFoundError: unknown user or entity.

        """
        user_id = self._require_user(user_id)
        return self._retrieval.related_entities(name, user_id, limit=check_limit(limit))

    def get_entity(self, name: str, *, user_id: str = "default") -> Entity:
        """The entity called ``name`` (or one of its aliases)."""
        user_id = self._require_user(user_id)
        eid = self._retrieval.entity_id(name, user_id)
        return self._stores.records.get_entities(user_id, [eid])[eid]

    def cypher(self, query: str, params: Mapping[str, Any] | None = None, *,
               user_id: str = "default") -> list[dict[str, Any]]:
        """Run a read-only Cypher query over the user's graph, and only theirs.

        The graph has ``(:Entity {id, user_id, name, entity_type})`` nodes and
        ``[:FACT {fact_id, user_id, predicate, valid_from, valid_until, current}]``
        relationships. The query runs against a copy of ``user_id``'s graph built from
        SQLite (:mod:`zep_core.stores.sandbox`): other users' data is not in it.

        Raises:
            QueryError: a write clause, several statements, a failure, or a query over the
                limits (``cypher_timeout_s``, ``cypher_max_rows``, ``cypher_memory_mb``).
            ValidationError: params that are not a mapping of names to plain values.

        """
        user_id = self._require_user(user_id)
        checked, bound = _cypher.check(query, params)
        return self._sandbox.query(user_id, self._sync.version(user_id), checked, bound)

    # -- what is stored ------------------------------------------------------------------

    def _require_user(self, user_id: str) -> Tenant:
        """The tenant of ``user_id``, once it is checked and known (else a ``ValidationError`` or ``NotFoundError``)."""
        tenant = Tenant.of(user_id)
        self._check_open()
        if not self._stores.records.has_user(tenant):
            raise NotFoundError(f"unknown user {user_id!r}: nothing was ever stored for it; "
                                "check the user_id or call conversation_end() first")
        return tenant

    def has_user(self, user_id: str) -> bool:
        """Whether anything was ever stored for ``user_id``."""
        return self._stores.records.has_user(Tenant.of(user_id))

    def users(self) -> list[str]:
        """Every known user id."""
        return self._stores.records.users()

    def get_episode(self, episode_id: str, *, user_id: str | None = None) -> Episode:
        """A stored episode with its messages: ``user_id``'s (a ``NotFoundError`` for another user's).

        Without ``user_id``, the episode of whichever user holds that id (episode ids are
        unique across users): for a caller that sees every user, as :meth:`users` does.
        """
        check_id(episode_id, "episode_id")
        tenant = Tenant.of(user_id) if user_id is not None else self._stores.records.episode_owner(episode_id)
        episode = None if tenant is None else self._stores.records.get_episode(tenant, episode_id)
        if episode is None:
            raise NotFoundError(f"no episode {episode_id!r}" + (f" of user {user_id!r}" if user_id is not None else ""))
        return episode

    def episode_ids(self, *, user_id: str | None = None, status: str | None = None) -> list[str]:
        """Ids of the stored episodes, oldest first; of one user, or one status (``pending``, ``done``, ``failed``)."""
        if user_id is not None:
            user_id = Tenant.of(user_id)
        if status is not None and status not in EPISODE_STATUSES:
            raise ValidationError(f"status must be one of {', '.join(EPISODE_STATUSES)} (or None for all), "
                                  f"got {status!r}")
        return self._stores.records.episode_ids(user_id, status=status)

    def facts(self, user_id: str) -> list[Fact]:
        """Every fact of a user, superseded ones too, oldest first.

        Raises:
            NotFoundError: the user is unknown.

        """
        user_id = self._require_user(user_id)
        records = self._stores.records
        found = [f for ids in records.iter_fact_ids(user_id) for f in records.get_facts(user_id, ids).values()]
        return sorted(found, key=lambda f: (f.valid_from, f.id))

    def export_records(self, user_id: str, *, embeddings: bool = False) -> Iterator[dict[str, Any]]:
        """Every record of a user as JSON-ready dicts, in the export format (:mod:`zep_core.transfer`).

        Raises:
            NotFoundError: the user is unknown.

        """
        self._check_open()
        check_flag(embeddings, "embeddings")
        user_id = Tenant.of(user_id)
        if not self.has_user(user_id):
            raise NotFoundError(f"unknown user {user_id!r}: nothing is stored for it in {self.data_dir}")
        return transfer.export_records(self._stores.records, self.embedder, user_id, embeddings=embeddings)

    def export_user(self, user_id: str, out: TextIO, *, embeddings: bool = False) -> transfer.ExportCounts:
        """Write a user's memory to ``out`` as JSONL; ``embeddings`` includes the stored vectors."""
        return transfer.write_export(self.export_records(user_id, embeddings=embeddings), out)

    def import_user(self, lines: Iterable[str], *, replace: bool = False,
                    user_id: str | None = None) -> transfer.ImportReport:
        """Write an export back as it was, without re-extraction (see :func:`zep_core.transfer.import_records`)."""
        self._check_open()
        check_flag(replace, "replace")
        if isinstance(lines, (str, bytes)) or not isinstance(lines, Iterable):
            raise ValidationError(f"lines must be an open file or an iterable of JSON lines, got "
                                  f"{type(lines).__name__}" + (" (split a whole export with .splitlines())"
                                                               if isinstance(lines, (str, bytes)) else ""))
        if user_id is not None:
            user_id = Tenant.of(user_id)
        return transfer.import_records(self._stores.records, self._sync, self.embedder, lines, replace=replace,
                                       user_id=user_id, data_dir=self.data_dir, config=self.config)

    # -- chat sessions (used by the adapters: zep_core.sessions) ------------------------------

    def add_messages(self, session_id: str, messages: Sequence[Any], *, user_id: str = "default") -> None:
        """Persist chat turns of a session at once (they become an episode at :meth:`end_session`).

        The user's first turn in a new session ends the user's other sessions with turns
        waiting (``end_left_sessions``).
        """
        self._check_open()
        self._sessions.add(*_check_ids(session_id=session_id, user_id=user_id), messages)

    def get_messages(self, session_id: str, *, user_id: str = "default", limit: int | None = None) -> list[Message]:
        """A session's stored chat turns, oldest first (the last ``limit`` if given)."""
        checked = _check_ids(session_id=session_id, user_id=user_id)
        return self._sessions.messages(*checked, limit=None if limit is None else check_limit(limit, maximum=2**62))

    def unended_count(self, session_id: str, *, user_id: str = "default") -> int:
        """How many turns of a session have not yet gone through ``conversation_end``."""
        return len(self._sessions.messages(*_check_ids(session_id=session_id, user_id=user_id), unended=True))

    def clear_messages(self, session_id: str, *, user_id: str = "default") -> None:
        """Forget a session's chat turns; facts already learned from them stay."""
        self._sessions.clear(*_check_ids(session_id=session_id, user_id=user_id))

    def end_session(self, session_id: str, *, user_id: str = "default") -> IngestResult | None:
        """Run ``conversation_end`` on the session's turns not yet ingested; None if there are none."""
        self._check_open()
        return self._sessions.end_session(*_check_ids(session_id=session_id, user_id=user_id))

    # -- maintenance (zep_core.maintenance) -------------------------------------------------------

    def refresh_entities(self, *, user_id: str | None = None, max_age: timedelta | None = None,
                         batch_size: int = 50) -> int:
        """The spec's ``every 6h``: regenerate summary, fact_count and last_updated.

        Only entities changed since their last refresh, and last refreshed at least
        ``max_age`` ago (default ``config.entity_refresh_interval``), are touched.

        Returns:
            How many entities were refreshed.

        """
        self._check_open()
        if user_id is not None:
            user_id = Tenant.of(user_id)
        if max_age is not None and (not isinstance(max_age, timedelta) or max_age < timedelta(0)):
            raise ValidationError(f"max_age must be a timedelta >= 0 (or None for the config's "
                                  f"entity_refresh_interval), got {max_age!r}")
        return self._maintenance.refresh_entities(user_id=user_id, max_age=max_age,
                                                  batch_size=check_limit(batch_size, "batch_size", maximum=1_000_000))

    def maintain(self) -> MaintenanceReport:
        """Retry pending extractions, replay index writes, refresh stale entities, end sessions left idle.

        A chat session whose last waiting turn is ``session_idle_after`` old is ended
        (learned from) first, with ``end_left_sessions``.
        """
        self._check_open()
        ended = 0
        if self.config.end_left_sessions:
            ended = len(self._sessions.end_waiting(idle_for=self.config.session_idle_after))
        return replace(self._maintenance.maintain(), sessions_ended=ended)

    def flush(self) -> int:
        """Bring Chroma and Kùzu up to date with every committed write now; return how many were applied.

        Reads do this by themselves; call it before inspecting the indexes directly.
        """
        self._check_open()
        return self._sync.drain()

    def forget_user(self, user_id: str) -> None:
        """Remove every trace of a user from SQLite, Chroma and Kùzu.

        Raises:
            NotFoundError: the user is unknown.

        """
        user_id = self._require_user(user_id)
        with self._sync.transaction(apply_now=True) as ops:
            self._stores.records.delete_user(user_id)
            ops.append(OutboxOp.forget_user(user_id))

    def rebuild(self, *, reembed: bool = False, batch_size: int = 1000) -> dict[str, int]:
        """Recreate Chroma and Kùzu from SQLite, without re-embedding unless asked.

        Args:
            reembed: embed the stored texts again with the current embedder (after a
                model change), and record the new embedder identity.
            batch_size: rows read and indexed per batch.

        Returns:
            Counts of facts and entities indexed.

        """
        self._check_open()
        check_flag(reembed, "reembed")
        batch_size = check_limit(batch_size, "batch_size", maximum=1_000_000)
        return self._maintenance.rebuild(reembed=reembed, batch_size=batch_size)

    def check_consistency(self, user_id: str | None = None) -> dict[str, list[str]]:
        """Compare the three stores; an empty dict means they agree.

        Returns:
            Problem kinds mapped to the ids concerned (e.g. ``current_missing_in_chroma``).

        """
        self._check_open()
        if user_id is not None:
            user_id = Tenant.of(user_id)
        return self._maintenance.check_consistency([user_id] if user_id else self.users(), user_id)

    def stats(self, user_id: str | None = None) -> dict[str, Any]:
        """Counts per store (records, vectors per kind, graph), pending work and the embedder.

        With ``user_id``, that user's counts too (under ``"user"``).
        """
        self._check_open()
        if user_id is not None:
            user_id = Tenant.of(user_id)
        return {**self._maintenance.stats(self.users(), user_id), "data_dir": str(self.data_dir),
                "chroma_url": self.config.chroma_url}


# -- one folder, opened once per process: the handles of its shared parts ----------------------

#: The memories this process has open, by (process, data folder): the owner of the parts
#: and how many handles use them. The pid keeps a forked child from using its parent's stores.
_OPEN: dict[tuple[int, Path], list[Any]] = {}
_OPEN_LOCK = threading.RLock()


def _attach(handle: Memory, config: MemoryConfig, clock: Callable[[], datetime] | None, stores: StoreOpener,
            *, same_settings: bool) -> None:
    """Make ``handle`` a Memory on ``config``'s folder: on the parts already open here, or new ones."""
    key = _open_key(config)
    with _OPEN_LOCK:
        entry = _OPEN.get(key)
        if entry is None:
            owner = Memory.__new__(Memory)
            owner._build(config, clock, stores)
            entry = _OPEN[key] = [owner, 0]
        elif same_settings:
            _check_same(entry[0], config, clock, stores)
        entry[1] += 1
    owner = entry[0]
    handle.__dict__.update(owner.__dict__)  # the shared parts; the flags below are the handle's own
    handle._owner, handle._closed = owner, False


def _open_key(config: MemoryConfig) -> tuple[int, Path, str | None]:
    """What one set of open stores is shared by, in this process: the folder, and the database if any."""
    return os.getpid(), config.data_path, config.database_url


def _detach(owner: Memory) -> None:
    """One handle of ``owner`` closed: the last one closes the owner (under the lock, so no open joins it meanwhile)."""
    with _OPEN_LOCK:
        entry = _OPEN.get(_open_key(owner.config))
        if entry is None or entry[0] is not owner:
            return  # the owner is closed already (at interpreter exit)
        entry[1] -= 1
        if entry[1] == 0:
            owner.close()


def _forget(owner: Memory) -> None:
    """The owner is closing: a later open builds new parts."""
    with _OPEN_LOCK:
        key = _open_key(owner.config)
        if key in _OPEN and _OPEN[key][0] is owner:
            del _OPEN[key]


def _check_same(owner: Memory, config: MemoryConfig, clock: Callable[[], datetime] | None,
                stores: StoreOpener) -> None:
    """Refuse a second open of a folder with other settings than the open one has."""
    first = owner.config
    differ = []
    for f in fields(MemoryConfig):
        mine, theirs = getattr(config, f.name), getattr(first, f.name)
        if f.name == "data_dir" or mine == theirs:
            continue
        if is_dataclass(mine):  # a settings group: name the settings that differ
            differ += [g.name for g in fields(mine) if getattr(mine, g.name) != getattr(theirs, g.name)]
        else:
            differ.append(f.name)
    if clock is not None and clock is not owner._clock:
        differ.append("clock")
    if stores is not owner._opener:
        differ.append("stores")
    if differ:
        raise ConfigError(
            f"the data folder {owner.data_dir} is in use by this process with other settings "
            f"({', '.join(differ)} differ); a second Memory on it shares the open one's stores, so open it with "
            "the same settings (or Memory.open(data_dir) with none, to join it as it is), or close the other "
            "Memory first")


def _check_ids(**ids: str | None) -> tuple[str, ...]:
    """Check each given id and return them in order; ``user_id`` as its :class:`~zep_core.tenant.Tenant`."""
    return tuple(Tenant.of(value) if name == "user_id" else check_id(value, name) for name, value in ids.items())


_EPISODE_KEYS = ("session_id", "messages", "user_id", "episode_id")


def _episode_spec(item: Any, position: int) -> EpisodeSpec:
    """One item of :meth:`Memory.conversation_end_many` as checked ids and its messages (checked later)."""
    where = f"episode {position}"
    if isinstance(item, Mapping):
        unknown = [k for k in item if k not in _EPISODE_KEYS]
        if unknown:
            raise ValidationError(f"{where}: unknown key {unknown[0]!r}; an episode has "
                                  f"{', '.join(_EPISODE_KEYS)}")
        fields = {k: item[k] for k in _EPISODE_KEYS if k in item}
    else:
        fields = {k: getattr(item, k) for k in _EPISODE_KEYS if hasattr(item, k)}
    for required in ("session_id", "messages"):
        if required not in fields:
            raise ValidationError(f"{where} has no {required!r}; pass a mapping with 'session_id' and 'messages' "
                                  "(and optionally 'user_id', 'episode_id'), or an EpisodeInput")
    try:
        session_id, user_id = _check_ids(session_id=fields["session_id"], user_id=fields.get("user_id", "default"))
        episode_id = fields.get("episode_id")
        if episode_id is not None:
            check_id(episode_id, "episode_id")
    except ValidationError as exc:
        raise ValidationError(f"{where}: {exc}") from None
    return EpisodeSpec(session_id, fields["messages"], user_id, episode_id)
