"""The outbox's ops: what a committed write asks the vector and graph indexes to do.

A write names the index writes its records imply as typed :class:`OutboxOp` values;
:class:`~zep_core.sync.IndexSync` commits them with the records, as rows of the outbox
table, and applies them (:mod:`~zep_core.indexing`). Applying reads the target state of
each fact and entity from the record store, so an op only names what to bring in line and, for a
fact, what happened to it (:class:`FactChange`): work that cannot be needed is skipped.
A row this version cannot read back is set aside as it was stored (:func:`parse_rows`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .tenant import Tenant

__all__ = ["FactChange", "LeftOut", "OpKind", "OutboxOp", "Quarantined", "Row", "describe", "parse_rows"]


class OpKind(str, enum.Enum):
    """What an outbox row asks the indexes to do."""

    ENTITY = "entity"            # index an entity (its graph node)
    FACT = "fact"                # bring one fact's vector and edge in line with the record store
    FORGET_USER = "forget_user"  # drop everything of a user


class FactChange(str, enum.Enum):
    """What happened to a fact, so that applying it can skip work that cannot be needed."""

    ADD = "add"        # new
    TOUCH = "touch"    # reinforced: same vector, only the edge may change
    RETIRE = "retire"  # superseded: its vector leaves the current facts' collection
    SYNC = "sync"      # unknown (import, old rows): do everything


@dataclass(frozen=True)
class OutboxOp:
    """One pending index write."""

    kind: OpKind
    user_id: str
    ref_id: str | None = None
    change: FactChange | None = None

    def __post_init__(self) -> None:  # the user of a record written (or of a queued row): checked when written
        object.__setattr__(self, "user_id", Tenant.stored(self.user_id))

    @classmethod
    def entity(cls, user_id: str, entity_id: str) -> OutboxOp:
        """Index a new entity."""
        return cls(OpKind.ENTITY, user_id, entity_id)

    @classmethod
    def fact(cls, user_id: str, fact_id: str, change: FactChange = FactChange.SYNC) -> OutboxOp:
        """Bring one fact's vector and edge in line with its row."""
        return cls(OpKind.FACT, user_id, fact_id, change)

    @classmethod
    def forget_user(cls, user_id: str) -> OutboxOp:
        """Drop every vector and node of a user."""
        return cls(OpKind.FORGET_USER, user_id)

    def to_row(self) -> tuple[str, str, str | None, dict | None]:
        """The ``(op, user_id, ref_id, payload)`` the record store keeps."""
        return self.kind.value, self.user_id, self.ref_id, {"change": self.change.value} if self.change else None

    @classmethod
    def from_row(cls, op: str, user_id: str, ref_id: str | None, payload: Mapping[str, Any] | None) -> OutboxOp:
        """Read a stored row back (rows without a change, from older versions, are ``SYNC``)."""
        kind = OpKind(op)
        change = FactChange((payload or {}).get("change", FactChange.SYNC.value)) if kind is OpKind.FACT else None
        return cls(kind, user_id, ref_id, change)


Row = tuple[int | None, OutboxOp]        # (outbox seq, or None in a rebuild; the op)
LeftOut = tuple[Row, str]                # a row that could not be applied, and why
Quarantined = tuple[int | None, str, str, str, dict[str, Any] | None, str]  # seq, op, user, ref, payload, why


def describe(exc: BaseException) -> str:
    """An error on one line, at most 500 characters: how a failure is named in a log line or a quarantine reason."""
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:500]


def parse_rows(rows: Sequence[tuple[int, str, str, str | None, dict | None]],
               ) -> tuple[list[Row], list[Quarantined]]:
    """Outbox rows as ops; a row this version cannot read is set aside at once, as it was stored."""
    parsed: list[Row] = []
    unreadable: list[Quarantined] = []
    for seq, op, user, ref, payload in rows:
        try:
            parsed.append((seq, OutboxOp.from_row(op, user, ref, payload)))
        except (ValueError, TypeError, AttributeError) as exc:
            unreadable.append((seq, str(op), str(user), ref or f"outbox row {seq}", payload,
                               f"this version of zep-memory cannot read the index write ({describe(exc)})"))
    return parsed, unreadable
