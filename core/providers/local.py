"""Offline default embedder: all-MiniLM-L6-v2 as int8 ONNX, shipped in the package.

The model files live in ``models/all-MiniLM-L6-v2-int8/`` next to this module and are
built by ``python scripts/build_embedding_model.py``.

Each text runs through the model on its own, without padding, with ``threads`` texts in
flight at once. This is deliberate: the int8 model quantizes activations with one scale
per onnxruntime call, so in a padded batch a text's vector depends on its neighbours
(cosine down to ~0.95 against the same text alone). One text per call is deterministic,
closer to the original model, and on 2 cores faster than batches of 32 (~740 vs ~600
texts/s) — and dozens of times faster than embedders that pad every text to 256 tokens.

Importing this module has no side effects: onnxruntime is imported, and
``ORT_DISABLE_TELEMETRY`` set, only when the first text is embedded.
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from tokenizers import Tokenizer

DEFAULT_MODEL_DIR = Path(__file__).resolve().parent / "models" / "all-MiniLM-L6-v2-int8"
#: Up to this many texts are embedded on the calling thread. A text costs ~1-3 ms and a hand-off to
#: the pool ~0.1 ms, so two texts already go to both threads (an episode's 2-4 texts: one episode
#: stored until all three stores hold it 2 ms sooner at the median, bench/findings.md); a query's
#: one text stays inline.
_INLINE_TEXTS = 1
_REBUILD_HINT = "run `python scripts/build_embedding_model.py` to rebuild the model files"


class CacheInfo(NamedTuple):
    """Statistics of the query cache, like ``functools.lru_cache``'s ``cache_info()``."""

    hits: int
    misses: int
    maxsize: int
    currsize: int


