"""Corrections: what a speaker takes back, found among the episode's facts and the stored ones.

The extractor says what a message corrects (:class:`~zep_core.providers.base.ExtractedCorrection`:
"I meant Victoria, not Vancouver"; rule 4 of :mod:`zep_core.providers.talk`) and, when it can,
which earlier message of the episode it corrects. This module finds the rest in the user's
stored facts — the latest statement of the speaker that mentions the wrong value, or the
name the correction is about ("Biscuit is actually a cat": the statement about Biscuit, and
in it the pet word that is not "cat") — and hands the update rules the facts to take back
and their replacements (:func:`zep_core.temporal.plan_corrections`).

Only facts of the same user and speaker are looked at, through the user's own lexical
index: a correction can never reach another user's facts.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime

from .models import Fact
from .providers.base import ExtractedCorrection
from .providers.talk import same_kind_values
from .stores.records import RecordStore
from .temporal import STATEMENT, Correction, is_own, normalize_name

__all__ = ["prepare", "replacement_kinds"]

#: Stored facts looked at per correction (the lexical index's best matches of the wrong value).
_CANDIDATES = 20


def prepare(records: RecordStore, user_id: str, found: Sequence[ExtractedCorrection], proposals: Sequence[Fact],
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


def _search(records: RecordStore, user_id: str, words: str) -> list[Fact]:
    if not words.strip():
        return []
    ids = list(records.lexical_search(user_id, words, limit=_CANDIDATES, context_weight=0.0))
    return [f for f in records.get_facts(user_id, ids).values() if f.is_current]


def _spoken(facts: Sequence[Fact], speaker: str) -> list[Fact]:
    return [f for f in facts if is_own(normalize_name(f.subject), speaker)]


def _from_messages(records: RecordStore, user_id: str, subject_ids: Sequence[str | None],
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
