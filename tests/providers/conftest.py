"""Fixtures: the fake OpenAI-compatible server, clients pointed at it, memories using them."""

from __future__ import annotations

import re

import pytest
from zep_core.providers.fake_openai import FakeOpenAI
from zep_core.providers.openai import OpenAIEmbedder, OpenAIExtractor, OpenAISummarizer
from zep_core.providers.openai_client import OpenAIClient

DIM = 64


def answer(*facts, contradicted=(), mistaken=(), summary="They talked.", entities=()):
    """The JSON object an extraction reply holds."""
    return {"summary": summary, "entities": [{"name": n, "type": t} for n, t in entities],
            "facts": list(facts), "contradicted": list(contradicted), "mistaken": list(mistaken)}


def fact(subject, predicate, obj, *, content=None, sources=("m1",), confidence=0.9, valid_from=None,
         valid_until=None, entity=True):
    """One fact item as the model writes it."""
    return {"subject": subject, "predicate": predicate, "object": obj, "object_is_entity": entity,
            "content": content or f"{subject} {predicate.replace('_', ' ')} {obj}.", "confidence": confidence,
            "valid_from": valid_from, "valid_until": valid_until, "sources": list(sources)}


def prompt_of(body) -> str:
    """The user message of a chat request: the episode and the known facts."""
    return body["messages"][1]["content"]


def known_ref(body, text: str) -> str:
    """The ref (k1, k2…) under which the prompt shows the known fact containing ``text``."""
    found = re.search(rf"^(k\d+): [^\n]*{re.escape(text)}", prompt_of(body), re.MULTILINE)
    assert found, f"{text!r} is not among the known facts:\n{prompt_of(body)}"
    return found[1]


def summaries_for(body, text="{name} is summarized.") -> dict:
    """A summarization reply covering every entity ref (e1, e2…) of the request."""
    refs = re.findall(r"^(e\d+): (.+?) \(", prompt_of(body), re.MULTILINE)
    return {"summaries": [{"id": ref, "summary": text.format(name=name)} for ref, name in refs]}


class Sleeps(list):
    """Records the waits of the retry loop instead of sleeping."""

    def __call__(self, seconds: float) -> None:
        self.append(round(seconds, 3))


@pytest.fixture
def fake():
    with FakeOpenAI(dimension=DIM) as server:
        yield server


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def make_client(fake, sleeps):
    def make(server=None, **options) -> OpenAIClient:
        options = {"max_retries": 3, "timeout": 5.0, "sleep": sleeps, "rng": lambda: 0.0, **options}
        return OpenAIClient(api_key="sk-test-secret", base_url=(server or fake).url, **options)

    return make


@pytest.fixture
def client(make_client) -> OpenAIClient:
    return make_client()


@pytest.fixture
def openai_memory(make_memory, client):
    """A memory whose extractor, summarizer and embedder all talk to the fake server."""

    def make(**options):
        return make_memory(extractor=options.pop("extractor", None) or OpenAIExtractor(client=client),
                           summarizer=OpenAISummarizer(client=client),
                           embedder=OpenAIEmbedder(dimensions=DIM, client=client), **options)

    return make
