"""The write step and the lifecycle around it: slow providers, background threads, closing."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import threading
import weakref
from pathlib import Path

import pytest
from zep_core import Memory, MemoryConfig, Message

from tests.core.fakes import HashEmbedder

ROOT = Path(__file__).resolve().parents[2]


class GatedEmbedder:
    """The real embedder, except that embedding the text ``gate_text`` waits until ``release`` is set."""

    def __init__(self, inner, gate_text: str) -> None:
        self.inner, self.gate_text = inner, gate_text
        self.name, self.dimension = inner.name, inner.dimension
        self.waiting, self.release = threading.Event(), threading.Event()

    def embed(self, texts):
        if self.gate_text in texts:
            self.waiting.set()
            assert self.release.wait(timeout=60), "the test never released the embedder"
        return self.inner.embed(texts)

    def embed_query(self, text):
        return self.inner.embed_query(text)


def test_a_slow_entity_embedding_does_not_hold_up_other_writers(make_memory, embedder):
    gated = GatedEmbedder(embedder, "Slowpoke")  # the new entity's name, embedded on its own
    memory = make_memory(embedder=gated)
    slow_result = {}

    def slow_writer():
        slow_result["r"] = memory.conversation_end("s", [Message("I live in Paris.", name="Slowpoke")],
                                                   user_id="slow")

    slow = threading.Thread(target=slow_writer)
    slow.start()
    try:
        assert gated.waiting.wait(timeout=60), "the slow writer never reached the entity embedding"
        done = threading.Event()
        fast = threading.Thread(target=lambda: (memory.conversation_end(
            "s", [Message("I work at Acme.", name="Quick")], user_id="quick"), done.set()))
        fast.start()
        assert done.wait(timeout=30), "a writer waited for another writer's embedding call"
        fast.join()
        assert [f.object for f in memory.get_context("Where does Quick work?", user_id="quick")][:1] == ["Acme"]
    finally:
        gated.release.set()
        slow.join(timeout=60)
    assert slow_result["r"].status == "done"
    assert any(f.object == "Paris" for f in memory.entity_history("Slowpoke", user_id="slow"))


def test_a_memory_left_open_is_closed_at_exit_and_a_closed_one_is_not_touched_again(tmp_path):
    script = textwrap.dedent("""
        import sys
        from zep_core import Memory, MemoryConfig, Message
        from tests.core.fakes import HashEmbedder
        closed = Memory(MemoryConfig(data_dir=sys.argv[1] + "/a", embedder=HashEmbedder()))
        left_open = Memory(MemoryConfig(data_dir=sys.argv[1] + "/b", embedder=HashEmbedder()))
        left_open.conversation_end("s", [Message("I live in Paris.", name="Alice")], user_id="alice")
        closed.close()
        real_close = Memory.close
        def close(self):
            print("closing", self.data_dir.name, flush=True)
            real_close(self)
        Memory.close = close
    """)
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["closing", "b"]  # the exit hook of the closed memory was unregistered
    with Memory(MemoryConfig(data_dir=tmp_path / "b", embedder=HashEmbedder())) as again:
        assert "Paris" in again.context_block("Where does Alice live?", user_id="alice")


def test_a_closed_memory_can_be_garbage_collected(tmp_path, embedder):
    memory = Memory(MemoryConfig(data_dir=tmp_path / "d", embedder=embedder))  # background indexer: a thread
    memory.conversation_end("s", [Message("I live in Paris.", name="Alice")], user_id="alice")
    memory.close()
    memory.close()  # closing twice is fine
    ref = weakref.ref(memory)
    del memory
    gc.collect()
    assert ref() is None


def test_a_closed_memory_refuses_work_with_a_clear_error(make_memory):
    memory = make_memory()
    memory.close()
    with pytest.raises(Exception, match="closed"):
        memory.conversation_end("s", [Message("I live in Paris.")])
