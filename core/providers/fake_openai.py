"""A small OpenAI-compatible HTTP server for tests and benchmarks (a test double of the endpoint).

It speaks enough of the protocol for the real ``openai`` client: ``POST /v1/chat/completions``
and ``POST /v1/embeddings``, on 127.0.0.1 and a free port, with the standard library only.
It doubles the *remote endpoint*, never our stores.

* **Scripted replies** per route, consumed in order: a ``dict`` is sent as the
  assistant's JSON content, a ``str`` as raw content (garbage included), a
  :class:`Reply` as an HTTP error or a slow answer, a callable gets the request body
  and returns any of these. With the queue empty, ``chat_default(body)`` answers
  (an empty extraction) and embeddings are bag-of-words hashes of the texts.
* **Options**: ``json_schema=False`` / ``json_object=False`` answer that response
  format with HTTP 400 like servers that lack it; :func:`rate_limited`,
  :func:`server_error` and ``Reply(delay=…)`` script 429s, 5xx and timeouts.
* **A request log** (:attr:`FakeOpenAI.requests`) and the peak of concurrent requests.
* **Token counts** are estimated, not measured: ``ceil(chars / 4)`` of every message's
  content plus 4 per message (and the JSON schema, when sent) for the prompt, and
  ``ceil(chars / 4)`` of the reply's content for the completion — roughly what
  OpenAI's tokenizers give on English text.

Example:
    >>> with FakeOpenAI() as server:                                                 # doctest: +SKIP
    ...     server.push_chat({"summary": "hi", "entities": [], "facts": [], "contradicted": []})
    ...     client = openai.OpenAI(base_url=server.url, api_key="test")

"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["CHARS_PER_TOKEN", "FakeOpenAI", "LoggedRequest", "Reply", "count_tokens", "rate_limited",
           "server_error"]

CHARS_PER_TOKEN = 4
_WORD = re.compile(r"\w+")
EMPTY_EXTRACTION = {"summary": "", "entities": [], "facts": [], "contradicted": [], "mistaken": []}


def count_tokens(text: str) -> int:
    """The token estimate used for usage: one token per four characters, rounded up."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@dataclass(frozen=True)
class Reply:
    """A scripted HTTP answer: a status, a JSON body or chat content, headers, a delay.

    Args:
        status: the HTTP status; 200 sends ``content`` as a chat completion.
        content: for 200: the assistant's content (``dict`` → JSON text, ``str`` as is).
        body: for errors: the JSON body (an OpenAI-style error is made from ``status``).
        headers: extra response headers (``Retry-After``…).
        delay: seconds to wait before answering (to provoke client timeouts).
        finish_reason: of a 200 chat reply (``length`` for a cut-off answer).

    """

    status: int = 200
    content: Any = None
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    finish_reason: str = "stop"


def rate_limited(retry_after: float | None = 1, *, retry_after_ms: float | None = None) -> Reply:
    """A 429 with ``Retry-After`` (seconds) and/or ``retry-after-ms``."""
    headers = {}
    if retry_after is not None:
        headers["Retry-After"] = f"{retry_after:g}"
    if retry_after_ms is not None:
        headers["retry-after-ms"] = f"{retry_after_ms:g}"
    return Reply(429, headers=headers, body=_error("Rate limit reached; retry later", "rate_limit_exceeded"))


def server_error(status: int = 500) -> Reply:
    """A 5xx with an OpenAI-style error body."""
    return Reply(status, body=_error("The server had an error while processing your request", "server_error"))


def _error(message: str, code: str, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error" if code == "bad_request" else code,
                      "param": param, "code": code}}


@dataclass(frozen=True)
class LoggedRequest:
    """One request the server received (header names lower-cased), and the status it answered with."""

    path: str
    body: Any
    headers: dict[str, str]
    status: int
    at: float
    reply: Any = None

    @property
    def usage(self) -> dict[str, int]:
        """The token usage the server reported for this request (empty for errors)."""
        return (self.reply or {}).get("usage", {}) if isinstance(self.reply, dict) else {}


def hashed_embedding(text: str, dimension: int) -> list[float]:
    """A deterministic bag-of-words vector (not normalized): similar texts get similar vectors."""
    out = [0.0] * dimension
    words = _WORD.findall(text.lower()) or ["<empty>"]
    for word in words:
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        index, sign = int.from_bytes(digest[:4], "little") % dimension, 1.0 if digest[4] & 1 else -1.0
        out[index] += sign * 3.0
        out[(index + 1) % dimension] += sign  # a little spread so one word is not one axis
    return out


