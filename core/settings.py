"""The four settings groups of :class:`~zep_core.config.MemoryConfig`, each frozen and validated.

- :class:`ScoringSettings` (``config.scoring``): how GetContext finds and ranks facts;
  :data:`SPEC_SCORING` is the spec's numbers, literally;
- :class:`StorageSettings` (``config.storage``): where the memory lives and how its stores open;
- :class:`LimitSettings` (``config.limits``): bounds on the input;
- :class:`ProviderSettings` (``config.providers``): the embedder and extractor endpoint.

Each group checks its own values when it is made (a :class:`~zep_core.ConfigError`
naming the setting and what it takes). :mod:`zep_core.config` joins them into one
MemoryConfig, re-exports them, and reads the environment when asked.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from .errors import ConfigError

__all__ = ["POSTGRES_EXACT_BELOW", "SPEC_SCORING", "VECTOR_EXACT_BELOW",
           "LimitSettings", "ProviderSettings", "ScoringSettings",
           "StorageSettings"]


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
        graph_fit: how the graph ranks the facts of one hop (the asker's own, in a
            first-person question) among themselves: ``cosine``, by meaning alone;
            ``words``, by their fusion of meaning and words, so that the user's turn that says
            the question's words comes before the ones only on its topic; ``auto`` (default),
            ``words`` for the asker's facts when the asker has more current facts than the
            meaning ranking fetches (``semantic_candidates``), else ``cosine``. In a short
            history the meaning ranking reaches every fact of the asker and orders them well
            (LongMemEval's oracle: .921 at k=10 against .900 with ``words``); in a long one it
            reaches only the nearest, the others come by their words, and ordering those by
            cosine would put each of them below every fact found by meaning (LongMemEval-S
            all@5 .706 against .588). Under ``auto`` a question that is not in the first person
            (``cosine`` is ahead on LoCoMo's adversarial questions) and a request for advice
            ("any tips?": its words are what it wants, not what was said) keep ``cosine``
            (docs/benchmarks.md, issue 46).
        long_history_candidates: how deep the meaning ranking ranks when the graph orders the
            asker's facts by their words (``graph_fit`` ``words``: a first-person question over a
            history longer than ``semantic_candidates``): a fact found by its words is ranked by
            meaning among this many nearest facts, not only among the ``semantic_candidates``
            fetched as candidates (the others rank it; they are not candidates themselves).
        count_weight: weight of the ranking of the asker's own facts that say a number ("10 neon
            tetras", "three sisters"), by cosine, when a first-person input asks how many or how
            much ("How many fish are in my aquariums?"); 0 switches it off.

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
    graph_fit: Literal["auto", "words", "cosine"] = "auto"
    long_history_candidates: int = 100
    count_weight: float = 1.0

    def __post_init__(self) -> None:
        if self.fusion not in ("rrf", "weighted"):
            raise ConfigError(f"fusion must be 'rrf' or 'weighted', got {self.fusion!r}")
        if self.graph_fit not in ("auto", "words", "cosine"):
            raise ConfigError(f"graph_fit must be 'auto', 'words' or 'cosine', got {self.graph_fit!r}")
        if self.graph_mode not in ("boost", "candidates"):
            raise ConfigError(f"graph_mode must be 'boost' or 'candidates', got {self.graph_mode!r}")
        weights = (self.lexical_weight, self.asker_weight, self.lexical_context_weight, self.time_weight,
                   self.count_weight)
        if not all(_is_real(w) and w >= 0 for w in weights):
            raise ConfigError("lexical_weight, lexical_context_weight, asker_weight, time_weight and count_weight "
                              "must be >= 0")
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
        _check_counts(self, "context_limit", "semantic_candidates", "graph_candidates", "long_history_candidates")

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


#: Users with fewer current facts are searched exactly in the record store (bench/vector_tiers.py chose it).
VECTOR_EXACT_BELOW = 1000
#: PostgreSQL tenants with fewer current facts are searched exactly (bench/pg_vectors.py chose it).
POSTGRES_EXACT_BELOW = 10_000


@dataclass(frozen=True, kw_only=True)
class StorageSettings:
    """Where the memory lives, and how its stores are opened.

    Args:
        database_url: a database's URL, e.g. ``postgresql://user:password@host:port/database``:
            keep the records, the lexical index, the vectors (pgvector) and the graph in
            PostgreSQL instead of the data folder's SQLite, Chroma and Kùzu (docs/postgres.md;
            needs the ``postgres`` extra). Its scheme chooses the backend
            (:mod:`zep_core.stores.backends`); one no backend takes is refused when the memory
            opens, naming the known ones. The data folder then holds only this process's
            scratch (the Cypher sandbox's copies). Never shown in repr (it may carry a password).
        busy_timeout_ms: how long the record store waits for a lock another connection holds
            (SQLite's busy timeout), or for the database to answer a connection (PostgreSQL).
        graph_buffer_pool_mb: Kùzu's buffer pool (MB). None (default): a quarter of the
            machine's memory, at least 256 MB (only the pages the graph uses are resident).
            Either is raised at open to four times the graph's size on disk: Kùzu needs its
            graph to fit, and past its pool a write fails or the process crashes (a 256 MB
            pool crashed at a 300 MB graph, 55,600 tenants: bench/findings.md).
        chroma_url: use a Chroma server (``chroma run``) instead of the embedded client.
        chroma_process: run the embedded Chroma client in a child process (default, where
            the platform has ``fork``), so that its writes, which hold
            the interpreter lock throughout, do not stall the rest of the process; False
            runs it in this process.
        vector_timeout_s: the deadline of one call to that child process (writes go in chunks
            that take a few seconds). Past it the child is killed and the call fails with a
            :class:`~zep_core.StoreUnavailableError`; the index writes stay queued in the record store
            and the next open checks the vector index (Chroma can wait forever inside a
            write on a full disk). Closing the memory waits for the child at most as long.
        vector_exact_below: a user with fewer current facts than this has no Chroma
            collection: their query is an exact cosine search over the vectors the record store keeps
            (no memory held between queries, nothing per user on disk but their rows). The
            first index write that finds a user at or above it builds their collection
            (approximate HNSW search, resident while in use); they keep it until a
            rebuild. The default is where approximate search starts to pay, measured by
            ``bench/vector_tiers.py`` (docs/benchmarks.md, "Vector tiers"); 0 gives every
            user a collection, as before.
        postgres_exact_below: on PostgreSQL, a tenant with fewer current facts than this is
            searched exactly (pgvector scores each of their current facts); the first write
            (or search) that finds one at or above it has an HNSW index of their own built in
            the background (approximate, partial to their current facts), used once complete;
            they keep it until forgotten or a rebuild. The default is where the index starts
            to pay, measured by ``bench/pg_vectors.py`` (docs/postgres.md); 0 indexes every
            tenant with a fact. Each index adds a little to every write of facts, so keep it
            for the large tenants.
        vector_collections_open: at most this many users' Chroma collections are resident
            at once; one more closes Chroma (releasing them all; nothing is lost) and it
            opens again on the next call that needs it. Each costs about 3 MB plus its
            vectors (docs/benchmarks.md).
        on_embedder_mismatch: ``error`` (default) or ``reembed`` when the data folder was
            built with another embedder.
        index_writes: ``background`` (default): ``conversation_end`` returns once the record
            store has committed and a background thread brings the indexes (Chroma and Kùzu)
            up to date, many episodes per batch; every read catches up first, so reads see all writes.
            ``sync``: index writes are applied before ``conversation_end`` returns.
        on_missing_index: what opening does when the record store holds entities but the vector
            or graph index holds none of them (``chroma/`` or ``graph`` deleted, a folder copied
            without them, a wiped Chroma server): ``rebuild`` (default) recreates them from
            the record store, logging its progress; ``error`` raises a StoreError naming ``zep-memory
            rebuild``; ``ignore`` opens anyway and serves what the indexes hold (``doctor``
            and ``rebuild`` open this way, to report or repair).

    Raises:
        ConfigError: a value is not one of the choices above.

    """

    database_url: str | None = field(default=None, repr=False)
    busy_timeout_ms: int = 5_000
    graph_buffer_pool_mb: int | None = None
    chroma_url: str | None = None
    chroma_process: bool = True
    vector_timeout_s: float = 30.0
    vector_exact_below: int = VECTOR_EXACT_BELOW
    vector_collections_open: int = 64
    postgres_exact_below: int = POSTGRES_EXACT_BELOW
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
        _check_optional_strings(self, "chroma_url", "database_url")  # the URL's scheme: zep_core.stores.backends
        if not isinstance(self.chroma_process, bool):
            raise ConfigError(f"chroma_process must be True or False, got {self.chroma_process!r}")
        if not _is_real(self.vector_timeout_s) or not 0 < self.vector_timeout_s <= 3600:
            raise ConfigError(f"vector_timeout_s must be seconds in (0, 3600], got {self.vector_timeout_s!r}")
        if not _is_int(self.vector_exact_below) or self.vector_exact_below < 0:
            raise ConfigError(f"vector_exact_below must be an integer >= 0 (0: every user gets a Chroma "
                              f"collection), got {self.vector_exact_below!r}")
        _check_counts(self, "vector_collections_open")
        if not _is_int(self.postgres_exact_below) or self.postgres_exact_below < 0:
            raise ConfigError(f"postgres_exact_below must be an integer >= 0 (0: every tenant gets an HNSW index), "
                              f"got {self.postgres_exact_below!r}")
        pool = self.graph_buffer_pool_mb
        if pool is not None and (not _is_int(pool) or pool < 16):
            raise ConfigError(f"graph_buffer_pool_mb must be an integer >= 16 (MB), or None for the default, "
                              f"got {pool!r}")


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
