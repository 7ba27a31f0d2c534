"""The PostgreSQL record store's schema: versioned migrations, the two roles, row-level security.

The tables are those of the SQLite store (:data:`zep_core.stores.schema.SCHEMA` and the
lexical index, :data:`zep_core.stores.fts.SCHEMA`) in a schema of their own, ``zep``, with
PostgreSQL's types: times as the same fixed-width ISO text (string order is time order, and
the rows compare as the SQLite store's do), vectors as pgvector's ``vector``, a fact's
``rowid`` an identity column (the lexical index's ``doc``).

**Who reads what.** Our queries never run as the user of the URL (who owns the tables, and
as a superuser would pass every policy). Each transaction first takes one of two roles
that own nothing and hold only row privileges (:data:`TENANT_ROLE`, :data:`STORE_ROLE`),
with ``SET LOCAL`` semantics (``set_config(..., true)``: gone at commit):

- ``zep_tenant``, with ``zep.tenant`` set to the one :class:`~zep_core.tenant.Tenant` the
  call was given. Every table holding a tenant's rows has row-level security, forced, and
  a policy for this role that admits only rows whose ``user_id`` is ``zep.tenant``, for
  reading and for writing: with no tenant set, no row; under one tenant, a statement that
  forgets its ``user_id = …`` still reads only that tenant's rows, and a row written for
  another tenant is refused by the server.
- ``zep_store``, for the work over the whole store that takes no tenant: draining the
  outbox, maintenance, the counts of ``stats()``, and reading *which* user holds an id (how
  an id from outside is checked before use).

**Migrations.** :data:`MIGRATIONS` lists each version's statements; ``schema_migrations``
records the versions applied. Opening applies the missing ones in order, one transaction
each, under an advisory lock (two processes opening a new database at once apply them
once); a database of a newer version than this code knows is refused.
"""

from __future__ import annotations

__all__ = ["CURRENT", "MIGRATIONS", "SCHEMA_NAME", "SCHEMA_VERSION", "STORE_ROLE", "TENANT_ROLE", "TENANT_TABLES"]

#: What makes a fact current (the predicate of the partial indexes ``facts_current``, ``facts_rule_keys``…).
CURRENT = "valid_until IS NULL AND superseded_by IS NULL"
#: The PostgreSQL schema holding the tables (the database may hold other applications' tables).
SCHEMA_NAME = "zep"
#: The role a tenant's statements run as; ``zep.tenant`` names the tenant.
TENANT_ROLE = "zep_tenant"
#: The role the store-wide work runs as (no tenant: maintenance, the outbox, id ownership).
STORE_ROLE = "zep_store"
#: Advisory lock key of the migrations (any constant: two openers of one database serialize on it).
MIGRATION_LOCK = 0x7A65_706D  # "zepm"

#: The tables with a ``user_id`` of version 1 (what its migration secured: never changes).
_V1_TENANT_TABLES = ("episodes", "messages", "facts", "entities", "aliases", "outbox", "outbox_quarantine",
                     "session_messages", "vector_tiers", "lexical_docs", "lexical_postings", "lexical_stats")
#: Every table with a ``user_id``: each has row-level security (forced) with the two policies.
TENANT_TABLES = (*_V1_TENANT_TABLES, "ann_vectors")

_TABLES = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE episodes (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL, session_id TEXT NOT NULL,
    summary TEXT, created_at TEXT NOT NULL, status TEXT NOT NULL, error TEXT,
    usage TEXT, attempts INTEGER NOT NULL DEFAULT 0,
    rowid BIGINT GENERATED ALWAYS AS IDENTITY);
CREATE INDEX episodes_key ON episodes(user_id, id);
CREATE INDEX episodes_session ON episodes(user_id, session_id);
CREATE INDEX episodes_status ON episodes(status);
CREATE TABLE messages (
    episode_id TEXT NOT NULL, seq INTEGER NOT NULL, user_id TEXT NOT NULL,
    message_id TEXT NOT NULL, role TEXT NOT NULL, name TEXT, content TEXT NOT NULL,
    timestamp TEXT, PRIMARY KEY (episode_id, seq));
