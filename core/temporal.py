"""The spec's update rules as pure functions.

Nothing here reads a clock or touches a store: every function takes ``now`` and
returns new records, so the rules can be tested with fixed times and applied by
:class:`zep_core.Memory` inside one transaction.

The rules (spec ``update Fact { on_conflict }`` and DESIGN.md):

* A proposed fact equal to a current one (same subject, predicate, object)
  **reinforces** it: provenance is merged, confidence raised; no duplicate row.
* Two current facts of one user **conflict** when they share the subject, differ,
  and either the predicate is single-valued (``lives_in``, ``works_at``…) with the
  same predicate on both, or the extractor marked the old one as contradicted.
  Multi-valued predicates (``likes``, ``has``…) never conflict on their own.
* On conflict, if ``new.valid_from > old.valid_from`` the old fact is closed
  (``valid_until = new.valid_from``, ``superseded_by = new.id``) and the new one
  stored; otherwise the new one is **discarded** and reported.
* A proposed fact with a stated end ("I no longer live in Paris") **ends** the same
  current fact (:func:`end`: ``valid_until`` set, no successor) instead of
  reinforcing it; with no such fact it is stored as history.
* The raw-utterance ``statement`` fact of the message an old fact came from is
  closed with it, so a superseded value never reaches a prompt through its quote —
  but only once **everything it said** is retired: while another canonical fact
  drawn from the same message (same subject) is current, the quote stays current,
  so "I live in London and I work at Initech" keeps London in view after a job change.
* **Order inside an episode is time** (:func:`message_times`): a message without its
  own timestamp is dated at the episode's time, and messages sharing a time are one
  microsecond apart by position, so a correction later in a conversation is newer
  than what it corrects.
* A **correction** ("I meant Victoria, not Vancouver") takes back what it corrects
  (:func:`zep_core.corrections.plan_corrections`): the facts of the corrected statement that mention the wrong
  value never held (``valid_until = valid_from``, :func:`take_back`) and are superseded
  by the same facts with the right value, from the same time. History shows the mistake
  as taken back, never as a past truth.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from .conflicts import Rivals, conflicts, counted_thing, fact_key, normalize_name
from .models import Discarded, Fact, Message
from .names import STATEMENT, is_own  # here before zep_core.names; re-exported

__all__ = [
    "STATEMENT",
    "UpdatePlan",
    "conflicts",
    "counted_thing",
    "fact_key",
    "is_own",
    "mentions",
    "message_times",
    "normalize_name",
    "plan_updates",
    "reinforce",
    "supersede",
    "take_back",
]

def supersede(old: Fact, new: Fact, now: datetime, told: datetime | None = None) -> Fact:
    """Close ``old`` because ``new`` replaced it (spec: valid_until, superseded_by).

    ``old`` ends when ``new`` began; when ``new`` is dated no later than ``old`` began
    (a vague "last week" told after ``old`` was said), it ends when ``new`` was told
    (``told``), so that it is never shown as having held for no time.
    """
    until = new.valid_from if new.valid_from > old.valid_from or told is None else max(told, old.valid_from)
    return replace(old, valid_until=until, superseded_by=new.id, expired_at=now)


def end(old: Fact, new: Fact, now: datetime) -> Fact:
    """Close ``old`` at the end ``new`` states ("I no longer live in Paris"); nothing replaces it."""
    until = max(new.valid_until or new.valid_from, old.valid_from)
    sources = old.source_message_ids
    if old.predicate != STATEMENT:
        sources = tuple(dict.fromkeys(sources + new.source_message_ids))
    return replace(old, valid_until=until, expired_at=now, source_message_ids=sources)


def take_back(old: Fact, replacement: str | None, now: datetime) -> Fact:
    """Close ``old`` as said by mistake: it never held (``valid_until = valid_from``), ``replacement`` says what did."""
    return replace(old, valid_until=old.valid_from, superseded_by=replacement, expired_at=now)


def reinforce(old: Fact, new: Fact) -> Fact:
    """Merge a restatement into ``old``: union of sources, noisy-or of confidences."""
    sources = tuple(dict.fromkeys(old.source_message_ids + new.source_message_ids))
    confidence = min(1.0, 1 - (1 - old.confidence) * (1 - new.confidence))
    return replace(old, source_message_ids=sources, confidence=round(confidence, 6),
                   valid_from=min(old.valid_from, new.valid_from))


def message_times(messages: Sequence[Message], episode_time: datetime) -> dict[str | None, datetime]:
    """When each message of an episode was said, as the update rules compare it.

    A message's own timestamp, else the episode's time; the k-th message (0-based)
    sharing a time with earlier ones is dated k microseconds later. So messages
    without timestamps are ordered by position ("now I live in Berlin" … "Actually,
    Madrid": Madrid is newer and supersedes Berlin, as the spec's
    ``new.valid_from > old.valid_from`` asks), and distinct timestamps stay exact.

    Example:
        >>> t = datetime(2024, 1, 1)
        >>> [d.microsecond for d in message_times([Message("a", id="1"), Message("b", id="2")], t).values()]
        [0, 1]

    """
    seen: dict[datetime, int] = {}
    out: dict[str | None, datetime] = {}
    for message in messages:
        base = message.timestamp or episode_time
        k = seen.get(base, 0)
        seen[base] = k + 1
        try:
            out[message.id] = base + timedelta(microseconds=k)
        except OverflowError:  # the last microsecond of year 9999: ties stay ties
            out[message.id] = base
    return out


def _companions(facts: Iterable[Fact], retired: Sequence[Fact], new: Fact) -> list[Fact]:
    """Current statement facts whose every canonical fact is now retired (same subject and message).

    "Alice: I live in Paris" must leave the context together with "Alice lives in
    Paris", or a stale fact would still reach the prompt; the message itself stays
    in its episode (a fact of the speaker's own, "Maya's team has 7", counts as the
    speaker's). A quote is tied to the canonical facts of its message whose value
    it mentions (a quote that mentions none is tied to all of its message's): it stays
    current while any of those is current. So when a message is quoted clause by
    clause, "I work at Acme" stays while "I live in Paris" goes with the move; a quote
    of the whole message ("I live in London and I work at Initech") keeps London in
    view after a job change, until the move.
    """
    if not retired:
        return []
    facts = list(facts)
    ids = {f.id for f in retired}
    canonical: dict[tuple[str, str], list[Fact]] = {}
    for f in (*facts, *retired, new):
        if normalize_name(f.predicate) != STATEMENT:
            subject = normalize_name(f.subject)
            owner = subject.split("'s ", 1)[0]  # "maya's team": a fact of Maya's own, from Maya's message
            for m in f.source_message_ids:
                canonical.setdefault((subject, m), []).append(f)
                if owner != subject:
                    canonical.setdefault((owner, m), []).append(f)
    out = []
    for quote in facts:
        if not quote.is_current or quote.id in ids or normalize_name(quote.predicate) != STATEMENT:
            continue
        drawn = {f.id: f for m in quote.source_message_ids
                 for f in canonical.get((normalize_name(quote.subject), m), ())}.values()
        text = normalize_name(quote.object)
        tied = [f for f in drawn if mentions(text, normalize_name(f.object))] or list(drawn)
        if any(f.id in ids for f in tied) and not any(f.is_current and f.id not in ids for f in tied):
            out.append(quote)
    return out


def mentions(text: str, value: str) -> bool:
    """Whether ``value`` occurs in ``text`` as whole words (both already normalized)."""
    return bool(value) and re.search(rf"(?<!\w){re.escape(value)}(?!\w)", text) is not None


def _successor(old: Fact, added: Sequence[Fact]) -> Fact | None:
    """Of an episode's new facts, the one that replaces ``old``, which the extractor said the episode contradicts.

    The one about what ``old`` is about (a subject or object in common, "Ciara's sister"
    counting as Ciara's), else the episode's only new fact that is not a quote; else none.
    """
    names = {normalize_name(old.subject), normalize_name(old.object)}

    def about(f: Fact) -> bool:
        own = {normalize_name(f.subject), normalize_name(f.object)}
        return bool(names & (own | {n.split("'s ", 1)[0] for n in own}))

    canonical = [f for f in added if normalize_name(f.predicate) != STATEMENT]
    return next((f for f in canonical if about(f)), None) or (canonical[0] if len(canonical) == 1 else None)


#: How far before a current fact a later-told change may be dated and still replace it.
VAGUE_DATE = timedelta(days=31)


def _told_after(new: Fact, told: datetime | None, old: Fact, old_told: datetime | None) -> bool:
    """Whether ``new`` is a later word on ``old`` though dated a little before it.

    "I moved to Berlin last week", told a week after "I live in Paris": the move is
    dated at the start of last week, before Paris was said, but it was told after, and
    a relative date is vague. When ``old`` is a present-tense statement (dated when it
    was told, ``old_told``: it says what held then, not since when) and ``new`` was told
    later and is dated within :data:`VAGUE_DATE` before it, the later word holds now. A
    change dated further back ("when I moved to Berlin in 2010") is history, not news,
    and a fact with a date of its own ("since 2019") keeps the spec's order by date.
    """
    return (told is not None and old_told is not None and told > old.valid_from
            and abs(old.valid_from - old_told) < timedelta(seconds=1)
            and new.valid_from >= old.valid_from - VAGUE_DATE)


@dataclass(frozen=True)
class UpdatePlan:
    """What applying the rules to an episode's facts changes.

    Attributes:
        added: new facts to store (possibly already superseded within the episode).
        reinforced: stored facts restated by the episode, as they should now be.
        superseded: stored facts the episode retires, as they should now be.
        discarded: proposed facts not stored, with the reason.

    Facts said and then retired within the episode are in ``added``, already closed;
    :attr:`superseded_within` lists them.

    """

    added: tuple[Fact, ...] = ()
    reinforced: tuple[Fact, ...] = ()
    superseded: tuple[Fact, ...] = ()
    discarded: tuple[Discarded, ...] = ()

    @property
    def superseded_within(self) -> tuple[Fact, ...]:
        """Added facts that a later message of the same episode already superseded."""
        return tuple(f for f in self.added if f.superseded_by is not None)

    @property
    def changed(self) -> tuple[Fact, ...]:
        """Every fact whose stored row must be written."""
        return self.added + self.reinforced + self.superseded


def plan_updates(
    current: Iterable[Fact],
    proposed: Sequence[Fact],
    *,
    single_valued: Collection[str],
    contradicted: Collection[str] = (),
    taken_back: Mapping[str, str | None] | None = None,
    hearsay: Collection[str] = (),
    said_at: Mapping[str, datetime] | None = None,
    at: datetime | None = None,
    replaced: Mapping[str, str] | None = None,
    retiring: Collection[str] | None = None,
    now: datetime,
) -> UpdatePlan:
    """Apply the update rules to an episode's proposed facts.

    Proposed facts are taken in ``valid_from`` order (ties in the order given), so an
    episode that says "I lived in Paris, then moved to Berlin" supersedes within itself
    too; give facts without a stated time their message's :func:`message_times`.

    Args:
        current: the user's current facts that could be affected (same subjects).
        proposed: validated facts from the extractor, with ids and times set (and the
            replacements of :func:`plan_corrections`).
        single_valued: predicates that hold one value at a time.
        contradicted: ids of known facts the extractor flagged; others are ignored. Each is
            retired whatever its subject: by the proposal that conflicts with it, else by
            the one that names what it is about (:func:`_successor`), else it just ends.
        taken_back: facts (stored or proposed) that corrections take back, each with the
            id of its replacement (:func:`plan_corrections`): they never held, and retire
            nothing.
        hearsay: proposed facts said only by the assistant about someone else
            ("From what I remember, you live in Paris"): stored when they conflict with
            nothing, discarded when they restate or contradict a current fact. The
            assistant's words never retire what a person said.
        said_at: when each fact, proposed or stored, was told (its first message's
            time). A fact told after a present-tense rival was told supersedes it even
            when it is dated a little earlier ("I moved to Berlin last week", a week after
            "I live in Paris"; :func:`_told_after`).
        at: when the episode was said (its first message): a contradicted fact that none of
            its facts replaces ends then (``now`` when not given).
        replaced: stored facts (by id) that a proposal (the id they map to) says changed or
            ended: each is superseded by it, with its quotes, whatever the predicates.
        retiring: the proposals whose one-value attribute retires the older claims on it (the
            extractor was sure of it); None: every proposal's.
        now: the ingest time, recorded as ``expired_at`` of superseded facts.

    """
    taken_back = taken_back or {}
    said_at = said_at or {}
    state: dict[str, Fact] = {f.id: f for f in current}
    rivals_of = Rivals(single_valued, contradicted)  # compare a proposal with what it could conflict with only
    for fact in state.values():
        rivals_of.hold(fact)
    stored_ids = set(state)
    touched: dict[str, str] = {}
    for fid, replacement in taken_back.items():
        if fid in state:
            state[fid] = take_back(state[fid], replacement, now)
            touched[fid] = "superseded"
    by_key: dict[tuple[str, str, str], str] = {fact_key(f): f.id for f in state.values() if f.is_current}
    added: list[str] = []
    discarded: list[Discarded] = []

    for new in sorted(proposed, key=lambda f: f.valid_from):
        if new.id in taken_back:  # said in this episode and corrected in it: stored as taken back
            state[new.id] = take_back(new, taken_back[new.id], now)
            rivals_of.hold(state[new.id])
            added.append(new.id)
            continue
        key = fact_key(new)
        same = by_key.get(key)
        if new.id in hearsay:
            rival = next((old for old in rivals_of.candidates(new, state, also=(same,) if same else (), named=False)
                          if old.is_current and (old.id == same or conflicts(old, new, single_valued=single_valued,
                                                                              contradicted=()))), None)
            if rival is not None:
                discarded.append(Discarded(new, f"only the assistant said it, and '{rival.content}' stands: "
                                                "the assistant's words do not restate or retire a fact", rival.id))
                continue
        if same is not None and state[same].is_current and new.valid_until is None:
            state[same] = reinforce(state[same], new)
            touched.setdefault(same, "reinforced")
            continue
        if same is not None and state[same].is_current and new.valid_until >= state[same].valid_from:
            # "I no longer live in Paris": the stated end closes the current fact, and its quote
            old = state[same]
            quotes = [c for c in _companions(state.values(), [old], new) if c.valid_from <= new.valid_until]
            for closed in (old, *quotes):
                state[closed.id] = end(closed, new, now)
                touched[closed.id] = "superseded"
                by_key.pop(fact_key(closed), None)
            continue
        # (an end stated before the current fact began is an earlier stint: stored below, in history)
        rivals = [old for old in rivals_of.candidates(new, state)
                  if conflicts(old, new, single_valued=single_valued, contradicted=contradicted,
                               by_attribute=retiring is None or new.id in retiring)]
        told = said_at.get(new.id)
        blocker = next((old for old in rivals if not new.valid_from > old.valid_from
                        and not _told_after(new, told, old, said_at.get(old.id))), None)
        if blocker is not None:
            discarded.append(Discarded(
                new,
                f"conflicts with the current fact '{blocker.content}' valid from "
                f"{blocker.valid_from.isoformat()}, which is not older",
                blocker.id,
            ))
            continue
        # a quote said after the new fact began is not retired by it (and cannot end before it starts)
        quotes = [c for c in _companions(state.values(), rivals, new) if c.valid_from <= new.valid_from]
        for old in rivals + quotes:
            state[old.id] = supersede(old, new, now, told)
            touched[old.id] = "superseded"
            by_key.pop(fact_key(old), None)
        state[new.id] = new
        rivals_of.hold(new)
        added.append(new.id)
        if new.is_current:
            by_key[key] = new.id

    for fid, by_id in (replaced or {}).items():  # a claim that changed or ended what these name (stored or said here)
        old, by = state.get(fid), state.get(by_id)
        if old is None or not old.is_current or by is None or (fid not in stored_ids and fid not in added):
            continue
        # replaced by what holds now; or ended with what is said to be over ("I quit climbing")
        closed = supersede(old, by, now, said_at.get(by_id)) if by.is_current else end(old, by, now)
        for gone in (closed, *(end(q, closed, now) for q in _companions(state.values(), [old], by))):
            state[gone.id] = gone
            if gone.id in stored_ids:
                touched[gone.id] = "superseded"
            by_key.pop(fact_key(gone), None)

    stood = {d.conflicting_fact_id for d in discarded}  # newer than what contradicted it: the spec keeps it
    for fid in contradicted:  # the extractor said so, whatever the subjects: what nothing above retired ends now
        old = state.get(fid)
        if fid not in stored_ids or fid in taken_back or fid in stood or old is None or not old.is_current:
            continue
        by = _successor(old, [state[i] for i in added if state[i].is_current and i not in hearsay])
        closed = supersede(old, by, now, said_at.get(by.id)) if by is not None else replace(
            old, valid_until=max(at or now, old.valid_from), expired_at=now)
        for gone in (closed, *(end(q, closed, now) for q in _companions(state.values(), [old], by or closed))):
            state[gone.id] = gone
            touched[gone.id] = "superseded"
            by_key.pop(fact_key(gone), None)

    for fid, fact in list(state.items()):  # what a taken-back fact had superseded, its replacement supersedes
        if fact.superseded_by in taken_back and taken_back[fact.superseded_by] and fid not in taken_back:
            state[fid] = replace(fact, superseded_by=taken_back[fact.superseded_by])
            if fid in stored_ids:
                touched.setdefault(fid, "superseded")

    def pick(kind: str) -> tuple[Fact, ...]:
        return tuple(state[i] for i, k in touched.items() if k == kind and i in stored_ids)

    return UpdatePlan(
        added=tuple(state[i] for i in added),
        reinforced=pick("reinforced"),
        superseded=pick("superseded"),
        discarded=tuple(discarded),
    )
