"""One data folder, opened twice in one process: both Memory objects share its stores.

Any number of adapters in one process can then use one memory (two
``ZepMemory.from_defaults()`` on a folder). The last ``close()`` releases the folder
lock; a second open with other settings is a ConfigError; another process still gets
StoreLockedError while any of them is open.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from zep_core import ConfigError, Memory, MemoryConfig, Message, ZepMemoryError

from tests.core.fakes import HashEmbedder

ROOT = Path(__file__).resolve().parents[2]

# Opens the folder in a child process and prints what happened, one word first.
OPENER = textwrap.dedent("""
    import sys
    from zep_core import Memory, MemoryConfig, StoreLockedError
    from tests.core.fakes import HashEmbedder
    try:
        memory = Memory(MemoryConfig(data_dir=sys.argv[1], embedder=HashEmbedder()))
    except StoreLockedError as exc:
        print("locked", exc)
    else:
        print("opened", memory.context_block("Where does Ann live?", user_id="ann").replace("\\n", " "))
        memory.close()
""")


def open_elsewhere(data) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT), ORT_DISABLE_TELEMETRY="1")
    out = subprocess.run([sys.executable, "-c", OPENER, str(data)], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@pytest.fixture
def config(tmp_path):
    return MemoryConfig(data_dir=tmp_path / "data", embedder=HashEmbedder())


def test_a_second_memory_on_an_open_folder_shares_its_stores(config, clock):
    first = Memory(config, clock=clock)
    second = Memory(MemoryConfig(data_dir=str(config.data_dir) + "/.", embedder=config.embedder), clock=clock)
    try:
        first.conversation_end("s1", [Message("I live in Paris.", name="Ann")], user_id="ann")
        second.add_messages("chat", [Message("I work at Acme.", name="Ann")], user_id="ann")

        assert "Ann lives in Paris." in second.context_block("Where does Ann live?", user_id="ann")
        assert [m.content for m in first.get_messages("chat", user_id="ann")] == ["I work at Acme."]
        assert first.data_dir == second.data_dir
    finally:
        first.close()
        second.close()


def test_closing_one_keeps_the_other_open_and_the_last_close_frees_the_folder(config):
    first, second = Memory(config), Memory(config)
    first.conversation_end("s1", [Message("I live in Paris.", name="Ann")], user_id="ann")
    first.close()

    with pytest.raises(ZepMemoryError, match="closed"):
        first.get_context("Where does Ann live?", user_id="ann")
    assert "Paris" in second.context_block("Where does Ann live?", user_id="ann")  # still usable
    assert open_elsewhere(config.data_dir).startswith("locked")  # the lock is still held

    second.close()
    second.close()  # closing twice is harmless
    answer = open_elsewhere(config.data_dir)
    assert answer.startswith("opened") and "Ann lives in Paris." in answer


def test_another_process_still_gets_the_clear_lock_error(config):
    with Memory(config), Memory(config):
        answer = open_elsewhere(config.data_dir)

    assert answer.startswith("locked")
    assert str(config.data_path) in answer and f"process {os.getpid()}" in answer


def test_a_folder_opened_again_after_the_last_close_gets_fresh_stores(config):
    with Memory(config) as memory:
        memory.conversation_end("s1", [Message("I live in Rome.", name="Ann")], user_id="ann")
    with Memory(config) as again:
        assert "Ann lives in Rome." in again.context_block("Where does Ann live?", user_id="ann")


@pytest.mark.parametrize("other, named", [
    ({"embedder": HashEmbedder(dimension=16)}, "embedder"),
    ({"semantic_threshold": 0.5}, "semantic_threshold"),
    ({"index_writes": "sync"}, "index_writes"),
])
def test_a_second_open_with_other_settings_is_a_clear_config_error(config, other, named):
    options = {"embedder": config.embedder, **other}
    with Memory(config) as memory:
        with pytest.raises(ConfigError, match=f"in use by this process with other settings \\({named} differ\\)"):
            Memory(MemoryConfig(data_dir=config.data_dir, **options))
        memory.conversation_end("s1", [Message("I live in Rome.", name="Ann")], user_id="ann")  # unharmed


def test_another_clock_is_refused_too(config, clock):
    with Memory(config, clock=clock):
        with pytest.raises(ConfigError, match="clock differ"):
            Memory(config, clock=lambda: clock.now)
        Memory(config).close()  # no clock given: the open one's


def test_open_without_options_joins_the_folder_as_it_is_open(config):
    with Memory(config) as memory:
        memory.conversation_end("s1", [Message("I live in Oslo.", name="Ann")], user_id="ann")
        joined = Memory.open(config.data_dir)
        try:
            assert joined.embedder is memory.embedder  # the open one's settings, not the defaults
            assert "Oslo" in joined.context_block("Where does Ann live?", user_id="ann")
        finally:
            joined.close()
        with pytest.raises(ConfigError, match="semantic_threshold differ"):
            Memory.open(config.data_dir, semantic_threshold=0.5)


def test_the_embedded_defaults_twice_share_one_memory(tmp_path):
    first = Memory.open(tmp_path / "data")
    second = Memory.open(tmp_path / "data")
    try:
        first.add_messages("chat", [Message("Hi.")], user_id="ann")
        assert second.embedder is first.embedder
        assert [m.content for m in second.get_messages("chat", user_id="ann")] == ["Hi."]
    finally:
        first.close()
        second.close()


def test_a_memory_whose_threads_cannot_start_leaves_nothing_open(config, monkeypatch):
    """The system is out of threads: the open fails with its error, and the folder is free again."""
    import threading

    start = threading.Thread.start

    def refuse_the_indexer(thread):
        if thread.name == "zep-indexer":  # the second thread: the checkpoint's has started by then
            raise RuntimeError("can't start new thread")
        start(thread)

    before = set(threading.enumerate())  # other tests' memories in this process may have threads of their own
    monkeypatch.setattr(threading.Thread, "start", refuse_the_indexer)
    with pytest.raises(RuntimeError, match="can't start new thread"):
        Memory(config)
    monkeypatch.undo()

    assert not [t for t in set(threading.enumerate()) - before if t.name.startswith("zep-")]  # the checkpoint's stopped
    assert open_elsewhere(config.data_dir).startswith("opened")  # the folder lock went with the stores
    with Memory(config) as memory:  # and this process opens it afresh
        memory.conversation_end("s1", [Message("I live in Rome.", name="Ann")], user_id="ann")
        assert "Ann lives in Rome." in memory.context_block("Where does Ann live?", user_id="ann")
