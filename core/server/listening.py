"""Where a server may listen, and running an ASGI app there until SIGTERM or SIGINT.

``zep-memory serve`` and ``zep-memory mcp --transport streamable-http`` share these: a
server without API keys may listen on a loopback address only (:func:`refuse_without_keys`,
:func:`is_loopback`); a port that cannot be bound is one clear
:class:`~zep_core.ConfigError` rather than uvicorn's exit (:func:`listen`); SIGTERM ends
:func:`serve_until_stopped` as ``SystemExit(0)``, so the caller's ``with`` blocks close
what they opened. Nothing here imports FastAPI (the ``mcp`` extra has none).
"""

from __future__ import annotations

import ipaddress
import signal
import socket
import threading
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError

if TYPE_CHECKING:
    from .keys import KeyRing

__all__ = ["is_loopback", "listen", "refuse_without_keys", "serve_until_stopped", "url_of"]


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


def refuse_without_keys(host: str, keys: KeyRing | None, *, exposes: str = "every user's memory",
                        loopback_too: bool = False) -> None:
    """Refuse to listen on ``host`` without API keys where a client without one could reach the memory.

    Args:
        host: the address the server would listen on.
        keys: the server's API keys, or None.
        exposes: whose memory a client without a key could read and write, for the message.
        loopback_too: refuse on a loopback address as well (a server that holds a key of its own,
            which a local client without one would use).

    Raises:
        ConfigError: no keys on a non-loopback ``host`` (or on any, with ``loopback_too``).

    """
    if keys is not None:
        return
    local = is_loopback(host)
    if local and not loopback_too:
        return
    who = "any process on this machine that reaches it" if local else "anyone who can reach it"
    raise ConfigError(f"refusing to listen on {host} without API keys: {who} could read and write {exposes}; give "
                      "--keys FILE (or set ZEP_MEMORY_API_KEYS or ZEP_MEMORY_KEYS_FILE)"
                      + ("" if local else ", or listen on 127.0.0.1"))


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` and listening (port 0: any free one).

    Raises:
        ConfigError: the address does not resolve, or the port cannot be bound (taken, or not allowed).

    """
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


def url_of(sock: socket.socket) -> str:
    """``http://host:port`` of a listening socket (an IPv6 address in brackets)."""
    bound = sock.getsockname()
    shown = f"[{bound[0]}]" if sock.family == socket.AF_INET6 else bound[0]
    return f"http://{shown}:{bound[1]}"


def _exit_cleanly(signum: int, frame: Any) -> None:
    raise SystemExit(0)


def serve_until_stopped(app: Any, sock: socket.socket, *, log_level: str = "info", access_log: bool = False,
                        lifespan: str = "off", graceful_s: float = 30) -> None:
    """Serve the ASGI ``app`` on ``sock`` under uvicorn until SIGTERM or SIGINT.

    On SIGTERM uvicorn stops taking connections, waits up to ``graceful_s`` for the requests
    in flight, and this raises ``SystemExit(0)`` (SIGINT: ``KeyboardInterrupt``), so the
    caller's ``with`` blocks close what they opened. The caller closes ``sock``.
    """
    import uvicorn

    config = uvicorn.Config(app, log_level=log_level, access_log=access_log, lifespan=lifespan,
                            timeout_graceful_shutdown=graceful_s, server_header=False)
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _exit_cleanly) if main else None  # uvicorn re-raises it after
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)
