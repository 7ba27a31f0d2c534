"""A memory that recovers: bad index writes are quarantined, lost indexes are noticed, retries are bounded.

Every test damages a real data folder the way the issue saw it happen (a bad import, a
deleted ``chroma/``, a data folder copied without its indexes, an extractor that never
succeeds, a read-only folder) and checks what a user sees when it is opened again.
"""

from __future__ import annotations

import json
import logging
import os
import re
import select
import shutil
import signal
import sqlite3
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from zep_core import ConfigError, Memory, MemoryConfig, Message, StoreError
from zep_core.stores.vectors import ChromaVectorIndex, collection_name

from tests.conftest import every_user_in_chroma
from tests.core.fakes import HashEmbedder
from tests.stores.state import vector_ids, wipe_vector_index

NOBODY = 65534

@pytest.fixture
def make_memory(make_memory):
    """Every user's vectors in Chroma: these tests are about Chroma's collections and process."""
    return every_user_in_chroma(make_memory)



def talk(memory: Memory, user: str, *texts: str, name: str | None = None) -> None:
    for text in texts:
        memory.conversation_end("s", [Message(text, name=name or user.title())], user_id=user)


def two_users(make_memory, data: Path) -> None:
    """Alice and Bob, each with a home, a job and a drink; closed afterwards."""
    memory = make_memory(data)
    talk(memory, "alice", "I live in Paris.", "I work at Acme.", "I like tea.")
    talk(memory, "bob", "I live in Rome.", "I work at Initech.", "I like coffee.")
    memory.close()


def sql(data: Path, query: str, params=()) -> list[tuple]:
    conn = sqlite3.connect(data / "zep.db")
    try:
        with conn:
            return conn.execute(query, params).fetchall()
    finally:
        conn.close()


def fact_of(data: Path, user: str, word: str) -> str:
    return sql(data, "SELECT id FROM facts WHERE user_id = ? AND content LIKE ?", [user, f"%{word}%"])[0][0]


def queue_fact_write(data: Path, user: str, fact_id: str) -> None:
    sql(data, "INSERT INTO outbox(op, user_id, ref_id, payload) VALUES ('fact', ?, ?, ?)",
        [user, fact_id, json.dumps({"change": "sync"})])


def where_lives(memory: Memory, user: str) -> str:
    return memory.context_block(f"Where does {user.title()} live?", user_id=user)


# -- 1. the outbox drain quarantines what it cannot apply ------------------------------------


def test_a_nan_vector_left_by_an_import_is_quarantined_and_the_memory_still_opens(make_memory, tmp_path):
    data = tmp_path / "data"
    two_users(make_memory, data)
    bad = fact_of(data, "bob", "coffee")
    sql(data, "UPDATE facts SET embedding = ? WHERE id = ?", [np.full(384, np.nan, np.float32).tobytes(), bad])
    queue_fact_write(data, "bob", bad)  # what a bad import left: the row and its outbox row, committed

    memory = make_memory(data)
    assert "Paris" in where_lives(memory, "alice")  # other users' data still answers
    assert "Rome" in where_lives(memory, "bob")  # and the rest of bob's
    problems = memory.check_consistency()
    assert list(problems) == ["quarantined_index_writes"]
    [entry] = problems["quarantined_index_writes"]
    assert entry.startswith(f"fact {bad} of bob:") and "NaN" in entry and "rebuild --reembed" in entry
    stats = memory.stats()
    assert stats["quarantined_index_writes"] == 1 and stats["pending_index_writes"] == 0
    memory.close()

    again = make_memory(data)  # the row is not replayed, and stays reported
    assert again.stats()["quarantined_index_writes"] == 1
    counts = again.rebuild(reembed=True)  # what the quarantine entry says to do
    assert counts["left_out"] == 0 and again.check_consistency() == {}
    assert bad in vector_ids(again, "bob", "current")


def test_a_vector_of_the_wrong_dimension_is_quarantined(make_memory, tmp_path):
    data = tmp_path / "data"
    two_users(make_memory, data)
    bad = fact_of(data, "alice", "tea")
    sql(data, "UPDATE facts SET embedding = ? WHERE id = ?", [np.ones(3, np.float32).tobytes(), bad])
    queue_fact_write(data, "alice", bad)
    memory = make_memory(data)
    [entry] = memory.check_consistency()["quarantined_index_writes"]
    assert bad in entry and "3 dimensions, not the 384" in entry
    assert "Rome" in where_lives(memory, "bob")


