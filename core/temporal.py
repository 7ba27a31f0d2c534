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
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from .models import Discarded, Fact, Message

__all__ = [
    "STATEMENT",
    "UpdatePlan",
    "conflicts",
    "fact_key",
    "message_times",
    "normalize_name",
    "plan_updates",
    "reinforce",
    "supersede",
]

_SPACES = re.compile(r"\s+")
_EDGE_PUNCT = ".,;:!?\"'`()[]{} "


@functools.lru_cache(maxsize=1 << 16)
def normalize_name(text: str) -> str:
    """Casefold, collapse whitespace and trim punctuation: the key names are compared by.

    Pure and called for every name of every candidate fact the update rules compare,
    so its results are cached.
    """
    return _SPACES.sub(" ", text.casefold()).strip(_EDGE_PUNCT)


def fact_key(fact: Fact) -> tuple[str, str, str]:
    """The identity of a statement: normalized subject, predicate and object."""
    return normalize_name(fact.subject), normalize_name(fact.predicate), normalize_name(fact.object)


def conflicts(old: Fact, new: Fact, *, single_valued: Collection[str], contradicted: Collection[str] = ()) -> bool:
    """Whether ``new`` contradicts the current fact ``old``.

    Args:
        old: a current fact already stored.
        new: a proposed fact.
        single_valued: predicates that hold one value at a time.
        contradicted: ids of known facts the extractor said this episode contradicts.

    """
    if not old.is_current or new.valid_until is not None or old.user_id != new.user_id:
        return False
    old_s, old_p, old_o = fact_key(old)
    new_s, new_p, new_o = fact_key(new)
    if old_s != new_s or (old_p, old_o) == (new_p, new_o):
        return False
    if old.id in contradicted:
        return True
    return old_p == new_p and old_p in single_valued


def supersede(old: Fact, new: Fact, now: datetime) -> Fact:
    """Close ``old`` because ``new`` replaced it (spec: valid_until, superseded_by)."""
    return replace(old, valid_until=new.valid_from, superseded_by=new.id, expired_at=now)


def end(old: Fact, new: Fact, now: datetime) -> Fact:
    """Close ``old`` at the end ``new`` states ("I no longer live in Paris"); nothing replaces it."""
    until = max(new.valid_until or new.valid_from, old.valid_from)
    sources = old.source_message_ids
    if old.predicate != STATEMENT:
        sources = tuple(dict.fromkeys(sources + new.source_message_ids))
    return replace(old, valid_until=until, expired_at=now, source_message_ids=sources)


def reinforce(old: Fact, new: Fact) -> Fact:
    """Merge a restatement into ``old``: union of sources, noisy-or of confidences."""
    sources = tuple(dict.fromkeys(old.source_message_ids + new.source_message_ids))
    confidence = min(1.0, 1 - (1 - old.confidence) * (1 - new.confidence))
    return replace(old, source_message_ids=sources, confidence=round(confidence, 6),
                   valid_from=min(old.valid_from, new.valid_from))


#: Predicate of the raw-utterance facts the extractor keeps so nothing said goes unindexed.
STATEMENT = "statement"


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
    in its episode. A quote is tied to the canonical facts of its message whose value
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
            for m in f.source_message_ids:
                canonical.setdefault((normalize_name(f.subject), m), []).append(f)
    out = []
    for quote in facts:
        if not quote.is_current or quote.id in ids or normalize_name(quote.predicate) != STATEMENT:
            continue
        drawn = {f.id: f for m in quote.source_message_ids
                 for f in canonical.get((normalize_name(quote.subject), m), ())}.values()
        text = normalize_name(quote.object)
        tied = [f for f in drawn if _mentions(text, normalize_name(f.object))] or list(drawn)
        if any(f.id in ids for f in tied) and not any(f.is_current and f.id not in ids for f in tied):
            out.append(quote)
    return out


def _mentions(text: str, value: str) -> bool:
    """Whether ``value`` occurs in ``text`` as whole words (both already normalized)."""
    return bool(value) and re.search(rf"(?<!\w){re.escape(value)}(?!\w)", text) is not None


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
    now: datetime,
) -> UpdatePlan:
    """Apply the update rules to an episode's proposed facts.

    Proposed facts are taken in ``valid_from`` order (ties in the order given), so an
    episode that says "I lived in Paris, then moved to Berlin" supersedes within itself
    too; give facts without a stated time their message's :func:`message_times`.

    Args:
        current: the user's current facts that could be affected (same subjects).
        proposed: validated facts from the extractor, with ids and times set.
        single_valued: predicates that hold one value at a time.
        contradicted: ids of known facts the extractor flagged; others are ignored.
        now: the ingest time, recorded as ``expired_at`` of superseded facts.

    """
    state: dict[str, Fact] = {f.id: f for f in current}
    stored_ids = set(state)
    by_key: dict[tuple[str, str, str], str] = {fact_key(f): f.id for f in state.values() if f.is_current}
    added: list[str] = []
    touched: dict[str, str] = {}
    discarded: list[Discarded] = []

    for new in sorted(proposed, key=lambda f: f.valid_from):
        key = fact_key(new)
        same = by_key.get(key)
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
        rivals = [old for old in state.values()
                  if conflicts(old, new, single_valued=single_valued, contradicted=contradicted)]
        blocker = next((old for old in rivals if not new.valid_from > old.valid_from), None)
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
            state[old.id] = supersede(old, new, now)
            touched[old.id] = "superseded"
            by_key.pop(fact_key(old), None)
        state[new.id] = new
        added.append(new.id)
        if new.is_current:
            by_key[key] = new.id

    def pick(kind: str) -> tuple[Fact, ...]:
        return tuple(state[i] for i, k in touched.items() if k == kind and i in stored_ids)

    return UpdatePlan(
        added=tuple(state[i] for i in added),
        reinforced=pick("reinforced"),
        superseded=pick("superseded"),
        discarded=tuple(discarded),
    )
