"""MemoryConfig: the spec's config block and every query parameter, in one place.

Every number the spec names (the 0.6 threshold, 2 hops, the 0.7/0.3 weights,
limit 10, the 6 h entity refresh) is a field here, so the benchmarks, not the code,
decide the defaults. Nothing is read from the environment unless you call
:meth:`MemoryConfig.from_env`.

The settings come in four frozen, validated groups, each a field of
:class:`MemoryConfig` (written in :mod:`~zep_core.settings`, re-exported here):

- :class:`ScoringSettings` (``config.scoring``): how GetContext finds and ranks facts;
- :class:`StorageSettings` (``config.storage``): where the memory lives and how its stores open;
- :class:`LimitSettings` (``config.limits``): bounds on the input;
- :class:`ProviderSettings` (``config.providers``): the embedder and extractor endpoint.

Every group field can also be given and read flat, ``MemoryConfig(semantic_threshold=0.5)``
and ``config.semantic_threshold``. A MemoryConfig is hashable, so it can key a cache.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .predicates import single_valued
from .settings import (
    SPEC_SCORING,
    VECTOR_EXACT_BELOW,
    LimitSettings,
    ProviderSettings,
    ScoringSettings,
    StorageSettings,
)

__all__ = ["DEFAULT_SINGLE_VALUED", "SPEC_SCORING", "VECTOR_EXACT_BELOW", "LimitSettings", "MemoryConfig",
           "ProviderSettings", "ScoringSettings", "StorageSettings"]

_GROUPS: dict[str, type] = {"scoring": ScoringSettings, "storage": StorageSettings, "limits": LimitSettings,
                            "providers": ProviderSettings}
#: Each flat setting name -> the group field that holds it.
_FLAT = {f.name: group for group, kind in _GROUPS.items() for f in fields(kind)}

#: Predicates that hold one value at a time: a new value supersedes the old one.
DEFAULT_SINGLE_VALUED = single_valued()  # from the predicate registry (zep_core.predicates)


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
        storage: :class:`StorageSettings`: ``database_url``, ``busy_timeout_ms``, ``graph_buffer_pool_mb``,
            ``chroma_url``, ``chroma_process``, ``vector_timeout_s``, ``vector_exact_below``,
            ``vector_collections_open``, ``postgres_exact_below``, ``on_embedder_mismatch``,
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