def test_a_fact_naming_an_entity_that_is_gone_keeps_its_vector_and_is_reported(make_memory, tmp_path):
    data = tmp_path / "data"
    two_users(make_memory, data)
    bad = fact_of(data, "bob", "Initech")
    sql(data, "UPDATE facts SET object_id = 'no-such-entity' WHERE id = ?", [bad])
    queue_fact_write(data, "bob", bad)
    memory = make_memory(data)
    [entry] = memory.check_consistency()["quarantined_index_writes"]
    assert "object entity 'no-such-entity' is not stored" in entry
    assert bad in vector_ids(memory, "bob", "current")  # only the edge is left out
    counts = memory.rebuild()  # a rebuild skips and reports it, never crashes on it
    assert counts["left_out"] == 1 and list(memory.check_consistency()) == ["quarantined_index_writes"]


def test_a_write_the_index_refuses_is_isolated_and_the_rest_applied(make_memory, tmp_path):
    data = tmp_path / "data"
    two_users(make_memory, data)
    index = ChromaVectorIndex(data / "chroma")  # bob's current collection now takes 3-d vectors only
    name = collection_name("bob", "current")
    index.client.delete_collection(name)
    index.client.create_collection(name, embedding_function=None).add(ids=["x"], embeddings=[[1.0, 0.0, 0.0]])
    index.close()
    bob_fact, alice_fact = fact_of(data, "bob", "coffee"), fact_of(data, "alice", "tea")
    for user, fact in (("alice", alice_fact), ("bob", bob_fact), ("alice", alice_fact)):
        queue_fact_write(data, user, fact)

    memory = make_memory(data)
    problems = memory.check_consistency()
    [entry] = problems.pop("quarantined_index_writes")
    assert entry.startswith(f"fact {bob_fact} of bob: the index refused it") and "rebuild" in entry
    assert set(problems) <= {"current_missing_in_chroma", "stale_in_chroma_current"}  # bob's broken collection
    assert memory.stats()["pending_index_writes"] == 0 and "Paris" in where_lives(memory, "alice")
    memory.rebuild()
    assert memory.check_consistency() == {} and memory.stats()["quarantined_index_writes"] == 0


def test_forgetting_a_user_clears_their_quarantined_writes(make_memory, tmp_path):
    data = tmp_path / "data"
    two_users(make_memory, data)
    bad = fact_of(data, "bob", "coffee")
    sql(data, "UPDATE facts SET embedding = ? WHERE id = ?", [np.full(384, np.inf, np.float32).tobytes(), bad])
    queue_fact_write(data, "bob", bad)
    memory = make_memory(data)
    assert memory.stats()["quarantined_index_writes"] == 1
    memory.forget_user("bob")
    assert memory.stats()["quarantined_index_writes"] == 0 and memory.check_consistency() == {}


# -- 2. missing or empty indexes are noticed on open ------------------------------------------


def lose(data: Path, what: str) -> None:
    """Delete (or empty) one of the derived indexes of a closed data folder."""
    if what in ("chroma", "both"):
        shutil.rmtree(data / "chroma")
    if what == "empty chroma folder":
        shutil.rmtree(data / "chroma")
        (data / "chroma").mkdir()
    if what in ("graph", "both"):
        for path in data.glob("graph*"):
            shutil.rmtree(path) if path.is_dir() else path.unlink()


@pytest.mark.parametrize("what", ["chroma", "graph", "both", "empty chroma folder"])
def test_a_lost_index_is_rebuilt_from_sqlite_on_open(make_memory, tmp_path, caplog, what):
    data = tmp_path / "data"
    two_users(make_memory, data)
    memory = make_memory(data)
    related, context = memory.related_entities("Bob", user_id="bob"), where_lives(memory, "alice")
    facts = memory.stats()["records"]["facts"]
    memory.close()
    lose(data, what)
    with caplog.at_level(logging.INFO, logger="zep_core"):
        memory = make_memory(data)
    logged = caplog.text
    assert re.search(rf"holds? nothing while the record store holds {facts} facts", logged), logged
    assert "rebuilding the indexes of" in logged and f"{facts}/{facts} facts" in logged  # with its progress
    assert memory.check_consistency() == {}
    assert where_lives(memory, "alice") == context and "Paris" in context
    assert memory.related_entities("Bob", user_id="bob") == related and related


def test_a_data_folder_copied_without_its_indexes_is_rebuilt(make_memory, tmp_path, caplog):
    data = tmp_path / "data"
    two_users(make_memory, data)
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy2(data / "zep.db", copy / "zep.db")
    with caplog.at_level(logging.WARNING, logger="zep_core"):
        memory = make_memory(copy)
    assert "the vector index (Chroma) and the graph index (Kùzu)" in caplog.text
    assert memory.check_consistency() == {} and "Rome" in where_lives(memory, "bob")


def test_a_vector_index_emptied_behind_the_memory_is_rebuilt(make_memory, tmp_path):
    data = tmp_path / "data"
    two_users(make_memory, data)
    memory = make_memory(data)
    wipe_vector_index(memory)  # as a wiped Chroma server would be
    memory.close()
    assert make_memory(data).check_consistency() == {}


