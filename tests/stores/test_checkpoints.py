"""SQLite's write-ahead log is checkpointed by a thread of the memory, not inside the writer's commits."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from zep_core.stores.records import RecordStore

PAGE = 4096


def _wal_pages(db: Path) -> int:
    wal = db.with_name(db.name + "-wal")
    return max(wal.stat().st_size - 32, 0) // (PAGE + 24) if wal.exists() else 0  # header, then one per frame


def test_the_writer_leaves_checkpoints_to_checkpoint_and_nothing_is_lost(tmp_path):
    db = tmp_path / "zep.db"
    store = RecordStore(db)
    store.checkpoint_in_background()
    value = "x" * 100_000  # ~25 pages a write: 3,000 in all, three times SQLite's own checkpoint threshold
    for i in range(120):
        with store.transaction():
            store.set_meta(f"k{i}", value)
    # Checkpointing in the commit would have restarted the log at ~1,000 pages; nothing did, so it grew
    assert _wal_pages(db) > 2_000
    assert store.checkpoint() == 0  # all of it copied, the writer still open
    with store.transaction():
        store.set_meta("after", "y")  # the writer goes on after a checkpoint: the log restarts, cut back
    assert 0 < _wal_pages(db) * PAGE <= 4 << 20
    for i in range(60):
        with store.transaction():
            store.set_meta(f"again{i}", value)
    assert store.checkpoint() == 0 and _wal_pages(db) > 1_000  # copied; the writer may still be at work
    assert store.checkpoint() == 0 and _wal_pages(db) == 0  # nothing committed since: the idle log is emptied
    store.close()
    assert not db.with_name(db.name + "-wal").exists()  # the writer's close removed the log
    again = RecordStore(db)
    try:
        assert [again.get_meta(k) for k in ("k0", "k119", "after", "again59")] == [value, value, "y", value]
    finally:
        again.close()


def test_a_checkpoint_beside_a_writer_neither_waits_nor_blocks_it(tmp_path):
    db = tmp_path / "zep.db"
    store = RecordStore(db)
    store.checkpoint_in_background()
    stop = threading.Event()
    left: list[int] = []

    def checkpointing() -> None:
        while not stop.is_set():
            left.append(store.checkpoint())

    thread = threading.Thread(target=checkpointing)
    thread.start()
    try:
        for i in range(200):
            with store.transaction():
                store.set_meta(f"k{i % 7}", str(i) * 5_000)
    finally:
        stop.set()
        thread.join()
    assert left and store.checkpoint() == 0
    assert store.get_meta("k3") == str(199 - (199 - 3) % 7) * 5_000  # the last value written to k3
    store.close()


def test_a_memory_checkpoints_in_a_thread_of_its_own(make_memory):
    memory = make_memory()
    records, db = memory._stores.records, memory.data_dir / "zep.db"
    assert records.db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 16_000  # the writer's backstop only
    mine = [t for t in memory._workers._threads if t.name == "zep-checkpoint"]  # other tests' memories have theirs
    assert len(mine) == 1 and mine[0].is_alive()
    size = db.stat().st_size
    for i in range(120):  # ~3,000 pages of log, far below the backstop
        with records.transaction():
            records.set_meta(f"k{i}", "x" * 100_000)
    deadline = time.monotonic() + 30  # pages reach the database file only by a checkpoint: the thread's
    while db.stat().st_size - size < 2_000 * PAGE and time.monotonic() < deadline:
        time.sleep(0.05)
    assert db.stat().st_size - size >= 2_000 * PAGE
    memory.close()
    assert not mine[0].is_alive()  # stopped with the memory


def test_a_transaction_that_reads_first_still_writes_when_the_idle_log_is_emptied_meanwhile(tmp_path):
    # A transaction that read before it wrote used to hold a read snapshot only: emptying the log (TRUNCATE)
    # between its read and its first write made SQLite refuse the write at once ("database is locked").
    db = tmp_path / "zep.db"
    store = RecordStore(db)
    store.checkpoint_in_background()
    for i in range(120):  # ~3,000 pages of log, past the size an idle log is emptied at
        with store.transaction():
            store.set_meta(f"k{i}", "x" * 100_000)
    assert store.checkpoint() == 0 and _wal_pages(db) > 2_000  # all copied; the next call finds the log idle
    left: list[int] = []
    try:
        with store.transaction():
            assert store.get_meta("k0") == "x" * 100_000  # the transaction reads first ...
            checkpointing = threading.Thread(target=lambda: left.append(store.checkpoint()))
            checkpointing.start()  # ... the idle log is emptied now if it can be ...
            checkpointing.join()
            store.set_meta("after", "y")  # ... and then it writes
        assert left == [0]  # the log was not emptied under the writer
        assert store.get_meta("after") == "y" and store.get_meta("k119") == "x" * 100_000
        assert 0 < _wal_pages(db) * PAGE <= 4 << 20  # the write restarted the copied log, cut back
    finally:
        store.close()