class FakeOpenAI:
    """An OpenAI-compatible server on ``127.0.0.1:<free port>`` with scripted replies.

    Args:
        json_schema: whether ``response_format: json_schema`` is accepted (else HTTP 400).
        json_object: whether ``response_format: json_object`` is accepted (else HTTP 400).
        dimension: embedding length when the request names no ``dimensions``.
        chat_default: answers chat requests when the queue is empty: body → content or Reply.

    Attributes:
        url: the base URL to give the client (``http://127.0.0.1:<port>/v1``).
        requests: every request received, in order.
        max_in_flight: the most requests handled at the same time.

    """

    def __init__(self, *, json_schema: bool = True, json_object: bool = True, dimension: int = 1536,
                 chat_default: Callable[[dict[str, Any]], Any] | None = None) -> None:
        self.json_schema = json_schema
        self.json_object = json_object
        self.dimension = dimension
        self.chat_default = chat_default or (lambda body: EMPTY_EXTRACTION)
        self.requests: list[LoggedRequest] = []
        self.max_in_flight = 0
        self._queues: dict[str, deque[Any]] = {"chat": deque(), "embeddings": deque()}
        self._lock = threading.Lock()
        self._in_flight = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------

    def start(self) -> FakeOpenAI:
        """Start serving in a background thread; returns self."""
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                                        name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The base URL for ``openai.OpenAI(base_url=...)``."""
        if self._server is None:
            raise RuntimeError("the fake server is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    # -- scripting and the log ---------------------------------------------------------

    def push_chat(self, *replies: Any) -> None:
        """Queue replies for ``/v1/chat/completions`` (dict, str, Reply or callable)."""
        with self._lock:
            self._queues["chat"].extend(replies)

    def push_embeddings(self, *replies: Any) -> None:
        """Queue replies for ``/v1/embeddings`` (a Reply, or a callable of the body)."""
        with self._lock:
            self._queues["embeddings"].extend(replies)

    def pending(self, route: str = "chat") -> int:
        """How many scripted replies of a route are still queued."""
        with self._lock:
            return len(self._queues[route])

    def log(self, route: str | None = None, status: int | None = None) -> list[LoggedRequest]:
        """Logged requests, optionally of one route (``chat``/``embeddings``) and status."""
        with self._lock:
            items = list(self.requests)
        suffix = {"chat": "/chat/completions", "embeddings": "/embeddings"}.get(route or "", "")
        return [r for r in items if r.path.endswith(suffix) and (status is None or r.status == status)]

    def clear_log(self) -> None:
        """Forget the logged requests and the concurrency peak."""
        with self._lock:
            self.requests.clear()
            self.max_in_flight = 0

    # -- answering ---------------------------------------------------------------------

    def _next(self, route: str) -> Any:
        with self._lock:
            queue = self._queues[route]
            return queue.popleft() if queue else None

    def answer(self, path: str, body: Any) -> tuple[int, dict[str, Any], dict[str, str], float]:
        """Status, JSON body, headers and delay for one request."""
        if not isinstance(body, dict):
            return 400, _error("the body must be a JSON object", "bad_request"), {}, 0.0
        if path.endswith("/chat/completions"):
            return self._chat(body)
        if path.endswith("/embeddings"):
            return self._embeddings(body)
        return 404, _error(f"unknown route {path}", "not_found"), {}, 0.0

    def _chat(self, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str], float]:
        fmt = (body.get("response_format") or {}).get("type")
        if (fmt == "json_schema" and not self.json_schema) or (fmt == "json_object" and not self.json_object):
            return 400, _error(f"response_format type '{fmt}' is not supported by this server", "bad_request",
                               "response_format"), {}, 0.0
        item = self._next("chat")
        if item is None:
            item = self.chat_default(body)
        if callable(item):
            item = item(body)
        reply = item if isinstance(item, Reply) else Reply(content=item)
        if reply.status != 200:
            return reply.status, reply.body or _error(f"HTTP {reply.status}", "error"), reply.headers, reply.delay
        content = reply.content if isinstance(reply.content, str) else json.dumps(reply.content)
        prompt = _prompt_tokens(body)
        completion = count_tokens(content)
        return 200, {
            "id": f"chatcmpl-fake-{len(self.requests)}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": reply.finish_reason}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        }, reply.headers, reply.delay

    def _embeddings(self, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str], float]:
        item = self._next("embeddings")
        if callable(item):
            item = item(body)
        if isinstance(item, Reply) and item.status != 200:
            return item.status, item.body or _error(f"HTTP {item.status}", "error"), item.headers, item.delay
        delay = item.delay if isinstance(item, Reply) else 0.0
        inputs = body.get("input")
        inputs = [inputs] if isinstance(inputs, str) else inputs
        if not isinstance(inputs, list) or not inputs or not all(isinstance(t, str) and t for t in inputs):
            return 400, _error("'input' must be a non-empty string or list of non-empty strings", "bad_request",
                               "input"), {}, 0.0
        dimension = int(body.get("dimensions") or self.dimension)
        data = []
        for i, text in enumerate(inputs):
            vector = hashed_embedding(text, dimension)
            if body.get("encoding_format") == "base64":
                vector = base64.b64encode(struct.pack(f"<{dimension}f", *vector)).decode()
            data.append({"object": "embedding", "index": i, "embedding": vector})
        tokens = sum(count_tokens(t) for t in inputs)
        return 200, {"object": "list", "data": data, "model": body.get("model", "fake"),
                     "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}, {}, delay

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _record(self, entry: LoggedRequest) -> None:
        with self._lock:
            self.requests.append(entry)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1


def _prompt_tokens(body: dict[str, Any]) -> int:
    tokens = 0
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        tokens += 4 + count_tokens(content if isinstance(content, str) else json.dumps(content or ""))
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        tokens += count_tokens(json.dumps(fmt.get("json_schema", {}).get("schema", {})))
    return tokens


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAI
    protocol_version = "HTTP/1.1"
    wbufsize = -1  # headers and body leave in one send (no Nagle/delayed-ACK stall of ~40 ms)
    disable_nagle_algorithm = True

    def do_POST(self) -> None:  # noqa: N802 (the http.server name)
        self.fake._enter()
        try:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw or b"null")
            except json.JSONDecodeError:
                body = raw.decode("utf-8", "replace")
            status, payload, headers, delay = self.fake.answer(self.path, body)
            headers_in = {k.lower(): v for k, v in self.headers.items()}
            self.fake._record(LoggedRequest(self.path, body, headers_in, status, time.time(), payload))
            if delay:
                time.sleep(delay)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
            pass
        finally:
            self.fake._leave()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the http.server signature)
        """Keep test output quiet."""
