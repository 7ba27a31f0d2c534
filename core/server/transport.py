"""How :class:`~zep_core.server.RemoteMemory` talks to the server: requests, retries, and errors back as classes.

:class:`Connection` sends one request (:class:`Call`) over httpx's transports and turns
the answer into its ``result`` or into the error the server reported: the
:class:`~zep_core.ZepMemoryError` subclass it names, else the class the one status table
gives its status (:func:`~zep_core.server.statuses.error_class`). A server that cannot be
reached, or does not answer within ``timeout``, is a :class:`~zep_core.StoreError`
naming the URL.

A call marked idempotent is sent again, ``retries`` times with backoff, after a timeout,
a lost connection or a gateway status (502/503/504,
:data:`~zep_core.server.statuses.GATEWAY_STATUSES`); any other call is sent once: a retry
after a lost answer could apply it twice.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import orjson

from .. import __version__
from ..errors import ConfigError, StoreError, ValidationError, ZepMemoryError
from .statuses import GATEWAY_STATUSES, error_class

__all__ = ["Call", "Connection"]


@dataclass(frozen=True)
class Call:
    """One request, ready to send (again, if it may be retried)."""

    method: str
    path: str
    body: bytes | None = None
    params: Mapping[str, str] | None = None
    idempotent: bool = True
    content_type: str = "application/json"


def json_body(payload: Mapping[str, Any], verb: str) -> bytes:
    """``payload`` as a request body (UTF-8 JSON), or a ``ValidationError`` naming ``verb`` if JSON cannot hold it."""
    try:
        return json.dumps(payload, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{verb}: an argument cannot be sent to the server as JSON ({exc}); pass strings, "
                              "numbers, booleans, lists and mappings of them") from None


class Connection:
    """A connection to a ``zep-memory serve`` server: its URL and key, the transports, and the retry policy.

    Args:
        url: the server, e.g. ``http://127.0.0.1:8765`` (behind a TLS proxy: ``https://…``).
        api_key: the key the server's keys file binds to your users; None for a server
            without keys (loopback only).
        timeout: seconds to wait for the server (connect, send, and each read).
        retries: how many times an idempotent call is sent again (0..10).

    Raises:
        ConfigError: a malformed url, key, timeout or retry count.

    """

    def __init__(self, url: str, api_key: str | None = None, *, timeout: float = 30.0, retries: int = 3) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")) or len(url) < 10:
            raise ConfigError(f"url must be an http:// or https:// address, e.g. http://127.0.0.1:8765, got {url!r}")
        if api_key is not None and (not isinstance(api_key, str) or not api_key or any(c.isspace() for c in api_key)):
            raise ConfigError("api_key must be a non-empty string without whitespace (or None for a server "
                              "without keys)")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not (0 < timeout < math.inf):
            raise ConfigError(f"timeout must be a number of seconds > 0, got {timeout!r}")
        if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 10:
            raise ConfigError(f"retries must be an integer in 0..10, got {retries!r}")
        self.url = url.rstrip("/")
        self.timeout, self.retries = float(timeout), retries
        self._headers = {"User-Agent": f"zep-memory/{__version__}"}
        if api_key is not None:
            self._headers["Authorization"] = f"Bearer {api_key}"
        # httpx's transports (its connection pool, HTTP/1.1, TLS, timeouts) without httpx.Client on top: the
        # client's cookie jar, redirect and auth flows, which this protocol never uses, cost 0.4 ms a call
        # (bench/findings.md). So no cookies, no redirects followed, and no proxy read from the environment.
        self._timeouts = {"timeout": httpx.Timeout(self.timeout).as_dict()}
        self._http = httpx.HTTPTransport()
        self._ahttp: httpx.AsyncHTTPTransport | None = None
        self._aloop: asyncio.AbstractEventLoop | None = None
        self._urls: dict[str, httpx.URL] = {}

    def close(self) -> None:
        """Close the connections (the server and its memory stay up)."""
        self._http.close()

    async def aclose(self) -> None:
        """Close the connections, the async ones too."""
        self._http.close()
        if self._ahttp is not None:
            await self._ahttp.aclose()
            self._ahttp = None

    # -- sending ---------------------------------------------------------------------------------

    def _verb(self, verb: str, payload: Mapping[str, Any], *, idempotent: bool = True) -> Call:
        return Call("POST", f"/v1/{verb}", json_body(payload, verb), idempotent=idempotent)

    def _request(self, call: Call) -> httpx.Request:
        url = self._urls.get(call.path)
        if url is None:
            url = self._urls[call.path] = httpx.URL(self.url + call.path)
        headers = self._headers if call.body is None else {**self._headers, "Content-Type": call.content_type}
        return httpx.Request(call.method, url, params=call.params, headers=headers, content=call.body,
                             extensions=self._timeouts)

    def _attempts(self, call: Call) -> int:
        return self.retries + 1 if call.idempotent else 1

    @staticmethod
    def _backoff(attempt: int) -> float:
        return min(2.0, 0.1 * 2 ** attempt) * random.uniform(0.5, 1.0)

    def _send(self, call: Call, *, stream: bool = False) -> httpx.Response:
        attempts = self._attempts(call)
        for attempt in range(attempts):
            request = self._request(call)
            try:
                response = self._http.handle_request(request)
                response.request = request
                if not stream:
                    response.read()  # reads the body whole and gives the connection back to the pool
            except httpx.TransportError as exc:
                if attempt + 1 == attempts:
                    raise self._transport_error(exc, call) from None
            else:
                if response.status_code not in GATEWAY_STATUSES or attempt + 1 == attempts:
                    if response.is_error:
                        response.read()
                        response.close()
                        raise self._error(response)
                    return response
                response.close()
            time.sleep(self._backoff(attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    def _async_transport(self) -> httpx.AsyncHTTPTransport:
        """The async transport of the running event loop (its connections belong to one loop)."""
        loop = asyncio.get_running_loop()
        if self._ahttp is None or self._aloop is not loop:
            self._ahttp = httpx.AsyncHTTPTransport()
            self._aloop = loop
        return self._ahttp

    async def _asend(self, call: Call) -> httpx.Response:
        transport = self._async_transport()
        attempts = self._attempts(call)
        for attempt in range(attempts):
            request = self._request(call)
            try:
                response = await transport.handle_async_request(request)
                response.request = request
                await response.aread()
            except httpx.TransportError as exc:
                if attempt + 1 == attempts:
                    raise self._transport_error(exc, call) from None
            else:
                if response.status_code not in GATEWAY_STATUSES or attempt + 1 == attempts:
                    if response.is_error:
                        raise self._error(response)
                    return response
            await asyncio.sleep(self._backoff(attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    def _call(self, verb: str, payload: Mapping[str, Any], *, idempotent: bool = True) -> Any:
        return self._result(self._send(self._verb(verb, payload, idempotent=idempotent)))

    async def _acall(self, verb: str, payload: Mapping[str, Any], *, idempotent: bool = True) -> Any:
        return self._result(await self._asend(self._verb(verb, payload, idempotent=idempotent)))

    def _result(self, response: httpx.Response) -> Any:
        try:
            return orjson.loads(response.content)["result"]
        except (ValueError, KeyError, TypeError):
            raise StoreError(f"the server at {self.url} sent an answer that is not zep-memory's "
                             f"({response.status_code}, {response.headers.get('content-type', 'no content type')}); "
                             "is the url that of a zep-memory server?") from None

    def _error(self, response: httpx.Response) -> ZepMemoryError:
        """The error the server reported, as its own class, with its message."""
        try:
            detail = response.json()["error"]
            kind, message = detail["type"], detail["message"]
        except (ValueError, KeyError, TypeError):
            kind, message = None, (f"the server at {self.url} answered {response.status_code} "
                                   f"{response.reason_phrase} to {response.request.url.path}")
        return error_class(kind, response.status_code)(str(message))

    def _transport_error(self, exc: httpx.TransportError, call: Call) -> StoreError:
        unsure = ("" if call.idempotent or isinstance(exc, httpx.ConnectError) else
                  "; the request may have been applied: check before sending it again (conversation_end with an "
                  "episode_id is safe to send again)")
        if isinstance(exc, httpx.ConnectError):
            return StoreError(f"cannot reach the zep-memory server at {self.url} ({exc}); is `zep-memory serve` "
                              "running there?")
        if isinstance(exc, httpx.TimeoutException):
            return StoreError(f"the zep-memory server at {self.url} did not answer {call.path} within "
                              f"{self.timeout:g} s (RemoteMemory timeout=){unsure}")
        return StoreError(f"the connection to the zep-memory server at {self.url} failed during {call.path} "
                          f"({type(exc).__name__}: {exc}){unsure}")