CREATE INDEX messages_key ON messages(user_id, episode_id, seq);
CREATE TABLE facts (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL, episode_id TEXT,
    subject TEXT NOT NULL, predicate TEXT NOT NULL, object TEXT NOT NULL,
    content TEXT NOT NULL, confidence DOUBLE PRECISION NOT NULL,
    valid_from TEXT NOT NULL, valid_until TEXT, superseded_by TEXT,
    created_at TEXT, expired_at TEXT, source_message_ids TEXT NOT NULL,
    subject_id TEXT NOT NULL, object_id TEXT, embedding vector NOT NULL,
    object_key TEXT, rowid BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    CHECK (valid_until IS NULL OR valid_from <= valid_until),
    CHECK (confidence >= 0 AND confidence <= 1));
CREATE INDEX facts_key ON facts(user_id, id);
CREATE INDEX facts_subject ON facts(user_id, subject_id, valid_until);
CREATE INDEX facts_object ON facts(user_id, object_id, valid_until);
CREATE INDEX facts_predicate ON facts(user_id, predicate);
CREATE INDEX facts_rule_keys ON facts(user_id, subject_id, lower(predicate), object_key)
    WHERE valid_until IS NULL AND superseded_by IS NULL;
CREATE INDEX facts_out ON facts(user_id, subject_id, object_id)
    WHERE valid_until IS NULL AND superseded_by IS NULL AND object_id IS NOT NULL;
CREATE INDEX facts_in ON facts(user_id, object_id, subject_id)
    WHERE valid_until IS NULL AND superseded_by IS NULL AND object_id IS NOT NULL;
CREATE INDEX facts_current ON facts(user_id, id) WHERE valid_until IS NULL AND superseded_by IS NULL;
CREATE TABLE vector_tiers (user_id TEXT PRIMARY KEY, state TEXT NOT NULL);
CREATE TABLE entities (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL, name TEXT NOT NULL,
    entity_type TEXT NOT NULL, summary TEXT NOT NULL DEFAULT '',
    fact_count INTEGER NOT NULL DEFAULT 0, last_updated TEXT, changed_at TEXT,
    embedding vector NOT NULL, rowid BIGINT GENERATED ALWAYS AS IDENTITY);
CREATE INDEX entities_key ON entities(user_id, id);
CREATE INDEX entities_user ON entities(user_id, entity_type);
CREATE INDEX entities_changed ON entities(changed_at);
CREATE TABLE aliases (
    user_id TEXT NOT NULL, alias TEXT NOT NULL, entity_id TEXT NOT NULL,
    PRIMARY KEY (user_id, alias));
CREATE INDEX aliases_key ON aliases(user_id, entity_id);
CREATE TABLE outbox (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, op TEXT NOT NULL, user_id TEXT NOT NULL,
    ref_id TEXT, payload TEXT);
CREATE INDEX outbox_user ON outbox(user_id, seq);
CREATE TABLE outbox_quarantine (
    op TEXT NOT NULL, user_id TEXT NOT NULL, ref_id TEXT NOT NULL, payload TEXT, error TEXT NOT NULL,
    seq BIGINT, quarantined_at TEXT NOT NULL DEFAULT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    rowid BIGINT GENERATED ALWAYS AS IDENTITY, PRIMARY KEY (op, ref_id));
CREATE INDEX outbox_quarantine_user ON outbox_quarantine(user_id);
CREATE TABLE session_messages (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, user_id TEXT NOT NULL,
    session_id TEXT NOT NULL, role TEXT NOT NULL, name TEXT, content TEXT NOT NULL,
    message_id TEXT, timestamp TEXT, episode_id TEXT, extra TEXT);
