"""What a claim that changes or corrects something retires: the earlier statements that name the same thing.

"finally got rid of the corolla" ends what the speaker said of the corolla before ("my corolla
is making this grinding noise"); "it's actually Stripe, Shopify was my old job" takes back what
they said of Shopify (it never held). The offline extractor marks such a claim with its cue and
the words that name the thing (:mod:`zep_core.providers.cues`); here those names find the
earlier statements — the user's stored facts through their own lexical index, and the episode's
earlier proposals — that the update rules then retire (:func:`zep_core.temporal.plan_updates`,
``replaced``; ``taken_back`` for a correction). The assistant's words about the same thing go
with them.

Only the part of an old statement that names the thing goes: "rent is $1,850, I take home
about 5k a month" loses its rent when the rent is raised, and what it said of pay stays current
as a statement of its own (a **remainder**), dated as the old one.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from .models import Fact, new_id
from .providers.claims import about_others, split_talk
from .providers.cues import PEOPLE, change_names, counts_of, cue_of, names_of, shared_names
from .providers.earlier import mentions
from .providers.extractive import split_sentences
from .stages import stages_of, track
from .stores.record_protocols import IngestRecords
from .temporal import STATEMENT, is_own, normalize_name
from .tenant import Tenant

__all__ = ["Named", "named_by_cues", "named_by_stages"]

#: A name found in more of a user's current facts than this is a topic ("painting", "work"), not one
#: thing ("the corolla"): a claim does not retire what merely shares a topic with it.
SPECIFIC = 3
#: Where a statement splits into parts that may hold or go apart: sentences, and clauses of their own subject.
_PARTS = re.compile(r";\s*|(?:,\s*(?:(?:and|but|so|also|plus)\s+)?|\s+(?:and|but|so|also|plus)\s+)"
                    r"(?=(?:i|i'm|im|i've|i'd|my|we|we're|our)\s)", re.IGNORECASE)
#: The clauses of a sentence, whoever they are about ("date is sept 21", "she's turning 60").
_CLAUSES = re.compile(r"[,;]\s+(?:(?:and|but|so)\s+)?|\s+(?:and|but)\s+(?=(?:she|he|they|it|i|my|we|our)\b)",
                      re.IGNORECASE)
#: Values a correction puts right: numbers (money, ordinals, "5k") and days and months.
_VALUE_KINDS = {
    "number": re.compile(r"(?i)^\$?\d[\d,.]*(?:st|nd|rd|th|k|%)?$"),
    "calendar": re.compile(r"(?i)^(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec|mon|tue|tues|wed|thu|thur|"
                           r"thurs|fri|sat|sun)[a-z]*$"),
}
#: A part that the speaker says of themselves: what a remainder keeps ("i take home about 5k a month").
_OWN = re.compile(r"^(?:(?:and|but|so|also|plus|oh|ok|okay|btw)[\s,]+)*(?:i|i'm|im|i've|i'd|my|we|we're|our)\s",
                  re.IGNORECASE)


@dataclass
class Named:
    """What the episode's claims with a cue retire.

    Attributes:
        corrected: taken-back fact id -> the claim that corrects it.
        replaced: superseded fact id -> the claim that changed or ended it.
        stored: the stored facts concerned (for the update rules' reads).
        remainders: new statements keeping what a retired one said of other things.

    """

    corrected: dict[str, str] = field(default_factory=dict)
    replaced: dict[str, str] = field(default_factory=dict)
    stored: list[Fact] = field(default_factory=list)
    remainders: list[Fact] = field(default_factory=list)


def named_by_cues(records: IngestRecords, user: Tenant, proposals: Sequence[Fact],
                  cues: Mapping[str, tuple[str, tuple[str, ...], tuple[str, str] | None]], *,
                  said_at: Mapping[str, datetime],
                  skip: Collection[str], assistant: str | None, now: datetime,
                  counts: Mapping[str, Sequence[tuple[str, str]]] | None = None) -> Named:
    """The earlier statements each claim of ``cues`` (fact id -> ``(cue, names, swap)``) retires, and their remainders.

    Args:
        records: the user's record store (its lexical index).
        user: the tenant.
        proposals: the episode's facts.
        cues: the claims that change (``"change"``) or correct (``"correction"``) something, the
            names that say which thing, and a correction's wrong word and the words meant (or None).
        said_at: when each proposal was said.
        skip: ids already retired otherwise (taken back by a correction, hearsay).
        assistant: the assistant's speaker name (its quotes about the thing go too).
        now: when the memory learns it.
        counts: the statements that count something (fact id -> ``(what, value)``): an earlier
            statement of the speaker counting the same thing with another value is replaced.

    """
    out = Named()
    stored: dict[str, Fact] = {}
    helper = normalize_name(assistant or "")
    proposed = {f.id for f in proposals}
    for new in proposals:  # "11 people report to me now" replaces "9 people report to me"
        for what, value in (counts or {}).get(new.id, ()):
            words = " ".join(w for w in what.split() if w not in ("#", "favorite"))
            hits = records.lexical_search(user, words, limit=SPECIFIC * 3, context_weight=0.0)
            earlier = [f for f in proposals if said_at.get(f.id, f.valid_from) < said_at.get(new.id, new.valid_from)]
            for old in [*records.get_facts(user, list(hits)).values(), *earlier]:
                if (not old.is_current or old.id in skip or old.id in out.replaced or old.predicate != STATEMENT
                        or old.valid_from > new.valid_from or set(old.source_message_ids) & set(new.source_message_ids)
                        or not is_own(normalize_name(old.subject), normalize_name(new.subject))):
                    continue
                if counts_of(old.object).get(what, value) != value:
                    out.replaced[old.id] = new.id
                    if old.id not in proposed:
                        stored[old.id] = old
                    rest = _remainder(old, frozenset(w for w in what.split() if w not in ("#", "favorite")), now)
                    if rest is not None:
                        out.remainders.append(rest)
    for new in proposals:
        cue = cues.get(new.id)
        if cue is None or new.id in skip:
            continue
        kind, names, swap = cue[0], frozenset(cue[1]), cue[2]
        speaker = normalize_name(new.subject).split("'s ", 1)[0]
        hits: dict[str, float] = {}
        for name in sorted(names):  # a name that names one thing is in few statements: a topic is in many
            found_by = records.lexical_search(user, name, limit=SPECIFIC + 1, context_weight=0.0)
            if len(found_by) > SPECIFIC:
                names -= {name}
            else:
                hits.update(found_by)
        if not names:
            continue
        found = [f for f in records.get_facts(user, list(hits)).values() if f.is_current]
        earlier = [f for f in proposals if said_at.get(f.id, f.valid_from) < said_at.get(new.id, new.valid_from)]
        for old in [*found, *earlier]:
            if (old.id == new.id or old.id in skip or old.id in out.corrected or old.id in out.replaced
                    or old.valid_from > new.valid_from or set(old.source_message_ids) & set(new.source_message_ids)):
                continue
            subject = normalize_name(old.subject)
            if not (is_own(subject, speaker) or (helper and subject == helper)):
                continue
            text = old.object if old.predicate == STATEMENT else old.content
            shared = shared_names(names, names_of(text, values=kind == "correction"))
            if not shared:
                continue
            if kind == "change" and cue_of(text) == "change" and not names - shared_names(
                    names, change_names(text, announced=False)):
                continue  # the same change told again ("since I lost my job at the bakery…"): the first telling holds
            if old.id not in proposed:
                stored[old.id] = old
            if kind != "correction":
                out.replaced[old.id] = new.id
                rest = _remainder(old, shared, now) if old.predicate == STATEMENT else None
            else:  # the value said by mistake put right, else what the statement said of other things
                rest = _substituted(old, new.object if new.predicate == STATEMENT else new.content, shared, now,
                                    swap=swap)
                if rest is None and old.predicate == STATEMENT:
                    rest = _remainder(old, shared, now, only_own=False)
                out.corrected[old.id] = rest.id if rest is not None else new.id
            if rest is not None:
                out.remainders.append(rest)
    out.stored = list(stored.values())
    return out


def named_by_stages(records: IngestRecords, user: Tenant, proposals: Sequence[Fact], *,
                    said_at: Mapping[str, datetime], skip: Collection[str], assistant: str | None,
                    now: datetime) -> Named:
    """The earlier statements that a proposal's later stage of a track ends (:mod:`zep_core.stages`).

    "we're back from the honeymoon!! married life is weird" ends "omar and i are engaged": the
    speaker's older statement at an earlier stage of the same track, about the same person
    (:func:`_same_subject`), is replaced; what the speaker said of themselves in its other sentences
    stays (a remainder).
    The assistant's words never end the user's.
    """
    out, stored = Named(), {}
    helper = normalize_name(assistant or "")
    proposed = {f.id for f in proposals}
    found: dict[str, list[Fact]] = {}  # a track's stored statements, read once per episode

    def stored_of(name: str) -> list[Fact]:
        if name not in found:
            hits = records.lexical_search(user, track(name).words, limit=8, context_weight=0.0)
            found[name] = [f for f in records.get_facts(user, list(hits)).values() if f.is_current]
        return found[name]

    for new in proposals:
        subject = normalize_name(new.subject)
        if new.predicate != STATEMENT or new.id in skip or (helper and subject == helper):
            continue
        speaker = subject.split("'s ", 1)[0]
        earlier = [f for f in proposals if said_at.get(f.id, f.valid_from) < said_at.get(new.id, new.valid_from)]
        for name, (rank, spans) in stages_of(new.object).items():
            if rank == 0:
                continue
            line = track(name)
            for old in [*stored_of(name), *earlier]:
                if (old.id == new.id or old.id in skip or old.id in out.replaced or old.predicate != STATEMENT
                        or old.valid_from > new.valid_from or set(old.source_message_ids) & set(new.source_message_ids)
                        or not is_own(normalize_name(old.subject), speaker)):
                    continue
                before = stages_of(old.object).get(name)
                if before is None or before[0] >= rank or not _same_subject(
                        name, old.object, before[1], new.object, spans, named=line.named):
                    continue
                out.replaced[old.id] = new.id
                if old.id not in proposed:
                    stored[old.id] = old
                kept = [s for s in split_talk(old.object) if _OWN.match(s) and name not in stages_of(s)]
                if kept and len(" ".join(kept).split()) >= 3 and " ".join(kept) != old.object:
                    out.remainders.append(_restated(old, " ".join(kept), now))
    out.stored = list(stored.values())
    return out


def _same_subject(name: str, old: str, old_spans: Sequence[tuple[int, int]], new: str,
                  new_spans: Sequence[tuple[int, int]], *, named: bool) -> bool:
    """Whether two statements of the track ``name`` speak of the same person.

    They do when they share a name besides the track's own words ("leo starts kindergarten",
    "leo's in first grade"), the older one where it says its stage: who was at that stage is
    named there ("my daughter erin is expecting"), not elsewhere in the message ("I'm planning
    my own wedding … the bride, Jen, looked stunning" is not Jen's stage). Else (``named``
    False) when both say their stage of the speaker ("omar and i are engaged", "married life
    is weird"), not of someone named right before it ("the barn where my friend Jen got married").
    """
    words = set(track(name).words.split())

    def rest(text: str, spans: Sequence[tuple[int, int]]) -> frozenset[str]:
        for start, end in sorted(spans, reverse=True):
            text = f"{text[:start]} {text[end:]}"
        return names_of(text) - words

    said = {text: [s for s in split_talk(text) if name in stages_of(s)] for text in (old, new)}  # the stage's sentences
    staged = " ".join(said[old])
    if shared_names(rest(staged, stages_of(staged)[name][1]) if staged else rest(old, old_spans), rest(new, new_spans)):
        return True
    return not named and not any(about_others(s) for sentences in said.values() for s in sentences) and not (
        _of_another(old, old_spans) or _of_another(new, new_spans))


#: Someone else named right before a stage: "the barn where my friend Jen got married", "my sister's engaged",
#: "Jen, who just got married", "she's expecting" (not "I", not "we").
_ANOTHER = re.compile(rf"(?i)(?:\b(?:my|our|his|her|their|a)\s+(?:\w+\s+)?{PEOPLE}(?:'s)?(?:\s+(?-i:[A-Z])\w+)?"
                      r"(?:\s+(?:and|&)\s+\w+)?|\b(?:who|she|he|they)(?:'s|'re)?|(?<=[a-z,;] )(?-i:[A-Z][a-z]+)(?:'s)?)"
                      r"\s+(?:(?:just|finally|recently|also)\s+)?$")


def _of_another(text: str, spans: Sequence[tuple[int, int]]) -> bool:
    """Whether every stage span of ``text`` is said of someone else, named just before it."""
    return bool(spans) and all(_ANOTHER.search(text[max(0, start - 60):start]) for start, _ in spans)


def _remainder(old: Fact, shared: frozenset[str], now: datetime, *, only_own: bool = True) -> Fact | None:
    """What ``old`` (a statement) said of other things than ``shared``, as a statement of its own; None if nothing.

    ``only_own``: keep only what the speaker says of themselves ("i take home 5k a month"); a
    correction keeps any clause that does not name what it corrects.
    """
    splitter = _PARTS if only_own else _CLAUSES
    parts = [p.strip(" ,") for sentence in split_sentences(old.object) for p in splitter.split(sentence)
             if p.strip(" ,")]
    kept = [p for p in parts if (_OWN.match(p) or not only_own) and not shared_names(names_of(p, values=True), shared)]
    if not kept or len(kept) == len(parts) or len(" ".join(kept).split()) < 3:
        return None
    return _restated(old, ", ".join(kept), now)


def _substituted(old: Fact, correction: str, shared: frozenset[str], now: datetime, *,
                 swap: tuple[str, str] | None = None) -> Fact | None:
    """``old`` with the value it got wrong put right, when the correction says which: None if it does not.

    Of a kind of value (a number, a month or a day), the correction shares one with ``old``
    (the wrong one) and says one other (the right one): "I told you I was 34, I'm 36" puts
    36 for 34; "last time i said august but it's actually september 2" puts "september 2"
    for "august" (a month takes the day after it along). A ``swap`` the correction states in words
    (``("beagle", "basset hound mix")``) is carried out when ``old`` says its wrong word.
    """
    text = old.object if old.predicate == STATEMENT else old.content
    if swap is not None and mentions(text, swap[0]):
        return _swapped(old, swap, shared - names_of(swap[0]), now)
    said = [w.strip(".,!?;:()'\"").lower() for w in correction.split()]
    own = {w.strip(".,!?;:()'\"").lower() for w in text.split()}
    swaps: list[tuple[str, str]] = []
    for kind in _VALUE_KINDS.values():
        wrong = {w for w in shared if kind.match(w)}
        right = {w for w in said if kind.match(w) and w not in own}
        if len(wrong) != 1 or len(right) != 1:
            continue
        value = next(iter(right))
        at = said.index(value)
        if at + 1 < len(said) and _VALUE_KINDS["number"].match(said[at + 1]):
            value = f"{value} {said[at + 1]}"  # "september 2"
        swaps.append((next(iter(wrong)), value))
    if not swaps:
        return None
    content, obj = old.content, old.object
    for wrong, right in swaps:
        pattern = re.compile(rf"(?<![\w$]){re.escape(wrong)}(?![\w])", re.IGNORECASE)
        content, obj = pattern.sub(right, content), pattern.sub(right, obj)
    if content == old.content:
        return None
    return replace(old, id=new_id(), content=content, object=obj, valid_until=None, superseded_by=None,
                   expired_at=None, created_at=now)


def _swapped(old: Fact, swap: tuple[str, str], others: frozenset[str], now: datetime) -> Fact | None:
    """``old`` with ``swap``'s wrong words put right.

    It keeps the clauses that say the value or name nothing of ``others`` (what the correction says
    anew: "howling is a bit better" retires "she won't stop howling").
    """
    wrong, right = swap
    pattern = re.compile(rf"(?<![\w'’]){re.escape(wrong)}(?![\w'’])", re.IGNORECASE)
    kept = [p.strip(" ,") for sentence in split_sentences(old.object) for p in _CLAUSES.split(sentence)
            if p.strip(" ,") and (pattern.search(p) or not shared_names(names_of(p, values=True), others))]
    text = pattern.sub(right, ", ".join(kept))
    return _restated(old, text, now) if kept and text != old.object else None


def _restated(old: Fact, text: str, now: datetime) -> Fact:
    """A new current statement saying ``text`` in ``old``'s place: its speaker's prefix ("Sam: "), times and sources."""
    prefix = old.content[:len(old.content) - len(old.object)] if old.content.endswith(old.object) else ""
    return replace(old, id=new_id(), object=text, content=f"{prefix}{text}", valid_until=None, superseded_by=None,
                   expired_at=None, created_at=now)
