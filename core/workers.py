"""The background threads of a memory: the indexer and the entity-refresh schedule.

:class:`Workers` starts daemon threads that share one stop event, and makes sure a
memory its owner forgot to close is closed before the interpreter tears threads
down (a worker still inside Kùzu or Chroma at exit aborts the process). The exit
hook is registered per memory and unregistered when the memory closes, so a closed
memory is neither kept alive nor closed twice.
"""

from __future__ import annotations

import atexit
import functools
import logging
import threading
import weakref
from collections.abc import Callable

__all__ = ["Failures", "Workers"]

log = logging.getLogger("zep_core")


class Workers:
    """Daemon threads with one stop event and an at-exit close of their owner.

    Args:
        owner: the object whose ``close()`` runs at interpreter exit while threads run.

    """

    def __init__(self, owner: object) -> None:
        self.stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._wakers: list[Callable[[], None]] = []
        self._exit_hook: Callable[[], None] | None = None
        self._owner = weakref.ref(owner)
        #: Set when the interpreter is exiting and closes the owner: thread pools are shut down by then.
        self.exiting = False

    def start(self, name: str, target: Callable[[threading.Event], None], *,
              wake: Callable[[], None] | None = None) -> None:
        """Run ``target(stopping)`` in a daemon thread; ``wake`` interrupts its wait at stop."""
        thread = threading.Thread(target=target, args=(self.stopping,), name=name, daemon=True)
        thread.start()  # may raise ("can't start new thread"): then nothing of it is kept to stop
        self._threads.append(thread)
        if wake is not None:
            self._wakers.append(wake)
        if self._exit_hook is None:
            self._exit_hook = functools.partial(_close_at_exit, self)
            atexit.register(self._exit_hook)

    def every(self, name: str, seconds: float, task: Callable[[], object]) -> None:
        """Run ``task()`` every ``seconds`` until stopped; a failing run is logged and the schedule goes on.

        A task that keeps failing (on a full disk, say) is logged once, with its error,
        and again when it works again, not at every run.
        """
        def loop(stopping: threading.Event) -> None:
            failing = Failures(f"background task {name}")
            while not stopping.wait(seconds):
                try:
                    task()
                except Exception:  # keep the schedule alive; the next pass retries
                    failing.failed()
                else:
                    failing.worked()

        self.start(name, loop)

    def stop(self, timeout: float = 30.0) -> None:
        """Signal every thread to stop, wait for them, and drop the exit hook."""
        self.stopping.set()
        for wake in self._wakers:
            wake()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=timeout)
        if self._exit_hook is not None:
            atexit.unregister(self._exit_hook)
            self._exit_hook = None


class Failures:
    """Logs a background job's failures once per streak: the first with its traceback, then its recovery."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.streak = 0

    def failed(self) -> None:
        """Call in an ``except`` block."""
        self.streak += 1
        if self.streak == 1:
            log.exception("%s failed; retrying quietly until it works again", self.what)
        else:
            log.debug("%s failed again (%d in a row)", self.what, self.streak, exc_info=True)

    def worked(self) -> None:
        """Call after a run that succeeded."""
        if self.streak:
            log.warning("%s works again after %d failed runs", self.what, self.streak)
            self.streak = 0


def _close_at_exit(workers: Workers) -> None:
    """Close an owner left open, before the interpreter tears its threads down."""
    owner = workers._owner()
    if owner is not None:
        workers.exiting = True
        owner.close()