CREATE INDEX session_messages_session ON session_messages(user_id, session_id, seq);
CREATE INDEX session_messages_waiting ON session_messages(user_id, session_id, seq) WHERE episode_id IS NULL;
CREATE TABLE lexical_docs (
    user_id TEXT NOT NULL, doc BIGINT NOT NULL, length INTEGER NOT NULL, live INTEGER NOT NULL,
    valid_from TEXT, valid_until TEXT, terms TEXT NOT NULL,
    PRIMARY KEY (user_id, doc));
CREATE TABLE lexical_postings (
    user_id TEXT NOT NULL, term TEXT NOT NULL, live INTEGER NOT NULL, doc BIGINT NOT NULL,
    tf_text INTEGER NOT NULL, tf_context INTEGER NOT NULL, length INTEGER NOT NULL,
    PRIMARY KEY (user_id, term, live, doc));
CREATE TABLE lexical_stats (user_id TEXT PRIMARY KEY, docs INTEGER NOT NULL, tokens INTEGER NOT NULL);
"""


def _roles() -> str:
    """Make the two roles if the cluster has none yet, and let the migrating user take them."""
    return "\n".join(f"""
DO $$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') THEN
        BEGIN
            CREATE ROLE {role} NOLOGIN NOINHERIT;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;  -- made meanwhile by the migration of another database of this cluster
        END;
    END IF;
    EXECUTE format('GRANT {role} TO %I', current_user);
END $$;""" for role in (TENANT_ROLE, STORE_ROLE))


def _security(tables: tuple[str, ...] = _V1_TENANT_TABLES, *, first: bool = True) -> str:
    """Row privileges for the two roles, and row-level security (forced) on ``tables``.

    ``first``: the schema's first tables (every table, the schema and its sequences granted);
    else only ``tables`` are granted (a later migration's new tables).
    """
    roles = f"{TENANT_ROLE}, {STORE_ROLE}"
    if first:
        out = [f"GRANT USAGE ON SCHEMA {SCHEMA_NAME} TO {roles};",
               f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {SCHEMA_NAME} TO {roles};",
               f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA {SCHEMA_NAME} TO {roles};",
               f"REVOKE ALL ON meta FROM {TENANT_ROLE};",  # the store's own settings: store-wide work only
               f"GRANT SELECT ON meta TO {TENANT_ROLE};"]
    else:
        out = [f"GRANT SELECT, INSERT, UPDATE, DELETE ON {', '.join(tables)} TO {roles};"]
    tenant = "user_id = current_setting('zep.tenant', true)"
    for table in tables:
        out += [f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;",
                f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY;",
                f"CREATE POLICY {table}_tenant ON {table} TO {TENANT_ROLE} USING ({tenant}) WITH CHECK ({tenant});",
                f"CREATE POLICY {table}_store ON {table} TO {STORE_ROLE} USING (true) WITH CHECK (true);"]
    return "\n".join(out)


#: ``(version, what it does, statements)``, applied in order; never edit one that shipped, add the next.
MIGRATIONS: tuple[tuple[int, str, str], ...] = (
    (1, "the tables, their keys led by user_id, the roles and row-level security",
     "CREATE EXTENSION IF NOT EXISTS vector;\n" + _roles() + _TABLES + _security()),
    (2, "ann_vectors: the current vectors of the tenants with an HNSW index; the roles may read the versions",
     "CREATE TABLE ann_vectors (user_id TEXT NOT NULL, id TEXT NOT NULL, embedding vector NOT NULL, "
     "dims INTEGER GENERATED ALWAYS AS (vector_dims(embedding)) STORED, PRIMARY KEY (user_id, id));\n"
     + _security(("ann_vectors",), first=False)
     + f"\nGRANT SELECT ON schema_migrations TO {TENANT_ROLE}, {STORE_ROLE};"),
    (3, "facts.attribute: what a claim is about, and the index of a subject's current one-value claims",
     "ALTER TABLE facts ADD COLUMN attribute TEXT;\n"
     "CREATE INDEX facts_attribute ON facts(user_id, subject_id, attribute) "
     f"WHERE attribute IS NOT NULL AND {CURRENT};"),
)

SCHEMA_VERSION = MIGRATIONS[-1][0]
