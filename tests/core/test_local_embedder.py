"""Tests for the offline default embedder (zep_core.providers.local)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from zep_core.providers.local import DEFAULT_MODEL_DIR, LocalEmbedder

LOCAL_PY = Path(__file__).resolve().parents[2] / "core" / "providers" / "local.py"


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder()


def _run_python(code: str) -> str:
    """Runs code in a fresh interpreter without ORT_DISABLE_TELEMETRY in its environment."""
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def test_name_and_dimension_come_from_model_json(embedder):
    assert embedder.name == "local:all-MiniLM-L6-v2-int8"
    assert embedder.dimension == 384


def test_embed_returns_float32_unit_rows(embedder):
    vectors = embedder.embed(["hello world", "a somewhat longer sentence about the weather"])
    assert vectors.shape == (2, 384)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_embed_empty_list_returns_zero_rows(embedder):
    vectors = embedder.embed([])
    assert vectors.shape == (0, 384)
    assert vectors.dtype == np.float32


def test_embed_preserves_order_with_mixed_lengths(embedder):
    texts = [
        "A long sentence that talks at some length about gardening, tomatoes and the weather.",
        "hi",
        "Medium length text about cats.",
        "",
        "ok then",
    ]
    together = embedder.embed(texts)
    reversed_ = embedder.embed(texts[::-1])[::-1]
    assert np.abs(together - reversed_).max() < 1e-5
    for i, text in enumerate(texts):
        assert np.abs(together[i] - embedder.embed([text])[0]).max() < 1e-5


def test_batched_result_equals_one_by_one():
    parallel = LocalEmbedder(threads=3)
    texts = [f"Sentence number {i} " + "word " * (i % 7) for i in range(20)]
    batched = parallel.embed(texts)
    single = np.stack([parallel.embed([t])[0] for t in texts])
    assert np.abs(batched - single).max() < 1e-5


def test_result_does_not_depend_on_thread_count(embedder):
    texts = ["short", "a much longer text " * 10, "medium sized text here"]
    assert np.abs(LocalEmbedder(threads=1).embed(texts) - embedder.embed(texts)).max() < 1e-5


def test_long_text_is_truncated_not_rejected(embedder):
    vector = embedder.embed(["word " * 2000])
    assert vector.shape == (1, 384)
    assert np.isfinite(vector).all()
    assert np.abs(vector[0] - embedder.embed(["word " * 300])[0]).max() < 1e-5  # both cut at 256 tokens


def test_similar_sentences_are_closer_than_unrelated(embedder):
    paris, home, stocks = embedder.embed(["I live in Paris", "My home is in Paris", "The stock market fell today"])
    assert float(paris @ home) > float(paris @ stocks) + 0.2


def test_embed_query_equals_embed_first_row(embedder):
    text = "Where does Caroline work?"
    query = embedder.embed_query(text)
    assert query.shape == (384,)
    assert query.dtype == np.float32
    assert np.abs(query - embedder.embed([text])[0]).max() < 1e-6


def test_repeated_query_hits_the_cache():
    embedder = LocalEmbedder(cache_size=2)
    first = embedder.embed_query("what did Melanie paint?")
    second = embedder.embed_query("what did Melanie paint?")
    info = embedder.cache_info()
    assert (info.hits, info.misses, info.currsize, info.maxsize) == (1, 1, 1, 2)
    assert np.array_equal(first, second)


def test_cache_evicts_least_recently_used():
    embedder = LocalEmbedder(cache_size=2)
    for text in ["a", "b", "a", "c", "a", "b"]:  # "c" evicts "b"; "b" comes back as a miss
        embedder.embed_query(text)
    info = embedder.cache_info()
    assert (info.hits, info.misses, info.currsize) == (2, 4, 2)


def test_cache_clear_empties_cache_and_counters(embedder):
    embedder.embed_query("to be forgotten")
    embedder.cache_clear()
    assert embedder.cache_info()[:2] == (0, 0)
    assert embedder.cache_info().currsize == 0


def test_cached_vectors_cannot_be_corrupted_by_callers(embedder):
    vector = embedder.embed_query("immutable please")
    with pytest.raises(ValueError):
        vector[0] = 42.0
    assert embedder.embed_query("immutable please")[0] != 42.0


def test_non_string_inputs_raise_type_error(embedder):
    with pytest.raises(TypeError, match=r"texts\[1\] must be str"):
        embedder.embed(["fine", 3])
    with pytest.raises(TypeError, match="single string"):
        embedder.embed("a bare string")
    with pytest.raises(TypeError, match="must be str"):
        embedder.embed_query(None)


def test_missing_model_folder_names_the_rebuild_script(tmp_path):
    with pytest.raises(FileNotFoundError, match="build_embedding_model.py"):
        LocalEmbedder(tmp_path / "nowhere")


def test_missing_model_file_names_the_file(tmp_path):
    (tmp_path / "model.json").write_bytes((DEFAULT_MODEL_DIR / "model.json").read_bytes())
    (tmp_path / "tokenizer.json").write_bytes((DEFAULT_MODEL_DIR / "tokenizer.json").read_bytes())
    with pytest.raises(FileNotFoundError, match=r"model\.onnx.*build_embedding_model\.py"):
        LocalEmbedder(tmp_path)


def test_loading_the_module_has_no_side_effects():
    code = f"""
import importlib.util, os, sys
spec = importlib.util.spec_from_file_location("local", {str(LOCAL_PY)!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
module.LocalEmbedder()
print("onnxruntime" in sys.modules, "ORT_DISABLE_TELEMETRY" in os.environ)
"""
    assert _run_python(code) == "False False"


def test_importing_through_the_package_has_no_side_effects():
    code = (
        "import sys, os; import zep_core.providers.local as m; "
        "print('onnxruntime' in sys.modules, 'ORT_DISABLE_TELEMETRY' in os.environ)"
    )
    assert _run_python(code) == "False False"


def test_first_embedding_disables_telemetry_before_importing_onnxruntime():
    code = f"""
import importlib.util, os, sys
seen = []
class Spy:
    def find_spec(self, name, path=None, target=None):
        if name == "onnxruntime":
            seen.append(os.environ.get("ORT_DISABLE_TELEMETRY"))
        return None
sys.meta_path.insert(0, Spy())
spec = importlib.util.spec_from_file_location("local", {str(LOCAL_PY)!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
module.LocalEmbedder().embed(["x"])
print(seen[:1])
"""
    assert _run_python(code) == "['1']"


def test_every_embedder_of_the_process_shares_one_pool_of_threads():
    texts = [f"text number {i} about something" for i in range(12)]
    embedders = [LocalEmbedder(threads=2) for _ in range(4)]
    for e in embedders:
        for _ in range(3):
            assert e.embed(texts).shape == (12, 384)
    assert len({id(e._get_pool()) for e in embedders}) == 1  # whatever the number of embedders and calls
    assert LocalEmbedder(threads=3)._get_pool() is not embedders[0]._get_pool()  # its own number of threads
