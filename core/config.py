"""MemoryConfig: the spec's config block and every query parameter, in one place.

Every number the spec names (the 0.6 threshold, 2 hops, the 0.7/0.3 weights,
limit 10, the 6 h entity refresh) is a field here, so the benchmarks, not the code,
decide the defaults. Nothing is read from the environment unless you call
:meth:`MemoryConfig.from_env`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from .errors import ConfigError

__all__ = ["DEFAULT_SINGLE_VALUED", "SPEC_SCORING", "MemoryConfig"]

#: The spec's GetContext numbers, literally: ``MemoryConfig(**SPEC_SCORING)``. The
#: defaults differ only in the threshold, where the benchmarks (docs/benchmarks.md)
#: measured better evidence recall at 0.2: LoCoMo categories 1-4 all@10 .430 -> .441,
#: LongMemEval .803 -> .824 (MiniLM's cosine between a question and the turn that
#: answers it is mostly 0.2-0.6). Other weights were within noise or worse.
SPEC_SCORING = {"semantic_threshold": 0.6, "semantic_weight": 0.7, "graph_weight": 0.3, "graph_hops": 2,
                "context_limit": 10}

#: Predicates that hold one value at a time: a new value supersedes the old one.
DEFAULT_SINGLE_VALUED = frozenset(
    {
        "lives_in",
        "works_at",
        "works_as",
        "studies_at",
        "born_in",
        "married_to",
        "is_named",
        "age",
        "job_title",
        "relationship_status",
    }
)


@dataclass(frozen=True, kw_only=True)
class MemoryConfig:
    """Configuration of a :class:`zep_core.Memory`.

    Args:
        data_dir: the data folder: ``zep.db``, ``chroma/`` and ``graph/`` live in it.
        embedder: an :class:`~zep_core.providers.base.Embedder`; ``None`` is the offline
            all-MiniLM-L6-v2 int8 model shipped in the package.
        extractor: an :class:`~zep_core.providers.base.Extractor`; ``None`` is the
            offline rule-based extractor.
        summarizer: a :class:`~zep_core.providers.base.Summarizer`; ``None`` is extractive.
        semantic_threshold: the spec's ``semantic_match(threshold: …)``; 0.2 by default,
            the benchmark's winner (see ``SPEC_SCORING`` for the spec's literal 0.6).
        graph_hops: the spec's ``graph_match(hops: 2)``.
        semantic_weight, graph_weight: the spec's ``sm * 0.7 + gm * 0.3``.
        context_limit: the spec's ``limit 10``.
        require_both: the spec's literal AND of both matches (default: either).
        semantic_candidates: how many nearest vectors to fetch from Chroma per query.
        graph_candidates: cap on facts found through the graph per query.
        hop_scores: graph score of a fact at 1 and 2 hops from an entity named in the input.
        single_valued_predicates: predicates whose new value supersedes the old.
        entity_refresh_interval: the spec's ``every 6h``.
        auto_refresh: run :meth:`Memory.refresh_entities` on a background schedule.
        default_speaker: the name "I" resolves to for ``user`` messages without a name.
        max_message_chars, max_messages_per_episode, max_facts_per_episode: input bounds.
        busy_timeout_ms: SQLite busy timeout.
        graph_buffer_pool_mb: Kùzu buffer pool size.
        chroma_url: use a Chroma server (``chroma run``) instead of the embedded client.
        on_embedder_mismatch: ``error`` (default) or ``reembed`` when the data folder was
            built with another embedder.
        strict_timezones: refuse naive datetimes instead of reading them as UTC.
        index_writes: ``background`` (default): ``conversation_end`` returns once SQLite has
            committed and a background thread brings Chroma and Kùzu up to date, many
            episodes per batch; every read catches up first, so reads see all writes.
            ``sync``: index writes are applied before ``conversation_end`` returns.
        embedding_provider, extractor_provider: ``auto`` (default), ``local`` or ``openai``.
            ``auto`` is ``openai`` when ``openai_api_key`` or ``openai_base_url`` is set,
            else the offline default. The extractor's choice also picks the summarizer.
            An explicit ``embedder``/``extractor``/``summarizer`` object wins over both.
        openai_api_key: the key of the OpenAI-compatible endpoint (never shown in repr).
        openai_base_url: the endpoint, e.g. ``http://localhost:11434/v1`` for Ollama;
            ``None`` is api.openai.com.
        extractor_model: the chat model for extraction and summaries (default ``gpt-4o-mini``).
        embedding_model: the embedding model (default ``text-embedding-3-small``).
        embedding_dimensions: ask the endpoint for shorter vectors.
        request_timeout: seconds per request to the endpoint.
        max_retries: retries of a request on 429/5xx/timeouts, with backoff.
        max_concurrency: requests in flight at once to the endpoint.
        max_output_tokens: cap on the tokens of each LLM reply.

    """

    data_dir: str | Path = "./data"
    embedder: Any = None
    extractor: Any = None
    summarizer: Any = None
    semantic_threshold: float = 0.2
    graph_hops: int = 2
    semantic_weight: float = 0.7
    graph_weight: float = 0.3
    context_limit: int = 10
    require_both: bool = False
    semantic_candidates: int = 50
    graph_candidates: int = 500
    hop_scores: tuple[float, ...] = (1.0, 0.5)
    single_valued_predicates: frozenset[str] = DEFAULT_SINGLE_VALUED
    entity_refresh_interval: timedelta = timedelta(hours=6)
    auto_refresh: bool = False
    default_speaker: str = "User"
    max_message_chars: int = 100_000
    max_messages_per_episode: int = 2_000
    max_facts_per_episode: int = 1_000
    busy_timeout_ms: int = 5_000
    graph_buffer_pool_mb: int = 256
    chroma_url: str | None = None
    on_embedder_mismatch: Literal["error", "reembed"] = "error"
    strict_timezones: bool = False
    index_writes: Literal["background", "sync"] = "background"
    embedding_provider: Literal["auto", "local", "openai"] = "auto"
    extractor_provider: Literal["auto", "local", "openai"] = "auto"
    openai_api_key: str | None = field(default=None, repr=False)
    openai_base_url: str | None = None
    extractor_model: str | None = None
    embedding_model: str | None = None
    embedding_dimensions: int | None = None
    request_timeout: float = 60.0
    max_retries: int = 4
    max_concurrency: int = 4
    max_output_tokens: int = 4096
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 0 <= self.semantic_threshold <= 1:
            raise ConfigError(f"semantic_threshold must be in [0, 1], got {self.semantic_threshold}")
        if self.semantic_weight < 0 or self.graph_weight < 0:
            raise ConfigError("semantic_weight and graph_weight must be >= 0")
        if not 0 <= self.graph_hops <= 3:
            raise ConfigError(f"graph_hops must be 0..3, got {self.graph_hops}")
        if len(self.hop_scores) < self.graph_hops:
            raise ConfigError(f"hop_scores needs one score per hop ({self.graph_hops}), got {self.hop_scores}")
        for name in ("context_limit", "semantic_candidates", "max_message_chars",
                     "max_messages_per_episode", "max_facts_per_episode"):
            value = getattr(self, name)  # NaN or "10" would switch a bound off or fail obscurely
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be an integer >= 1, got {value!r}")
        if self.index_writes not in ("background", "sync"):
            raise ConfigError("index_writes must be 'background' or 'sync'")
        if self.on_embedder_mismatch not in ("error", "reembed"):
            raise ConfigError("on_embedder_mismatch must be 'error' or 'reembed'")
        object.__setattr__(self, "single_valued_predicates", frozenset(self.single_valued_predicates))
        self._check_provider_settings()

    def _check_provider_settings(self) -> None:
        for name in ("embedding_provider", "extractor_provider"):
            if getattr(self, name) not in ("auto", "local", "openai"):
                raise ConfigError(f"{name} must be 'auto', 'local' or 'openai', got {getattr(self, name)!r}")
        if not self.request_timeout > 0:
            raise ConfigError(f"request_timeout must be > 0 seconds, got {self.request_timeout}")
        for name in ("max_concurrency", "max_output_tokens"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.max_retries < 0:
            raise ConfigError(f"max_retries must be >= 0, got {self.max_retries}")
        if self.embedding_dimensions is not None and self.embedding_dimensions < 1:
            raise ConfigError(f"embedding_dimensions must be >= 1, got {self.embedding_dimensions}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> MemoryConfig:
        """A config with the endpoint taken from ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL``.

        With a key (or a base URL) and no explicit provider choice, the spec's models
        are used (``gpt-4o-mini``, ``text-embedding-3-small``); with neither, the
        offline defaults. The environment is read here, at call time, never at import.

        Args:
            environ: where to read the variables (default ``os.environ``).
            **overrides: any MemoryConfig field; wins over the environment.

        Example:
            >>> MemoryConfig.from_env({"OPENAI_API_KEY": "sk-..."}, data_dir="./data").openai_api_key
            'sk-...'

        """
        return cls(**{**_endpoint_settings(os.environ if environ is None else environ), **overrides})

    @classmethod
    def from_mnm(cls, path: str | Path, *, environ: Mapping[str, str] | None = None,
                 **overrides: Any) -> MemoryConfig:
        """A config from the ``config { … }`` block of a ``.mnm`` spec file.

        ``storage: sqlite("./data/zep.db")`` sets ``data_dir`` (relative to the spec
        file's folder); ``embedding:`` and ``extractor:`` pick the providers and models;
        ``vector: auto`` and ``graph: auto`` are Chroma and Kùzu. See :mod:`zep_core.mnm`.

        Args:
            path: the ``.mnm`` file.
            environ: also read ``OPENAI_API_KEY``/``OPENAI_BASE_URL`` from this mapping
                (pass ``os.environ``); by default the environment is not read.
            **overrides: any MemoryConfig field; wins over the file.

        Raises:
            ConfigError: the file has no config block, or an unknown or malformed entry
                (the message names the line).

        """
        from .mnm import read_config_block

        env = _endpoint_settings(environ) if environ is not None else {}
        return cls(**{**read_config_block(path), **env, **overrides})

    @property
    def data_path(self) -> Path:
        """The data folder as an absolute path."""
        return Path(self.data_dir).expanduser().resolve()

    def with_(self, **changes: Any) -> MemoryConfig:
        """Return a copy with some fields changed (unknown names are a ConfigError)."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise ConfigError(f"unknown MemoryConfig field(s): {', '.join(unknown)}")
        return replace(self, **changes)


def _endpoint_settings(environ: Mapping[str, str]) -> dict[str, Any]:
    """``openai_api_key``/``openai_base_url`` from the usual variables, where set and non-empty."""
    names = {"openai_api_key": "OPENAI_API_KEY", "openai_base_url": "OPENAI_BASE_URL"}
    return {field_name: environ[var] for field_name, var in names.items() if environ.get(var, "").strip()}
