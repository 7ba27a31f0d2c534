"""LlamaIndex fixtures: recording mock LLMs, and nothing that reaches a network."""

from __future__ import annotations

import pytest
from llama_index.core import Settings
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM

from .mocks import RecordingFunctionLLM, RecordingLLM


@pytest.fixture(autouse=True, scope="session")
def _offline_llamaindex_settings():
    """Whatever a test forgets to pass, LlamaIndex falls back to mocks, never to OpenAI."""
    saved = Settings._llm, Settings._embed_model
    Settings.llm = MockLLM()
    Settings.embed_model = MockEmbedding(embed_dim=8)
    yield
    Settings._llm, Settings._embed_model = saved


@pytest.fixture
def llm() -> RecordingLLM:
    return RecordingLLM()


@pytest.fixture
def fc_llm() -> RecordingFunctionLLM:
    return RecordingFunctionLLM()


def pytest_generate_tests(metafunc):
    """The adapters' tests run on both backends (their memories come from ``make_memory``)."""
    from tests.pg import both_backends

    both_backends(metafunc)
