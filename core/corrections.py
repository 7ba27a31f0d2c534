"""Corrections: what a speaker takes back, found among the episode's facts and the stored ones.

The extractor says what a message corrects (:class:`~zep_core.providers.base.ExtractedCorrection`:
"I meant Victoria, not Vancouver"; rule 4 of :mod:`zep_core.providers.talk`) and, when it can,
which earlier message of the episode it corrects. This module finds the rest in the user's
stored facts — the latest statement of the speaker that mentions the wrong value, or the
name the correction is about ("Biscuit is actually a cat": the statement about Biscuit, and
in it the pet word that is not "cat") — and hands the update rules the facts to take back
and their replacements (:func:`plan_corrections`).

Only facts of the same user and speaker are looked at, through the user's own lexical
index: a correction can never reach another user's facts.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from .models import Fact, new_id
from .providers.base import ExtractedCorrection
from .providers.talk import same_kind_values
from .stores.record_protocols import IngestRecords
from .temporal import STATEMENT, is_own, mentions, normalize_name

__all__ = ["Correction", "plan_corrections", "prepare", "replacement_kinds"]

@dataclass(frozen=True)
class Correction:
    """A speaker's correction, as the update rules take it.

    Attributes:
        speaker: whose statements it corrects (their facts have this subject, or one of
            the speaker's own, "Maya's team").
        right: the value meant; None when the statement is only taken back.
        wrong: the value taken back; None takes back the whole statement (``right`` is None then).
        messages: the messages corrected; empty: the latest message among the speaker's
            facts that mentions ``wrong``.
        source_message_ids: the message that says the correction.
        episode_id: the episode that says it (the replacements' episode).
        created_at: when the memory learned it.

    """

    speaker: str
    right: str | None
    wrong: str | None
    messages: tuple[str, ...] = ()
    source_message_ids: tuple[str, ...] = ()
    episode_id: str | None = None
    created_at: datetime | None = None


def _spoken_by(fact: Fact, speaker: str) -> bool:
    return is_own(normalize_name(fact.subject), speaker)


def _replaced(text: str, wrong: str, right: str) -> str:
    """``text`` with ``wrong`` (whole words, any case) put right; a capital stays a capital."""
    def put(match: re.Match[str]) -> str:
        found = match.group(0)
        return right[:1].upper() + right[1:] if found[:1].isupper() and right[:1].islower() else right

    return re.sub(rf"(?<![\w'’]){re.escape(wrong)}(?![\w'’])", put, text, flags=re.IGNORECASE)


def _says(fact: Fact, value: str | None) -> bool:
    """Whether a fact mentions ``value`` (normalized; None: any fact does)."""
    return value is None or mentions(normalize_name(fact.content), value) or mentions(normalize_name(fact.object),
                                                                                        value)


def plan_corrections(facts: Iterable[Fact], corrections: Sequence[Correction]) -> tuple[dict[str, str | None],
                                                                                        list[Fact]]:
    """What corrections take back, and the facts that replace them.

    Each correction finds the corrected message among ``facts`` (the speaker's stored
    current facts and the episode's proposals): the one it names, else the latest that
    mentions the wrong value. Of the facts drawn from that message, those that mention
    the wrong value (all of them, for a statement only taken back) are taken back; each
    is replaced by the same fact with the right value, said at the same time, citing the
    correction too.

    Returns:
        ``{taken-back fact id: its replacement's id, or None}`` and the replacements,
        to be proposed with the episode's facts (:func:`plan_updates` takes both).

    """
    facts = list(facts)
    taken: dict[str, str | None] = {}
    replacements: list[Fact] = []
    for fix in corrections:
        speaker = normalize_name(fix.speaker)
        pool = [f for f in facts if f.id not in taken and not set(f.source_message_ids) & set(fix.source_message_ids)]
        spoken = [f for f in pool if _spoken_by(f, speaker)]
        wrong = normalize_name(fix.wrong) if fix.wrong else None
        chosen = set(fix.messages)
        if not chosen and wrong is not None:
            hits = sorted((f for f in spoken if _says(f, wrong)), key=lambda f: f.valid_from)
            chosen = set(hits[-1].source_message_ids[:1]) if hits else set()
        # the corrected message's episodes: there, a fact about someone else is the speaker's word too
        # ("My son Leo is a doctor": "Leo works as a doctor" is Maya's statement)
        episodes = {f.episode_id for f in spoken if chosen & set(f.source_message_ids)}
        if fix.messages:
            episodes.add(fix.episode_id)
        for f in pool:
            if not chosen & set(f.source_message_ids) or not _says(f, wrong):
                continue
            if not _spoken_by(f, speaker) and f.episode_id not in episodes:
                continue
            new = None
            if fix.right is not None and fix.wrong is not None:
                new = replace(f, id=new_id(), object=_replaced(f.object, fix.wrong, fix.right),
                              content=_replaced(f.content, fix.wrong, fix.right),
                              source_message_ids=tuple(dict.fromkeys(f.source_message_ids + fix.source_message_ids)),
                              episode_id=fix.episode_id or f.episode_id, created_at=fix.created_at or f.created_at,
                              expired_at=None, superseded_by=None,
                              valid_until=f.valid_until if f.superseded_by is None else None)
                replacements.append(new)
            taken[f.id] = new.id if new is not None else None
    return taken, replacements


#: Stored facts looked at per correction (the lexical index's best matches of the wrong value).
_CANDIDATES = 20


def prepare(records: IngestRecords, user_id: str, found: Sequence[ExtractedCorrection], proposals: Sequence[Fact],
            subject_ids: Mapping[str, str], *, episode_id: str, now: datetime) -> tuple[list[Correction], list[Fact]]:
    """The corrections of an episode as the update rules take them, and the stored facts they may take back.

    Args:
        records: the user's record store.
        user_id: the tenant.
        found: what the extractor found.
        proposals: the episode's facts.
        subject_ids: entity id of each speaker (normalized name), for the stored facts drawn
            from a corrected message.
        episode_id: the episode saying the corrections.
        now: when the memory learns them.

    """
    fixes: list[Correction] = []
    stored: dict[str, Fact] = {}
    for x in found:
        speaker = normalize_name(x.speaker)
        wrong, messages = x.wrong, tuple(x.in_messages)
        if not messages:
            hits = _spoken(_search(records, user_id, x.wrong or x.about or ""), speaker)
            if x.wrong is None and x.about and x.right:
                about = normalize_name(x.about)
                hits = [f for f in hits if about in normalize_name(f.content)]
                if hits:
                    latest = max(hits, key=lambda f: f.valid_from)
                    messages = latest.source_message_ids[:1]
                    subjects = [subject_ids.get(speaker), *records.entity_ids_for_aliases(user_id, [about]).values()]
                    siblings = _from_messages(records, user_id, subjects, messages)
                    texts = [f.object if f.predicate == STATEMENT else f.content for f in [latest, *siblings]]
                    kinds = [v for text in texts for v in same_kind_values(text, x.right)]
                    wrong = kinds[-1] if kinds else None
                    hits = [latest, *siblings]
            if wrong is None and x.right is not None:
                continue  # nothing stored holds what this corrects
            if messages:
                hits += _from_messages(records, user_id, [subject_ids.get(speaker)], messages)
            stored.update((f.id, f) for f in hits)
        fixes.append(Correction(speaker=x.speaker, right=x.right, wrong=wrong, messages=messages,
                                source_message_ids=tuple(x.source_message_ids), episode_id=episode_id,
                                created_at=now))
    proposed = {f.id for f in proposals}
    return fixes, [f for f in stored.values() if f.id not in proposed]


def _search(records: IngestRecords, user_id: str, words: str) -> list[Fact]:
    if not words.strip():
        return []
    ids = list(records.lexical_search(user_id, words, limit=_CANDIDATES, context_weight=0.0))
    return [f for f in records.get_facts(user_id, ids).values() if f.is_current]


def _spoken(facts: Sequence[Fact], speaker: str) -> list[Fact]:
    return [f for f in facts if is_own(normalize_name(f.subject), speaker)]


def _from_messages(records: IngestRecords, user_id: str, subject_ids: Sequence[str | None],
                   messages: Sequence[str]) -> list[Fact]:
    subjects = [s for s in dict.fromkeys(subject_ids) if s is not None]
    if not subjects or not messages:
        return []
    return records.facts_from_messages(user_id, subjects, set(messages))


def replacement_kinds(replacements: Sequence[Fact], taken: Mapping[str, str | None],
                      kinds: Mapping[str, tuple[str, str, bool]], entity_objects: Collection[str],
                      ) -> dict[str, tuple[str, str, bool]]:
    """The entity types of each replacement: those of the proposal it replaces, else of the stored fact.

    ``entity_objects``: the ids of the stored facts replaced whose object is an entity.
    """
    replaced = {new: old for old, new in taken.items() if new}
    out: dict[str, tuple[str, str, bool]] = {}
    for f in replacements:
        old = replaced[f.id]
        out[f.id] = kinds.get(old) or ("person", "thing", old in entity_objects)
    return out
