"""`stats`, `doctor` and `rebuild` through the real CLI on each backend: each says what is true of the stores it has."""

from __future__ import annotations

import json
import shlex
import sqlite3

import pytest
from zep_core import Memory, MemoryConfig
from zep_core.demo import SESSION_1, SESSION_2

from tests.backends import BACKENDS

#: What only a data folder has: a memory on PostgreSQL must not claim any of it.
FOLDER_WORDS = ("SQLite", "Chroma", "Kùzu")


@pytest.fixture(params=BACKENDS)
def stored(request, tmp_path, embedder):
    """The README demo's memory (Alice moves from Paris to Berlin) on the backend; the options that name it."""
    data = tmp_path / "data"
    options, settings = ["--data", str(data)], {}
    if request.param == "postgres":
        pytest.importorskip("psycopg", reason="PostgreSQL tests need the test extra: pip install -e '.[test]'")
        settings["database_url"] = request.getfixturevalue("pg_url")
        options += ["--database-url", settings["database_url"]]
    with Memory(MemoryConfig(data_dir=data, embedder=embedder, **settings)) as memory:
        memory.conversation_end("session-1", SESSION_1, user_id="alice")
        memory.conversation_end("session-2", SESSION_2, user_id="alice")
    return request.param, options, settings.get("database_url")


def lose_the_lexical_index(backend: str, options: list[str], url: str | None) -> None:
    """Empty the lexical index behind the memory's back (as the tables' owner), as a damaged store would."""
    if backend == "postgres":
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("DELETE FROM zep.lexical_docs")
        return
    with sqlite3.connect(f"{options[1]}/zep.db") as db:
        db.execute("DELETE FROM lexical_docs")
    db.close()


def test_stats_names_the_stores_the_memory_has_and_their_size(cli, stored):
    backend, options, url = stored
    text = cli("stats", *options)
    report = json.loads(cli("stats", *options, "--json").out)
    assert text.code == 0 and report["backend"] == backend
    assert report["records"]["episodes"] == 2 and report["users"] == 1
    first, *_ = text.out.splitlines()
    if backend == "sqlite":
        assert first.startswith(f"data folder   {options[1]} (") and "SQLite" in first and "Kùzu" in first
        assert "\nSQLite        2 episodes" in text.out and "searched exactly in SQLite" in text.out
        assert set(report["disk_bytes"]) == {"sqlite", "chroma", "graph", "total"} and report["database"] is None
    else:
        assert first.startswith("database      postgresql://") and "zep_test_" in first
        assert "\nPostgreSQL    2 episodes" in text.out
        assert "searched exactly in PostgreSQL" in text.out and "past postgres_exact_below" in text.out
        assert "\ngraph         " in text.out
        assert not [word for word in FOLDER_WORDS if word in text.out], text.out
        disk = report["disk_bytes"]
        assert set(disk) == {"postgres", "total"} and disk["postgres"] == disk["total"] > 100_000  # tables, indexes
        assert report["database"].startswith("postgresql://") and report["database"] in first


def test_doctor_says_what_agrees_on_each_backend(cli, stored):
    backend, options, _ = stored
    doctor = cli("doctor", *options)
    assert doctor.code == 0
    if backend == "sqlite":
        assert doctor.out == "ok: SQLite, Chroma and Kùzu agree\n"
    else:
        assert doctor.out == "ok: PostgreSQL's records, HNSW copies and lexical index agree\n"


def test_doctor_finds_a_lost_lexical_index_and_the_repair_it_prints_repairs_it(cli, stored):
    backend, options, url = stored
    lose_the_lexical_index(backend, options, url)

    doctor = cli("doctor", *options)
    report = json.loads(cli("doctor", *options, "--json").out)

    assert doctor.code == 1 and "lexical missing:" in doctor.out
    repair = report["repair"]
    assert f"repair: {repair}   (" in doctor.out
    if backend == "postgres":
        assert "--database-url postgresql://" in repair and "rebuilds the lexical index" in doctor.out
        assert not [word for word in FOLDER_WORDS if word in doctor.out], doctor.out
    else:
        assert repair == f"zep-memory rebuild --data {options[1]}"
    rebuilt = cli(*shlex.split(repair)[1:])
    assert rebuilt.code == 0 and "rebuilt the " in rebuilt.out
    assert ("SQLite" in rebuilt.out) is (backend == "sqlite")
    assert cli("doctor", *options).code == 0
