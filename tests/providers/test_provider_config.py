"""Choosing providers from MemoryConfig: explicit settings, the environment, the defaults."""

from __future__ import annotations

import subprocess
import sys

import pytest
from zep_core import ConfigError, MemoryConfig, Message
from zep_core.providers.extractive import ExtractiveSummarizer
from zep_core.providers.factory import build_providers
from zep_core.providers.local import LocalEmbedder
from zep_core.providers.openai import OpenAIEmbedder, OpenAIExtractor, OpenAISummarizer
from zep_core.providers.rules import RuleExtractor

from tests.providers.conftest import answer, fact

KEY = "sk-very-secret-key"


def test_from_env_reads_the_usual_variables_and_overrides_win():
    config = MemoryConfig.from_env({"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": "http://llm:8000/v1"},
                                   data_dir="/tmp/x")
    assert (config.openai_api_key, config.openai_base_url, str(config.data_dir)) == (KEY, "http://llm:8000/v1",
                                                                                     "/tmp/x")
    assert MemoryConfig.from_env({"OPENAI_API_KEY": KEY}, openai_api_key="other").openai_api_key == "other"
    assert MemoryConfig.from_env({"OPENAI_API_KEY": "  "}).openai_api_key is None


def test_from_env_reads_os_environ_only_when_called(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert MemoryConfig().openai_api_key is None
    assert MemoryConfig.from_env().openai_api_key == KEY


def test_the_api_key_never_appears_in_repr_or_str():
    config = MemoryConfig(openai_api_key=KEY)
    assert KEY not in repr(config) and KEY not in str(config)
    embedder, extractor, summarizer = build_providers(config)
    assert all(KEY not in repr(p) for p in (embedder, extractor, summarizer, extractor.client))


def test_without_a_key_the_offline_defaults_are_used():
    embedder, extractor, summarizer = build_providers(MemoryConfig())
    assert (type(embedder), type(extractor), type(summarizer)) == (LocalEmbedder, RuleExtractor, ExtractiveSummarizer)


def test_with_a_key_the_spec_models_are_used_through_one_shared_client():
    embedder, extractor, summarizer = build_providers(MemoryConfig(openai_api_key=KEY, max_concurrency=3))
    assert isinstance(embedder, OpenAIEmbedder) and embedder.name == "openai:text-embedding-3-small"
    assert isinstance(extractor, OpenAIExtractor) and extractor.model == "gpt-4o-mini"
    assert isinstance(summarizer, OpenAISummarizer) and summarizer.model == "gpt-4o-mini"
    assert embedder.client is extractor.client is summarizer.client
    assert extractor.client.max_concurrency == 3 and extractor.client.uses_openai


def test_explicit_choices_win_over_the_key():
    embedder, extractor, _ = build_providers(MemoryConfig(openai_api_key=KEY, embedding_provider="local",
                                                          extractor_model="gpt-4.1-mini"))
    assert isinstance(embedder, LocalEmbedder) and extractor.model == "gpt-4.1-mini"
    given = RuleExtractor()
    assert build_providers(MemoryConfig(openai_api_key=KEY, extractor=given)).extractor is given


def test_asking_for_openai_without_an_endpoint_is_a_clear_error():
    with pytest.raises(ConfigError, match="needs an endpoint: set OPENAI_API_KEY"):
        build_providers(MemoryConfig(extractor_provider="openai"))


@pytest.mark.parametrize("bad", [{"embedding_provider": "qdrant"}, {"request_timeout": 0}, {"max_retries": -1},
                                 {"max_concurrency": 0}, {"max_output_tokens": 0}, {"embedding_dimensions": 0}])
def test_bad_provider_settings_are_config_errors(bad):
    with pytest.raises(ConfigError, match=next(iter(bad))):
        MemoryConfig(**bad)


def test_a_memory_configured_only_by_settings_talks_to_the_endpoint(make_memory, fake):
    memory = make_memory(embedder=None, openai_base_url=fake.url, embedding_dimensions=32, max_retries=0)
    fake.push_chat(answer(fact("Alice", "lives_in", "Paris")))
    result = memory.conversation_end("s", [Message("I live in Paris.", name="Alice")], user_id="alice")
    assert result.status == "done" and result.usage["requests"] == 1
    assert memory.embedder.name == "openai:text-embedding-3-small@32"
    chat = fake.log("chat")[0]
    assert chat.body["model"] == "gpt-4o-mini" and chat.headers["authorization"] == "Bearer no-key"
    assert "lives_in" in chat.body["messages"][0]["content"]  # single-valued predicates are named in the prompt


def test_choosing_providers_imports_neither_openai_nor_pydantic_for_an_offline_memory():
    code = ("import sys, zep_core, zep_core.mnm, zep_core.providers.factory as f\n"
            "f.build_providers(zep_core.MemoryConfig())\n"
            "print(sorted(m for m in ('openai', 'pydantic') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


def test_the_openai_package_does_not_read_the_environment_behind_the_config(monkeypatch, fake):
    monkeypatch.setenv("OPENAI_BASE_URL", fake.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    _, extractor, _ = build_providers(MemoryConfig(openai_api_key=KEY))
    assert str(extractor.client._client.base_url) == "https://api.openai.com/v1/"
    assert extractor.client._client.api_key == KEY
