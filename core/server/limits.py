"""The server's limits on its clients and on its own stop, and the deadline that enforces the stop.

Plain data, importable without the server extra (the command line reads its defaults):
:class:`ServerLimits` is what ``zep-memory serve`` takes as options, and
:class:`StopDeadline` bounds the time from SIGTERM to the process's exit. The
connection deadlines themselves are in :mod:`~zep_core.server.connections`.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from dataclasses import dataclass, fields

from ..errors import ConfigError

__all__ = ["DEFAULT_LIMITS", "ServerLimits", "StopDeadline"]

log = logging.getLogger("zep_core.server")


@dataclass(frozen=True)
class ServerLimits:
    """How long the server waits for its clients, how many it holds at once, and how long it takes to stop.

    Attributes:
        head_timeout: seconds a connection has to send a whole request head, from its
            opening or from the next request's first byte (``--head-timeout``).
        body_timeout: seconds a request's body has to arrive whole after its head (``--body-timeout``).
        keep_alive_timeout: seconds an idle connection is kept open between requests (``--keep-alive-timeout``).
        max_connections: connections open at once; past it a new one gets 503 (``--max-connections``).
        shutdown_timeout: seconds requests in flight get to finish after SIGTERM (``--shutdown-timeout``).
        close_timeout: seconds the memory's close gets after that (``--close-timeout``): the
            process exits at most ``shutdown_timeout + close_timeout`` after SIGTERM
            (:attr:`stop_s`, enforced by :class:`StopDeadline`).

    Raises:
        ConfigError: a value that is not a positive number.

    """

    head_timeout: float = 10.0
    body_timeout: float = 60.0
    keep_alive_timeout: float = 5.0
    max_connections: int = 1000
    shutdown_timeout: float = 30.0
    close_timeout: float = 10.0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            whole = f.name == "max_connections"
            if isinstance(value, bool) or not isinstance(value, int if whole else (int, float)) or not (
                    0 < value < 10**9):
                option = "--" + f.name.replace("_", "-")
                raise ConfigError(f"{option} must be a positive {'whole ' if whole else ''}number"
                                  f"{'' if whole else ' of seconds'}, got {value!r}")

    @property
    def stop_s(self) -> float:
        """The most seconds the process takes to exit after SIGTERM: the requests' time, then closing the memory."""
        return self.shutdown_timeout + self.close_timeout


#: The defaults: 40 s at most from SIGTERM to exit, within the 45 s the systemd unit in docs/server.md allows.
DEFAULT_LIMITS = ServerLimits()


class StopDeadline:
    """A process exit ``seconds`` after :meth:`start` unless :meth:`cancel` comes first: the bound on stopping.

    ``zep-memory serve`` starts it at SIGTERM and cancels it once the memory is closed. A
    request still running then (a long import, a verb the grace period cut off) would hold
    the memory's close up for as long as it runs; at the deadline the process exits
    instead, with status 1. Nothing acknowledged is lost: every answered write was
    committed to the record store first, and the next start replays the index writes, as after a crash.
    """

    def __init__(self, seconds: float) -> None:
        """Not started."""
        self.seconds = seconds
        self._timer: threading.Timer | None = None

    def start(self) -> None:
        """Start counting (again: no effect)."""
        if self._timer is None:
            self._timer = threading.Timer(self.seconds, self._exit)
            self._timer.daemon = True
            self._timer.start()

    def cancel(self) -> None:
        """Stopped in time: no exit."""
        if self._timer is not None:
            self._timer.cancel()

    def _exit(self) -> None:
        log.error("zep-memory serve: still stopping %g s after the signal (a request or the memory's close is still "
                  "running); exiting now. Every acknowledged write is stored; the next start applies the index "
                  "writes left, and an episode cut short stays pending (send it again, or run maintain)", self.seconds)
        for handler in logging.getLogger().handlers + log.handlers:
            handler.flush()
        sys.stderr.flush()
        os._exit(1)
