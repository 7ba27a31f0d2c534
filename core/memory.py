"""Memory: the one façade over the three stores, the providers and the rules.

Example:
    >>> from zep_core import Memory
    >>> with Memory.open("./data") as memory:                     # doctest: +SKIP
    ...     memory.conversation_end("s1", [{"role": "user", "content": "I live in Paris"}])
    ...     memory.conversation_end("s2", [{"role": "user", "content": "I moved to Berlin"}])
    ...     print(memory.context_block("Where do I live?"))

"""

from __future__ import annotations

import atexit
import hashlib
import logging
import operator
import shutil
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

from .config import MemoryConfig
from .cypher import USER_PARAM, scope_query
from .errors import (
    ConfigError,
    NotFoundError,
    StoreError,
    ValidationError,
    ZepMemoryError,
)
from .lock import DataDirLock
from .models import Entity, Episode, Fact, IngestResult, Message, coerce_messages, new_id, to_utc
from .providers.base import Extraction, ExtractionContext
from .providers.factory import build_providers
from .resolve import canonical_predicate, entity_id, input_aliases, is_first_person, mentions_first_person
from .retrieval import ScoringParams, render_context_block, score_candidates
from .stores.base import EntityNode, FactEdge
from .stores.records import RecordStore, StoredFact, iso
from .temporal import STATEMENT, normalize_name, plan_updates

__all__ = ["MaintenanceReport", "Memory"]

log = logging.getLogger("zep_core")
_MAX_ID_CHARS = 256


