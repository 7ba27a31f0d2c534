"""Running the server: :func:`run_server` binds the port, serves until SIGTERM or SIGINT, and stops cleanly.

``zep-memory serve`` calls it. A server without API keys listens only on a loopback
address (:func:`is_loopback`); a port that cannot be bound is one clear
:class:`~zep_core.ConfigError` rather than uvicorn's exit. Its connections have
deadlines and a cap (:mod:`~zep_core.server.connections`), and it raises its own
open-files limit to the hard limit, so idle sockets cannot starve the stores of files.
"""

from __future__ import annotations

import ipaddress
import logging
import signal
import socket
import threading
from collections.abc import Callable
from typing import Any

from ..errors import ConfigError
from ..memory import Memory
from .connections import bounded_protocol
from .factory import DEFAULT_MAX_BODY_BYTES, create_app
from .keys import KeyRing
from .limits import DEFAULT_LIMITS, ServerLimits

__all__ = ["is_loopback", "run_server"]

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


#: Open files kept for the stores (SQLite, Chroma, Kùzu, the model) beyond the connections.
FILES_FOR_STORES = 256


def _raise_open_files_limit(max_connections: int) -> int:
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
    bounds the whole stop with a :class:`StopDeadline`.

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
    import uvicorn
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    if keys is None and not is_loopback(host):
        raise ConfigError(f"refusing to listen on {host} without API keys: anyone who can reach it could read and "
                          "write every user's memory; give --keys FILE (or set ZEP_MEMORY_API_KEYS or "
                          "ZEP_MEMORY_KEYS_FILE), or listen on 127.0.0.1")
    app = create_app(memory, keys, max_body_bytes=max_body_bytes)
    sock = _listen(host, port)
    bound = sock.getsockname()
    shown = f"[{bound[0]}]" if sock.family == socket.AF_INET6 else bound[0]
    protocol = bounded_protocol(AutoHTTPProtocol, head_timeout=limits.head_timeout, body_timeout=limits.body_timeout,
                                max_connections=_raise_open_files_limit(limits.max_connections))
    config = uvicorn.Config(app, log_level=log_level, access_log=access_log, lifespan="off", http=protocol,
                            timeout_keep_alive=limits.keep_alive_timeout,  # type: ignore[arg-type]
                            timeout_graceful_shutdown=limits.shutdown_timeout,  # type: ignore[arg-type]
                            server_header=False)
    if on_listening is not None:
        on_listening(f"http://{shown}:{bound[1]}")

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
        sock.close()
        # a verb the grace period cut off may still run in its thread: the memory must not close under it, so it
        # is waited for (the caller's StopDeadline bounds the wait)
        app.state.workers.shutdown(wait=True, cancel_futures=True)
