"""`zep-memory serve` and the CLI on PostgreSQL: the real server process, its real client on 127.0.0.1.

The URL goes in by the environment (``ZEP_DATABASE_URL``), as an operator keeps a password out of
the process list; what the service stores is in the database, and a second server on the same
database (another process: no folder lock to share) reads it.
"""

from __future__ import annotations

import json

import pytest
from zep_core import Message
from zep_core.server import RemoteMemory

from tests.server.test_cli_serve import KEY, Serving

pytest.importorskip("psycopg", reason="PostgreSQL tests need the test extra: pip install -e '.[test]'")


def test_serve_keeps_the_memory_in_postgres_and_a_second_server_reads_it(pg_url, tmp_path):
    keys = json.dumps({"keys": [{"key": KEY, "users": ["alice", "bob"], "name": "test"}]})
    env = {"ZEP_MEMORY_API_KEYS": keys, "ZEP_DATABASE_URL": pg_url}
    first = Serving("--data", str(tmp_path / "one"), env=env)
    try:
        client = RemoteMemory(first.url, api_key=KEY)
        client.conversation_end("s1", [Message("I live in Lisbon and I like chess.", name="Alice")], user_id="alice")
        client.conversation_end("s1", [Message("I live in Oslo.", name="Bob")], user_id="bob")
        second = Serving("--data", str(tmp_path / "two"), env=env)  # the same database, another process
        try:
            other = RemoteMemory(second.url, api_key=KEY)
            assert [f.content for f in other.get_context("Where does Alice live?", user_id="alice")][:1] == [
                "Alice lives in Lisbon."]
            assert all("Oslo" not in f.content for f in other.get_context("Oslo", user_id="alice"))
        finally:
            assert second.stop() == 0
    finally:
        assert first.stop() == 0
    assert not (tmp_path / "one" / "zep.db").exists()  # nothing of the memory in the folder
    banner = "".join(first.err)
    assert "serving postgresql://" in banner and "zep_test_" in banner


def test_the_cli_reads_and_writes_the_database_named_by_the_option(pg_url, tmp_path, capsys):
    from zep_core.cli import main

    chats = tmp_path / "chats.jsonl"
    chats.write_text(json.dumps({"session_id": "s1", "messages": [
        {"role": "user", "name": "Kim", "content": "I moved to Berlin."}]}) + "\n", encoding="utf-8")
    common = ["--database-url", pg_url, "--data", str(tmp_path / "scratch"), "--user", "kim"]
    assert main(["ingest", str(chats), *common]) == 0
    capsys.readouterr()
    assert main(["context", "Where does Kim live?", *common]) == 0
    assert "Kim lives in Berlin." in capsys.readouterr().out
