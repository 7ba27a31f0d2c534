"""The transport to an OpenAI-compatible endpoint: retries, backoff, a concurrency cap.

Written once here and shared by the extractor, the summarizer and the embedder in
``providers/openai.py`` (graphiti's habit: retries in the base client, not per class).
It wraps the real ``openai.OpenAI`` client with ``max_retries=0`` so that the retry
policy is ours and testable:

* **retried**: HTTP 408, 409, 429 and 5xx, timeouts and connection errors, at most
  ``max_retries`` times, waiting what the server's ``Retry-After``/``retry-after-ms``
  asks (capped at ``max_retry_after``) or else an exponential backoff with jitter;
* **not retried**: other 4xx (bad request, bad key, unknown model) and a 429 whose
  body says the quota is exhausted — raised at once as :class:`EndpointError`;
* at most ``max_concurrency`` requests are in flight per client (a semaphore; the
  waiting between retries happens outside it).

Exceptions::

    zep_core.ProviderError
     └── EndpointError      a request failed (after retries); ``status`` is the HTTP status or None

``openai`` is imported when the first client is built, never when this module is.

Example:
    >>> client = OpenAIClient(base_url="http://127.0.0.1:8000/v1", max_retries=2)   # doctest: +SKIP
    >>> reply = client.chat(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])

"""

from __future__ import annotations

import email.utils
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError, ProviderError, install_hint

__all__ = ["ChatReply", "EndpointError", "OpenAIClient", "Usage"]

log = logging.getLogger("zep_core.providers")

#: Sent when no API key is configured: local servers (Ollama, vLLM, LM Studio) ignore it,
#: and it keeps the openai client from reading ``OPENAI_API_KEY`` behind the config's back.
NO_KEY = "no-key"
OPENAI_URL = "https://api.openai.com/v1"
_RETRY_STATUS = frozenset({408, 409, 429})