def test_a_lost_index_is_an_error_naming_rebuild_when_asked(make_memory, tmp_path):
    data = tmp_path / "data"
    two_users(make_memory, data)
    lose(data, "chroma")
    with pytest.raises(StoreError, match=r"vector index \(Chroma\).*holds nothing.*zep-memory rebuild --data"):
        make_memory(data, on_missing_index="error")
    memory = make_memory(data, on_missing_index="ignore")  # what `zep-memory rebuild` opens with
    assert "current_missing_in_chroma" in memory.check_consistency()
    memory.rebuild()
    memory.close()
    assert make_memory(data, on_missing_index="error").check_consistency() == {}


def test_a_deleted_record_store_beside_its_indexes_is_refused_not_opened_empty(make_memory, tmp_path):
    data = tmp_path / "data"
    two_users(make_memory, data)
    for path in data.glob("zep.db*"):
        path.unlink()
    with pytest.raises(StoreError, match=r"zep\.db, the record store of this memory, is missing.*Put zep\.db back"):
        make_memory(data)
    assert not (data / "zep.db").exists()  # nothing was created over what is left
    lose(data, "both")  # the way the message gives to start an empty memory there
    memory = make_memory(data)
    assert memory.users() == [] and memory.check_consistency() == {}


def test_a_normal_reopen_rebuilds_nothing(make_memory, tmp_path, caplog):
    data = tmp_path / "data"
    two_users(make_memory, data)
    with caplog.at_level(logging.INFO, logger="zep_core"):
        memory = make_memory(data)
    assert "rebuild" not in caplog.text and memory.stats()["rebuild"] is None


def test_on_missing_index_takes_only_its_choices():
    with pytest.raises(ConfigError, match="on_missing_index must be 'rebuild', 'error' or 'ignore'"):
        MemoryConfig(on_missing_index="repair")


# -- 3. an episode that can never succeed is marked failed ------------------------------------


class AlwaysFails:
    """An extractor whose every call fails the same way."""

    needs_known_facts = False

    def __init__(self) -> None:
        self.calls = 0

    def extract(self, messages, context):
        self.calls += 1
        raise RuntimeError("the model answered with something that is not JSON")


def test_an_episode_that_never_extracts_is_failed_after_its_attempts_even_across_reopens(make_memory, tmp_path):
    data = tmp_path / "data"
    extractor = AlwaysFails()
    first = make_memory(data, extractor=extractor, max_extraction_attempts=3)
    result = first.conversation_end("s1", [Message("I live in Oslo.", name="Ann")], user_id="ann")  # attempt 1
    assert result.status == "pending"
    first.close()
    second = make_memory(data, extractor=extractor, max_extraction_attempts=3)
    report = second.maintain()  # attempt 2
    assert report.still_pending == (result.episode_id,) and report.failed == ()
    second.close()
    third = make_memory(data, extractor=extractor, max_extraction_attempts=3)
    report = third.maintain()  # attempt 3: given up
    assert report.retried == 1 and report.still_pending == () and report.failed == (result.episode_id,)
    assert extractor.calls == 3

    later = third.maintain()  # reported, never retried again
    assert later.retried == 0 and later.failed == (result.episode_id,) and extractor.calls == 3
    episode = third.get_episode(result.episode_id)
    assert episode.status == "failed" and episode.messages[0].content == "I live in Oslo."
    assert "gave up after 3 extraction attempts" in episode.error and "not JSON" in episode.error
    assert third.stats()["failed_episodes"] == 1 and third.stats()["pending_episodes"] == 0
    assert third.episode_ids(status="failed") == [result.episode_id]


class PoisonEmbedder(HashEmbedder):
    """Embeds every text but one: the stored episode breaks after extraction, on every try."""

    def embed(self, texts):
        if any("Atlantis" in t for t in texts):
            raise OverflowError("date value out of range")
        return super().embed(texts)


def test_maintain_survives_an_episode_that_breaks_after_extraction_and_gives_up_on_it(make_memory):
    memory = make_memory(embedder=PoisonEmbedder(), max_extraction_attempts=3)
    try:
        memory.conversation_end("s", [Message("I live in Atlantis.", name="Ann")], user_id="ann", episode_id="e1")
    except OverflowError:  # the caller may see the error; the episode was stored first either way
        pass
    assert memory.get_episode("e1").status == "pending"
    talk(memory, "bob", "I live in Rome.")
    reports = [memory.maintain() for _ in range(3)]  # none raises
    assert reports[-1].failed == ("e1",) and reports[-1].still_pending == ()
    episode = memory.get_episode("e1")
    assert episode.status == "failed" and "OverflowError: date value out of range" in episode.error
    assert memory.maintain().retried == 0 and "Rome" in where_lives(memory, "bob")


