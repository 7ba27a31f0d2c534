"""The record store's schema and row formats: tables, the stored time format, row ⇄ record.

SQLite is the system of record; this module says what its rows look like. Times are
stored as UTC ISO strings of fixed width (:func:`iso`), so string order is time order
and SQL can compare them; vectors as little-endian float32 blobs.
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

__all__ = ["FACT_COLUMNS", "SCHEMA", "SCHEMA_VERSION", "FactRow", "RankingRow", "StoredFact", "blob",
           "entity_from_row", "fact_from_row", "fact_row", "iso", "parse_time"]

#: Bumped whenever a table changes; a folder from a newer version is refused, an older
#: one is migrated on open. 2: the lexical index ``facts_fts`` (:mod:`zep_core.stores.fts`).
#: 3: each lexical row keeps its fact's validity (rebuilt from the facts on open); ``facts.object_key``.
#: 4: a canonical fact's lexical row has its message's words. 5: the lexical rows' ``state`` word
#: (``current``/``ended``), matched instead of reading ``live`` (rebuilt on open, as 2-4). 6: the
#: lexical index in three shared tables keyed by ``user_id`` (:data:`zep_core.stores.fts.SCHEMA`),
#: not an FTS5 table per user (dropped and rebuilt on open).
#: Tables that older versions simply never read (``outbox_quarantine``) and new values of
#: ``episodes.status`` (``failed``) need no bump: an older version opens the folder as before.
#: Nor do new indexes (``CREATE INDEX IF NOT EXISTS`` builds them on the first open; SQLite
#: keeps them up to date whichever version writes).
#:
#: ``facts.object_key`` is the object as the update rules compare it
#: (:func:`~zep_core.temporal.normalize_name`), so a statement said again with another case or
#: punctuation is found by key. Folders from before it get the column and its values on open.
#:
#: The partial indexes over *current* facts (``facts_rule_keys``, ``facts_sources``, ``facts_out``,
#: ``facts_in``) serve the two hot paths without reading a fact row (~2 kB with its vector):
#: the update rules' candidates (:meth:`RecordStore.rule_candidates`) and the hop to
#: neighbouring entities (:meth:`RecordStore.neighbours`). The queries name them with
#: ``INDEXED BY``: the planner otherwise walks every current fact of a speaker through
#: ``facts_subject`` (bench/findings.md has the cost at 100k facts).
#:
#: Every read of a tenant's rows seeks a key led by ``user_id`` (``*_key``: a record by its id
#: under its user; ``tests/stores/test_query_plans.py`` fails on a plan that does not): a
#: tenant's rows are one range of each index, and a read reaches no other tenant's. The
#: primary keys on ``id`` alone stay as the id namespace: an id from outside (a client's
#: episode id, an import file's) is checked against every tenant's before it is used.
#: ``messages_user`` and ``aliases_entity`` (``messages(user_id)``, ``aliases(entity_id)``)
#: gave way to ``messages_key`` and ``aliases_key`` (dropped on open).
#:
#: ``facts.attribute`` (what a claim is about, :mod:`zep_core.attributes`) needs no bump: an older
#: version neither reads nor writes it (its facts have none), and a folder from before it gets the
#: column on open; ``facts_attribute`` serves the update rules' read of a one-value attribute.
#:
#: ``facts_current`` (a user's current fact ids) and ``vector_tiers`` (the users whose vectors
#: have a Chroma collection, :mod:`zep_core.stores.tiered`) serve the exact search of small
#: users' vectors (new in version 6, whose folders an older version refuses).
SCHEMA_VERSION = 6

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS episodes (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL, session_id TEXT NOT NULL,
    summary TEXT, created_at TEXT NOT NULL, status TEXT NOT NULL, error TEXT,
    usage TEXT, attempts INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS episodes_session ON episodes(user_id, session_id);
CREATE INDEX IF NOT EXISTS episodes_status ON episodes(status);
CREATE INDEX IF NOT EXISTS episodes_key ON episodes(user_id, id);
CREATE TABLE IF NOT EXISTS messages (
    episode_id TEXT NOT NULL, seq INTEGER NOT NULL, user_id TEXT NOT NULL,
    message_id TEXT NOT NULL, role TEXT NOT NULL, name TEXT, content TEXT NOT NULL,
    timestamp TEXT, PRIMARY KEY (episode_id, seq));
CREATE INDEX IF NOT EXISTS messages_key ON messages(user_id, episode_id, seq);
CREATE TABLE IF NOT EXISTS facts (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL, episode_id TEXT,
    subject TEXT NOT NULL, predicate TEXT NOT NULL, object TEXT NOT NULL,
    content TEXT NOT NULL, confidence REAL NOT NULL,
    valid_from TEXT NOT NULL, valid_until TEXT, superseded_by TEXT,
    created_at TEXT, expired_at TEXT, source_message_ids TEXT NOT NULL,
    subject_id TEXT NOT NULL, object_id TEXT, embedding BLOB NOT NULL,
    object_key TEXT, attribute TEXT,
    CHECK (valid_until IS NULL OR valid_from <= valid_until),
    CHECK (confidence >= 0 AND confidence <= 1));
CREATE INDEX IF NOT EXISTS facts_key ON facts(user_id, id);
CREATE INDEX IF NOT EXISTS facts_subject ON facts(user_id, subject_id, valid_until);
CREATE INDEX IF NOT EXISTS facts_object ON facts(user_id, object_id, valid_until);
CREATE INDEX IF NOT EXISTS facts_predicate ON facts(user_id, predicate);
CREATE INDEX IF NOT EXISTS facts_rule_keys ON facts(user_id, subject_id, lower(predicate), object_key)
    WHERE valid_until IS NULL AND superseded_by IS NULL;
CREATE INDEX IF NOT EXISTS facts_sources ON facts(user_id, subject_id, source_message_ids)
    WHERE valid_until IS NULL AND superseded_by IS NULL;
CREATE INDEX IF NOT EXISTS facts_out ON facts(user_id, subject_id, object_id)
    WHERE valid_until IS NULL AND superseded_by IS NULL AND object_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS facts_in ON facts(user_id, object_id, subject_id)
    WHERE valid_until IS NULL AND superseded_by IS NULL AND object_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS facts_current ON facts(user_id, id)
    WHERE valid_until IS NULL AND superseded_by IS NULL;
CREATE INDEX IF NOT EXISTS facts_attribute ON facts(user_id, subject_id, attribute)
    WHERE attribute IS NOT NULL AND valid_until IS NULL AND superseded_by IS NULL;
CREATE TABLE IF NOT EXISTS vector_tiers (user_id TEXT PRIMARY KEY, state TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entities (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL, name TEXT NOT NULL,
    entity_type TEXT NOT NULL, summary TEXT NOT NULL DEFAULT '',
    fact_count INTEGER NOT NULL DEFAULT 0, last_updated TEXT, changed_at TEXT,
    embedding BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS entities_key ON entities(user_id, id);
CREATE INDEX IF NOT EXISTS entities_user ON entities(user_id, entity_type);
CREATE INDEX IF NOT EXISTS entities_changed ON entities(changed_at);
CREATE TABLE IF NOT EXISTS aliases (
    user_id TEXT NOT NULL, alias TEXT NOT NULL, entity_id TEXT NOT NULL,
    PRIMARY KEY (user_id, alias));
CREATE INDEX IF NOT EXISTS aliases_key ON aliases(user_id, entity_id);
CREATE TABLE IF NOT EXISTS outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, op TEXT NOT NULL, user_id TEXT NOT NULL,
    ref_id TEXT, payload TEXT);
CREATE TABLE IF NOT EXISTS outbox_quarantine (
    op TEXT NOT NULL, user_id TEXT NOT NULL, ref_id TEXT NOT NULL, payload TEXT, error TEXT NOT NULL,
    seq INTEGER, quarantined_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
    PRIMARY KEY (op, ref_id));
CREATE INDEX IF NOT EXISTS outbox_quarantine_user ON outbox_quarantine(user_id);
CREATE TABLE IF NOT EXISTS session_messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, user_id TEXT NOT NULL,
    session_id TEXT NOT NULL, role TEXT NOT NULL, name TEXT, content TEXT NOT NULL,
    message_id TEXT, timestamp TEXT, episode_id TEXT, extra TEXT);
CREATE INDEX IF NOT EXISTS session_messages_session
    ON session_messages(user_id, session_id, seq);
CREATE INDEX IF NOT EXISTS session_messages_waiting
    ON session_messages(user_id, session_id, seq) WHERE episode_id IS NULL;
"""

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