class EndpointError(ProviderError):
    """A request to the endpoint failed, after retries where retrying made sense.

    Attributes:
        status: the HTTP status code, or ``None`` for timeouts and connection errors.

    """

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Usage:
    """Token usage summed over the requests of one unit of work (an episode, a batch)."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, usage: Any) -> None:
        """Count one answered request and its ``usage`` object (missing counts read as 0)."""
        self.requests += 1
        self.prompt_tokens += int(getattr(usage, "prompt_tokens", 0) or 0)
        self.completion_tokens += int(getattr(usage, "completion_tokens", 0) or 0)

    def as_dict(self) -> dict[str, int]:
        """The mapping stored as ``Extraction.usage`` / ``IngestResult.usage``."""
        return {"requests": self.requests, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "total_tokens": self.prompt_tokens + self.completion_tokens}


@dataclass(frozen=True)
class ChatReply:
    """The text of a chat completion, why it stopped, and its token usage."""

    content: str
    finish_reason: str | None = None
    usage: Any = None


@dataclass
class _Policy:
    max_retries: int = 4
    backoff: float = 0.5
    max_backoff: float = 20.0
    max_retry_after: float = 60.0
    sleep: Callable[[float], None] = time.sleep
    rng: Callable[[], float] = random.random
    delays: list[float] = field(default_factory=list)

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        base = min(self.backoff * 2 ** attempt, self.max_backoff)
        return base / 2 + base / 2 * self.rng()  # "equal jitter": never zero, never in lockstep


class OpenAIClient:
    """One connection to an OpenAI-compatible endpoint, with our retry policy.

    Args:
        api_key: the key; ``None`` sends a placeholder (fine for local servers, an error
            without ``base_url``).
        base_url: e.g. ``http://localhost:11434/v1`` for Ollama; ``None`` is api.openai.com.
        timeout: seconds per request.
        max_retries: retries after the first attempt on 408/409/429/5xx/timeouts.
        max_concurrency: requests in flight at once through this client.
        backoff, max_backoff: exponential backoff base and cap, in seconds.
        max_retry_after: the longest ``Retry-After`` honoured, in seconds.
        sleep: how to wait (tests pass a recorder).
        rng: a ``random()``-like source for the jitter.

    Raises:
        ConfigError: the ``openai`` package is not installed.

    """

    def __init__(self, *, api_key: str | None = None, base_url: str | None = None, timeout: float = 60.0,
                 max_retries: int = 4, max_concurrency: int = 4, backoff: float = 0.5,
                 max_backoff: float = 20.0, max_retry_after: float = 60.0,
                 sleep: Callable[[float], None] = time.sleep, rng: Callable[[], float] = random.random) -> None:
        if max_retries < 0 or max_concurrency < 1 or timeout <= 0:
            raise ConfigError("need max_retries >= 0, max_concurrency >= 1 and timeout > 0")
        if api_key is None and base_url is None:
            raise ConfigError("api.openai.com needs an API key: pass api_key=..., or base_url=... for a local "
                              "server (Ollama, vLLM, LM Studio)")
        try:
            import openai
        except ImportError:
            raise ConfigError("the OpenAI providers need the openai extra: " + install_hint("openai")) from None
        self._openai = openai
        self.base_url = base_url
        # An explicit URL: the openai package would otherwise read OPENAI_BASE_URL behind the config's back.
        self._client = openai.OpenAI(api_key=api_key or NO_KEY, base_url=base_url or OPENAI_URL, timeout=timeout,
                                     max_retries=0)
        self._slots = threading.BoundedSemaphore(max_concurrency)
        self.policy = _Policy(max_retries, backoff, max_backoff, max_retry_after, sleep, rng)
        self.max_concurrency = max_concurrency

    def __repr__(self) -> str:
        return f"OpenAIClient(base_url={self.base_url!r}, max_concurrency={self.max_concurrency})"

    @property
    def uses_openai(self) -> bool:
        """Whether requests go to api.openai.com (no ``base_url``)."""
        return self.base_url is None

    def chat(self, *, model: str, messages: Sequence[Mapping[str, str]], **params: Any) -> ChatReply:
        """One chat completion; ``params`` go to ``chat.completions.create`` as they are.

        Raises:
            EndpointError: the request failed after retries, or the reply had no choices.

        """
        completion = self._call(f"chat completion ({model})",
                                lambda: self._client.chat.completions.create(model=model, messages=list(messages),
                                                                             **params))
        if not getattr(completion, "choices", None):
            raise EndpointError(f"the endpoint returned a chat completion without choices ({model})")
        choice = completion.choices[0]
        return ChatReply(choice.message.content or "", choice.finish_reason, completion.usage)

    def embeddings(self, *, model: str, inputs: Sequence[str], dimensions: int | None = None) -> tuple[list, Any]:
        """One embeddings request for a batch; returns the vectors in input order and the usage.

        Raises:
            EndpointError: the request failed after retries, or returned the wrong number of vectors.

        """
        extra = {"dimensions": dimensions} if dimensions else {}
        reply = self._call(f"embeddings ({model})", lambda: self._client.embeddings.create(
            model=model, input=list(inputs), encoding_format="float", **extra))
        data = sorted(reply.data, key=lambda d: d.index)
        if len(data) != len(inputs):
            raise EndpointError(f"the endpoint returned {len(data)} embeddings for {len(inputs)} inputs ({model})")
        return [d.embedding for d in data], reply.usage

    def _call(self, what: str, request: Callable[[], Any]) -> Any:
        policy = self.policy
        for attempt in range(policy.max_retries + 1):
            try:
                with self._slots:
                    return request()
            except self._openai.OpenAIError as exc:
                status, retryable, retry_after = self._classify(exc)
                if not retryable or attempt == policy.max_retries:
                    tries = f" after {attempt + 1} attempts" if retryable else ""
                    raise EndpointError(f"{what} failed{tries}: {_describe(exc, status)}", status) from exc
                wait = policy.delay(attempt, retry_after)
                policy.delays.append(wait)
                log.info("%s: %s; retrying in %.2fs", what, _describe(exc, status), wait)
                policy.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    def _classify(self, exc: Exception) -> tuple[int | None, bool, float | None]:
        """HTTP status, whether to retry, and the server's requested wait."""
        openai = self._openai
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            retryable = (status in _RETRY_STATUS or status >= 500) and exc.code != "insufficient_quota"
            return status, retryable, _retry_after(exc.response.headers)
        if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError)):
            return None, True, None
        return None, False, None


def _describe(exc: Exception, status: int | None) -> str:
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return f"HTTP {status}: {message}" if status else message


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds asked by ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return float(value) / scale
        except ValueError:
            parsed = email.utils.parsedate_tz(value)
            if parsed is not None:
                return max(0.0, email.utils.mktime_tz(parsed) - time.time())
    return None
