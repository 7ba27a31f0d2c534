"""Running the server: :func:`run_server` binds the port, serves until SIGTERM or SIGINT, and stops cleanly.

``zep-memory serve`` calls it. A server without API keys listens only on a loopback
address (:func:`~zep_core.server.listening.refuse_without_keys`); a port that cannot be
bound is one clear :class:`~zep_core.ConfigError` rather than uvicorn's exit. The
listening itself is :mod:`.listening`, which ``zep-memory mcp`` shares.
"""

from __future__ import annotations

from collections.abc import Callable

from ..memory import Memory
from .factory import DEFAULT_MAX_BODY_BYTES, create_app
from .keys import KeyRing
from .listening import is_loopback, listen, refuse_without_keys, serve_until_stopped, url_of

__all__ = ["is_loopback", "run_server"]


def run_server(memory: Memory, keys: KeyRing | None, *, host: str = "127.0.0.1", port: int = 8765,
               max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, log_level: str = "info", access_log: bool = False,
               on_listening: Callable[[str], None] | None = None) -> None:
    """Serve ``memory`` until SIGTERM or SIGINT: one process, one worker, requests in worker threads.

    On SIGTERM the server stops taking connections, finishes the requests in flight and
    returns (``SystemExit(0)``), so the caller's ``with Memory(...)`` closes the memory
    and drains its outbox; SIGINT ends the same way with ``KeyboardInterrupt``.

    Args:
        memory: the open memory; the caller closes it.
        keys: the API keys, or None (only on a loopback ``host``).
        host: the address to bind.
        port: the port (0: any free one; ``on_listening`` gets the URL).
        max_body_bytes: the largest request body accepted.
        log_level: uvicorn's log level.
        access_log: log every request.
        on_listening: called with the server's URL once the port is bound.

    Raises:
        ConfigError: no keys on a non-loopback host, or the port cannot be bound.

    """
    refuse_without_keys(host, keys)
    app = create_app(memory, keys, max_body_bytes=max_body_bytes)
    sock = listen(host, port)
    try:
        if on_listening is not None:
            on_listening(url_of(sock))
        serve_until_stopped(app, sock, log_level=log_level, access_log=access_log)
    finally:
        sock.close()
        app.state.workers.shutdown(wait=True)
