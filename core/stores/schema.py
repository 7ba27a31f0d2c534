"""The SQLite record store's schema: its tables and indexes, and its version.

The rows every backend reads and writes (and their stored time format) are
:mod:`zep_core.stores.rows`'s, re-exported here for the modules that read them from here.
"""

from __future__ import annotations

from .rows import (
    FACT_COLUMNS,
    FactRow,
    RankingRow,
    StoredFact,
    blob,
    entity_from_row,
    fact_from_row,
    fact_row,
    iso,
    parse_time,
)

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
#: ``outbox_user`` (PostgreSQL's index of the same name) has a read find its own user's queued index
#: writes (:meth:`~zep_core.sync.IndexSync.catch_up`, before every ``get_context``) without scanning
#: everyone's: a backlog of other users' writes costs a read one index seek, not a scan.
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
CREATE INDEX IF NOT EXISTS outbox_user ON outbox(user_id, seq);
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
