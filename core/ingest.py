"""The spec's ``conversation_end`` handler as a pipeline.

validate → **store the episode** → summarize + extract (one extractor call) → resolve
entities → embed → plan (the update rules, :mod:`zep_core.temporal`) → write
(records and outbox in one transaction, :mod:`zep_core.sync`).

The episode and its messages are committed before extraction runs, so a failing
extractor loses nothing: the episode stays ``pending`` and ``maintain()`` retries
it. A message whose dates cannot be computed (dated year 1 and saying "yesterday":
past ``datetime.min``/``max``) would fail every retry, so it is set aside instead:
the other messages are extracted, and the result's ``invalid`` names it.
Facts without a stated time take their message's time, in message order
(:func:`zep_core.temporal.message_times`).

Everything slow — the extractor, fact and entity embeddings — happens before the
writers' lock is taken; under it only the record store is read and written, so one slow
remote call never blocks the other writers.

:meth:`Ingestor.conversation_end_many` is the same pipeline for many episodes, a
batch at a time: the batch's episodes stored in one transaction, one embedding call
for all their facts and new entity names, and the rules applied episode by episode,
each user's in input order, in one transaction (:meth:`RuleApplier.apply_in
<zep_core.ingest_rules.RuleApplier.apply_in>` is shared by both). The batches take each
user's episodes together, and a user's index writes are applied once, when the batch
holding its last episode has committed, while the next batches are processed
(:meth:`~zep_core.sync.IndexSync.deferred`, ``release``).

Turning the extractor's output into facts, and the update rules with the write they
decide, are in :mod:`~zep_core.ingest_rules`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, cast

import numpy as np

from .config import MemoryConfig
from .episodes import EpisodeSpec, episode_key, episode_specs
from .errors import ValidationError
from .ingest_rules import Extracted, RuleApplier, propose
from .models import Episode, Fact, IngestResult, Message, coerce_messages
from .providers.base import Embedder, Extraction, ExtractionContext, Extractor
from .resolve import input_aliases, speaker_of
from .stores.record_protocols import IngestRecords
from .sync import IndexSync
from .temporal import (
    normalize_name,
)
from .tenant import Tenant

__all__ = ["EpisodeSpec", "Ingestor", "episode_specs", "validate_messages"]

log = logging.getLogger("zep_core")


def validate_messages(messages: Sequence[Any], config: MemoryConfig) -> list[Message]:
    """Coerce message-likes to :class:`Message` and check them against the configured limits.

    Raises:
        ValidationError: naming the message and the limit, and what to do.

    """
    msgs = coerce_messages(messages)
    if not msgs:
        raise ValidationError("messages is empty; an episode needs at least one message")
    if len(msgs) > config.max_messages_per_episode:
        raise ValidationError(f"{len(msgs)} messages exceed max_messages_per_episode="
                              f"{config.max_messages_per_episode}; split the conversation")
    for i, m in enumerate(msgs):
        if len(m.content) > config.max_message_chars:
            raise ValidationError(f"message {i} has {len(m.content)} characters, over max_message_chars="
                                  f"{config.max_message_chars}; split or shorten it")
    if config.strict_timezones:
        for i, given in enumerate(messages):
            ts = given.get("timestamp") if isinstance(given, Mapping) else getattr(given, "timestamp", None)
            if isinstance(ts, datetime) and ts.tzinfo is None:
                raise ValidationError(f"message {i} has a naive timestamp; pass a timezone-aware one")
    ids = [m.id for m in msgs if m.id is not None]
    if len(ids) != len(set(ids)):
        raise ValidationError("message ids must be unique within an episode")
    return msgs


def _date_out_of_range(exc: BaseException) -> bool:
    """Whether ``exc`` is date arithmetic past ``datetime.min``/``max``: retrying cannot fix it."""
    return type(exc) is OverflowError or (type(exc) is ValueError and "out of range" in str(exc))


@dataclass(frozen=True)
class _Prepared:
    """An episode whose messages passed validation, with its id and message ids set; not yet stored."""

    id: str
    session_id: str
    user_id: str
    messages: tuple[Message, ...]


def _batches(n: int, size: int, *, short_last: bool) -> list[tuple[int, int]]:
    """``(start, end)`` of the batches of ``n`` episodes: ``size`` each, or less for the last.

    With ``short_last`` (index writes go in the background) the last batch is cut to a
    quarter of ``size``. A batch's index writes run while the batch after it is
    processed, but nothing follows the last one: its users' writes are what is left
    when the call ends. Writing a batch's users takes about half as long as processing
    the batch, more when the two share the cores (bench/findings.md), so the writes of
    the batch before a quarter batch are mostly done when it commits, and what is left is
    a quarter batch's.
    """
    bounds = [(start, min(start + size, n)) for start in range(0, n, size)]
    quarter = max(1, size // 4)
    if short_last and bounds and bounds[-1][1] - bounds[-1][0] > quarter:
        start, end = bounds.pop()
        bounds += [(start, end - quarter), (end - quarter, end)]
    return bounds


def _by_user(episodes: Sequence[_Prepared]) -> list[int]:
    """Positions of ``episodes`` with each user's together, in input order; users in order of first appearance.

    Users never read or write each other's facts, so this order gives every episode the
    same result as input order, and a bulk call's batches each finish some users: their
    index writes then go while the batches after them are processed (:meth:`IndexSync.release`).
    """
    first: dict[str, int] = {}
    for k, episode in enumerate(episodes):
        first.setdefault(episode.user_id, k)
    return sorted(range(len(episodes)), key=lambda k: (first[episodes[k].user_id], k))


class Ingestor:
    """Runs ``conversation_end`` for a memory.

    Args:
        config: limits, the single-valued predicates and the default speaker.
        records: the record store (read, and episodes written).
        sync: the write step for facts and entities.
        embedder, extractor: the providers.
        clock: "now".
        check_open: raises if the memory was closed meanwhile.

    """

    def __init__(self, config: MemoryConfig, records: IngestRecords, sync: IndexSync, embedder: Embedder,
                 extractor: Extractor, clock: Callable[[], datetime], check_open: Callable[[], None]) -> None:
        self.config, self.records, self.sync = config, records, sync
        self.embedder, self.extractor = embedder, extractor
        self._now, self._check_open = clock, check_open
        self._in_flight: set[str] = set()  # episodes being extracted in this process
        self._flight_lock = threading.Lock()
        #: Applies the update rules to an extracted episode and writes the result (:mod:`~zep_core.ingest_rules`).
        self.rules = RuleApplier(config, records, self._embed)

    def conversation_end(self, session_id: str, messages: Sequence[Any], *, user_id: str,
                         episode_id: str | None) -> IngestResult:
        """Store the episode, then extract and apply the rules (ids already checked by the caller).

        An id sent again is a ``duplicate`` once done; while a request (in this process or
        another on the same database) extracts it, ``pending``; a pending one nobody
        extracts is extracted now (:meth:`_again`).
        """
        msgs = validate_messages(messages, self.config)
        episode_id = episode_id or episode_key(user_id, session_id, msgs)  # sent again: the same id
        now = self._now()
        owner = self.records.episode_owner(episode_id)
        if owner is not None and owner != user_id:
            raise ValidationError(f"episode id {episode_id!r} belongs to another user; use a new id")
        if owner is None:
            ids = [m.id or f"{episode_id}:{i}" for i, m in enumerate(msgs)]
            episode = Episode(id=episode_id, session_id=session_id, user_id=user_id, created_at=now,
                              messages=tuple(replace(m, id=mid) for m, mid in zip(msgs, ids)), status="pending")
            with self._claim(user_id, episode_id) as claimed:  # claimed first: whoever stores it extracts it
                if not claimed:
                    return IngestResult(episode_id=episode_id, status="pending")
                with self.records.transaction():
                    stored = self.records.insert_episode(episode, ids)
                if stored:
                    return self._run(episode, now)
            owner = self.records.episode_owner(episode_id)  # another writer stored it meanwhile
            if owner is not None and owner != user_id:
                raise ValidationError(f"episode id {episode_id!r} belongs to another user; use a new id")
        return self._again(Tenant.stored(user_id), episode_id, now)

    def _again(self, user: Tenant, episode_id: str, now: datetime) -> IngestResult:
        """An episode id sent again: ``duplicate`` once it is done; a pending one is extracted now.

        A pending episode is one whose extraction failed, or was cut short (the process
        died after storing it, before its reply): sending it again — what a client does
        when it got no reply — finishes it instead of leaving it for ``maintain()``.
        """
        episode = self.records.get_episode(user, episode_id)
        if episode is None or episode.status != "pending":
            return IngestResult(episode_id=episode_id, status="duplicate")
        return self.process(episode, now)

    def process(self, episode: Episode, now: datetime, *, fresh: bool = False) -> IngestResult:
        """Extract from a stored episode and apply the rules; a failing extractor leaves it pending.

        One extraction of an episode at a time, in this process and in every process on the
        same database (:meth:`_claim`): a second call while one runs (a client's retry,
        ``maintain()``, another server) returns ``pending`` and changes nothing.
        ``fresh``: the caller has just stored it, so its status needs no second look.
        """
        with self._claim(episode.user_id, episode.id) as claimed:
            if not claimed:
                return IngestResult(episode_id=episode.id, status="pending")
            current = None if fresh else self.records.get_episode(Tenant.stored(episode.user_id), episode.id)
            if current is not None and current.status != "pending":  # finished while this call waited
                return IngestResult(episode_id=episode.id, status="duplicate")
            return self._run(episode, now)

    @contextmanager
    def _claim(self, user_id: str, episode_id: str) -> Iterator[bool]:
        """Whether this call may extract the episode: no other call does, here or in another process.

        Threads take turns on a set; the record store decides between processes (``claim_episode``).
        A claim only saves a second extraction: the rules apply an episode only while it is
        pending, under its user's lock (:meth:`RuleApplier.apply_in`), so once whatever happens.
        """
        with self._flight_lock:
            mine = episode_id not in self._in_flight
            self._in_flight.add(episode_id)
        if not mine:
            yield False
            return
        user, claimed = Tenant.stored(user_id), False
        try:
            claimed = self.records.claim_episode(user, episode_id)
            yield claimed
        finally:
            try:
                if claimed:
                    self.records.release_episode(user, episode_id)
            finally:
                with self._flight_lock:
                    self._in_flight.discard(episode_id)

    def _run(self, episode: Episode, now: datetime) -> IngestResult:
        """Extract a claimed episode and apply the rules, marked as an episode being processed."""
        with self.sync.writing():
            return self._process(episode, now)

    def _process(self, episode: Episode, now: datetime) -> IngestResult:
        known: tuple[Fact, ...] = ()
        if getattr(self.extractor, "needs_known_facts", False):
            known = tuple(self._known_facts(episode))
        extracted = self._extract_stored(episode, now, known)
        if isinstance(extracted, IngestResult):
            return extracted
        vectors = self._embed([f.content for f in extracted.proposals.facts] + self._unknown_names([extracted]))
        with self.sync.exclusive():  # one embedder call for the facts and the new names, as in bulk
            self._check_open()
            return self._apply(extracted, vectors, vectors)

    def conversation_end_many(self, episodes: Sequence[EpisodeSpec], *, batch_size: int,
                              progress: Callable[[int, IngestResult], None] | None = None) -> list[IngestResult]:
        """``conversation_end`` for many episodes, a batch at a time (ids already checked by the caller).

        Everything is validated before anything is written. An episode id stored before
        is a ``duplicate`` once it is done; a pending one (its extraction failed, or was cut
        short) is extracted then, before the batch's new episodes, as ``conversation_end``
        would. The batches take each user's episodes together, users in order of first
        appearance (:func:`_by_user`). Per batch: every new episode is stored in one
        transaction, then each is extracted, all fact texts and new entity names are
        embedded in one call, and the rules are applied episode by episode, each user's in
        input order, in one transaction — so a later episode sees an earlier one's facts,
        as it would one by one. An extractor that ``needs_known_facts`` (they depend on
        the episodes before) gets the batch one episode at a time through :meth:`process`
        once it is stored. Once a batch holding a user's last episode commits, that user
        is released to the background indexer (:meth:`IndexSync.release`); the last batch
        is cut short so that little is left to write when the call ends (:func:`_batches`).

        Raises:
            ValidationError: naming the episode's position (from 0), before anything is written.
            NotFoundError: a user was forgotten while its episodes were processed; that
                batch's rules are not applied, its stored episodes stay pending for ``maintain()``.

        """
        prepared = self._prepare(episodes)
        first = {p.id: k for k, p in reversed(list(enumerate(prepared)))}
        order = [k for k in _by_user(prepared) if first[prepared[k].id] == k]  # an episode again: below
        last = {prepared[k].user_id: n for n, k in enumerate(order)}  # where each user's last episode is
        results: list[IngestResult | None] = [None] * len(prepared)
        with self.sync.deferred():  # each user's indexes are written once, after its last batch
            for start, end in _batches(len(order), batch_size, short_last=not self.sync.apply_at_commit):
                positions = order[start:end]
                batch = self._ingest_batch([prepared[k] for k in positions])
                self.sync.release({prepared[k].user_id for k in positions if last[prepared[k].user_id] < end})
                for k, result in zip(positions, batch):
                    results[k] = result
                    if progress is not None:
                        progress(k, result)
        for k, p in enumerate(prepared):  # an episode without an id sent twice in the call: stored once
            if results[k] is None:
                results[k] = IngestResult(episode_id=p.id, status="duplicate")
                if progress is not None:
                    progress(k, results[k])
        return cast(list[IngestResult], results)  # every position has its result

    def _prepare(self, episodes: Sequence[EpisodeSpec]) -> list[_Prepared]:
        """Check every episode (messages, ids unique in the call, not another user's) and build it, unstored."""
        given = [e.episode_id for e in episodes if e.episode_id is not None]
        owners = self.records.record_owners("episodes", list(dict.fromkeys(given)))
        seen: dict[str, int] = {}
        out: list[_Prepared] = []
        for i, spec in enumerate(episodes):
            try:
                msgs = validate_messages(spec.messages, self.config)
            except ValidationError as exc:
                raise type(exc)(f"episode {i}: {exc}") from None
            if spec.episode_id is not None:
                if spec.episode_id in seen:
                    raise ValidationError(f"episode {i}: episode id {spec.episode_id!r} is also that of episode "
                                          f"{seen[spec.episode_id]}; give each episode of the call its own id")
                seen[spec.episode_id] = i
                if owners.get(spec.episode_id, spec.user_id) != spec.user_id:
                    raise ValidationError(f"episode {i}: episode id {spec.episode_id!r} belongs to another user; "
                                          "use a new id")
            episode_id = spec.episode_id or episode_key(spec.user_id, spec.session_id, msgs)
            msgs = [replace(m, id=m.id or f"{episode_id}:{j}") for j, m in enumerate(msgs)]
            out.append(_Prepared(episode_id, spec.session_id, spec.user_id, tuple(msgs)))
        return out

    def _ingest_batch(self, batch: Sequence[_Prepared]) -> list[IngestResult]:
        """Store a batch's new episodes, extract them, embed once, and apply the rules in one transaction."""
        results: dict[int, IngestResult] = {}  # by position in the batch
        stored: list[tuple[int, Episode, datetime]] = []
        again: list[int] = []
        users = {p.user_id for p in batch}
        with self.records.transaction():
            self.records.lock_tenants(users)
            owners = self.records.record_owners("episodes", [e.id for e in batch])
            for k, p in enumerate(batch):
                now = self._now()
                episode = Episode(id=p.id, session_id=p.session_id, user_id=p.user_id, created_at=now,
                                  messages=p.messages, status="pending")
                if p.id in owners or not self.records.insert_episode(episode, [m.id or "" for m in p.messages]):
                    again.append(k)  # stored before: by an earlier call, or another writer meanwhile
                    continue
                stored.append((k, episode, now))
        for k in again:  # as conversation_end does: a done one is a duplicate, a pending one is extracted now,
            # before the new ones (it was stored before them)
            results[k] = self._again(Tenant.stored(batch[k].user_id), batch[k].id, self._now())
        if getattr(self.extractor, "needs_known_facts", False):
            for k, episode, now in stored:
                results[k] = self.process(episode, now, fresh=True)
            return [results[k] for k in range(len(batch))]
        extracted: list[tuple[int, Extracted]] = []
        for k, episode, now in stored:
            outcome = self._extract_stored(episode, now)
            if isinstance(outcome, IngestResult):
                results[k] = outcome
            else:
                extracted.append((k, outcome))
        vectors = self._embed([f.content for _, x in extracted for f in x.proposals.facts]
                              + self._unknown_names([x for _, x in extracted]))
        if extracted:
            with self.sync.exclusive():
                self._check_open()
                with self.sync.transaction() as ops:
                    self.records.lock_tenants({x.episode.user_id for _, x in extracted})
                    for k, x in extracted:
                        results[k] = self.rules.apply_in(ops, x, vectors, vectors)
        return [results[k] for k in range(len(batch))]

    def _extract_stored(self, episode: Episode, now: datetime,
                        known: tuple[Fact, ...] = ()) -> Extracted | IngestResult:
        """Run the extractor on a stored episode: its proposals, or the pending result a failure leaves."""
        context = ExtractionContext(user_id=episode.user_id, session_id=episode.session_id, now=now,
                                    known_facts=known, default_speaker=self.config.default_speaker,
                                    assistant_speaker=self.config.assistant_speaker)
        set_aside: list[str] = []
        try:
            try:
                extraction = self._extract(list(episode.messages), context)
            except (OverflowError, ValueError) as exc:
                if not _date_out_of_range(exc):
                    raise
                extraction, set_aside = self._extract_setting_aside_bad_dates(episode, context, exc)
        except Exception as exc:  # any extractor failure leaves the episode pending
            error = f"{type(exc).__name__}: {exc}"
            log.warning("extraction failed for episode %s: %s", episode.id, error)
            self.records.set_episode_status(Tenant.stored(episode.user_id), episode.id, "pending", error=error)
            return IngestResult(episode_id=episode.id, status="pending", error=error)
        proposals = propose(episode, extraction, now, self.config)
        proposals.invalid[:0] = set_aside
        return Extracted(episode, now, extraction, proposals, {f.id for f in known})

    def _unknown_names(self, extracted: Sequence[Extracted]) -> list[str]:
        """The entity names of these episodes that no stored alias of their user resolves: they need a vector."""
        by_user: dict[str, list[str]] = {}
        for x in extracted:
            by_user.setdefault(x.episode.user_id, []).extend(x.proposals.entity_names())
        out: list[str] = []
        for user, names in by_user.items():
            known = self.records.entity_ids_for_aliases(user, list({normalize_name(n) for n in names}))
            out += [n.strip() for n in names if normalize_name(n) not in known]
        return out

    def _extract(self, messages: list[Message], context: ExtractionContext) -> Extraction:
        extraction = self.extractor.extract(messages, context)
        if not isinstance(extraction, Extraction):
            raise TypeError(f"the extractor returned {type(extraction).__name__}, not an Extraction")
        return extraction

    def _extract_setting_aside_bad_dates(self, episode: Episode, context: ExtractionContext,
                                         error: Exception) -> tuple[Extraction, list[str]]:
        """Extract again without the messages whose dates fall outside years 1..9999.

        Each message is tried alone to find them (this path runs only after such an
        error); if none fails alone, the original error stands and the episode stays
        pending.
        """
        bad: list[str] = []
        kept: list[Message] = []
        for i, message in enumerate(episode.messages):
            try:
                self._extract([message], context)
            except (OverflowError, ValueError) as exc:
                if not _date_out_of_range(exc):
                    raise
                when = message.timestamp.isoformat() if message.timestamp else "the episode's time"
                bad.append(f"message {i} ({message.id}) set aside: a date it implies, counted from {when}, "
                           f"is outside years 1..9999 ({type(exc).__name__}: {exc}); its text stays in the "
                           "episode, nothing was extracted from it")
                continue
            kept.append(message)
        if not bad:
            raise error
        log.warning("episode %s: %d message(s) with out-of-range dates set aside", episode.id, len(bad))
        return (self._extract(kept, context) if kept else Extraction()), bad

    def _embed(self, texts: list[str]) -> dict[str, np.ndarray]:
        unique = list(dict.fromkeys(texts))
        return dict(zip(unique, self.embedder.embed(unique))) if unique else {}

    def _known_facts(self, episode: Episode, limit: int = 50) -> list[Fact]:
        text = "\n".join(m.content for m in episode.messages)[:20_000]
        names = input_aliases(text) + [normalize_name(self._speaker(m)) for m in episode.messages]
        ids = list(set(self.records.entity_ids_for_aliases(episode.user_id, names).values()))
        return self.records.current_facts_about(episode.user_id, ids, limit=limit)

    def _speaker(self, message: Message) -> str:
        return speaker_of(message.name, message.role, default=self.config.default_speaker)

    def _apply(self, extracted: Extracted, fact_vectors: Mapping[str, np.ndarray],
               entity_vectors: Mapping[str, np.ndarray]) -> IngestResult:
        """Apply the rules to one episode and commit (the caller holds the writers' lock)."""
        with self.sync.transaction() as ops:
            return self.rules.apply_in(ops, extracted, fact_vectors, entity_vectors)
