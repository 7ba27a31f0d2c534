"""Providers for any OpenAI-compatible endpoint: OpenAI, Azure, Ollama, vLLM, LM Studio.

* :class:`OpenAIExtractor` — **one structured call per episode**: the messages (with
  speakers, refs and times) and the known facts go in; the summary, entities, facts
  and the known facts the episode contradicts come back as one JSON object. The
  core's update rules then decide what is stored: the model proposes, the rules decide.
* :class:`OpenAISummarizer` — entity summaries, many entities per call.
* :class:`OpenAIEmbedder` — one request per batch of texts, L2-normalized vectors,
  a cache for repeated queries.

Structured output uses the endpoint's JSON schema mode; a server that answers it with
HTTP 400 is asked again in JSON mode, then with no ``response_format`` at all, and
the first mode that works is remembered per extractor. Output that is not valid is
sent back once with the error for a repair. Transport retries live in
:mod:`zep_core.providers.openai_client`.

This module imports ``openai`` and ``pydantic``; :mod:`zep_core` imports it only when
an OpenAI provider is configured.

Example:
    >>> from zep_core import Memory, MemoryConfig
    >>> config = MemoryConfig.from_env(data_dir="./data")   # OPENAI_API_KEY, OPENAI_BASE_URL  # doctest: +SKIP
    >>> memory = Memory(config)                                                                # doctest: +SKIP

"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from functools import partial
from typing import Any, TypeVar

import numpy as np
from pydantic import BaseModel

from ..errors import ExtractionError, ProviderError
from ..models import Entity, Fact, Message
from .base import Extraction, ExtractionContext
from .openai_client import EndpointError, OpenAIClient, Usage
from .openai_prompts import (
    EntitySummaries,
    EpisodeExtraction,
    ExtractionPrompt,
    decode_json,
    parse_summaries,
    strict_schema,
    summary_messages,
)

__all__ = ["OpenAIEmbedder", "OpenAIExtractor", "OpenAISummarizer", "StructuredCall"]

log = logging.getLogger("zep_core.providers")
T = TypeVar("T")

#: Output formats tried in order until the endpoint accepts one.
FORMATS = ("json_schema", "json_object", "text")
DEFAULT_CHAT_MODEL = "gpt-4o-mini"
DEFAULT_EMBEDDING_MODEL = "text-embedding-3-small"
_KNOWN_DIMENSIONS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}
_MAX_ECHO = 2000  # characters of an invalid reply sent back for repair


class StructuredCall:
    """A chat call that must return a JSON object of a given schema.

    Handles the output-format fallback (remembered on the instance), the token cap,
    and one repair round when the reply cannot be parsed.

    Args:
        client: the transport.
        model: the chat model.
        schema: the pydantic response model (sent as the JSON schema).
        max_output_tokens: cap on the reply's tokens.
        temperature: sampling temperature; ``None`` leaves the server's default.

    """

    def __init__(self, client: OpenAIClient, model: str, schema: type[BaseModel], *,
                 max_output_tokens: int = 4096, temperature: float | None = 0.0) -> None:
        self.client = client
        self.model = model
        self.schema = schema
        self.max_output_tokens = max_output_tokens
        self.temperature = temperature
        self.format = FORMATS[0]
        self._schema = strict_schema(schema)
        self._lock = threading.Lock()

    def __call__(self, messages: list[dict[str, str]], parse: Callable[[dict[str, Any]], T],
                 usage: Usage) -> T:
        """Send ``messages``, parse the reply with ``parse``; repair once if that fails.

        Raises:
            ExtractionError: the reply was unusable twice.
            EndpointError: the endpoint failed after retries.

        """
        reply = self._send(messages, usage)
        try:
            return parse(self._decode(reply))
        except ValueError as exc:
            error = str(exc)[:500]
        log.info("%s: invalid reply (%s); asking once for a repair", self.model, error)
        repair = messages + [
            {"role": "assistant", "content": reply.content[:_MAX_ECHO]},
            {"role": "user", "content": f"That reply could not be used: {error}\n"
                                        "Answer again with only the JSON object, following the schema."}]
        reply = self._send(repair, usage)
        try:
            return parse(self._decode(reply))
        except ValueError as exc:
            raise ExtractionError(f"the model {self.model} returned unusable output twice: {str(exc)[:300]}") from None

    def _decode(self, reply: Any) -> dict[str, Any]:
        if reply.finish_reason == "length":
            raise ValueError(f"the reply was cut off at max_output_tokens={self.max_output_tokens}; "
                             "answer more briefly")
        return decode_json(reply.content)

    def _send(self, messages: list[dict[str, str]], usage: Usage) -> Any:
        start = FORMATS.index(self.format)
        for fmt in FORMATS[start:]:
            try:
                reply = self.client.chat(model=self.model, messages=messages, **self._params(fmt))
            except EndpointError as exc:
                if exc.status not in (400, 422) or fmt == FORMATS[-1]:
                    raise
                log.info("%s: the endpoint refused response_format %s (%s)", self.model, fmt, exc)
                continue
            if fmt != self.format:
                with self._lock:
                    log.warning("%s: the endpoint does not accept %s output; using %s from now on",
                                self.model, self.format, fmt)
                    self.format = fmt
            usage.add(reply.usage)
            return reply
        raise AssertionError("unreachable")  # pragma: no cover

    def _params(self, fmt: str) -> dict[str, Any]:
        limit = "max_completion_tokens" if self.client.uses_openai else "max_tokens"
        params: dict[str, Any] = {limit: self.max_output_tokens}
        if self.temperature is not None:
            params["temperature"] = self.temperature
        if fmt == "json_schema":
            params["response_format"] = {"type": "json_schema", "json_schema": {
                "name": self.schema.__name__, "schema": self._schema, "strict": True}}
        elif fmt == "json_object":
            params["response_format"] = {"type": "json_object"}
        return params


def _client(client: OpenAIClient | None, options: dict[str, Any]) -> OpenAIClient:
    if client is not None and options:
        raise TypeError(f"pass either client= or client options, not both: {sorted(options)}")
    return client or OpenAIClient(**options)


class OpenAIExtractor:
    """Extracts an episode's summary, entities, facts and contradictions in one LLM call.

    Args:
        model: the chat model (default ``gpt-4o-mini``).
        client: a shared :class:`OpenAIClient`; else one is built from ``client_options``
            (``api_key``, ``base_url``, ``timeout``, ``max_retries``, ``max_concurrency``…).
        max_output_tokens: cap on the reply's tokens.
        max_known_facts: how many known facts the prompt shows at most.
        predicates: single-valued predicate names the prompt asks the model to use.
        temperature: sampling temperature (``None``: the server's default).

    Example:
        >>> extractor = OpenAIExtractor(base_url="http://localhost:11434/v1", model="qwen2.5:7b")  # doctest: +SKIP
        >>> memory = Memory(MemoryConfig(extractor=extractor))                                    # doctest: +SKIP

    """

    needs_known_facts = True

    def __init__(self, model: str = DEFAULT_CHAT_MODEL, *, client: OpenAIClient | None = None,
                 max_output_tokens: int = 4096, max_known_facts: int = 50, predicates: Collection[str] = (),
                 temperature: float | None = 0.0, **client_options: Any) -> None:
        self.client = _client(client, client_options)
        self.model = model
        self.max_known_facts = max_known_facts
        self.predicates = tuple(sorted(predicates))
        self.call = StructuredCall(self.client, model, EpisodeExtraction, max_output_tokens=max_output_tokens,
                                   temperature=temperature)

    def __repr__(self) -> str:
        return f"OpenAIExtractor(model={self.model!r}, base_url={self.client.base_url!r})"

    @property
    def output_format(self) -> str:
        """The output format in use: ``json_schema``, ``json_object`` or ``text``."""
        return self.call.format

    def extract(self, messages: Sequence[Message], context: ExtractionContext) -> Extraction:
        """Extract from one episode with one request (two when the reply needs a repair).

        Raises:
            ExtractionError: the model's output was unusable twice.
            ProviderError: the endpoint failed after retries.

        """
        prompt = ExtractionPrompt(messages, context, max_known_facts=self.max_known_facts,
                                  predicates=self.predicates)
        usage = Usage()
        extraction = self.call(prompt.chat_messages(), prompt.parse, usage)
        return replace(extraction, usage=usage.as_dict())


class OpenAISummarizer:
    """Writes entity summaries with an LLM, ``batch_size`` entities per request.

    An entity the reply leaves out, or every entity of a batch whose reply is unusable
    twice, gets the offline extractive summary instead.

    Args:
        model: the chat model (default ``gpt-4o-mini``).
        client: a shared :class:`OpenAIClient`; else one is built from ``client_options``.
        batch_size: entities per request.
        max_facts: facts shown per entity.
        max_output_tokens: cap on each reply's tokens.

    """

    def __init__(self, model: str = DEFAULT_CHAT_MODEL, *, client: OpenAIClient | None = None,
                 batch_size: int = 25, max_facts: int = 30, max_output_tokens: int = 4096,
                 temperature: float | None = 0.0, **client_options: Any) -> None:
        self.client = _client(client, client_options)
        self.model = model
        self.batch_size = max(1, batch_size)
        self.max_facts = max_facts
        self.usage = Usage()
        self.call = StructuredCall(self.client, model, EntitySummaries, max_output_tokens=max_output_tokens,
                                   temperature=temperature)

    def __repr__(self) -> str:
        return f"OpenAISummarizer(model={self.model!r}, base_url={self.client.base_url!r})"

    def summarize_entities(self, items: Sequence[tuple[Entity, Sequence[Fact]]]) -> list[str]:
        """Return one summary per ``(entity, facts)`` pair, in order.

        Raises:
            ProviderError: the endpoint failed after retries (the entities stay stale).

        """
        from .extractive import summarize_entity

        out: list[str] = []
        for start in range(0, len(items), self.batch_size):
            batch = list(items[start:start + self.batch_size])
            try:
                found = self.call(summary_messages(batch, max_facts=self.max_facts),
                                  partial(parse_summaries, count=len(batch)), self.usage)
            except ExtractionError as exc:  # plainer summaries beat stale ones; the endpoint itself works
                log.warning("entity summaries fall back to extractive ones for %d entities: %s", len(batch), exc)
                found = [None] * len(batch)
            out += [text or summarize_entity(e, facts) for text, (e, facts) in zip(found, batch)]
        return out


class OpenAIEmbedder:
    """Embeds texts through an OpenAI-compatible ``/embeddings`` endpoint.

    Args:
        model: the embedding model (default ``text-embedding-3-small``).
        dimensions: ask for shorter vectors (``text-embedding-3-*`` support it).
        client: a shared :class:`OpenAIClient`; else one is built from ``client_options``.
        batch_size: texts per request.
        cache_size: query embeddings remembered by :meth:`embed_query`.

    Attributes:
        name: ``openai:<model>``, with ``@<dimensions>`` when set.
        dimension: the vector length (asked from the endpoint once for an unknown model).
        usage: requests and tokens spent so far.

    """

    def __init__(self, model: str = DEFAULT_EMBEDDING_MODEL, *, dimensions: int | None = None,
                 client: OpenAIClient | None = None, batch_size: int = 256, cache_size: int = 1024,
                 **client_options: Any) -> None:
        if dimensions is not None and dimensions < 1:
            raise ValueError(f"dimensions must be >= 1, got {dimensions}")
        self.client = _client(client, client_options)
        self.model = model
        self.dimensions = dimensions
        self.batch_size = max(1, batch_size)
        self.name = f"openai:{model}" + (f"@{dimensions}" if dimensions else "")
        self.usage = Usage()
        self._dimension = dimensions or _KNOWN_DIMENSIONS.get(model)
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(name={self.name!r}, base_url={self.client.base_url!r})"

    @property
    def dimension(self) -> int:
        """The vector length; for a model not known here, one probe request finds it."""
        if self._dimension is None:
            self._dimension = self._request(["dimension probe"]).shape[1]
        return self._dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return an ``(len(texts), dimension)`` float32 array of unit vectors, one request per batch.

        Raises:
            TypeError: a text is not a string.
            ProviderError: the endpoint failed, or returned vectors of the wrong size.

        """
        texts = list(texts)
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"texts must be strings, got {type(text).__name__}")
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        parts = [self._request(texts[i:i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        return np.concatenate(parts)

    def _request(self, texts: list[str]) -> np.ndarray:
        vectors, usage = self.client.embeddings(model=self.model, inputs=[t or " " for t in texts],
                                                dimensions=self.dimensions)
        with self._lock:
            self.usage.add(usage)
        out = np.asarray(vectors, dtype=np.float32)
        expected = self._dimension
        if out.ndim != 2 or (expected is not None and out.shape[1] != expected):
            raise ProviderError(f"{self.model} returned vectors of shape {out.shape}, expected {expected} columns; "
                                "check embedding_model/embedding_dimensions")
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        if not np.all(np.isfinite(norms)) or np.any(norms == 0):
            raise ProviderError(f"{self.model} returned a zero or non-finite vector")
        return out / norms

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one text, remembering the last ``cache_size`` results (read-only arrays)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be str, got {type(text).__name__}")
        with self._lock:
            cached = self._cache.get(text)
            if cached is not None:
                self._cache.move_to_end(text)
                return cached
        vector = self.embed([text])[0].copy()
        vector.flags.writeable = False
        with self._lock:
            self._cache[text] = vector
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return vector
