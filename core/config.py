"""MemoryConfig: the spec's config block and every query parameter, in one place.

Every number the spec names (the 0.6 threshold, 2 hops, the 0.7/0.3 weights,
limit 10, the 6 h entity refresh) is a field here, so the benchmarks, not the code,
decide the defaults. Nothing is read from the environment unless you call
:meth:`MemoryConfig.from_env`.

The settings come in four frozen, validated groups, each a field of
:class:`MemoryConfig`:

- :class:`ScoringSettings` (``config.scoring``): how GetContext finds and ranks facts;
- :class:`StorageSettings` (``config.storage``): SQLite, Chroma and Kùzu;
- :class:`LimitSettings` (``config.limits``): bounds on the input;
- :class:`ProviderSettings` (``config.providers``): the embedder and extractor endpoint.

Every group field can also be given and read flat, ``MemoryConfig(semantic_threshold=0.5)``
and ``config.semantic_threshold``. A MemoryConfig is hashable, so it can key a cache.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from .errors import ConfigError

__all__ = ["DEFAULT_SINGLE_VALUED", "SPEC_SCORING", "LimitSettings", "MemoryConfig", "ProviderSettings",
           "ScoringSettings", "StorageSettings"]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_real(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_counts(settings: Any, *names: str) -> None:
    """Each named field is an integer >= 1 (NaN or "10" would switch a bound off or fail obscurely)."""
    for name in names:
        value = getattr(settings, name)
        if not _is_int(value) or value < 1:
            raise ConfigError(f"{name} must be an integer >= 1, got {value!r}")


def _check_optional_strings(settings: Any, *names: str) -> None:
    """Each named field is a string or None; the message names the type only (it may be the API key)."""
    for name in names:
        value = getattr(settings, name)
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"{name} must be a string or None, got a {type(value).__name__}")


@dataclass(frozen=True, kw_only=True)
class ScoringSettings:
    """How GetContext finds and ranks facts: the spec's ``semantic_match``/``graph_match`` numbers.

    It is also a read-only mapping of its field names (``keys()`` and ``[name]``), so it
    unpacks into MemoryConfig's flat keywords: ``MemoryConfig(**SPEC_SCORING)`` is
    ``MemoryConfig(scoring=SPEC_SCORING)``.

    Args:
        semantic_threshold: the spec's ``semantic_match(threshold: …)``; 0.1 by default:
            in the rank fusion a fact's rank decides, and the threshold only keeps out what
            is unrelated (see ``SPEC_SCORING`` for the spec's literal 0.6, which loses the
            evidence MiniLM scores between 0.2 and 0.6).
        graph_hops: the spec's ``graph_match(hops: 2)``.
        semantic_weight, graph_weight: the spec's ``sm * 0.7 + gm * 0.3``; in the rank
            fusion, the weights of the semantic and the graph rankings.
        context_limit: the spec's ``limit 10``.
        require_both: the spec's literal AND of both matches (default: either).
        semantic_candidates: how many nearest vectors to fetch from Chroma per query.
        graph_candidates: cap on facts found through the graph per query; they are ranked
            by their match to the input (not by age) before the cap.
        hop_scores: graph score of a fact at 1 and 2 hops from an entity named in the input.
        fusion: ``rrf`` (default): reciprocal rank fusion of the semantic, lexical and
            graph rankings, each weighted (``semantic_weight / (rrf_k + rank)`` …);
            ``weighted``: the spec's weighted sum of scores, ``w_s * sm + w_g * gm``, plus
            ``lexical_weight`` times the BM25 score over the query's best BM25 score.
        lexical_weight: weight of the lexical (FTS5 BM25) ranking; 0 switches it off.
        lexical_candidates: how many facts to take from the lexical index per query.
        rrf_k: the RRF constant: larger flattens the difference between ranks.
        graph_mode: ``boost`` (default): the graph ranks only the facts that also match
            by meaning or by words, so a person's hundreds of facts do not flood the
            context; ``candidates``: every fact near a named entity is a candidate.
        newer_first_similarity: when two current facts of the same subject in the result
            are at least this similar (cosine of their vectors), the older ranks right
            below the newer and is marked as earlier (``I lead 3 engineers`` → ``I now
            lead 5``); 1.0 switches it off. Neither fact is retired.
        asker_weight: the graph weight of the facts touching the asker when the input is
            in the first person ("what did I say about…" is about the asker's own
            memory, so their facts come before the assistant's and others' among equals);
            ``graph_weight`` is used for the other entities the input names.
        lexical_context_weight: how much the message before a fact (the question a reply
            answers) counts in its lexical match, relative to the fact's own words;
            0 looks up the fact's own words only.
        time_weight: weight of the time ranking when the input names a time ("two months
            ago", "last Saturday", "in January"): the candidates that became true then,
            ranked by cosine; 0 switches it off.

    Raises:
        ConfigError: a value is out of range or of the wrong type.

    Example:
        >>> ScoringSettings(semantic_threshold=0.5)["semantic_threshold"]
        0.5

    """

    semantic_threshold: float = 0.1
    graph_hops: int = 2
    semantic_weight: float = 0.7
    graph_weight: float = 0.3
    context_limit: int = 10
    require_both: bool = False
    semantic_candidates: int = 50
    graph_candidates: int = 500
    hop_scores: tuple[float, ...] = (1.0, 0.5)
    fusion: Literal["rrf", "weighted"] = "rrf"
    lexical_weight: float = 1.0
    lexical_candidates: int = 50
    rrf_k: int = 10
    graph_mode: Literal["boost", "candidates"] = "boost"
    newer_first_similarity: float = 0.9
    asker_weight: float = 3.0
    lexical_context_weight: float = 1.0
    time_weight: float = 1.0

    def __post_init__(self) -> None:
        if self.fusion not in ("rrf", "weighted"):
            raise ConfigError(f"fusion must be 'rrf' or 'weighted', got {self.fusion!r}")
        if self.graph_mode not in ("boost", "candidates"):
            raise ConfigError(f"graph_mode must be 'boost' or 'candidates', got {self.graph_mode!r}")
        if not all(_is_real(w) and w >= 0 for w in (self.lexical_weight, self.asker_weight,
                                                      self.lexical_context_weight, self.time_weight)):
            raise ConfigError("lexical_weight, lexical_context_weight, asker_weight and time_weight must be >= 0")
        if not _is_real(self.newer_first_similarity) or not 0 <= self.newer_first_similarity <= 1:
            raise ConfigError(f"newer_first_similarity must be in [0, 1], got {self.newer_first_similarity!r}")
        _check_counts(self, "lexical_candidates", "rrf_k")
        if not _is_real(self.semantic_threshold) or not 0 <= self.semantic_threshold <= 1:
            raise ConfigError(f"semantic_threshold must be in [0, 1], got {self.semantic_threshold!r}")
        if not all(_is_real(w) and w >= 0 for w in (self.semantic_weight, self.graph_weight)):
            raise ConfigError("semantic_weight and graph_weight must be >= 0")
        if not _is_int(self.graph_hops) or not 0 <= self.graph_hops <= 3:
            raise ConfigError(f"graph_hops must be 0..3, got {self.graph_hops!r}")
        raw = self.hop_scores
        scores = tuple(raw) if isinstance(raw, Iterable) and not isinstance(raw, (str, bytes)) else None
        if scores is None or not all(map(_is_real, scores)):
            raise ConfigError(f"hop_scores must be a sequence of numbers, got {raw!r}")
        object.__setattr__(self, "hop_scores", tuple(map(float, scores)))
        if len(self.hop_scores) < self.graph_hops:
            raise ConfigError(f"hop_scores needs one score per hop ({self.graph_hops}), got {self.hop_scores}")
        _check_counts(self, "context_limit", "semantic_candidates", "graph_candidates")

    def keys(self) -> tuple[str, ...]:
        """The field names, so that ``**settings`` gives MemoryConfig's flat keywords."""
        return tuple(f.name for f in fields(self))

    def __getitem__(self, name: str) -> Any:
        if name not in self.keys():
            raise KeyError(name)
        return getattr(self, name)


#: The spec's GetContext numbers, the spec literally: ``MemoryConfig(scoring=SPEC_SCORING)``
#: or ``MemoryConfig(**SPEC_SCORING)``. ``semantic_match(threshold: 0.6)``,
#: ``graph_match(hops: 2)`` (every fact near a named entity is a candidate),
#: ``order by (sm * 0.7 + gm * 0.3) desc limit 10``, and nothing else: no lexical signal,
#: no newer-first ordering. The defaults differ; docs/benchmarks.md reports both.
SPEC_SCORING = ScoringSettings(semantic_threshold=0.6, semantic_weight=0.7, graph_weight=0.3, graph_hops=2,
                               context_limit=10, fusion="weighted", lexical_weight=0.0,
                               graph_mode="candidates", newer_first_similarity=1.0)


#: Users with fewer current facts are searched exactly in SQLite (bench/vector_tiers.py chose it).
VECTOR_EXACT_BELOW = 1000


@dataclass(frozen=True, kw_only=True)
class StorageSettings:
    """How the data folder's stores are opened.

    Args:
        database_url: ``postgresql://user:password@host:port/database``: keep the records, the
            lexical index, the vectors (pgvector) and the graph in PostgreSQL instead of the
            data folder's SQLite, Chroma and Kùzu (docs/postgres.md). Needs the ``postgres``
            extra. The data folder then holds only this process's scratch (the Cypher
            sandbox's copies). Never shown in repr (it may carry a password).
        busy_timeout_ms: SQLite busy timeout.
        graph_buffer_pool_mb: Kùzu buffer pool size.
        chroma_url: use a Chroma server (``chroma run``) instead of the embedded client.
        chroma_process: run the embedded Chroma client in a child process (default, where
            the platform has ``fork``), so that its writes, which hold
            the interpreter lock throughout, do not stall the rest of the process; False
            runs it in this process.
        vector_timeout_s: the deadline of one call to that child process (writes go in chunks
            that take a few seconds). Past it the child is killed and the call fails with a
            :class:`~zep_core.StoreUnavailableError`; the index writes stay queued in SQLite
            and the next open checks the vector index (Chroma can wait forever inside a
            write on a full disk). Closing the memory waits for the child at most as long.
        vector_exact_below: a user with fewer current facts than this has no Chroma
            collection: their query is an exact cosine search over the vectors SQLite keeps
            (no memory held between queries, nothing per user on disk but their rows). The
            first index write that finds a user at or above it builds their collection
            (approximate HNSW search, resident while in use); they keep it until a
            rebuild. The default is where approximate search starts to pay, measured by
            ``bench/vector_tiers.py`` (docs/benchmarks.md, "Vector tiers"); 0 gives every
            user a collection, as before.
        vector_collections_open: at most this many users' Chroma collections are resident
            at once; one more closes Chroma (releasing them all; nothing is lost) and it
            opens again on the next call that needs it. Each costs about 3 MB plus its
            vectors (docs/benchmarks.md).
        on_embedder_mismatch: ``error`` (default) or ``reembed`` when the data folder was
            built with another embedder.
        index_writes: ``background`` (default): ``conversation_end`` returns once SQLite has
            committed and a background thread brings Chroma and Kùzu up to date, many
            episodes per batch; every read catches up first, so reads see all writes.
            ``sync``: index writes are applied before ``conversation_end`` returns.
        on_missing_index: what opening does when SQLite holds entities but the vector or
            graph index holds none of them (``chroma/`` or ``graph`` deleted, a folder copied
            without them, a wiped Chroma server): ``rebuild`` (default) recreates them from
            SQLite, logging its progress; ``error`` raises a StoreError naming ``zep-memory
            rebuild``; ``ignore`` opens anyway and serves what the indexes hold (``doctor``
            and ``rebuild`` open this way, to report or repair).

    Raises:
        ConfigError: a value is not one of the choices above.

    """

    database_url: str | None = field(default=None, repr=False)
    busy_timeout_ms: int = 5_000
    graph_buffer_pool_mb: int = 256
    chroma_url: str | None = None
    chroma_process: bool = True
    vector_timeout_s: float = 30.0
    vector_exact_below: int = VECTOR_EXACT_BELOW
    vector_collections_open: int = 64
    on_embedder_mismatch: Literal["error", "reembed"] = "error"
    index_writes: Literal["background", "sync"] = "background"
    on_missing_index: Literal["rebuild", "error", "ignore"] = "rebuild"

    def __post_init__(self) -> None:
        if self.on_missing_index not in ("rebuild", "error", "ignore"):
            raise ConfigError(f"on_missing_index must be 'rebuild', 'error' or 'ignore', got {self.on_missing_index!r}")
        if self.index_writes not in ("background", "sync"):
            raise ConfigError("index_writes must be 'background' or 'sync'")
        if self.on_embedder_mismatch not in ("error", "reembed"):
            raise ConfigError("on_embedder_mismatch must be 'error' or 'reembed'")
        _check_optional_strings(self, "chroma_url", "database_url")
        if self.database_url is not None and not self.database_url.startswith(("postgresql://", "postgres://")):
            raise ConfigError("database_url must be a PostgreSQL URL (postgresql://user:password@host:port/database), "
                              f"got one starting {self.database_url.split(':', 1)[0]!r}")
        if not isinstance(self.chroma_process, bool):
            raise ConfigError(f"chroma_process must be True or False, got {self.chroma_process!r}")
        if not _is_real(self.vector_timeout_s) or not 0 < self.vector_timeout_s <= 3600:
            raise ConfigError(f"vector_timeout_s must be seconds in (0, 3600], got {self.vector_timeout_s!r}")
        if not _is_int(self.vector_exact_below) or self.vector_exact_below < 0:
            raise ConfigError(f"vector_exact_below must be an integer >= 0 (0: every user gets a Chroma "
                              f"collection), got {self.vector_exact_below!r}")
        _check_counts(self, "vector_collections_open")


@dataclass(frozen=True, kw_only=True)
class LimitSettings:
    """Bounds on what ``conversation_end`` and the queries accept.

    Args:
        max_message_chars, max_messages_per_episode, max_facts_per_episode: input bounds.
        strict_timezones: refuse naive datetimes instead of reading them as UTC.
        cypher_timeout_s: how long one ``cypher()`` query may run.
        cypher_max_rows: how many rows one ``cypher()`` query may return.
        cypher_memory_mb: the address space of the process ``cypher()`` queries run in
            (:mod:`zep_core.stores.sandbox`); about 0.4 GB of it per cached tenant graph.
        cypher_cache_tenants: tenant graphs that process keeps between queries.
        max_extraction_attempts: extraction attempts an episode gets (``conversation_end``
            and each ``maintain()`` retry) before it is marked ``failed`` with its last
            error; a failed episode keeps its messages and is no longer retried.

    Raises:
        ConfigError: a bound is not an integer >= 1.

    """

    max_message_chars: int = 100_000
    max_messages_per_episode: int = 2_000
    max_facts_per_episode: int = 1_000
    strict_timezones: bool = False
    cypher_timeout_s: float = 10.0
    cypher_max_rows: int = 10_000
    cypher_memory_mb: int = 4096
    cypher_cache_tenants: int = 4
    max_extraction_attempts: int = 3

    def __post_init__(self) -> None:
        _check_counts(self, "max_message_chars", "max_messages_per_episode", "max_facts_per_episode",
                      "cypher_max_rows", "cypher_cache_tenants", "max_extraction_attempts")
        if not _is_int(self.cypher_memory_mb) or self.cypher_memory_mb < 512:
            raise ConfigError(f"cypher_memory_mb must be an integer >= 512, got {self.cypher_memory_mb!r}")
        if not _is_real(self.cypher_timeout_s) or not 0 < self.cypher_timeout_s <= 3600:
            raise ConfigError(f"cypher_timeout_s must be seconds in (0, 3600], got {self.cypher_timeout_s!r}")


@dataclass(frozen=True, kw_only=True)
class ProviderSettings:
    """Which embedder and extractor to build, and how to reach an OpenAI-compatible endpoint.

    Args:
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

    Raises:
        ConfigError: a value is out of range or of the wrong type.

    """

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

    def __post_init__(self) -> None:
        for name in ("embedding_provider", "extractor_provider"):
            if getattr(self, name) not in ("auto", "local", "openai"):
                raise ConfigError(f"{name} must be 'auto', 'local' or 'openai', got {getattr(self, name)!r}")
        _check_optional_strings(self, "openai_api_key", "openai_base_url", "extractor_model", "embedding_model")
        if not _is_real(self.request_timeout) or not self.request_timeout > 0:
            raise ConfigError(f"request_timeout must be > 0 seconds, got {self.request_timeout!r}")
        for name in ("max_concurrency", "max_output_tokens"):
            if not _is_int(getattr(self, name)) or getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)!r}")
        if not _is_int(self.max_retries) or self.max_retries < 0:
            raise ConfigError(f"max_retries must be >= 0, got {self.max_retries!r}")
        dims = self.embedding_dimensions
        if dims is not None and (not _is_int(dims) or dims < 1):
            raise ConfigError(f"embedding_dimensions must be >= 1, got {dims!r}")


