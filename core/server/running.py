"""Running the server: :func:`run_server` binds the port, serves until SIGTERM or SIGINT, and stops cleanly.

``zep-memory serve`` calls it. A server without API keys listens only on a loopback
address (:func:`is_loopback`); a port that cannot be bound is one clear
:class:`~zep_core.ConfigError` rather than uvicorn's exit.
"""

from __future__ import annotations

import ipaddress
import signal
import socket
import threading
from collections.abc import Callable
from typing import Any

from ..errors import ConfigError
from ..memory import Memory
from .factory import DEFAULT_MAX_BODY_BYTES, create_app
from .keys import KeyRing

__all__ = ["is_loopback", "run_server"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine only (127.0.0.0/8, ::1, a name that resolves only there)."""
    name = host.strip().strip("[]")
    if name.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        pass
    try:
        found = {info[4][0] for info in socket.getaddrinfo(name, None)}
    except (OSError, UnicodeError):
        return False
    try:
        return bool(found) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in found)
    except ValueError:
        return False


def _listen(host: str, port: int) -> socket.socket:
    """Bind the listening socket here, so a taken port is a one-line error rather than uvicorn's exit."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]
        sock = socket.socket(family, kind, proto)
    except (OSError, UnicodeError) as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; is another server using "
                          "the port? choose another --port") from None
    sock.set_inheritable(True)
    return sock


def _exit_cleanly(signum: int, frame: Any) -> None:
    raise SystemExit(0)


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
    import uvicorn

    if keys is None and not is_loopback(host):
        raise ConfigError(f"refusing to listen on {host} without API keys: anyone who can reach it could read and "
                          "write every user's memory; give --keys FILE (or set ZEP_MEMORY_API_KEYS or "
                          "ZEP_MEMORY_KEYS_FILE), or listen on 127.0.0.1")
    app = create_app(memory, keys, max_body_bytes=max_body_bytes)
    sock = _listen(host, port)
    bound = sock.getsockname()
    shown = f"[{bound[0]}]" if sock.family == socket.AF_INET6 else bound[0]
    if on_listening is not None:
        on_listening(f"http://{shown}:{bound[1]}")
    config = uvicorn.Config(app, log_level=log_level, access_log=access_log, lifespan="off",
                            timeout_graceful_shutdown=30, server_header=False)
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _exit_cleanly) if main else None  # uvicorn re-raises it after
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)
        sock.close()
        app.state.workers.shutdown(wait=True)
