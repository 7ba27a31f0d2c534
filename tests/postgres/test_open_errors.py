"""Opening a PostgreSQL memory: what a wrong URL, an unreachable server or a newer schema says, and that it says it."""

from __future__ import annotations

import pytest
from zep_core import ConfigError, MemoryConfig, StoreError
from zep_core.errors import StoreUnavailableError

pytest.importorskip("psycopg", reason="PostgreSQL tests need the test extra: pip install -e '.[test]'")


def test_a_database_url_is_a_string_never_shown_in_the_config():
    with pytest.raises(ConfigError, match="database_url must be a string"):
        MemoryConfig(database_url=5432)
    assert "secret" not in repr(MemoryConfig(database_url="postgresql://zep:secret@db/memory"))


def test_an_unreachable_server_says_what_to_check_and_hides_the_password():
    from zep_core.stores.postgres import PgRecordStore

    with pytest.raises(StoreUnavailableError, match="could not connect .* Check that the server runs") as err:
        PgRecordStore("postgresql://zep:secret@127.0.0.1:1/memory", connect_timeout_s=1)
    assert "secret" not in str(err.value) and "zep:***@127.0.0.1:1" in str(err.value)


def test_a_database_migrated_by_a_newer_release_is_refused_and_left_as_it_is(pg_url):
    import psycopg
    from zep_core.stores.postgres import PgRecordStore
    from zep_core.stores.postgres.schema import MIGRATIONS

    PgRecordStore(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("INSERT INTO zep.schema_migrations(version, description) VALUES (999, 'from the future')")
    with pytest.raises(StoreError, match="schema version 999, newer than this zep-memory's .* upgrade zep-memory"):
        PgRecordStore(pg_url)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM zep.schema_migrations").fetchone()[0] == len(MIGRATIONS) + 1


def test_a_database_of_an_older_version_is_migrated_on_open_and_keeps_its_rows(pg_url):
    import psycopg
    from zep_core.stores.postgres import PgRecordStore
    from zep_core.stores.postgres.connection import STORE
    from zep_core.stores.postgres.schema import MIGRATIONS
    from zep_core.tenant import Tenant

    with psycopg.connect(pg_url, autocommit=True) as conn:  # what release 1 made: its migration only
        with conn.transaction():
            conn.execute("CREATE SCHEMA zep")
            conn.execute("SET search_path = zep, public")
            conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, description TEXT NOT NULL, "
                         "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
            version, description, statements = MIGRATIONS[0]
            conn.execute(statements)
            conn.execute("INSERT INTO schema_migrations(version, description) VALUES (%s, %s)", [version, description])
            conn.execute("SET role zep_store")
            conn.execute("INSERT INTO vector_tiers VALUES ('ann', 'ready')")
    store = PgRecordStore(pg_url)
    try:
        assert store.schema_version() == MIGRATIONS[-1][0] > 1
        assert store.vector_tiers() == {Tenant.of("ann"): "ready"}
        assert store._rows(STORE, "SELECT count(*) FROM ann_vectors") == [(0,)]
    finally:
        store.close()


def test_two_opens_of_a_new_database_migrate_it_once(pg_url):
    import threading

    import psycopg
    from zep_core.stores.postgres import PgRecordStore
    from zep_core.stores.postgres.schema import MIGRATIONS

    stores, errors = [], []

    def open_one():
        try:
            stores.append(PgRecordStore(pg_url))
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for store in stores:
        store.close()
    assert errors == [] and len(stores) == 3
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute("SELECT version FROM zep.schema_migrations ORDER BY version").fetchall() == [
            (version,) for version, _, _ in MIGRATIONS]


@pytest.mark.parametrize("password", ["Qz55#word", "Qz?55&x=1", "Qz:b#c?d", "Qz3cr3t%23"])
def test_no_part_of_a_password_survives_in_what_is_shown_or_saved(pg_url, tmp_path, password):
    from zep_core import Memory
    from zep_core.stores.postgres import PgRecordStore
    from zep_core.stores.postgres.connection import public_url, url_without_password

    # libpq reads the user part up to the @, so these passwords need no escaping in a URL
    head = "postgresql://postgres:@"  # the test server's URL: no password (it trusts its socket's users)
    assert pg_url.startswith(head)
    url = pg_url.replace(head, f"postgresql://postgres:{password}@", 1)
    secret = "Qz"  # any piece of a password would do: what each of these begins with
    with Memory(MemoryConfig(data_dir=tmp_path / "scratch", database_url=url)) as memory:
        assert memory.has_user("nobody") is False
        shown = [public_url(url), url_without_password(url), repr(memory.config), str(memory.stats())]
    assert not [s for s in shown if secret in s or password in s], shown
    assert url_without_password(url) == pg_url.replace(head, "postgresql://postgres@")  # the rest kept as it was
    assert public_url(url) == pg_url.replace(head, "postgresql://postgres:***@", 1)
    with pytest.raises(StoreUnavailableError) as err:
        PgRecordStore(f"postgresql://zep:{password}@127.0.0.1:1/memory?password={password}", connect_timeout_s=1)
    assert secret not in str(err.value)
