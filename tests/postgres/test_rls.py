"""Row-level security on PostgreSQL, checked around our query code, not through it.

The store's tables are filled through the store (two tenants, every tenant table), then
plain SQL on a connection of the test's own takes the tenant role as our code does and asks
for everything: only the tenant's rows come back, none with no tenant set, and a row written
for another tenant is refused by the server. The store-wide role is the only one that sees
every tenant, and neither role owns a table (so no owner's bypass applies to our statements).
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from zep_core.errors import StoreError
from zep_core.models import Episode, Message
from zep_core.stores.postgres import TENANT_TABLES, PgRecordStore
from zep_core.stores.postgres.connection import STORE
from zep_core.stores.postgres.schema import SCHEMA_NAME, STORE_ROLE, TENANT_ROLE
from zep_core.tenant import Tenant

psycopg = pytest.importorskip("psycopg", reason="PostgreSQL tests need the test extra: pip install -e '.[test]'")

T0 = datetime(2024, 5, 1, tzinfo=timezone.utc)
ANN, BOB = Tenant.of("ann"), Tenant.of("bob")


def _fill_every_table(url: str) -> None:
    """Give each tenant at least one row in every tenant table, through the store, then raw where it has no verb yet."""
    store = PgRecordStore(url)
    try:
        for user in (ANN, BOB):
            episode = Episode(id=f"{user}-e1", user_id=user, session_id="s", created_at=T0, status="pending",
                              messages=(Message("I live in Paris.", name=user.capitalize(), id="m1", timestamp=T0),))
            with store.transaction():
                store.insert_episode(episode, ["m1"])
            store.add_session_messages(user, "s", [Message("hello", id="t1", timestamp=T0)])
    finally:
        store.close()
    vector = "[" + ",".join(["0.5"] * 4) + "]"
    with psycopg.connect(url, autocommit=True, options=f"-c search_path={SCHEMA_NAME},public") as conn:
        for user in (ANN, BOB):  # as the store-wide role: the tables without a store verb in this test
            with conn.transaction():
                conn.execute("SELECT set_config('role', %s, true)", [STORE_ROLE])
                conn.execute("INSERT INTO facts(id, user_id, subject, predicate, object, content, confidence, "
                             "valid_from, source_message_ids, subject_id, embedding) VALUES "
                             "(%s, %s, 'S', 'p', 'O', 'S p O', 1, '2024', '[]', 's', %s::vector)",
                             [f"{user}-f1", user, vector])
                conn.execute("INSERT INTO entities(id, user_id, name, entity_type, embedding) "
                             "VALUES (%s, %s, 'S', 'person', %s::vector)", [f"{user}-n1", user, vector])
                conn.execute("INSERT INTO aliases VALUES (%s, 's', %s)", [user, f"{user}-n1"])
                conn.execute("INSERT INTO outbox(op, user_id, ref_id) VALUES ('upsert_fact', %s, %s)",
                             [user, f"{user}-f1"])
                conn.execute("INSERT INTO outbox_quarantine(op, user_id, ref_id, error) VALUES ('x', %s, %s, 'e')",
                             [user, f"{user}-f1"])
                conn.execute("INSERT INTO vector_tiers VALUES (%s, 'large')", [user])
                conn.execute("INSERT INTO ann_vectors(user_id, id, embedding) VALUES (%s, %s, %s::vector)",
                             [user, f"{user}-f1", vector])
                conn.execute("INSERT INTO lexical_docs VALUES (%s, 1, 3, 1, NULL, NULL, 'paris')", [user])
                conn.execute("INSERT INTO lexical_postings VALUES (%s, 'paris', 1, 1, 1, 0, 3)", [user])
                conn.execute("INSERT INTO lexical_stats VALUES (%s, 1, 3)", [user])


def _as(conn, role: str, tenant: str | None):
    conn.execute("SELECT set_config('role', %s, true)", [role])
    if tenant is not None:
        conn.execute("SELECT set_config('zep.tenant', %s, true)", [tenant])


def test_a_tenant_reads_only_its_own_rows_of_every_table_and_none_without_a_tenant(pg_url):
    _fill_every_table(pg_url)
    with psycopg.connect(pg_url, autocommit=True, options=f"-c search_path={SCHEMA_NAME},public") as conn:
        for table in TENANT_TABLES:
            with conn.transaction():
                _as(conn, STORE_ROLE, None)
                assert {r[0] for r in conn.execute(f"SELECT user_id FROM {table}")} == {"ann", "bob"}, table
            with conn.transaction():
                _as(conn, TENANT_ROLE, "ann")
                # no WHERE at all: the policy alone decides
                assert {r[0] for r in conn.execute(f"SELECT user_id FROM {table}")} == {"ann"}, table
                assert conn.execute(f"SELECT count(*) FROM {table} WHERE user_id = 'bob'").fetchone()[0] == 0
                # updating or deleting another tenant's rows touches none
                assert conn.execute(f"UPDATE {table} SET user_id = user_id WHERE user_id = 'bob'").rowcount == 0
                assert conn.execute(f"DELETE FROM {table} WHERE user_id = 'bob'").rowcount == 0
            with conn.transaction():
                _as(conn, TENANT_ROLE, None)  # the role without a tenant: nothing
                assert conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0, table
            with conn.transaction():
                _as(conn, TENANT_ROLE, "")
                assert conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0, table
        # the tenant's setting is local to its transaction: the next one starts with none
        with conn.transaction():
            _as(conn, TENANT_ROLE, "ann")
        with conn.transaction():
            _as(conn, TENANT_ROLE, None)
            assert conn.execute("SELECT count(*) FROM episodes").fetchone()[0] == 0
        # every row of bob is still there
        with conn.transaction():
            _as(conn, STORE_ROLE, None)
            assert conn.execute("SELECT count(*) FROM episodes WHERE user_id = 'bob'").fetchone()[0] == 1


def test_a_row_for_another_tenant_is_refused_by_the_server(pg_url):
    _fill_every_table(pg_url)
    with psycopg.connect(pg_url, autocommit=True, options=f"-c search_path={SCHEMA_NAME},public") as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            with conn.transaction():
                _as(conn, TENANT_ROLE, "ann")
                conn.execute("INSERT INTO session_messages(user_id, session_id, role, content) "
                             "VALUES ('bob', 's', 'user', 'planted')")
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            with conn.transaction():
                _as(conn, TENANT_ROLE, "ann")
                conn.execute("UPDATE episodes SET user_id = 'bob' WHERE user_id = 'ann'")  # moving a row out
        with conn.transaction():
            _as(conn, TENANT_ROLE, "ann")  # the store's own settings are not the tenant's to change
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("UPDATE meta SET value = value")


def test_neither_role_owns_a_table_or_bypasses_row_security(pg_url):
    PgRecordStore(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        owners = {r[0] for r in conn.execute("SELECT DISTINCT tableowner FROM pg_tables WHERE schemaname = %s",
                                             [SCHEMA_NAME])}
        assert owners and not owners & {TENANT_ROLE, STORE_ROLE}
        roles = conn.execute("SELECT rolname, rolsuper, rolbypassrls, rolcanlogin FROM pg_roles "
                             "WHERE rolname IN (%s, %s) ORDER BY rolname", [STORE_ROLE, TENANT_ROLE]).fetchall()
        assert roles == [(STORE_ROLE, False, False, False), (TENANT_ROLE, False, False, False)]
        forced = dict(conn.execute("SELECT relname, relforcerowsecurity AND relrowsecurity FROM pg_class c JOIN "
                                   "pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND relkind = 'r'",
                                   [SCHEMA_NAME]).fetchall())
        assert all(forced[t] for t in TENANT_TABLES)
        # every table with a user_id column is a tenant table (a new table cannot be left out)
        with_user = {r[0] for r in conn.execute("SELECT table_name FROM information_schema.columns "
                                                "WHERE table_schema = %s AND column_name = 'user_id'", [SCHEMA_NAME])}
        assert with_user == set(TENANT_TABLES)


def test_the_store_scopes_each_statement_to_the_tenant_it_was_given(pg_url):
    _fill_every_table(pg_url)
    store = PgRecordStore(pg_url)
    try:
        # read as the store does, with a statement that forgets its user_id: the policy still filters
        assert store._rows(ANN, "SELECT DISTINCT user_id FROM episodes") == [("ann",)]
        assert store._rows(BOB, "SELECT DISTINCT user_id FROM session_messages") == [("bob",)]
        with pytest.raises(TypeError, match="Tenant"):
            store._rows("ann", "SELECT 1")  # a plain string is no scope
        with pytest.raises(StoreError, match="row-level security"):
            with store.transaction():
                store._exec(ANN, "INSERT INTO session_messages(user_id, session_id, role, content) "
                                 "VALUES ('bob', 's', 'user', 'planted')")
        assert [m.content for _, m in store.session_messages(BOB, "s")] == ["hello"]
    finally:
        store.close()


def test_inside_a_write_each_statement_still_runs_as_its_own_tenant(pg_url):
    """A write sets a tenant once for its statements of that tenant; a change of tenant, or a
    savepoint rolled back (which undoes the tenant it set), makes the next statement set its own."""
    _fill_every_table(pg_url)
    store = PgRecordStore(pg_url)
    mine = "SELECT DISTINCT user_id FROM episodes"  # no user_id in the statement: only the policy filters
    try:
        with store.transaction():
            assert store._rows(ANN, mine) == [("ann",)] == store._rows(ANN, mine)
            assert store._rows(BOB, mine) == [("bob",)]
            assert store._rows(ANN, mine) == [("ann",)]
            with pytest.raises(StoreError):
                with store.transaction():  # a savepoint: Bob's tenant set in it, then rolled back to Ann's
                    assert store._rows(BOB, mine) == [("bob",)]
                    store._exec(BOB, "SELECT 1/0")
            assert store._rows(BOB, mine) == [("bob",)]  # set again, not assumed
            with store.transaction():
                assert store._rows(ANN, mine) == [("ann",)]
            assert store._rows(ANN, mine) == [("ann",)] and store._rows(BOB, mine) == [("bob",)]
            assert store._rows(STORE, "SELECT count(DISTINCT user_id) FROM episodes") == [(2,)]
        assert store._rows(BOB, mine) == [("bob",)]
    finally:
        store.close()


def test_a_lost_connection_fails_the_call_it_cut_and_the_next_call_connects_again(pg_url):
    from zep_core.errors import StoreUnavailableError

    store = PgRecordStore(pg_url)
    try:
        store.add_session_messages(ANN, "s", [Message("before", id="m0", timestamp=T0)])
        pid = store._rows(ANN, "SELECT pg_backend_pid()")[0][0]
        with psycopg.connect(pg_url, autocommit=True) as admin:  # as a restarted server or a dropped link would
            admin.execute("SELECT pg_terminate_backend(%s)", [pid])
        with pytest.raises(StoreUnavailableError, match="retry once the server answers"):
            store.session_messages(ANN, "s")
        store.add_session_messages(ANN, "s", [Message("after", id="m1", timestamp=T0)])  # a new connection
        assert [m.content for _, m in store.session_messages(ANN, "s")] == ["before", "after"]
        assert store._rows(ANN, "SELECT pg_backend_pid()")[0][0] != pid
        assert store._rows(BOB, "SELECT count(*) FROM session_messages")[0][0] == 0  # scoped as before
    finally:
        store.close()