#: Embedding threads, created on first use and shared by every LocalEmbedder of the process
#: (per thread count): opening many memories, or a memory per test, starts no new threads.
_POOLS: dict[int, ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()


def _require(path: Path) -> Path:
    if not path.is_file():
        raise FileNotFoundError(f"embedding model file missing: {path} ({_REBUILD_HINT})")
    return path


class LocalEmbedder:
    """Sentence embedder running all-MiniLM-L6-v2 (int8 ONNX) on the CPU, fully offline.

    Embeddings are the mean of the token vectors, L2-normalized, so a dot product
    between two rows is their cosine similarity. Instances are thread-safe.

    Attributes:
        name: Provider name, e.g. ``"local:all-MiniLM-L6-v2-int8"``.
        dimension: Length of each embedding (384).
        max_length: Texts are truncated to this many tokens (256).

    """

    def __init__(
        self,
        model_dir: str | os.PathLike[str] | None = None,
        *,
        threads: int | None = None,
        cache_size: int = 1024,
    ) -> None:
        """Read the model description and tokenizer; the ONNX session is created lazily.

        Args:
            model_dir: Folder holding ``model.json``, ``model.onnx`` and ``tokenizer.json``.
                Defaults to the model shipped with the package.
            threads: Number of texts embedded in parallel (each onnxruntime run is
                single-threaded); defaults to ``min(2, os.cpu_count())``.
            cache_size: Number of query embeddings kept by :meth:`embed_query`.

        Raises:
            FileNotFoundError: If the model folder or one of its files is missing.
            ValueError: If ``threads`` < 1 or ``cache_size`` < 0.

        """
        threads = threads if threads is not None else min(2, os.cpu_count() or 1)
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        if cache_size < 0:
            raise ValueError(f"cache_size must be >= 0, got {cache_size}")
        self.model_dir = Path(model_dir) if model_dir is not None else DEFAULT_MODEL_DIR
        if not self.model_dir.is_dir():
            raise FileNotFoundError(f"embedding model folder missing: {self.model_dir} ({_REBUILD_HINT})")
        meta = json.loads(_require(self.model_dir / "model.json").read_text(encoding="utf-8"))
        self._onnx_path = _require(self.model_dir / meta.get("file", "model.onnx"))
        self.name: str = f"local:{meta['name']}"
        self.dimension: int = int(meta["dimension"])
        self.max_length: int = int(meta.get("max_length", 256))
        self.threads = threads

        self._tokenizer = Tokenizer.from_file(str(_require(self.model_dir / "tokenizer.json")))
        self._tokenizer.enable_truncation(max_length=self.max_length)
        self._tokenizer.no_padding()

        self._session: Any = None
        self._input_names: frozenset[str] = frozenset()
        self._session_lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._cache_lock = threading.Lock()
        self._hits = 0
        self._misses = 0

    def __repr__(self) -> str:
        return f"LocalEmbedder(name={self.name!r}, model_dir={str(self.model_dir)!r})"

    def _get_session(self) -> Any:
        if self._session is None:
            with self._session_lock:
                if self._session is None:
                    # Must be set before onnxruntime's first import, or it phones home.
                    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
                    import onnxruntime as ort

                    options = ort.SessionOptions()
                    options.intra_op_num_threads = 1  # parallelism comes from embed()
                    options.log_severity_level = 3
                    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                    session = ort.InferenceSession(str(self._onnx_path), options, providers=["CPUExecutionProvider"])
                    self._input_names = frozenset(i.name for i in session.get_inputs())
                    self._session = session
        return self._session

    def _embed_one(self, ids: list[int], type_ids: list[int]) -> np.ndarray:
        input_ids = np.array([ids], dtype=np.int64)
        feeds = {
            "input_ids": input_ids,
            "attention_mask": np.ones_like(input_ids),
            "token_type_ids": np.array([type_ids], dtype=np.int64),
        }
        feeds = {k: v for k, v in feeds.items() if k in self._input_names}
        hidden = self._get_session().run(None, feeds)[0][0]  # (tokens, dim), no padding
        pooled = hidden.mean(axis=0)
        return pooled / max(float(np.linalg.norm(pooled)), 1e-12)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts.

        The vector of a text does not depend on the other texts in the call.

        Args:
            texts: The texts to embed (a list or tuple of ``str``; a bare ``str`` is refused).

        Returns:
            A float32 array of shape ``(len(texts), dimension)`` with L2-normalized rows,
            in the order of ``texts``.

        Raises:
            TypeError: If ``texts`` is a string or contains a non-string.

        """
        if isinstance(texts, (str, bytes)):
            raise TypeError("embed() takes a sequence of str, not a single string; use embed_query()")
        texts = list(texts)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"texts[{i}] must be str, got {type(text).__name__}")
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        self._get_session()
        encodings = self._tokenizer.encode_batch(texts)

        def work(rows: range) -> None:
            for i in rows:
                out[i] = self._embed_one(encodings[i].ids, encodings[i].type_ids)

        workers = min(self.threads, len(texts))
        if workers == 1 or len(texts) <= _INLINE_TEXTS:
            work(range(len(texts)))
        else:  # onnxruntime releases the GIL; strided rows balance long and short texts
            pool = self._get_pool()
            for future in [pool.submit(work, range(w, len(texts), workers)) for w in range(workers)]:
                future.result()
        return out

    def _get_pool(self) -> ThreadPoolExecutor:
        """The process's embedding threads: one pool per thread count, shared by every embedder."""
        if self._pool is None:
            with _POOLS_LOCK:
                pool = _POOLS.get(self.threads)
                if pool is None:
                    pool = _POOLS[self.threads] = ThreadPoolExecutor(max_workers=self.threads,
                                                                     thread_name_prefix="zep-embed")
                self._pool = pool
        return self._pool

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one text, remembering the last ``cache_size`` results.

        Args:
            text: The text to embed.

        Returns:
            A read-only float32 array of shape ``(dimension,)``, L2-normalized.

        Raises:
            TypeError: If ``text`` is not a string.

        """
        if not isinstance(text, str):
            raise TypeError(f"text must be str, got {type(text).__name__}")
        with self._cache_lock:
            cached = self._cache.get(text)
            if cached is not None:
                self._cache.move_to_end(text)
                self._hits += 1
                return cached
            self._misses += 1
        vector = self.embed([text])[0].copy()
        vector.flags.writeable = False
        if self._cache_size:
            with self._cache_lock:
                self._cache[text] = vector
                self._cache.move_to_end(text)
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return vector

    def cache_info(self) -> CacheInfo:
        """Return hit/miss counts and size of the :meth:`embed_query` cache."""
        with self._cache_lock:
            return CacheInfo(self._hits, self._misses, self._cache_size, len(self._cache))

    def cache_clear(self) -> None:
        """Empty the :meth:`embed_query` cache and reset its statistics."""
        with self._cache_lock:
            self._cache.clear()
            self._hits = self._misses = 0
