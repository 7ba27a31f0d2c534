"""Opening a PostgreSQL memory: what a wrong URL, an unreachable server or a newer schema says, and that it says it."""

from __future__ import annotations

import pytest
from zep_core import ConfigError, MemoryConfig, StoreError
from zep_core.errors import StoreUnavailableError

pytest.importorskip("psycopg", reason="PostgreSQL tests need the test extra: pip install -e '.[test]'")


def test_a_url_that_is_not_postgres_is_refused_by_the_config():
    with pytest.raises(ConfigError, match="database_url must be a PostgreSQL URL"):
        MemoryConfig(database_url="mysql://root@localhost/memory")
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

    PgRecordStore(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("INSERT INTO zep.schema_migrations(version, description) VALUES (999, 'from the future')")
    with pytest.raises(StoreError, match="schema version 999, newer than this zep-memory's .* upgrade zep-memory"):
        PgRecordStore(pg_url)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM zep.schema_migrations").fetchone()[0] == 2


def test_two_opens_of_a_new_database_migrate_it_once(pg_url):
    import threading

    import psycopg
    from zep_core.stores.postgres import PgRecordStore

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
        assert conn.execute("SELECT version FROM zep.schema_migrations").fetchall() == [(1,)]