_GROUPS: dict[str, type] = {"scoring": ScoringSettings, "storage": StorageSettings, "limits": LimitSettings,
                            "providers": ProviderSettings}
#: Each flat setting name -> the group field that holds it.
_FLAT = {f.name: group for group, kind in _GROUPS.items() for f in fields(kind)}

#: Predicates that hold one value at a time: a new value supersedes the old one.
DEFAULT_SINGLE_VALUED = frozenset({"lives_in", "works_at", "works_as", "studies_at", "born_in", "married_to",
                                   "is_named", "age", "job_title", "relationship_status", "size"})


@dataclass(frozen=True, init=False)
class MemoryConfig:
    """Configuration of a :class:`zep_core.Memory`: frozen, hashable, validated.

    Takes keywords only: its own fields, the four groups, and any group field by its
    flat name, which changes that field of the group (``MemoryConfig(scoring=s,
    semantic_threshold=0.4)`` is ``s`` with that one field replaced). Flat names read
    through too: ``config.semantic_threshold`` is ``config.scoring.semantic_threshold``.

    Args:
        data_dir: the data folder: ``zep.db``, ``chroma/`` and ``graph/`` live in it.
        embedder: an :class:`~zep_core.providers.base.Embedder`; ``None`` is the offline
            all-MiniLM-L6-v2 int8 model shipped in the package.
        extractor: an :class:`~zep_core.providers.base.Extractor`; ``None`` is the
            offline rule-based extractor.
        summarizer: a :class:`~zep_core.providers.base.Summarizer`; ``None`` is extractive.
        single_valued_predicates: predicates whose new value supersedes the old.
        entity_refresh_interval: the spec's ``every 6h``.
        auto_refresh: run :meth:`Memory.refresh_entities` on a background schedule.
        default_speaker: the name "I" resolves to for ``user`` messages without a name.
        assistant_speaker: the speaker of ``assistant`` messages without a name, so what
            the assistant said is memory too ("what did you recommend last time?") and
            "you" in a question names it; None leaves unnamed assistant turns unindexed.
        end_left_sessions: end a chat session left with turns waiting to be learned from
            (:mod:`zep_core.sessions`): when its user starts another session, when
            ``maintain()`` finds it idle ``session_idle_after``, and on ``close()``.
        session_idle_after: how long a session's last waiting turn must be old for
            ``maintain()`` to end it.
        scoring: :class:`ScoringSettings`: ``semantic_threshold``, ``graph_hops``,
            ``semantic_weight``, ``graph_weight``, ``context_limit``, ``require_both``,
            ``semantic_candidates``, ``graph_candidates``, ``hop_scores``, ``fusion``,
            ``lexical_weight``, ``lexical_candidates``, ``lexical_context_weight``, ``rrf_k``,
            ``graph_mode``, ``asker_weight``, ``newer_first_similarity``.
        storage: :class:`StorageSettings`: ``busy_timeout_ms``, ``graph_buffer_pool_mb``,
            ``chroma_url``, ``chroma_process``, ``vector_timeout_s``, ``vector_exact_below``,
            ``vector_collections_open``, ``on_embedder_mismatch``,
            ``index_writes``, ``on_missing_index``.
        limits: :class:`LimitSettings`: ``max_message_chars``, ``max_messages_per_episode``,
            ``max_facts_per_episode``, ``strict_timezones``, ``max_extraction_attempts``.
        providers: :class:`ProviderSettings`: ``embedding_provider``, ``extractor_provider``,
            ``openai_api_key`` (never shown in repr), ``openai_base_url``, ``extractor_model``,
            ``embedding_model``, ``embedding_dimensions``, ``request_timeout``,
            ``max_retries``, ``max_concurrency``, ``max_output_tokens``.

    Raises:
        ConfigError: an unknown setting (the message suggests the closest name), a group
            of the wrong class, or a value out of range or of the wrong type.

    Example:
        >>> config = MemoryConfig(data_dir="./data", semantic_threshold=0.5, chroma_url="http://x")
        >>> config.scoring.semantic_threshold, config.chroma_url, hash(config) == hash(config.with_())
        (0.5, 'http://x', True)

    """

    data_dir: str | Path = "./data"
    embedder: Any = None
    extractor: Any = None
    summarizer: Any = None
    single_valued_predicates: frozenset[str] = DEFAULT_SINGLE_VALUED
    entity_refresh_interval: timedelta = timedelta(hours=6)
    auto_refresh: bool = False
    default_speaker: str = "User"
    assistant_speaker: str | None = "Assistant"
    end_left_sessions: bool = True
    session_idle_after: timedelta = timedelta(minutes=30)
    scoring: ScoringSettings = ScoringSettings()
    storage: StorageSettings = StorageSettings()
    limits: LimitSettings = LimitSettings()
    providers: ProviderSettings = ProviderSettings()

    def __init__(self, **settings: Any) -> None:
        own = fields(self)
        unknown = [name for name in settings if name not in _FLAT and name not in {f.name for f in own}]
        if unknown:
            raise _unknown_settings(unknown, [f.name for f in own] + list(_FLAT))
        changes: dict[str, dict[str, Any]] = {group: {} for group in _GROUPS}
        for name, value in settings.items():
            if name in _FLAT:
                changes[_FLAT[name]][name] = value
        for f in own:
            value = settings.get(f.name, f.default)
            if f.name in _GROUPS:
                if not isinstance(value, _GROUPS[f.name]):
                    raise ConfigError(f"{f.name} must be a {_GROUPS[f.name].__name__}, got {type(value).__name__}")
                value = replace(value, **changes[f.name]) if changes[f.name] else value
            object.__setattr__(self, f.name, value)
        predicates = self.single_valued_predicates
        if isinstance(predicates, str) or not isinstance(predicates, Iterable):
            raise ConfigError(f"single_valued_predicates must be a collection of names, got {predicates!r}")
        object.__setattr__(self, "single_valued_predicates", frozenset(predicates))
        if not isinstance(self.end_left_sessions, bool):
            raise ConfigError(f"end_left_sessions must be True or False, got {self.end_left_sessions!r}")
        if not isinstance(self.session_idle_after, timedelta) or self.session_idle_after <= timedelta(0):
            raise ConfigError(f"session_idle_after must be a positive timedelta, got {self.session_idle_after!r}")
        speaker = self.assistant_speaker
        if speaker is not None and (not isinstance(speaker, str) or not speaker.strip()):
            raise ConfigError(f"assistant_speaker must be a non-empty string or None, got {speaker!r}")

    def __getattr__(self, name: str) -> Any:
        """A group's field by its flat name: ``config.chroma_url`` is ``config.storage.chroma_url``."""
        group = _FLAT.get(name)
        if group is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(getattr(self, group), name)

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *_FLAT})

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> MemoryConfig:
        """A config with the endpoint taken from ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL``.

        With a key (or a base URL) and no explicit provider choice, the spec's models
        are used (``gpt-4o-mini``, ``text-embedding-3-small``); with neither, the
        offline defaults. The environment is read here, at call time, never at import.

        Args:
            environ: where to read the variables (default ``os.environ``).
            **overrides: any MemoryConfig setting, flat or a group; wins over the environment.

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
            **overrides: any MemoryConfig setting, flat or a group; wins over the file.

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
        """Return a copy with some settings changed, by flat or group name.

        Raises:
            ConfigError: an unknown name, or a value the constructor refuses.

        Example:
            >>> MemoryConfig().with_(semantic_threshold=0.6, storage=StorageSettings(index_writes="sync")).index_writes
            'sync'

        """
        return type(self)(**{**{f.name: getattr(self, f.name) for f in fields(self)}, **changes})


def _unknown_settings(names: list[str], known: list[str]) -> ConfigError:
    """The error for unknown setting names, each with the closest known name where there is one."""
    described = []
    for name in names:
        close = difflib.get_close_matches(name, known, n=1)
        described.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    plural = "s" if len(names) > 1 else ""
    return ConfigError(f"unknown MemoryConfig setting{plural}: {', '.join(described)}; the settings are "
                       "MemoryConfig's fields and those of ScoringSettings, StorageSettings, LimitSettings "
                       "and ProviderSettings")


def _endpoint_settings(environ: Mapping[str, str]) -> dict[str, Any]:
    """``openai_api_key``/``openai_base_url`` from the usual variables, where set and non-empty."""
    names = {"openai_api_key": "OPENAI_API_KEY", "openai_base_url": "OPENAI_BASE_URL"}
    return {field_name: environ[var] for field_name, var in names.items() if environ.get(var, "").strip()}
