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
import logging
import signal
import socket
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError

if TYPE_CHECKING:
    from .keys import KeyRing
    from .limits import ServerLimits

__all__ = ["is_loopback", "listen", "raise_open_files_limit", "refuse_without_keys", "serve_until_stopped", "url_of"]

log = logging.getLogger("zep_core.server")


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


#: Open files kept for the stores (a data folder's SQLite, Chroma and Kùzu; the model) beyond the connections.
FILES_FOR_STORES = 256


def raise_open_files_limit(max_connections: int) -> int:
    """Raise this process's open-files limit to the hard limit; return how many connections it leaves room for.

    systemd starts services with a soft limit of 1,024 open files, and every connection
    holds one: raised to the hard limit (524,288 under systemd), idle sockets cannot use up
    the files the stores need. Where the hard limit is low, fewer connections are served.
    """
    try:
        import resource
    except ImportError:  # not on this platform
        return max_connections
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else max(soft, max_connections + FILES_FOR_STORES)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        except (ValueError, OSError) as exc:
            log.warning("could not raise the open-files limit from %d to %d: %s", soft, wanted, exc)
    room = max_connections if soft == resource.RLIM_INFINITY else min(max_connections, soft - FILES_FOR_STORES)
    if room < max_connections:
        room = max(room, 16)
        log.warning("the open-files limit is %d: serving at most %d connections at once instead of %d; raise it "
                    "(LimitNOFILE= under systemd, ulimit -n) for more", soft, room, max_connections)
    return room


def serve_until_stopped(app: Any, sock: socket.socket, *, log_level: str = "info", access_log: bool = False,
                        lifespan: str = "off", graceful_s: float = 30, limits: ServerLimits | None = None,
                        on_stopping: Callable[[], None] | None = None) -> None:
    """Serve the ASGI ``app`` on ``sock`` under uvicorn until SIGTERM or SIGINT.

    On SIGTERM uvicorn stops taking connections, waits up to ``graceful_s`` for the requests
    in flight, and this raises ``SystemExit(0)`` (SIGINT: ``KeyboardInterrupt``), so the
    caller's ``with`` blocks close what they opened. The caller closes ``sock``.

    Args:
        app: the ASGI app.
        sock: the listening socket (:func:`listen`).
        log_level: uvicorn's log level.
        access_log: log every request.
        lifespan: uvicorn's lifespan mode.
        graceful_s: how long the requests in flight get at a stop, without ``limits``.
        limits: deadlines on each connection's head and body, the keep-alive timeout, the cap on
            open connections and the stop's grace (:mod:`.connections`, :mod:`.limits`; it needs
            the ``server`` extra).
        on_stopping: called at the first SIGTERM or SIGINT, as the server starts to stop.

    """
    import uvicorn

    options: dict[str, Any] = {"timeout_graceful_shutdown": graceful_s}
    if limits is not None:
        from uvicorn.protocols.http.auto import AutoHTTPProtocol

        from .connections import bounded_protocol

        options = {"timeout_graceful_shutdown": limits.shutdown_timeout,
                   "timeout_keep_alive": limits.keep_alive_timeout,
                   "http": bounded_protocol(AutoHTTPProtocol, head_timeout=limits.head_timeout,
                                            body_timeout=limits.body_timeout,
                                            max_connections=raise_open_files_limit(limits.max_connections))}
    config = uvicorn.Config(app, log_level=log_level, access_log=access_log, lifespan=lifespan, server_header=False,
                            **options)

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            if not self.should_exit and on_stopping is not None:
                on_stopping()
            super().handle_exit(sig, frame)

    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _exit_cleanly) if main else None  # uvicorn re-raises it after
    try:
        Server(config).run(sockets=[sock])
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)
