"""Running the server: :func:`run_server` binds the port, serves until SIGTERM or SIGINT, and stops cleanly.

``zep-memory serve`` calls it. A server without API keys listens only on a loopback
address (:func:`~zep_core.server.listening.refuse_without_keys`); a port that cannot be
bound is one clear :class:`~zep_core.ConfigError` rather than uvicorn's exit. The
listening itself is :mod:`.listening`, which ``zep-memory mcp`` shares. Its connections have
deadlines and a cap (:mod:`~zep_core.server.connections`), and it raises its own
open-files limit to the hard limit, so idle sockets cannot starve the stores of files.
"""

from __future__ import annotations

from collections.abc import Callable

from ..memory import Memory
from .factory import DEFAULT_MAX_BODY_BYTES, create_app
from .keys import KeyRing
from .limits import DEFAULT_LIMITS, ServerLimits
from .listening import is_loopback, listen, refuse_without_keys, serve_until_stopped, url_of

__all__ = ["is_loopback", "run_server"]


def run_server(memory: Memory, keys: KeyRing | None, *, host: str = "127.0.0.1", port: int = 8765,
               max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, log_level: str = "info", access_log: bool = False,
               limits: ServerLimits = DEFAULT_LIMITS, on_listening: Callable[[str], None] | None = None,
               on_stopping: Callable[[], None] | None = None) -> None:
    """Serve ``memory`` until SIGTERM or SIGINT: one process, one worker, requests in worker threads.

    On SIGTERM the server stops taking connections, gives the requests in flight
    ``limits.shutdown_timeout`` seconds to finish and returns (``SystemExit(0)``), so the
    caller's ``with Memory(...)`` closes the memory and drains its outbox; SIGINT ends the
    same way with ``KeyboardInterrupt``. A verb still running then in its worker thread is
    waited for before returning (the memory must not close under it); ``zep-memory serve``
    bounds the whole stop with a :class:`~zep_core.server.limits.StopDeadline`.

    Args:
        memory: the open memory; the caller closes it.
        keys: the API keys, or None (only on a loopback ``host``).
        host: the address to bind.
        port: the port (0: any free one; ``on_listening`` gets the URL).
        max_body_bytes: the largest request body accepted.
        log_level: uvicorn's log level.
        access_log: log every request.
        limits: the deadlines, the connection cap and the shutdown time (:class:`ServerLimits`).
        on_listening: called with the server's URL once the port is bound.
        on_stopping: called at the first SIGTERM or SIGINT, as the server starts to stop.

    Raises:
        ConfigError: no keys on a non-loopback host, or the port cannot be bound.

    """
    refuse_without_keys(host, keys)
    app = create_app(memory, keys, max_body_bytes=max_body_bytes)
    sock = listen(host, port)
    try:
        if on_listening is not None:
            on_listening(url_of(sock))
        serve_until_stopped(app, sock, log_level=log_level, access_log=access_log, limits=limits,
                            on_stopping=on_stopping)
    finally:
        sock.close()
        # a verb the grace period cut off may still run in its thread: the memory must not close under it, so it
        # is waited for (the caller's StopDeadline bounds the wait)
        app.state.workers.shutdown(wait=True, cancel_futures=True)
