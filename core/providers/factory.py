"""Choose and build the providers a :class:`~zep_core.MemoryConfig` asks for.

The one place that decides between the offline defaults and an OpenAI-compatible
endpoint, so the rest of the core never asks which provider it has:

* an ``embedder``/``extractor``/``summarizer`` object in the config is used as it is;
* else ``embedding_provider``/``extractor_provider`` decide: ``local`` is the offline
  default (all-MiniLM-L6-v2 int8, rules, extractive summaries), ``openai`` the
  OpenAI-compatible providers, and ``auto`` is ``openai`` when the config has an API
  key or a base URL, else ``local``;
* OpenAI providers share one :class:`~zep_core.providers.openai_client.OpenAIClient`,
  so ``max_concurrency`` bounds all their requests together.

Modules are imported only for the providers built: ``openai`` is never imported for
an offline memory.

Example:
    >>> embedder, extractor, summarizer = build_providers(MemoryConfig())   # doctest: +SKIP

"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import ConfigError

if TYPE_CHECKING:
    from ..config import MemoryConfig

__all__ = ["Providers", "build_providers", "choose_provider"]


class Providers(NamedTuple):
    """The three providers a memory uses."""

    embedder: Any
    extractor: Any
    summarizer: Any


def choose_provider(config: MemoryConfig, setting: str) -> str:
    """``local`` or ``openai`` for a provider setting (``embedding_provider``/``extractor_provider``).

    Raises:
        ConfigError: ``openai`` was asked for without an API key or a base URL.

    """
    choice = getattr(config, setting)
    has_endpoint = bool(config.openai_api_key or config.openai_base_url)
    if choice == "auto":
        return "openai" if has_endpoint else "local"
    if choice == "openai" and not has_endpoint:
        raise ConfigError(
            f"{setting}='openai' needs an endpoint: set OPENAI_API_KEY and use MemoryConfig.from_env(), or pass "
            "openai_api_key=... (or openai_base_url=... for a local server such as Ollama); "
            f"{setting}='local' uses the offline default instead")
    return choice


def build_providers(config: MemoryConfig) -> Providers:
    """Build the providers ``config`` asks for (see the module docstring).

    Raises:
        ConfigError: an OpenAI provider is asked for without an endpoint, or the
            ``openai`` extra is not installed.

    """
    embedding = "given" if config.embedder is not None else choose_provider(config, "embedding_provider")
    llm = ("given" if config.extractor is not None and config.summarizer is not None
           else choose_provider(config, "extractor_provider"))
    client = _client(config) if "openai" in (embedding, llm) else None
    embedder = config.embedder if config.embedder is not None else _embedder(embedding, config, client)
    return Providers(
        embedder=embedder,
        extractor=config.extractor if config.extractor is not None else _extractor(llm, config, client, embedder),
        summarizer=config.summarizer if config.summarizer is not None else _summarizer(llm, config, client),
    )


def _client(config: MemoryConfig) -> Any:
    from .openai_client import OpenAIClient

    return OpenAIClient(api_key=config.openai_api_key, base_url=config.openai_base_url,
                        timeout=config.request_timeout, max_retries=config.max_retries,
                        max_concurrency=config.max_concurrency)


def _embedder(kind: str, config: MemoryConfig, client: Any) -> Any:
    if kind == "openai":
        from .openai import DEFAULT_EMBEDDING_MODEL, OpenAIEmbedder

        return OpenAIEmbedder(config.embedding_model or DEFAULT_EMBEDDING_MODEL,
                              dimensions=config.embedding_dimensions, client=client)
    from .local import LocalEmbedder

    return LocalEmbedder()


def _extractor(kind: str, config: MemoryConfig, client: Any, embedder: Any = None) -> Any:
    if kind == "openai":
        from .openai import DEFAULT_CHAT_MODEL, OpenAIExtractor

        return OpenAIExtractor(config.extractor_model or DEFAULT_CHAT_MODEL, client=client,
                               max_output_tokens=config.max_output_tokens,
                               predicates=config.single_valued_predicates)
    from .rules import RuleExtractor

    return RuleExtractor(embedder=embedder)  # it reads sentences by meaning with the memory's own embedder


def _summarizer(kind: str, config: MemoryConfig, client: Any) -> Any:
    if kind == "openai":
        from .openai import DEFAULT_CHAT_MODEL, OpenAISummarizer

        return OpenAISummarizer(config.extractor_model or DEFAULT_CHAT_MODEL, client=client,
                                max_output_tokens=config.max_output_tokens)
    from .extractive import ExtractiveSummarizer

    return ExtractiveSummarizer()
