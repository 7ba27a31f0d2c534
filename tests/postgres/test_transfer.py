"""Moving a user from a data folder to PostgreSQL and back: export, import, and the same answers."""

from __future__ import annotations

import io
from datetime import datetime, timedelta, timezone

import pytest
from zep_core import Message

pytest.importorskip("psycopg", reason="PostgreSQL tests need the test extra: pip install -e '.[test]'")

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
TALK = [("s1", ["I live in Lisbon.", "I work at Acme.", "My sister Ana lives in Rome."]),
        ("s2", ["I moved to Porto.", "I like chess."]),
        ("s3", ["I no longer work at Acme.", "I started at Globex."])]


def _fill(memory, user="kim"):
    for n, (session, lines) in enumerate(TALK):
        memory.conversation_end(session, [Message(t, name="Kim", timestamp=T0 + timedelta(days=30 * n, minutes=i))
                                          for i, t in enumerate(lines)], user_id=user)
    memory.add_messages("chat", [Message("hello", name="Kim", timestamp=T0)], user_id=user)


def _view(memory, user="kim"):
    facts = sorted((f.content, f.valid_from, f.valid_until, f.is_current) for f in memory.facts(user))
    asked = [[f.content for f in memory.get_context(q, user_id=user)]
             for q in ("Where does Kim live?", "Where does Kim work?", "Who is Ana?")]
    return facts, asked, [m.content for m in memory.get_messages("chat", user_id=user)]


def test_a_user_moves_from_a_folder_to_postgres_and_back_with_the_same_answers(make_memory, tmp_path, pg_server):
    from tests.pg import fresh_database

    folder = make_memory(tmp_path / "folder", database_url=None)
    _fill(folder)
    exported = io.StringIO()
    folder.export_user("kim", exported, embeddings=True)
    database = make_memory(tmp_path / "scratch", database_url=fresh_database(pg_server))
    report = database.import_user(io.StringIO(exported.getvalue()).readlines())
    assert report.facts == len(folder.facts("kim"))
    assert _view(database) == _view(folder)
    back = io.StringIO()
    database.export_user("kim", back, embeddings=True)
    again = make_memory(tmp_path / "again", database_url=None)
    again.import_user(io.StringIO(back.getvalue()).readlines())
    assert _view(again) == _view(folder)
    database.forget_user("kim")
    assert not database.has_user("kim") and database.users() == []