def test_max_extraction_attempts_is_a_count():
    with pytest.raises(ConfigError, match="max_extraction_attempts must be an integer >= 1"):
        MemoryConfig(max_extraction_attempts=0)


# -- 4. a read-only data folder is a clear error ------------------------------------------------
#
# Root ignores chmod, so as root the check runs in a forked child that has dropped to
# ``nobody`` (uid 65534); as any other user the permissions bind the child already. A
# fork, not a new interpreter: this venv's interpreter lives under /root, which nobody
# cannot enter, and a fork runs the very code under test, already imported.


def _drop_to_nobody() -> None:
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def as_unprivileged(fn: Callable[[], object], timeout: float = 120) -> tuple[str, str]:
    """Run ``fn()`` in a forked child bound by file permissions; return ``(outcome, text)``.

    ``outcome`` is ``"returned"`` or the exception's class name; the test is skipped when
    the child cannot give up root.
    """
    if not hasattr(os, "fork"):
        pytest.skip("needs os.fork to run a check as an unprivileged user")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            os.close(read)
            try:
                if os.geteuid() == 0:
                    _drop_to_nobody()
            except OSError as exc:
                result = ("cannot drop root", str(exc))
            else:
                try:
                    result = ("returned", repr(fn()))
                except BaseException as exc:  # reported to the parent as it is
                    result = (type(exc).__name__, str(exc))
            os.write(write, json.dumps(result).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        ready, _, _ = select.select([pipe], [], [], timeout)
        if not ready:
            os.kill(pid, signal.SIGKILL)
        answer = pipe.read() if ready else b""
    os.waitpid(pid, 0)
    assert answer, f"the unprivileged child gave no answer within {timeout} s"
    outcome, text = json.loads(answer)
    if outcome == "cannot drop root":
        pytest.skip(f"running as root and cannot drop to uid {NOBODY} to test file permissions: {text}")
    return outcome, text


def hash_config() -> MemoryConfig:
    """The configuration the read-only checks open with (``--config tests.core.test_recovery:hash_config``)."""
    return MemoryConfig(embedder=HashEmbedder())


@pytest.fixture
def read_only_memory() -> Iterator[Path]:
    """A data folder holding a memory, made read-only, where nobody can reach it (pytest's tmp is 0700)."""
    base = Path(tempfile.mkdtemp(prefix="zep-ro-"))
    base.chmod(0o755)
    data = base / "data"
    with Memory(hash_config().with_(data_dir=data)) as memory:
        talk(memory, "alice", "I live in Paris.")
    for path in [data, *data.rglob("*")]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        yield data
    finally:
        for path in [data, *data.rglob("*")]:
            path.chmod(stat.S_IRWXU)
        shutil.rmtree(base)


def files_of(data: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(data)): (p.stat().st_size, p.stat().st_mtime_ns) for p in data.rglob("*")}


def test_a_read_only_data_folder_is_a_clear_error_and_changes_nothing(read_only_memory):
    before = files_of(read_only_memory)
    outcome, message = as_unprivileged(lambda: Memory(hash_config().with_(data_dir=read_only_memory)))
    assert outcome == "StoreError", (outcome, message)
    assert f"the data folder {read_only_memory} is read-only for this process" in message
    assert "zep.db" in message and "make it writable" in message and "copy the folder" in message
    assert files_of(read_only_memory) == before


def test_a_new_data_folder_under_a_read_only_one_is_a_clear_error(read_only_memory):
    target = read_only_memory / "new"
    outcome, message = as_unprivileged(lambda: Memory.open(target, embedder=HashEmbedder()))
    assert outcome == "StoreError", (outcome, message)
    assert f"cannot create the data folder {target}: the folder above it is read-only" in message
    assert not target.exists()


def test_the_crash_check_takes_thousands_of_changed_segments(make_memory):
    """After an unclean close of a folder with many users, the changed segment list is long;
    it goes to the check process on stdin (on argv it overflowed: E2BIG, the open failed)."""
    import uuid

    from zep_core.stores.chroma_check import chroma_loads

    memory = make_memory()
    memory.conversation_end("s", [Message("I live in Paris.", name="Al")], user_id="al")
    chroma = memory.data_dir / "chroma"
    memory.close()
    for _ in range(6000):  # what 2,000 users' collections look like to the check: folders changed since
        folder = chroma / str(uuid.uuid4())
        folder.mkdir()
        (folder / "header.bin").write_bytes(b"")
    assert len(json.dumps([p.name for p in chroma.iterdir()])) > 131_072  # past one argv string's limit
    assert chroma_loads(chroma, since=0.0) is True
