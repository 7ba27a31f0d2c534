"""Deadlines and a cap on the server's connections, which uvicorn does not set on its own.

uvicorn times out a connection only between two requests (``timeout_keep_alive``): a
connection that never sends a request, sends half of one's head, or stops in the middle
of a body stays open for as long as its client likes, and a few hundred of them use up
the process's open files. :func:`bounded_protocol` wraps uvicorn's HTTP protocol with:

* a **head deadline**: a new connection, or a kept-alive one once the next request's
  first bytes arrive, must deliver the whole request head within ``head_timeout``;
* a **body deadline**: the body must be whole ``body_timeout`` after the head;
* a **cap**: past ``max_connections`` open connections a new one is answered 503 (which
  :class:`~zep_core.server.RemoteMemory` retries) and closed at once.

A connection past a deadline is closed; what it had sent is dropped, and a verb whose
body did not arrive never runs. ``docs/server.md`` lists the settings.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import orjson

__all__ = ["bounded_protocol", "busy_answer"]

log = logging.getLogger("zep_core.server")


def busy_answer(max_connections: int) -> bytes:
    """The 503 a connection past the cap gets before it is closed: the error table's shape, and when to retry."""
    body = orjson.dumps({"error": {"type": "StoreUnavailableError", "message": (
        f"the server has {max_connections} connections open, its limit (zep-memory serve --max-connections); "
        "retry in a moment, or close idle connections")}})
    return (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n"
            b"connection: close\r\ncontent-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def bounded_protocol(base: type[asyncio.Protocol], *, head_timeout: float, body_timeout: float,
                     max_connections: int) -> type[asyncio.Protocol]:
    """The HTTP protocol class ``base`` of uvicorn (httptools' or h11's) with this module's deadlines and cap.

    Both of uvicorn's protocols keep the request in progress as ``cycle`` (a new one per
    request head, ``more_body`` false once the body is whole) and call
    ``on_response_complete`` after each answer; the deadlines are read from those.
    """

    class Bounded(base):  # type: ignore[valid-type, misc]
        _timer: asyncio.TimerHandle | None = None
        _refused = False

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                self._refuse(transport)
                return
            self._arm(head_timeout, "its request head")

        def _refuse(self, transport: Any) -> None:
            """Answer 503 and close; what the client sends meanwhile is read and dropped, so that no reset loses it."""
            log.warning("refused a connection from %s: %d open, the limit (--max-connections)", _peer(transport),
                        max_connections)
            self._refused = True
            self.connections.discard(self)  # it no longer counts
            transport.write(busy_answer(max_connections))
            if transport.can_write_eof():
                transport.write_eof()
            self.loop.call_later(1.0, transport.close)

        def data_received(self, data: bytes) -> None:
            if self._refused:
                return
            before = self.cycle
            if self._timer is None and (before is None or before.response_complete):
                self._arm(head_timeout, "its request head")  # the first bytes of the next request
            super().data_received(data)
            cycle = self.cycle
            if cycle is not before and cycle is not None:  # a whole head arrived: now the body
                if cycle.more_body:
                    self._arm(body_timeout, "the request body")
                else:
                    self._disarm()
            elif cycle is not None and not cycle.more_body and not cycle.response_complete:
                self._disarm()  # the body is whole; the answer is the app's affair

        def on_response_complete(self) -> None:
            self._disarm()
            super().on_response_complete()  # arms uvicorn's keep-alive timeout

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self, seconds: float, what: str) -> None:
            self._disarm()
            self._timer = self.loop.call_later(seconds, self._expire, seconds, what)

        def _disarm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def _expire(self, seconds: float, what: str) -> None:
            self._timer = None
            if not self.transport.is_closing():
                log.debug("closed the connection from %s: %s did not arrive within %g s", _peer(self.transport),
                          what, seconds)
                self.transport.close()

    Bounded.__name__ = Bounded.__qualname__ = f"Bounded{base.__name__}"
    return Bounded


def _peer(transport: Any) -> str:
    peer = transport.get_extra_info("peername")
    return f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else "a client"
