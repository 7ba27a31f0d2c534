"""Memory: the façade. It checks what comes in and hands the work to the module that owns it.

``conversation_end`` → :mod:`~zep_core.ingest`; the write step (records, then the
outbox into the indexes) → :mod:`~zep_core.sync`; GetContext and the context
block → :mod:`~zep_core.retrieval`; refresh (``every 6h``), maintain, checks and
rebuilds → :mod:`~zep_core.maintenance`; chat sessions → :mod:`~zep_core.sessions`;
export/import → :mod:`~zep_core.transfer`; read-only Cypher → :mod:`~zep_core.cypher`;
opening the stores and wiring the parts, once per folder in a process → :mod:`~zep_core.parts`.

This module writes the lifecycle, the spec's handler and queries, and the adapters'
chat sessions; the verbs that list, export, import and look after what the memory
holds (``users``, ``facts``, ``export_user``, ``maintain``, ``rebuild``, ``stats``…)
are written in :mod:`~zep_core.admin`, and :class:`Memory` inherits them.

Example:
    >>> from zep_core import Memory
    >>> with Memory.open("./data") as memory:                     # doctest: +SKIP
    ...     memory.conversation_end("s1", [{"role": "user", "content": "I live in Paris"}])
    ...     memory.conversation_end("s2", [{"role": "user", "content": "I moved to Berlin"}])
    ...     print(memory.context_block("Where do I live?"))

"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from . import cypher as _cypher
from .admin import MemoryAdmin
from .aio import in_thread
from .config import MemoryConfig
from .ingest import episode_specs
from .maintenance import MaintenanceReport
from .models import EPISODE_STATUSES, Entity, Fact, IngestResult, Message
from .parts import Parts, attach, detach, forget
from .retrieval import ContextQuery
from .stores import StoreOpener, open_stores
from .stores.backends import is_database_url
from .tenant import Tenant, check_ids
from .validation import check_id, check_limit

__all__ = ["EPISODE_STATUSES", "MaintenanceReport", "Memory"]


class Memory(MemoryAdmin):
    """A temporal knowledge-graph memory: a record store and its two indexes, in a data folder or a database.

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
        attach(self, config or MemoryConfig(), clock, stores, same_settings=True)

    def _build(self, config: MemoryConfig, clock: Callable[[], datetime] | None, stores: StoreOpener) -> None:
        """Build the parts every handle on this folder shares (:class:`~zep_core.parts.Parts`) and name them."""
        self._owner: Memory | None = None
        self._closed = False
        p = self._parts = Parts(config, clock, stores, owner=self, refresh=self.refresh_entities)
        self.config, self.data_dir, self.embedder, self.extractor, self.summarizer = (
            config, p.data_dir, p.embedder, p.extractor, p.summarizer)
        self._stores, self._sync, self._ingest, self._retrieval = p.stores, p.sync, p.ingest, p.retrieval
        self._sessions, self._maintenance = p.sessions, p.maintenance
        self._sandbox, self._workers = p.sandbox, p.workers

    @classmethod
    def open(cls, data_dir: str | Path = "./data", **options: Any) -> Memory:
        """Open (or create) a memory in ``data_dir`` with the offline defaults.

        A folder this process already has open is not opened again: the new Memory
        shares its stores (see :class:`Memory`). Without ``options`` it joins that
        memory whatever settings it was opened with; with ``options`` they must match.

        Args:
            data_dir: the data folder; or a database's URL (``postgresql://…``), which is
                ``database_url=`` with the default folder for this process's scratch.
            **options: any :class:`MemoryConfig` field, e.g. ``semantic_threshold=0.5``.

        Raises:
            StoreLockedError: another process has the data folder open.
            ConfigError: the folder is open in this process with other settings than ``options``, or
                ``data_dir`` is the URL of a database no backend takes.

        """
        if isinstance(data_dir, str) and is_database_url(data_dir):
            config = MemoryConfig(database_url=data_dir, **options)
        else:
            config = MemoryConfig(data_dir=data_dir, **options)
        memory = cls.__new__(cls)
        attach(memory, config, None, open_stores, same_settings=bool(options))
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
        if self._closed or self._parts.closed:
            return
        if self._owner is not None:  # a handle: the shared parts go when the last handle goes
            self._closed = True
            detach(self._owner)
            return
        forget(self)
        self._parts.close()

    def now(self) -> datetime:
        """The memory's clock (timezone-aware UTC); adapters stamp turns with it."""
        return self._parts.now()

    # -- the handler -----------------------------------------------------------------

    def conversation_end(self, session_id: str, messages: Sequence[Any], *, user_id: str = "default",
                         episode_id: str | None = None) -> IngestResult:
        """The spec's handler: store the episode, then summarize, extract and apply the rules.

        The episode and every message are committed before extraction runs, so a
        failing extractor loses nothing: the episode stays ``pending`` and
        :meth:`maintain` retries it. Sending the same episode twice stores it once: the
        second send is a ``duplicate``.

        Args:
            session_id: the conversation.
            messages: :class:`Message` objects, dicts with ``role``/``content``, or pairs.
            user_id: the tenant.
            episode_id: the episode's id. By default it is derived from the user, the
                session and the messages (:func:`zep_core.episodes.episode_key`; a message's
                timestamp counts, the memory's clock does not), so the same words sent again
                in the same session are a ``duplicate``; give each send its own id to store
                them twice.

        Returns:
            An :class:`IngestResult` listing facts added, reinforced, superseded, discarded.

        Raises:
            ValidationError: malformed messages or ids, or input over the configured limits.

        """
        self._check_open()
        session_id, user_id = check_ids(session_id=session_id, user_id=user_id)
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
        results. Each user's vector collection and graph are written once per call: the
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
        return self._ingest.conversation_end_many(episode_specs(episodes, progress), batch_size=batch_size,
                                                  progress=progress)

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
        relationships. The query runs against a copy of ``user_id``'s graph built from the
        record store (:mod:`zep_core.stores.sandbox`): other users' data is not in it.

        Raises:
            QueryError: a write clause, several statements, a failure, or a query over the
                limits (``cypher_timeout_s``, ``cypher_max_rows``, ``cypher_memory_mb``).
            ValidationError: params that are not a mapping of names to plain values.

        """
        user_id = self._require_user(user_id)
        return self._sandbox.query(user_id, self._sync.version(user_id), *_cypher.check(query, params))

    # -- chat sessions (used by the adapters: zep_core.sessions) ------------------------------

    def add_messages(self, session_id: str, messages: Sequence[Any], *, user_id: str = "default") -> None:
        """Persist chat turns of a session at once (they become an episode at :meth:`end_session`).

        The user's first turn in a new session ends the user's other sessions with turns
        waiting (``end_left_sessions``).
        """
        self._check_open()
        self._sessions.add(*check_ids(session_id=session_id, user_id=user_id), messages)

    def get_messages(self, session_id: str, *, user_id: str = "default", limit: int | None = None) -> list[Message]:
        """A session's stored chat turns, oldest first (the last ``limit`` if given)."""
        checked = check_ids(session_id=session_id, user_id=user_id)
        return self._sessions.messages(*checked, limit=None if limit is None else check_limit(limit, maximum=2**62))

    def unended_count(self, session_id: str, *, user_id: str = "default") -> int:
        """How many turns of a session have not yet gone through ``conversation_end``."""
        return len(self._sessions.messages(*check_ids(session_id=session_id, user_id=user_id), unended=True))

    def clear_messages(self, session_id: str, *, user_id: str = "default") -> None:
        """Forget a session's chat turns; facts already learned from them stay."""
        self._sessions.clear(*check_ids(session_id=session_id, user_id=user_id))

    def end_session(self, session_id: str, *, user_id: str = "default") -> IngestResult | None:
        """Run ``conversation_end`` on the session's turns not yet ingested; None if there are none."""
        self._check_open()
        return self._sessions.end_session(*check_ids(session_id=session_id, user_id=user_id))
