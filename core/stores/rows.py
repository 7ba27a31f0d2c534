"""The record stores' rows, whatever the backend: a fact row and its columns, the stored time format, row ⇄ record.

Times are stored as UTC ISO strings of fixed width (:func:`iso`), so string order is time
order and SQL can compare them. A backend keeps vectors its own way (SQLite: float32 blobs,
:func:`blob`); every one gives them back as float32 arrays.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

import numpy as np

from ..models import Entity, Fact, to_utc, unchecked
from ..tenant import Tenant

__all__ = ["FACT_COLUMNS", "FactRow", "RankingRow", "StoredFact", "blob", "entity_from_row", "fact_from_row",
           "fact_row", "iso", "parse_time"]


class FactRow(NamedTuple):
    """A fact row as the tables hold it: the one place its columns and their order are written.

    Times are the stored ISO strings (:func:`iso`: string order is time order), the source
    message ids a JSON list.
    """

    id: str
    user_id: str
    episode_id: str | None
    subject: str
    predicate: str
    object: str
    content: str
    confidence: float
    valid_from: str
    valid_until: str | None
    superseded_by: str | None
    created_at: str | None
    expired_at: str | None
    source_message_ids: str
    subject_id: str
    object_id: str | None
    attribute: str | None

    @property
    def current(self) -> bool:
        """Whether the fact holds now (no end, nothing superseded it)."""
        return self.valid_until is None and self.superseded_by is None

    def holds(self, as_of: str | None) -> bool:
        """Current (``as_of`` None), or valid at the stored time ``as_of``, compared as stored strings."""
        if as_of is None:
            return self.current
        return self.valid_from <= as_of and (self.valid_until is None or as_of < self.valid_until)


class RankingRow(NamedTuple):
    """A fact row with its vector (a float32 array, read-only over a stored blob): what ranking reads."""

    fact: FactRow
    vector: np.ndarray


#: The fact columns in :class:`FactRow`'s order, for ``SELECT``.
FACT_COLUMNS = ", ".join(FactRow._fields)


def iso(value: datetime | None) -> str | None:
    """Serialize a UTC datetime so that string order is time order."""
    if value is None:
        return None
    v = to_utc(value)
    return (f"{v.year:04d}-{v.month:02d}-{v.day:02d}T{v.hour:02d}:{v.minute:02d}:{v.second:02d}"
            f".{v.microsecond:06d}+00:00")


def parse_time(value: str | None) -> datetime | None:
    """Read a stored time back."""
    return None if value is None else datetime.fromisoformat(value)


def blob(vector: np.ndarray) -> bytes:
    """A vector as the float32 blob the tables keep."""
    return np.asarray(vector, dtype=np.float32).tobytes()


@dataclass(frozen=True)
class StoredFact:
    """A fact with what the stores need beside it: entity ids and its vector."""

    fact: Fact
    subject_id: str
    object_id: str | None
    embedding: np.ndarray


def fact_row(row: Sequence[Any]) -> FactRow:
    """The :class:`FactRow` at the start of a row read with :data:`FACT_COLUMNS` first."""
    return row if type(row) is FactRow else FactRow._make(row[:_FACT_WIDTH])


_FACT_WIDTH = len(FactRow._fields)


def fact_from_row(row: Sequence[Any], **scores: Any) -> Fact:
    """A Fact from a row of :data:`FACT_COLUMNS` (and retrieval ``scores``), not checked again.

    Every stored fact was checked when it was written, so the row is trusted
    (:func:`~zep_core.models.unchecked`): reading back costs no validation.
    """
    r = fact_row(row)
    return unchecked(
        Fact, id=r.id, user_id=Tenant.stored(r.user_id), episode_id=r.episode_id, subject=r.subject,
        predicate=r.predicate, object=r.object, content=r.content, confidence=float(r.confidence),
        valid_from=parse_time(r.valid_from), valid_until=parse_time(r.valid_until), superseded_by=r.superseded_by,
        created_at=parse_time(r.created_at), expired_at=parse_time(r.expired_at), attribute=r.attribute,
        source_message_ids=tuple(json.loads(r.source_message_ids)), **scores)


def entity_from_row(row: Sequence[Any], aliases: Sequence[str] = ()) -> Entity:
    """An Entity from ``id, user_id, name, entity_type, summary, fact_count, last_updated``."""
    return Entity(id=row[0], user_id=Tenant.stored(row[1]), name=row[2], entity_type=row[3], summary=row[4],
                  fact_count=row[5], last_updated=parse_time(row[6]), aliases=tuple(aliases))