def _check_id(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{what} must be a non-empty string, got {value!r}")
    if len(value) > _MAX_ID_CHARS:
        raise ValidationError(f"{what} is {len(value)} characters long; the limit is {_MAX_ID_CHARS}")
    if "\x00" in value:
        raise ValidationError(f"{what} contains a NUL byte")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(f"{what} is not valid Unicode (lone surrogate)") from None
    return value


def _check_limit(value: Any) -> int:
    try:
        limit = operator.index(value)
    except TypeError:
        raise ValidationError(f"limit must be an integer >= 1, got {value!r}") from None
    if limit < 1:
        raise ValidationError(f"limit must be >= 1, got {limit}")
    return limit


@dataclass(frozen=True)
class MaintenanceReport:
    """What :meth:`Memory.maintain` did."""

    retried: int
    completed: int
    still_pending: tuple[str, ...]
    entities_refreshed: int
    index_writes_replayed: int


class Memory:
    """A temporal knowledge-graph memory on SQLite + Chroma + Kùzu.

    Args:
        config: a :class:`MemoryConfig`; ``None`` uses the offline defaults in ``./data``.
        clock: returns "now" (timezone-aware); tests pass a fixed clock.

    Raises:
        StoreLockedError: another process has the data folder open.
        ConfigError: the data folder was built with another embedder.

    Example:
        >>> memory = Memory(MemoryConfig(data_dir=tmp))                # doctest: +SKIP
        >>> memory.conversation_end("s1", [Message("I live in Paris", name="Alice")])

    """

    def __init__(self, config: MemoryConfig | None = None, *,
                 clock: Callable[[], datetime] | None = None) -> None:
        self.config = config or MemoryConfig()
        self._clock = clock or (lambda: datetime.now(timezone.utc))
        self.embedder, self.extractor, self.summarizer = build_providers(self.config)
        root = self.config.data_path
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the data folder {root}: {exc}") from exc
        self.data_dir = root
        self._lock_file = DataDirLock(root / ".zep.lock")
        self._lock_file.acquire()
        self._write_lock = threading.RLock()  # SQLite writes that apply the update rules
        self._index_lock = threading.RLock()  # one outbox drain at a time; writers don't wait for it
        self._closed = False
        self._stopping = threading.Event()
        self._index_wakeup = threading.Event()
        self._workers: list[threading.Thread] = []
        try:
            self.records = RecordStore(root / "zep.db", busy_timeout_ms=self.config.busy_timeout_ms)
            from .stores.graph import KuzuGraphIndex
            from .stores.vectors import ChromaVectorIndex

            reembed = self._check_embedder()
            self._check_chroma_files(root / "chroma")
            self.vectors = ChromaVectorIndex(root / "chroma", url=self.config.chroma_url)
            self.graph = KuzuGraphIndex(root / "graph", buffer_pool_mb=self.config.graph_buffer_pool_mb)
            if reembed or self.records.get_meta("rebuild") == "pending":  # asked for, or one a crash cut short
                self.rebuild(reembed=reembed)
            self._drain_outbox()
        except BaseException:
            self._release(clean=self._lock_file.unclean_since is None)  # a crash not yet recovered from stays one
            raise
        if self.config.index_writes == "background":
            self._start_worker("zep-indexer", self._index_loop)
        if self.config.auto_refresh:
            self._start_auto_refresh()
        if self._workers:  # a worker still in Kùzu or Chroma when the interpreter exits aborts the process
            atexit.register(_close_at_exit, weakref.ref(self))

    @classmethod
    def open(cls, data_dir: str | Path = "./data", **options: Any) -> Memory:
        """Open (or create) a memory in ``data_dir`` with the offline defaults.

        Args:
            data_dir: the data folder.
            **options: any :class:`MemoryConfig` field, e.g. ``semantic_threshold=0.5``.

        """
        return cls(MemoryConfig(data_dir=data_dir, **options))

    # -- lifecycle ----------------------------------------------------------------

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop background work and release the stores and the folder lock."""
        if self._closed:
            return
        self._stopping.set()
        self._index_wakeup.set()
        for worker in self._workers:
            worker.join(timeout=30)
        with self._write_lock:
            try:
                self._drain_outbox()
            except ZepMemoryError:  # left in the outbox: replayed on the next open
                log.warning("index writes left pending at close", exc_info=True)
            self._release()

    def _release(self, *, clean: bool = True) -> None:
        self._closed = True
        for store in ("graph", "vectors", "records"):
            obj = getattr(self, store, None)
            if obj is not None:
                try:
                    obj.close()
                except Exception:  # closing is best effort; the lock is what matters
                    log.debug("closing %s failed", store, exc_info=True)
        self._lock_file.release(clean=clean)

    def _check_chroma_files(self, chroma_dir: Path) -> None:
        """After a crash, make sure Chroma's files will not crash this process.

        Chroma writes its HNSW files in place, so a process killed meanwhile can leave
        files that segfault the next reader. They are loaded in a child process first
        (see :mod:`zep_core.stores.chroma_check`); if that fails they are deleted and a
        rebuild from SQLite is recorded as pending, to run once the stores are open.
        """
        since = self._lock_file.unclean_since
        if since is None or self.config.chroma_url:
            return
        from .stores.chroma_check import chroma_loads

        if chroma_loads(chroma_dir, since):
            return
        log.warning("rebuilding the vector index of %s from SQLite after an unclean shutdown", self.data_dir)
        self.records.set_meta("rebuild", "pending")
        shutil.rmtree(chroma_dir, ignore_errors=True)

    def _check_open(self) -> None:
        if self._closed:
            raise ZepMemoryError("this Memory is closed; open a new one")

    def _check_embedder(self) -> bool:
        identity = f"{self.embedder.name}|{self.embedder.dimension}"
        stored = self.records.get_meta("embedder")
        if stored is None:
            self.records.set_meta("embedder", identity)
            return False
        if stored == identity:
            return False
        if self.config.on_embedder_mismatch == "reembed":
            return True
        name, _, dim = stored.rpartition("|")
        raise ConfigError(
            f"the data folder {self.data_dir} was built with the embedder {name} ({dim}-d) but this "
            f"memory uses {self.embedder.name} ({self.embedder.dimension}-d); vectors cannot be mixed. "
            "Open it with the same embedder, or with on_embedder_mismatch='reembed' to re-embed the "
            "stored texts.")

    # -- the handler ----------------------------------------------------------------

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
        _check_id(session_id, "session_id")
        _check_id(user_id, "user_id")
        if episode_id is not None:
            _check_id(episode_id, "episode_id")
        msgs = self._validate_messages(messages)
        episode_id = episode_id or new_id()
        now = self._now()
        owner = self.records.episode_owner(episode_id)
        if owner is not None:
            if owner != user_id:
                raise ValidationError(f"episode id {episode_id!r} belongs to another user; use a new id")
            return IngestResult(episode_id=episode_id, status="duplicate")
        ids = [m.id or f"{episode_id}:{i}" for i, m in enumerate(msgs)]
        msgs = [replace(m, id=mid) for m, mid in zip(msgs, ids)]
        episode = Episode(id=episode_id, session_id=session_id, user_id=user_id, created_at=now,
                          messages=tuple(msgs), status="pending")
        with self.records.transaction():
            if self.records.episode_owner(episode_id) is not None:
                return IngestResult(episode_id=episode_id, status="duplicate")
            self.records.insert_episode(episode, ids)
        return self._process(episode, now)

    def _validate_messages(self, messages: Sequence[Any]) -> list[Message]:
        msgs = coerce_messages(messages)
        if not msgs:
            raise ValidationError("messages is empty; an episode needs at least one message")
        if len(msgs) > self.config.max_messages_per_episode:
            raise ValidationError(f"{len(msgs)} messages exceed max_messages_per_episode="
                                  f"{self.config.max_messages_per_episode}; split the conversation")
        for i, m in enumerate(msgs):
            if len(m.content) > self.config.max_message_chars:
                raise ValidationError(f"message {i} has {len(m.content)} characters, over max_message_chars="
                                      f"{self.config.max_message_chars}; split or shorten it")
        if self.config.strict_timezones:
            for i, raw in enumerate(messages):
                ts = raw.get("timestamp") if isinstance(raw, Mapping) else getattr(raw, "timestamp", None)
                if isinstance(ts, datetime) and ts.tzinfo is None:
                    raise ValidationError(f"message {i} has a naive timestamp; pass a timezone-aware one")
        ids = [m.id for m in msgs if m.id is not None]
        if len(ids) != len(set(ids)):
            raise ValidationError("message ids must be unique within an episode")
        return msgs

    def _process(self, episode: Episode, now: datetime) -> IngestResult:
        """Extract from a stored episode and apply the rules; failures leave it pending."""
        known: tuple[Fact, ...] = ()
        if getattr(self.extractor, "needs_known_facts", False):
            known = tuple(self._known_facts(episode))
        context = ExtractionContext(user_id=episode.user_id, session_id=episode.session_id, now=now,
                                    known_facts=known, default_speaker=self.config.default_speaker)
        try:
            extraction = self.extractor.extract(list(episode.messages), context)
            if not isinstance(extraction, Extraction):
                raise TypeError(f"the extractor returned {type(extraction).__name__}, not an Extraction")
        except Exception as exc:  # any extractor failure leaves the episode pending
            error = f"{type(exc).__name__}: {exc}"
            log.warning("extraction failed for episode %s: %s", episode.id, error)
            self.records.set_episode_status(episode.id, "pending", error=error)
            return IngestResult(episode_id=episode.id, status="pending", error=error)
        proposals = self._proposals(episode, extraction, now)
        contents = list(dict.fromkeys(f.content for f in proposals[0]))
        vectors = dict(zip(contents, self.embedder.embed(contents))) if contents else {}
        with self._write_lock:
            self._check_open()
            result = self._apply(episode, extraction, proposals, vectors, {f.id for f in known}, now)
        if self.config.index_writes == "sync":
            self._drain_outbox()
        self._index_wakeup.set()
        return result

    def _known_facts(self, episode: Episode, limit: int = 50) -> list[Fact]:
        text = "\n".join(m.content for m in episode.messages)[:20_000]
        names = input_aliases(text) + [normalize_name(self._speaker(m)) for m in episode.messages]
        ids = list(set(self.records.entity_ids_for_aliases(episode.user_id, names).values()))
        return self.records.current_facts_about(episode.user_id, ids, limit=limit)

    def _speaker(self, message: Message) -> str:
        if message.name:
            return message.name
        return self.config.default_speaker if message.role == "user" else message.role.capitalize()

    def _apply(self, episode: Episode, extraction: Extraction,
               proposed: tuple[list[Fact], dict[str, tuple[str, str, bool]], list[str]],
               vectors: Mapping[str, np.ndarray], known_ids: set[str], now: datetime) -> IngestResult:
        """Resolve entities, apply the update rules and commit, under the write lock."""
        user = episode.user_id
        proposals, types, invalid = proposed
        names = {normalize_name(n) for f in proposals for n in (f.subject, f.object)}
        resolved = self.records.entity_ids_for_aliases(user, list(names))

        def eid(name: str) -> str:
            return resolved.get(normalize_name(name)) or entity_id(user, name)

        entity_of = {f.id: (eid(f.subject), eid(f.object) if types[f.id][2] else None) for f in proposals}
        contradicted = {i for i in extraction.contradicted_fact_ids if i in known_ids}
        current = self.records.rule_candidates(
            user, list({s for s, _ in entity_of.values()}),
            single_valued=sorted(self.config.single_valued_predicates),
            statements=sorted({f.object for f in proposals if f.predicate == STATEMENT}), ids=sorted(contradicted))
        plan = plan_updates(current, proposals, single_valued=self.config.single_valued_predicates,
                            contradicted=contradicted, now=now)

        new_entities: dict[str, Entity] = {}
        for f in plan.added:
            sid, oid = entity_of[f.id]
            stype, otype, _ = types[f.id]
            for ent, name, etype in ((sid, f.subject, stype), (oid, f.object, otype)):
                if ent is not None and normalize_name(name) not in resolved and ent not in new_entities:
                    new_entities[ent] = Entity(id=ent, user_id=user, name=name.strip(), entity_type=etype)
        entity_vectors = self.embedder.embed([e.name for e in new_entities.values()]) if new_entities else []
        aliases = [(user, normalize_name(e.name), e.id) for e in new_entities.values()]
        aliases += [(user, normalize_name(f.object), entity_of[f.id][0]) for f in plan.added
                    if f.predicate == "is_named"]
        stored_touch = set(self.records.entity_ids_for_aliases(user, [
            normalize_name(n) for f in plan.reinforced + plan.superseded for n in (f.subject, f.object)]).values())
        touched = {e for f in plan.added for e in entity_of[f.id] if e} | stored_touch
        changed_at = iso(now)

        with self.records.transaction():
            if self.records.episode_owner(episode.id) is None:  # forget_user() ran meanwhile: write nothing
                raise NotFoundError(f"user {user!r} was forgotten while episode {episode.id!r} was being "
                                    "processed; nothing was learned from it")
            self.records.insert_entities(zip(new_entities.values(), entity_vectors), changed_at)
            self.records.add_aliases(aliases)
            self.records.write_facts(StoredFact(f, *entity_of[f.id], vectors[f.content]) for f in plan.added)
            self.records.update_facts(plan.reinforced + plan.superseded)
            self.records.mark_entities_changed(user, touched, changed_at)
            self.records.set_episode_status(episode.id, "done", summary=extraction.summary,
                                            usage=dict(extraction.usage) or None)
            self.records.add_outbox(
                [("entity", user, e, None) for e in new_entities]
                + [("fact", user, f.id, {"change": change}) for change, facts in
                   (("add", plan.added), ("touch", plan.reinforced), ("retire", plan.superseded))
                   for f in facts])
        return IngestResult(episode_id=episode.id, status="done", summary=extraction.summary,
                            added=plan.added, reinforced=plan.reinforced, superseded=plan.superseded,
                            discarded=plan.discarded, invalid=tuple(invalid), usage=dict(extraction.usage))

    def _proposals(self, episode: Episode, extraction: Extraction,
                   now: datetime) -> tuple[list[Fact], dict[str, tuple[str, str, bool]], list[str]]:
        """Turn extractor output into validated Facts; report what was dropped."""
        by_id = {m.id: m for m in episode.messages}
        types = {normalize_name(e.name): e.entity_type for e in extraction.entities}
        facts: list[Fact] = []
        kinds: dict[str, tuple[str, str, bool]] = {}
        invalid: list[str] = []
        limit = self.config.max_facts_per_episode
        for i, x in enumerate(extraction.facts):
            if len(facts) >= limit:
                invalid.append(f"{len(extraction.facts) - i} facts over max_facts_per_episode={limit} dropped")
                break
            sources = tuple(s for s in x.source_message_ids if s in by_id)
            first = by_id[sources[0]] if sources else episode.messages[0]
            speaker = self._speaker(first)
            subject = speaker if is_first_person(x.subject) else x.subject
            obj = speaker if is_first_person(x.object) else x.object
            try:
                fact = Fact(
                    content=x.content, subject=subject.strip(), predicate=canonical_predicate(x.predicate),
                    object=obj.strip(), confidence=x.confidence,
                    valid_from=x.valid_from or first.timestamp or now, valid_until=x.valid_until,
                    user_id=episode.user_id, episode_id=episode.id, source_message_ids=sources,
                    created_at=now)
            except (ValidationError, AttributeError, TypeError) as exc:
                invalid.append(f"fact {i} ({x.subject!r} {x.predicate!r} {x.object!r}) dropped: {exc}")
                continue
            facts.append(fact)
            kinds[fact.id] = (types.get(normalize_name(subject), x.subject_type),
                              types.get(normalize_name(obj), x.object_type), bool(x.object_is_entity))
        return facts, kinds, invalid

    # -- the outbox: bringing Chroma and Kùzu in line with SQLite -------------------------

    def _drain_outbox(self) -> int:
        """Apply pending index writes; safe to repeat (every write is idempotent)."""
        done = 0
        with self._index_lock:
            target = self.records.last_outbox_seq()  # rows committed later wait for the next pass
            while True:
                rows = self.records.pending_outbox(up_to=target)
                if not rows:
                    return done
                forget = {u for _, op, u, _, _ in rows if op == "forget_user"}
                for user in forget:
                    self.vectors.drop_user(user)
                    self.graph.drop_user(user)
                self._sync_entities([ref for _, op, _, ref, _ in rows if op == "entity"])
                changes: dict[str, set[str]] = {}
                for _, op, _, ref, payload in rows:
                    if op == "fact":
                        changes.setdefault(ref, set()).add((payload or {}).get("change", "retire"))
                self._sync_facts(changes)
                self.records.clear_outbox(rows[-1][0])
                done += len(rows)

    def _sync_entities(self, ids: Sequence[str]) -> None:
        rows = self.records.entity_rows(list(dict.fromkeys(ids)))
        if not rows:
            return
        self.graph.upsert_entities(EntityNode(e.id, e.user_id, e.name, e.entity_type) for e, _ in rows)
        by_user: dict[str, list[tuple[str, np.ndarray]]] = {}
        for e, v in rows:
            by_user.setdefault(e.user_id, []).append((e.id, v))
        for user, items in by_user.items():
            self.vectors.upsert(user, "entity", [i for i, _ in items], np.stack([v for _, v in items]))

    def _sync_facts(self, changes: Mapping[str, set[str]]) -> None:
        """Make Chroma and Kùzu hold each fact as SQLite has it now.

        ``changes`` maps fact ids to what happened (``add``, ``touch``: reinforced,
        ``retire``: superseded). The target state is read from SQLite, so replaying the
        same rows twice, or after a crash, ends in the same place; the change only says
        which work can be skipped (a new fact was never in the history collection, a
        reinforced fact keeps its vector). Facts of a forgotten user are gone: skipped.
        """
        if not changes:
            return
        stored = self.records.stored_facts(list(changes))
        upserts: dict[tuple[str, str], list[tuple[str, np.ndarray]]] = {}
        deletes: dict[tuple[str, str], list[str]] = {}
        edges: list[FactEdge] = []
        for fid, kinds in changes.items():
            s = stored.get(fid)
            if s is None:
                continue
            f = s.fact
            keep, drop = ("current", "history") if f.is_current else ("history", "current")
            if kinds != {"touch"}:
                upserts.setdefault((f.user_id, keep), []).append((fid, s.embedding))
            if "retire" in kinds:
                deletes.setdefault((f.user_id, drop), []).append(fid)
            if s.object_id:
                edges.append(FactEdge(fid, f.user_id, s.subject_id, s.object_id, f.predicate,
                                      iso(f.valid_from), iso(f.valid_until), f.is_current))
        for (user, kind), ids in deletes.items():
            self.vectors.delete(user, kind, ids)
        for (user, kind), items in upserts.items():
            self.vectors.upsert(user, kind, [i for i, _ in items], np.stack([v for _, v in items]))
        if edges:
            self.graph.upsert_facts(edges)

    # -- queries -------------------------------------------------------------------------

    def _require_user(self, user_id: str) -> None:
        _check_id(user_id, "user_id")
        self._check_open()
        if not self.records.has_user(user_id):
            raise NotFoundError(f"unknown user {user_id!r}: nothing was ever stored for it; "
                                "check the user_id or call conversation_end() first")

    def has_user(self, user_id: str) -> bool:
        """Whether anything was ever stored for ``user_id``."""
        return self.records.has_user(_check_id(user_id, "user_id"))

    def users(self) -> list[str]:
        """Every known user id."""
        return self.records.users()

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

        Raises:
            NotFoundError: ``user_id`` has no stored data.

        """
        self._require_user(user_id)
        if not isinstance(input, str):
            raise ValidationError(f"input must be a string, got {type(input).__name__}")
        if not input.strip():
            return []
        if len(input) > self.config.max_message_chars:
            raise ValidationError(f"input has {len(input)} characters, over max_message_chars")
        cfg = self.config
        if threshold is not None and not (isinstance(threshold, (int, float)) and 0 <= threshold <= 1):
            raise ValidationError(f"threshold must be a number in [0, 1], got {threshold!r}")
        params = ScoringParams(
            threshold=cfg.semantic_threshold if threshold is None else threshold,
            semantic_weight=cfg.semantic_weight, graph_weight=cfg.graph_weight,
            limit=cfg.context_limit if limit is None else _check_limit(limit),
            require_both=cfg.require_both if require_both is None else require_both)
        when = to_utc(as_of, "as_of", strict=cfg.strict_timezones) if as_of is not None else None
        when_s = iso(when) if when else None
        asker = (speaker or cfg.default_speaker) if mentions_first_person(input) else None
        query = self.embedder.embed_query(f"{asker}: {input}" if asker else input)
        self._catch_up()
        k = max(cfg.semantic_candidates, params.limit)
        semantic = dict(self.vectors.query(user_id, "current", query, k))
        if when is not None:
            semantic.update(self.vectors.query(user_id, "history", query, k))
        graph = self._graph_match(input, user_id, when_s, asker) if (cfg.graph_hops and
                                                               (cfg.graph_weight or params.require_both)) else {}
        missing = [f for f in graph if f not in semantic]
        for fid, vec in self.records.fact_vectors(user_id, missing).items():
            semantic[fid] = float(vec @ query)
        facts = self.records.get_facts(user_id, list(set(semantic) | set(graph)))
        valid = {i: f for i, f in facts.items() if (f.valid_at(when) if when else f.is_current)}
        ranked = score_candidates({i: s for i, s in semantic.items() if i in valid},
                                  {i: g for i, g in graph.items() if i in valid}, params,
                                  recency={i: iso(f.valid_from) for i, f in valid.items()})
        return [valid[s.fact_id].with_scores(round(s.score, 6), round(s.semantic, 6), s.graph)
                for s in ranked]

    def _graph_match(self, text: str, user_id: str, as_of: str | None, asker: str | None) -> dict[str, float]:
        cfg = self.config
        names = input_aliases(text) + ([normalize_name(asker)] if asker else [])
        named = set(self.records.entity_ids_for_aliases(user_id, names).values())
        scores: dict[str, float] = {}
        frontier, seen = named, set(named)
        for hop in range(cfg.graph_hops):
            if not frontier or len(scores) >= cfg.graph_candidates:
                break
            for fid in self.records.facts_touching(user_id, list(frontier), as_of=as_of,
                                                   limit=cfg.graph_candidates - len(scores)):
                scores.setdefault(fid, cfg.hop_scores[hop])
            if hop + 1 < cfg.graph_hops and len(scores) < cfg.graph_candidates:  # else the next hop adds nothing
                frontier = self.graph.neighbours(user_id, list(frontier), as_of=as_of) - seen
                seen |= frontier
        return scores

    def context_block(self, input: str, *, user_id: str = "default", limit: int | None = None,
                      as_of: datetime | str | None = None, max_entities: int = 5,
                      speaker: str | None = None) -> str:
        """A prompt-ready string: the GetContext facts with dates, and entity summaries."""
        facts = self.get_context(input, user_id=user_id, limit=limit, as_of=as_of, speaker=speaker)
        names: list[str] = []
        for f in facts:
            names += [normalize_name(f.subject), normalize_name(f.object)]
        ids = list(dict.fromkeys(self.records.entity_ids_for_aliases(user_id, names).values()))
        entities = self.records.get_entities(user_id, ids)
        ordered = [entities[i] for i in ids if i in entities][:max_entities]
        return render_context_block(facts, ordered, as_of=to_utc(as_of) if as_of else None)

    def _entity_id(self, name: str, user_id: str) -> str:
        if not isinstance(name, str) or not name.strip():
            raise ValidationError("entity name must be a non-empty string")
        self._require_user(user_id)
        found = self.records.entity_ids_for_aliases(user_id, [normalize_name(name)])
        if not found:
            raise NotFoundError(f"no entity named {name!r} for user {user_id!r}")
        return next(iter(found.values()))

    def get_entity(self, name: str, *, user_id: str = "default") -> Entity:
        """The entity called ``name`` (or one of its aliases)."""
        eid = self._entity_id(name, user_id)
        return self.records.get_entities(user_id, [eid])[eid]

    def entity_history(self, name: str, *, user_id: str = "default") -> list[Fact]:
        """The spec's EntityHistory: every fact about the entity, superseded ones too, oldest first.

        Raises:
            NotFoundError: unknown user or entity.

        """
        return self.records.entity_history(user_id, self._entity_id(name, user_id))

    def related_entities(self, name: str, *, user_id: str = "default", limit: int = 10) -> list[Entity]:
        """The spec's RelatedEntities: distinct entities 1..2 hops away in the graph, at most ``limit``.

        Raises:
            NotFoundError: unknown user or entity.

        """
        eid = self._entity_id(name, user_id)
        self._catch_up()
        ids = self.graph.related(user_id, eid, hops=2, limit=_check_limit(limit))
        found = self.records.get_entities(user_id, ids)
        return [found[i] for i in ids if i in found]

    def cypher(self, query: str, params: Mapping[str, Any] | None = None, *,
               user_id: str = "default") -> list[dict[str, Any]]:
        """Run a read-only Cypher query over the user's graph.

        The graph has ``(:Entity {id, user_id, name, entity_type})`` nodes and
        ``[:FACT {fact_id, predicate, valid_from, valid_until, current}]`` relationships.
        Every ``:Entity`` pattern is scoped to ``user_id``; write clauses are refused.

        Raises:
            QueryError: a write clause, several statements, an unscoped pattern, or a failure.

        """
        self._require_user(user_id)
        scoped = scope_query(query)
        bound = dict(params or {})
        if any(not isinstance(k, str) for k in bound):
            raise ValidationError("cypher params must have string keys")
        if f"${USER_PARAM}" in scoped:  # Kùzu refuses a parameter the query does not use
            bound[USER_PARAM] = user_id
        self._catch_up()
        rows = self.graph.read_query(scoped, bound)
        return [r for r in rows if not _foreign(r, user_id)]

    # -- chat sessions (used by the adapters) -------------------------------------------

    def add_messages(self, session_id: str, messages: Sequence[Any], *, user_id: str = "default") -> None:
        """Persist chat turns of a session at once (they become an episode at :meth:`end_session`)."""
        self._check_open()
        _check_id(session_id, "session_id")
        _check_id(user_id, "user_id")
        msgs = self._validate_messages(messages)
        now = self._now()  # a turn's time is when it was said, not when the session ends
        self.records.add_session_messages(user_id, session_id,
                                          [m if m.timestamp else replace(m, timestamp=now) for m in msgs])

    def get_messages(self, session_id: str, *, user_id: str = "default", limit: int | None = None) -> list[Message]:
        """A session's stored chat turns, oldest first (the last ``limit`` if given)."""
        _check_id(session_id, "session_id")
        _check_id(user_id, "user_id")
        return [m for _, m in self.records.session_messages(user_id, session_id, limit=limit)]

    def unended_count(self, session_id: str, *, user_id: str = "default") -> int:
        """How many turns of a session have not yet gone through ``conversation_end``."""
        return len(self.records.session_messages(user_id, session_id, unended=True))

    def clear_messages(self, session_id: str, *, user_id: str = "default") -> None:
        """Forget a session's chat turns; facts already learned from them stay."""
        _check_id(session_id, "session_id")
        self.records.clear_session(_check_id(user_id, "user_id"), session_id)

    def end_session(self, session_id: str, *, user_id: str = "default") -> IngestResult | None:
        """Run ``conversation_end`` on the session's turns not yet ingested; None if there are none."""
        _check_id(session_id, "session_id")
        _check_id(user_id, "user_id")
        turns = self.records.session_messages(user_id, session_id, unended=True)
        if not turns:
            return None
        first, last = turns[0][0], turns[-1][0]
        key = f"{user_id}\x1f{session_id}\x1f{first}\x1f{last}".encode()
        episode_id = "s-" + hashlib.sha256(key).hexdigest()[:30]
        result = self.conversation_end(session_id, [m for _, m in turns], user_id=user_id, episode_id=episode_id)
        self.records.mark_session_ended(user_id, session_id, last, episode_id)
        return result

    # -- maintenance ---------------------------------------------------------------------

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
            _check_id(user_id, "user_id")
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
            with self._write_lock, self.records.transaction():
                self.records.set_entity_summaries(
                    (e.id, s, len(facts), stamp) for (e, facts), s in zip(items, summaries))
            total += len(items)
            if len(stale) < batch_size:
                return total

    def _start_worker(self, name: str, target: Callable[[], None]) -> None:
        worker = threading.Thread(target=target, name=name, daemon=True)
        self._workers.append(worker)
        worker.start()

    def _start_auto_refresh(self) -> None:
        interval = max(self.config.entity_refresh_interval.total_seconds(), 0.05)

        def loop() -> None:
            while not self._stopping.wait(interval):
                try:
                    self.refresh_entities()
                except Exception:  # keep the schedule alive; the next pass retries
                    log.exception("background entity refresh failed")

        self._start_worker("zep-entity-refresh", loop)

    def _index_loop(self) -> None:
        """Apply committed index writes in the background, many episodes per batch."""
        while not self._stopping.is_set():
            self._index_wakeup.wait(timeout=1.0)
            self._index_wakeup.clear()
            if self._stopping.is_set():
                return
            try:
                self._drain_outbox()
            except Exception:  # the rows stay in the outbox; the next pass or read retries
                log.exception("background index write failed; will retry")
                self._stopping.wait(0.5)

    def flush(self) -> int:
        """Bring Chroma and Kùzu up to date with every committed write now.

        Reads do this by themselves; call it before inspecting the indexes directly.

        Returns:
            How many queued index writes were applied.

        """
        self._check_open()
        return self._drain_outbox()

    def _catch_up(self) -> None:
        """Read-your-writes: apply queued index writes before a read that uses the indexes."""
        if self.records.outbox_size():
            self._drain_outbox()

    def maintain(self) -> MaintenanceReport:
        """Retry pending extractions, replay index writes and refresh stale entities."""
        self._check_open()
        replayed = self._drain_outbox()
        pending = self.records.episode_ids(status="pending")
        completed = 0
        for eid in pending:
            episode = self.records.get_episode(eid)
            if episode is not None and self._process(episode, self._now()).status == "done":
                completed += 1
        still = tuple(self.records.episode_ids(status="pending"))
        return MaintenanceReport(retried=len(pending), completed=completed, still_pending=still,
                                 entities_refreshed=self.refresh_entities(), index_writes_replayed=replayed)

    def get_episode(self, episode_id: str) -> Episode:
        """A stored episode with its messages."""
        episode = self.records.get_episode(_check_id(episode_id, "episode_id"))
        if episode is None:
            raise NotFoundError(f"no episode {episode_id!r}")
        return episode

    def forget_user(self, user_id: str) -> None:
        """Remove every trace of a user from SQLite, Chroma and Kùzu.

        Raises:
            NotFoundError: the user is unknown.

        """
        self._require_user(user_id)
        with self._write_lock:
            with self.records.transaction():
                self.records.delete_user(user_id)
                self.records.add_outbox([("forget_user", user_id, None, None)])
            self._drain_outbox()

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
        counts = {"facts": 0, "entities": 0}
        with self._write_lock, self._index_lock:
            self.records.set_meta("rebuild", "pending")  # a crash before the end resumes it on the next open
            if reembed:
                for table, ids_iter in (("facts", self.records.iter_fact_ids()),
                                        ("entities", self.records.iter_entity_ids())):
                    for ids in ids_iter:
                        texts = self.records.texts(table, ids)
                        vecs = self.embedder.embed([texts[i] for i in ids])
                        with self.records.transaction():
                            self.records.set_embeddings(table, zip(ids, vecs))
                self.records.set_meta("embedder", f"{self.embedder.name}|{self.embedder.dimension}")
            self.vectors.reset()
            self.graph.reset()
            for ids in self.records.iter_entity_ids(batch=batch_size):
                self._sync_entities(ids)
                counts["entities"] += len(ids)
            for ids in self.records.iter_fact_ids(batch=batch_size):
                self._sync_facts({i: {"add"} for i in ids})
                counts["facts"] += len(ids)
            self.records.clear_outbox(2**62)  # everything queued is covered by the full sync
            self.records.set_meta("rebuild", "done")
        return counts

    def check_consistency(self, user_id: str | None = None) -> dict[str, list[str]]:
        """Compare the three stores; an empty dict means they agree.

        Returns:
            Problem kinds mapped to the ids concerned (e.g. ``current_missing_in_chroma``).

        """
        self._catch_up()
        users = [user_id] if user_id else self.users()
        problems: dict[str, list[str]] = {}

        def note(kind: str, ids: Iterable[str]) -> None:
            ids = sorted(ids)
            if ids:
                problems.setdefault(kind, []).extend(ids)

        g_nodes, g_edges = self.graph.snapshot(user_id)
        all_entities: set[str] = set()
        for user in users:
            current, history, edges = set(), set(), {}
            for ids in self.records.iter_fact_ids(user):
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
        known_edges = set()
        for user in users:
            for ids in self.records.iter_fact_ids(user):
                known_edges.update(ids)
        note("stale_edges_in_graph", set(g_edges) - known_edges)
        note("stale_entities_in_graph", g_nodes - all_entities)
        return problems

    def stats(self) -> dict[str, Any]:
        """Counts per store, pending work and the embedder identity."""
        self._catch_up()
        counts = self.records.table_counts()
        nodes, edges = self.graph.snapshot()
        return {"records": counts, "facts": self.records.count_facts(),
                "graph": {"entities": len(nodes), "facts": len(edges)},
                "pending_episodes": len(self.records.episode_ids(status="pending")),
                "embedder": {"name": self.embedder.name, "dimension": self.embedder.dimension},
                "data_dir": str(self.data_dir)}

    def now(self) -> datetime:
        """The memory's clock (timezone-aware UTC); adapters stamp turns with it."""
        return to_utc(self._clock(), "clock()")

    _now = now


def _close_at_exit(ref: weakref.ref) -> None:
    """Close a memory its owner left open, before the interpreter tears its threads down."""
    memory = ref()
    if memory is not None:
        memory.close()


def _foreign(row: Mapping[str, Any], user_id: str) -> bool:
    """Whether a Cypher result row holds a node or relationship of another user."""
    for value in row.values():
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, dict):
                if item.get("user_id") not in (None, user_id):
                    return True
                if _foreign({k: v for k, v in item.items() if isinstance(v, (dict, list))}, user_id):
                    return True
    return False

