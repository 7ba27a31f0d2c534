"""The second half of ``conversation_end``: an extracted episode through the update rules, into the records.

:func:`propose` turns the extractor's output into validated facts: "I" resolved to the
speaker, a fact without a time given its message's, what only the assistant said about
someone else marked as hearsay, quotes that only restate canonical facts kept spare.
:class:`RuleApplier` then, under the writers' lock and inside the write's transaction,
resolves entities, applies the episode's corrections and the update rules
(:mod:`zep_core.temporal`) over the stored facts they can touch, read as they turn out
to be needed, and writes the records with their outbox ops (:mod:`zep_core.sync`).
:class:`~zep_core.ingest.Ingestor` runs the pipeline around them: storing, extracting,
embedding, batching.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np

from . import corrections
from .attributes import ONE_VALUE, attribute_of
from .config import MemoryConfig
from .corrections import plan_corrections
from .errors import NotFoundError, ValidationError
from .models import Entity, Episode, Fact, IngestResult, Message
from .named import named_by_cues, named_by_stages
from .outbox import FactChange, OutboxOp
from .providers.base import ExtractedCorrection, Extraction
from .resolve import canonical_predicate, entity_id, is_first_person, speaker_of
from .stores.record_protocols import IngestRecords
from .stores.rows import StoredFact, iso
from .temporal import (
    STATEMENT,
    UpdatePlan,
    counted_thing,
    is_own,
    message_times,
    normalize_name,
    plan_updates,
)
from .tenant import Tenant

__all__ = ["Extracted", "Proposals", "RuleApplier", "propose"]


@dataclass
class Proposals:
    """Extractor output turned into validated facts, with what each needs to be written."""

    facts: list[Fact] = field(default_factory=list)
    kinds: dict[str, tuple[str, str, bool]] = field(default_factory=dict)  # id -> subject/object type, obj is entity
    invalid: list[str] = field(default_factory=list)
    corrections: list[ExtractedCorrection] = field(default_factory=list)  # speakers resolved
    hearsay: set[str] = field(default_factory=set)  # facts the assistant alone said about someone else
    spare: list[Fact] = field(default_factory=list)  # covered quotes: stored only if a fact they back is not
    said_at: dict[str, datetime] = field(default_factory=dict)  # id -> when its first message was said
    # id -> (cue, names, swap) of a claim
    cues: dict[str, tuple[str, tuple[str, ...], tuple[str, str] | None]] = field(default_factory=dict)
    retiring: set[str] | None = None  # claims whose one-value attribute retires older ones (None: every fact's)
    counts: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)  # id -> (what it counts, value)

    def entity_names(self) -> list[str]:
        """Every name that is, or becomes, an entity: subjects and entity objects."""
        return [n for f in self.facts for n in (f.subject, f.object if self.kinds[f.id][2] else None) if n]


@dataclass
class Extracted:
    """A stored episode after extraction: what the update rules need to apply it."""

    episode: Episode
    now: datetime
    extraction: Extraction
    proposals: Proposals
    known_ids: set[str]


def propose(episode: Episode, extraction: Extraction, now: datetime, config: MemoryConfig) -> Proposals:
    """Turn extractor output into validated Facts; report what was dropped.

    "I" is the speaker of the fact's first message (``config.default_speaker`` for an
    unnamed user); a fact without a time takes its message's (in message order).
    """

    def said_by(message: Message) -> str:
        return speaker_of(message.name, message.role, default=config.default_speaker)

    by_id = {m.id: m for m in episode.messages}
    said_at = message_times(episode.messages, now)
    types = {normalize_name(e.name): e.entity_type for e in extraction.entities}
    out = Proposals()
    limit = config.max_facts_per_episode
    for i, x in enumerate(extraction.facts):
        if len(out.facts) >= limit:
            out.invalid.append(f"{len(extraction.facts) - i} facts over max_facts_per_episode={limit} dropped")
            break
        sources = tuple(s for s in x.source_message_ids if s in by_id)
        first = by_id[sources[0]] if sources else episode.messages[0]
        speaker = said_by(first)
        try:
            subject = speaker if is_first_person(x.subject) else x.subject
            obj = speaker if is_first_person(x.object) else x.object
            predicate = canonical_predicate(x.predicate)
            fact = Fact(
                content=x.content, subject=subject.strip(), predicate=predicate,
                attribute=x.attribute if predicate == STATEMENT else attribute_of(predicate),
                object=obj.strip(), confidence=x.confidence,
                valid_from=x.valid_from or said_at[first.id], valid_until=x.valid_until,
                user_id=episode.user_id, episode_id=episode.id, source_message_ids=sources,
                created_at=now)
        except (ValidationError, AttributeError, TypeError) as exc:
            out.invalid.append(f"fact {i} ({x.subject!r} {x.predicate!r} {x.object!r}) dropped: {exc}")
            continue
        (out.spare if x.covered and fact.predicate == STATEMENT else out.facts).append(fact)
        out.said_at[fact.id] = said_at[first.id]
        if x.cue and x.names and first.role == "user":
            out.cues[fact.id] = (x.cue, tuple(x.names), x.swap)
        if x.counts and first.role == "user":
            out.counts[fact.id] = tuple(x.counts)
        if x.retires is not None:
            out.retiring = out.retiring if out.retiring is not None else set()
            if x.retires:
                out.retiring.add(fact.id)
        if _hearsay(fact, [by_id[s] for s in sources], said_by):
            out.hearsay.add(fact.id)
        out.kinds[fact.id] = (types.get(normalize_name(subject), x.subject_type),
                              types.get(normalize_name(obj), x.object_type), bool(x.object_is_entity))
    for c in extraction.corrections:
        sources = tuple(s for s in c.source_message_ids if s in by_id)
        speaker = said_by(by_id[sources[0]] if sources else episode.messages[0])
        out.corrections.append(replace(c, speaker=speaker if is_first_person(c.speaker) else c.speaker,
                                       in_messages=tuple(m for m in c.in_messages if m in by_id),
                                       source_message_ids=sources))
    return out


def _hearsay(fact: Fact, sources: Sequence[Message], speaker: Callable[[Message], str]) -> bool:
    """Whether only the assistant said ``fact``, and about someone other than itself.

    "From what I remember, you live in Paris": every source is an assistant turn and
    the subject is not that assistant (nor one of its own, "Assistant's name"). Such a
    fact is evidence of what the assistant said; it never restates or retires a fact
    (:func:`zep_core.temporal.plan_updates`).
    """
    if not sources or any(m.role != "assistant" for m in sources):
        return False
    subject = normalize_name(fact.subject)
    return not any(is_own(subject, normalize_name(speaker(m))) for m in sources)


class RuleApplier:
    """Applies the update rules to extracted episodes and writes what they decide.

    Args:
        config: the single-valued predicates.
        records: the record store (read and written inside the caller's transaction).
        embed: texts -> their vectors; the replacements a correction makes and the quotes
            the rules fall back on are embedded here, once they are known.

    """

    def __init__(self, config: MemoryConfig, records: IngestRecords,
                 embed: Callable[[list[str]], dict[str, np.ndarray]]) -> None:
        self.config, self.records, self._embed = config, records, embed

    def apply_in(self, ops: list[OutboxOp], extracted: Extracted, fact_vectors: Mapping[str, np.ndarray],
                 entity_vectors: Mapping[str, np.ndarray]) -> IngestResult:
        """Resolve entities, apply the update rules and write, inside an open ``sync.transaction()``.

        Reads go through the same connection, so they see what earlier episodes of the
        transaction wrote. The index writes are appended to ``ops``. The episode is applied
        only while it is still pending, read under its user's lock (the first statement of
        the user in the transaction takes it: :mod:`zep_core.stores.postgres.connection`),
        so it is applied once whatever the number of writers: one that finds it done
        returns ``duplicate`` and writes nothing.

        Raises:
            NotFoundError: the episode's user was forgotten meanwhile (nothing is written).

        """
        episode, extraction, proposed, now = extracted.episode, extracted.extraction, extracted.proposals, extracted.now
        known_ids, user = extracted.known_ids, Tenant.stored(episode.user_id)
        status = self.records.episode_status(user, episode.id)  # the user's first statement: their lock, then
        if status is None:  # forget_user() ran meanwhile: write nothing
            raise NotFoundError(f"user {user!r} was forgotten while episode {episode.id!r} was being "
                                "processed; nothing was learned from it")
        if status != "pending":  # another writer (another server on the database) applied it meanwhile
            return IngestResult(episode_id=episode.id, status="duplicate")
        proposals, types = proposed.facts, proposed.kinds
        resolved = self.records.entity_ids_for_aliases(user, list({normalize_name(n) for n in proposed.entity_names()}))

        def eid(name: str) -> str:
            return resolved.get(normalize_name(name)) or entity_id(user, name)

        taken: dict[str, str | None] = {}
        extra: list[Fact] = []
        if proposed.corrections:
            taken, extra, proposals, types, fact_vectors = self._corrections(
                user, episode, proposed, proposals, types, {**entity_vectors, **fact_vectors}, eid, now)
            entity_vectors = fact_vectors
        entity_of = {f.id: (eid(f.subject), eid(f.object) if types[f.id][2] else None) for f in proposals}
        contradicted = {i for i in extraction.contradicted_fact_ids if i in known_ids}
        mistaken, wrong = self._mistaken(user, extraction, known_ids, proposals, proposed.hearsay, taken)
        taken, extra = {**taken, **mistaken}, [*extra, *wrong]
        named = named_by_cues(self.records, user, proposals, proposed.cues, said_at=proposed.said_at,
                              skip={*taken, *proposed.hearsay}, assistant=self.config.assistant_speaker, now=now,
                              counts=proposed.counts)
        staged = named_by_stages(self.records, user, proposals, said_at=proposed.said_at,
                                 skip={*taken, *proposed.hearsay, *named.corrected, *named.replaced},
                                 assistant=self.config.assistant_speaker, now=now)
        named.replaced.update(staged.replaced)
        named.stored += staged.stored
        named.remainders += staged.remainders
        taken, extra, replaced = {**taken, **named.corrected}, [*extra, *named.stored], named.replaced
        if named.remainders:  # what the retired statements said of other things stays, as statements of their own
            proposals = [*proposals, *named.remainders]
            fact_vectors = {**fact_vectors, **self._embed([f.content for f in named.remainders
                                                           if f.content not in fact_vectors])}
            types = {**types, **{f.id: ("person", "thing", False) for f in named.remainders}}
            entity_of.update({f.id: (eid(f.subject), None) for f in named.remainders})
        at = min(message_times(episode.messages, now).values())  # a contradicted fact nothing replaces ends then
        plan = self._plan(user, list({s for s, _ in entity_of.values()}), proposals, contradicted, now,
                          taken_back=taken, also=extra, hearsay=proposed.hearsay, said_at=proposed.said_at, at=at,
                          replaced=replaced, retiring=proposed.retiring)
        lost = {m: d.conflicting_fact_id for d in plan.discarded for m in d.fact.source_message_ids}
        spare = [q for q in proposed.spare if set(lost) & set(q.source_message_ids)]
        if spare:  # a fact the rules discarded: its quote says it instead, so nothing said is lost
            spare = self._as_history(user, spare, lost)
            proposals = [*proposals, *spare]
            fact_vectors = {**fact_vectors, **self._embed([q.content for q in spare if q.content not in fact_vectors])}
            entity_of.update({q.id: (eid(q.subject), None) for q in spare})
            plan = self._plan(user, list({s for s, _ in entity_of.values()}), proposals, contradicted, now,
                              taken_back=taken, also=extra, hearsay=proposed.hearsay, said_at=proposed.said_at, at=at,
                              replaced=replaced, retiring=proposed.retiring)
        new_entities = self._new_entities(plan, entity_of, types, resolved, user)
        unembedded = [e.name for e in new_entities.values() if e.name not in entity_vectors]
        if unembedded:  # names stored when the episode was embedded, gone since (the user forgotten and back)
            entity_vectors = {**entity_vectors, **self._embed(unembedded)}
        aliases = [(user, normalize_name(e.name), e.id) for e in new_entities.values()]
        aliases += [(user, normalize_name(f.object), entity_of[f.id][0]) for f in plan.added
                    if f.predicate == "is_named"]
        stored_touch = set(self.records.entity_ids_for_aliases(user, [
            normalize_name(n) for f in plan.reinforced + plan.superseded for n in (f.subject, f.object)]).values())
        touched = {e for f in plan.added for e in entity_of[f.id] if e} | stored_touch
        changed_at = iso(now)

        self.records.insert_entities(((e, entity_vectors[e.name]) for e in new_entities.values()), changed_at)
        self.records.add_aliases(aliases)
        self.records.write_facts(StoredFact(f, *entity_of[f.id], fact_vectors[f.content]) for f in plan.added)
        self.records.update_facts(plan.reinforced + plan.superseded)
        self.records.mark_entities_changed(user, touched, changed_at)
        self.records.set_episode_status(user, episode.id, "done", summary=extraction.summary,
                                        usage=dict(extraction.usage) or None)
        ops += [OutboxOp.entity(user, e) for e in new_entities]
        ops += [OutboxOp.fact(user, f.id, change) for change, facts in
                ((FactChange.ADD, plan.added), (FactChange.TOUCH, plan.reinforced),
                 (FactChange.RETIRE, plan.superseded)) for f in facts]
        return IngestResult(episode_id=episode.id, status="done", summary=extraction.summary,
                            added=plan.added, reinforced=plan.reinforced,
                            superseded=plan.superseded + plan.superseded_within,
                            discarded=plan.discarded, invalid=tuple(proposed.invalid), usage=dict(extraction.usage))

    def _corrections(self, user: str, episode: Episode, proposed: Proposals, proposals: list[Fact],
                     types: dict[str, tuple[str, str, bool]], fact_vectors: Mapping[str, np.ndarray],
                     eid: Callable[[str], str], now: datetime,
                     ) -> tuple[dict[str, str | None], list[Fact], list[Fact], dict[str, tuple[str, str, bool]],
                                Mapping[str, np.ndarray]]:
        """What the episode's corrections take back, the stored facts they touch, and their replacements.

        The replacements join the proposals (their entity types those of the facts they
        replace, their texts embedded here: they exist only once the corrected facts are
        found, under the writers' lock).
        """
        speakers = {normalize_name(x.speaker): eid(x.speaker) for x in proposed.corrections}
        fixes, stored = corrections.prepare(self.records, user, proposed.corrections, proposals, speakers,
                                            episode_id=episode.id, now=now)
        taken, replacements = plan_corrections([*stored, *proposals], fixes)
        if not taken:
            return {}, [], proposals, types, fact_vectors
        objects = self.records.entity_ids_for_aliases(user, [normalize_name(f.object) for f in stored])
        entity_objects = {f.id for f in stored if normalize_name(f.object) in objects}
        types = {**types, **corrections.replacement_kinds(replacements, taken, types, entity_objects)}
        texts = [f.content for f in replacements] + [n.strip() for f in replacements
                                                     for n in (f.subject, f.object if types[f.id][2] else None) if n]
        vectors = {**fact_vectors, **self._embed([t for t in texts if t not in fact_vectors])}
        return taken, stored, [*proposals, *replacements], types, vectors

    def _mistaken(self, user: str, extraction: Extraction, known_ids: Collection[str], proposals: Sequence[Fact],
                  hearsay: Collection[str], taken: Mapping[str, str | None],
                  ) -> tuple[dict[str, str | None], list[Fact]]:
        """The current known facts the extractor says were said by mistake, with their replacements, and the facts.

        The replacement is the episode's fact of the same subject and predicate ("Biscuit
        is a cat" for "Biscuit is a dog"), or None; ids the extractor was not shown are
        ignored, and the assistant alone cannot take back what someone said.
        """
        ids = [i for i in extraction.mistaken_fact_ids if i in known_ids and i not in taken]
        wrong = [f for f in self.records.get_facts(user, ids).values() if f.is_current] if ids else []
        out: dict[str, str | None] = {}
        for old in wrong:
            out[old.id] = next((f.id for f in proposals if f.id not in hearsay and f.id not in taken
                                and normalize_name(f.subject) == normalize_name(old.subject)
                                and f.predicate == old.predicate), None)
        return out, wrong

    def _as_history(self, user: Tenant, quotes: Sequence[Fact], lost: Mapping[str, str | None]) -> list[Fact]:
        """The quotes of discarded facts, ended when what stood against them began: what held then, in history.

        "I live in Madrid", told after "I live in Berlin" but dated before it, held until
        Berlin began; its quote says so, and never stands beside Berlin as current.
        """
        ids = {lost[m] for q in quotes for m in q.source_message_ids if lost.get(m)}
        blockers = self.records.get_facts(user, sorted(ids)) if ids else {}
        out = []
        for q in quotes:
            by = next((blockers.get(lost[m]) for m in q.source_message_ids if lost.get(m) in blockers), None)
            ended = by is not None and by.valid_from > q.valid_from  # it held before; same time: it stands beside
            out.append(replace(q, attribute=None, valid_until=by.valid_from if ended else None))
        return out

    def _plan(self, user: str, subjects: list[str], proposals: Sequence[Fact], contradicted: set[str],
              now: datetime, *, taken_back: Mapping[str, str | None] | None = None,
              also: Sequence[Fact] = (), hearsay: Collection[str] = (),
              said_at: Mapping[str, datetime] | None = None, at: datetime | None = None,
              replaced: Mapping[str, str] | None = None, retiring: Collection[str] | None = None) -> UpdatePlan:
        """The update rules over the stored facts they can touch, read as they turn out to be needed.

        First the facts a proposal can reinforce, end or supersede
        (:meth:`RecordStore.rule_candidates`); then, only when the plan retires some, the
        facts drawn from the same messages (:meth:`RecordStore.facts_from_messages`: the
        quotes that retire with them, and the facts that keep a quote current), and the
        rules again with those, until no retired fact names a message not yet read. Most
        episodes retire nothing and pay one indexed read.
        """
        single = self.config.single_valued_predicates
        current = self.records.rule_candidates(
            user, subjects, rivals=sorted({f.predicate for f in proposals if normalize_name(f.predicate) in single
                                           or counted_thing(normalize_name(f.object))}),
            restated=sorted({(f.predicate, f.object) for f in proposals}), ids=sorted(contradicted),
            attributes=sorted({f.attribute for f in proposals if f.attribute in ONE_VALUE}))
        known = {f.id for f in current}
        current = [*current, *(f for f in also if f.id not in known)]
        if said_at and proposals:  # when the stored rivals were told: a later word may replace a present-tense one
            earliest = min(f.valid_from for f in proposals)  # only a rival not older than a proposal can block it
            rivals = [f for f in current if f.valid_from >= earliest and (
                normalize_name(f.predicate) in single or counted_thing(normalize_name(f.object))
                or f.attribute in ONE_VALUE)]
            if rivals:
                said_at = {**self.records.told_at(user, rivals), **said_at}
        flagged = [f for f in current if f.id in contradicted]  # their quotes retire with them: read theirs too
        if flagged:
            subjects = [*subjects, *self.records.entity_ids_for_aliases(
                user, list({normalize_name(f.subject) for f in flagged})).values()]
        read: set[str] = set()
        while True:
            plan = plan_updates(current, proposals, single_valued=single, contradicted=contradicted,
                                taken_back=taken_back, hearsay=hearsay, said_at=said_at, at=at, replaced=replaced,
                                retiring=retiring, now=now)
            messages = {m for f in plan.superseded for m in f.source_message_ids} - read
            if not messages:
                return plan
            read |= messages
            more = self.records.facts_from_messages(user, subjects, messages, exclude={f.id for f in current})
            if not more:
                return plan
            current = [*current, *more]

    @staticmethod
    def _new_entities(plan: UpdatePlan, entity_of: Mapping[str, tuple[str, str | None]],
                      types: Mapping[str, tuple[str, str, bool]], resolved: Mapping[str, str],
                      user: str) -> dict[str, Entity]:
        """The entities the added facts name that do not exist yet, first mention first."""
        out: dict[str, Entity] = {}
        for f in plan.added:
            sid, oid = entity_of[f.id]
            stype, otype, _ = types[f.id]
            for ent, name, etype in ((sid, f.subject, stype), (oid, f.object, otype)):
                if ent is not None and normalize_name(name) not in resolved and ent not in out:
                    out[ent] = Entity(id=ent, user_id=user, name=name.strip(), entity_type=etype)
        return out
