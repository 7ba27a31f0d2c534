"""What a claim that changes or corrects something retires: the earlier statements that name the same thing.

"finally got rid of the corolla" ends what the speaker said of the corolla before ("my corolla
is making this grinding noise"); "it's actually Stripe, Shopify was my old job" takes back what
they said of Shopify (it never held). The offline extractor marks such a claim with its cue and
the words that name the thing (:mod:`zep_core.providers.claims`); here those names find the
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
from .providers.claims import names_of
from .stores.record_protocols import IngestRecords
from .temporal import STATEMENT, is_own, normalize_name
from .tenant import Tenant

__all__ = ["Named", "named_by_cues"]

#: A name found in more of a user's current facts than this is a topic ("painting", "work"), not one
#: thing ("the corolla"): a claim does not retire what merely shares a topic with it.
SPECIFIC = 3
#: Where a statement splits into parts that may hold or go apart: sentences, and clauses of their own subject.
_PARTS = re.compile(r"(?<=[.!?])\s+|;\s*|(?:,\s*(?:(?:and|but|so|also|plus)\s+)?|\s+(?:and|but|so|also|plus)\s+)"
                    r"(?=(?:i|i'm|im|i've|i'd|my|we|we're|our)\s)", re.IGNORECASE)
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
                  cues: Mapping[str, tuple[str, tuple[str, ...]]], *, said_at: Mapping[str, datetime],
                  skip: Collection[str], assistant: str | None, now: datetime) -> Named:
    """The earlier statements each claim of ``cues`` (fact id -> ``(cue, names)``) retires, and their remainders.

    Args:
        records: the user's record store (its lexical index).
        user: the tenant.
        proposals: the episode's facts.
        cues: the claims that change (``"change"``) or correct (``"correction"``) something.
        said_at: when each proposal was said.
        skip: ids already retired otherwise (taken back by a correction, hearsay).
        assistant: the assistant's speaker name (its quotes about the thing go too).
        now: when the memory learns it.

    """
    out = Named()
    stored: dict[str, Fact] = {}
    helper = normalize_name(assistant or "")
    for new in proposals:
        cue = cues.get(new.id)
        if cue is None or new.id in skip:
            continue
        kind, names = cue[0], frozenset(cue[1])
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
            shared = names & names_of(text, values=kind == "correction")
            if not shared:
                continue
            (out.corrected if kind == "correction" else out.replaced)[old.id] = new.id
            if old.id not in {f.id for f in proposals}:
                stored[old.id] = old
            rest = _remainder(old, shared, now) if old.predicate == STATEMENT else None
            if rest is not None:
                out.remainders.append(rest)
    out.stored = list(stored.values())
    return out


def _remainder(old: Fact, shared: frozenset[str], now: datetime) -> Fact | None:
    """What ``old`` (a statement) said of other things than ``shared``, as a statement of its own; None if nothing."""
    parts = [p.strip(" ,") for p in _PARTS.split(old.object) if p.strip(" ,")]
    kept = [p for p in parts if _OWN.match(p) and not names_of(p, values=True) & shared]
    if not kept or len(kept) == len(parts) or len(" ".join(kept).split()) < 3:
        return None
    text = ", ".join(kept)
    prefix = old.content[:len(old.content) - len(old.object)] if old.content.endswith(old.object) else ""
    return replace(old, id=new_id(), object=text, content=f"{prefix}{text}", valid_until=None, superseded_by=None,
                   expired_at=None, created_at=now)
