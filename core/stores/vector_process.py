"""The embedded Chroma index in a process of its own, served to the memory over a socket.

Why: chromadb's embedded client holds the interpreter lock for the whole of every write
(~5 ms per ``upsert``, whatever its size; only ``query`` and ``get`` release it, and
upstream declined to change that, chroma PR #3873). In the memory's process that stalls
everything else meanwhile: the next episode's rules, the embedding threads between two
texts, a ``get_context`` of another user. In a child Chroma has an interpreter of its own,
and the memory's thread that waits for a write waits on a socket, with the lock free
(bench/findings.md has what it bought).

:class:`ChromaProcess` is a :class:`~zep_core.stores.base.VectorIndex`: each call is sent
to a child that runs :class:`~zep_core.stores.vectors.ChromaVectorIndex` on the folder,
and its answer (or its error) comes back. Only plain values cross: ids, vectors, counts.

* Children are forked from one helper process per memory process, which imports chromadb
  once (~1 s, when the first memory opens); a child after that costs a fork. The helper
  is a fresh interpreter started with ``-c``, not multiprocessing's spawn or fork server:
  those import the application's main script again in every child, which breaks any
  script without an ``if __name__ == "__main__"`` guard.
* **Every call has a deadline** (``MemoryConfig.vector_timeout_s``, 30 s by default; the
  calls over the whole index, a reset or the consistency check's listing, ten times it).
  Writes are sent in chunks of :data:`_CHUNK` vectors, so a call that takes longer is
  stuck, not busy: Chroma can block forever inside a write when the disk is full. Past
  the deadline the child is killed, the call fails with a
  :class:`~zep_core.StoreUnavailableError` that says what to run, the index writes stay
  queued in SQLite, and the folder is marked for a check: the memory's close records an
  unclean shutdown, so the next open loads Chroma's files in a probe first and rebuilds
  them from SQLite if they do not load (they are derived data). The next call starts a
  new child. Closing waits for the child to close Chroma at most as long.
* **No process outlives the memory's.** The helper reads its control socket; when the
  memory's process is gone, however it died, the socket closes, and the helper gives its
  children :data:`~zep_core.stores.vector_child._ORPHAN_GRACE_S` to finish their call and
  close Chroma, kills those still there, and exits. On Linux each child also asks the kernel to kill it when the
  helper exits (``PR_SET_PDEATHSIG``), which holds even when the helper itself is killed
  and the child is stuck in native code.
* A child is the folder's only Chroma client: it holds an ``flock`` on
  ``chroma/.owner.lock`` while it has the folder open. A new holder of the data folder
  that finds the owner lock still held waits a moment for it, then looks for the process
  that holds it (:func:`free_folder`): a process running this module that is not its own
  descendant can only be a leftover of a holder that is gone (the data folder's lock is
  the new holder's), so it is killed, and the folder opens.
* A child found dead is started again and the call (every call is idempotent) sent once
  more; a child that dies twice on one call (Chroma crashing on a damaged file) is a
  :class:`~zep_core.StoreError` that says what to run.
* Where there is no ``fork`` (Windows), or with ``chroma_process=False``, Chroma runs in
  the memory's process as before (and a call there has no deadline).

This module is the memory's side; the helper's and the children's code, and the channel
both sides speak, are in :mod:`~zep_core.stores.vector_child`.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import StoreError, StoreUnavailableError, is_io_failure, store_error
from .vector_child import (
    LENGTH,
    OWNER_LOCK,
    PID,
    Channel,
    Proc,
    Stalled,
    descends_from,
    holders,
    owner_lock,
    recv_exactly,
)
from .vector_child import helper_main as _helper_main  # noqa: F401 - the helper's command line imports it here

__all__ = ["ChromaProcess", "available", "free_folder", "wait_for_owner"]

log = logging.getLogger("zep_core")

_START_TIMEOUT_S = 120.0   # the helper's first start imports chromadb; a busy machine can be slow
#: How long a new holder waits for a folder's Chroma owner lock before it looks for a leftover to kill.
_OWNER_WAIT_S = 5.0
#: The least time a child gets to open its folder (a busy machine's first Chroma client takes seconds).
_OPEN_AT_LEAST_S = 15.0
#: Vectors per write call: each call then takes a few seconds at most, so its deadline tells stuck from busy.
_CHUNK = 1000
#: The deadline of the calls whose work grows with the whole index, in calls' deadlines.
_WHOLE_INDEX = 10
_WHOLE_INDEX_CALLS = frozenset({"reset", "drop_retired", "collection_ids"})
#: Worker threads of Chroma's runtime in a child (its ``TOKIO_WORKER_THREADS``, unless the environment sets it).
#: A child serves one call at a time, so more workers only hand each call between threads: with one,
#: an upsert costs ~10 % less CPU, bulk ingest and the stream ran ~10 % faster, and queries the same
#: (bench/findings.md).
_CHROMA_WORKERS = 1
#: What the helper's command line holds: how :func:`free_folder` tells a leftover of ours. The helper
#: imports its main from this module, as it always has, so leftovers of earlier versions are known too.
_MARK = f"from {__name__} import _helper_main"


def available() -> bool:
    """Whether this platform can run Chroma in a child (it needs ``fork`` and Unix sockets)."""
    return bool(sys.executable) and hasattr(os, "fork") and hasattr(socket, "send_fds") and sys.platform != "win32"


class _Helper:
    """The process that forks the Chroma children: a fresh interpreter with chromadb imported once."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        code = (f"import json, sys; sys.path[:0] = json.loads(sys.argv[1]); "
                f"{_MARK}; _helper_main({theirs.fileno()})")
        env = dict(os.environ)
        env.setdefault("TOKIO_WORKER_THREADS", str(_CHROMA_WORKERS))
        try:
            self.proc = subprocess.Popen([sys.executable, "-c", code, json.dumps(sys.path)], env=env,
                                         pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, close_fds=True)
        except OSError as exc:
            ours.close()
            raise StoreError(f"could not start the Chroma helper process ({sys.executable}): {exc}") from exc
        finally:
            theirs.close()
        self.sock = ours
        self.lock = threading.Lock()

    def fork(self, path: Path, owner_wait_s: float) -> tuple[Channel, Proc]:
        """A new child serving ``path``: the channel to it and its process."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            request = json.dumps({"path": str(path), "owner_wait_s": owner_wait_s}).encode("utf-8")
            with self.lock:
                self.sock.settimeout(_START_TIMEOUT_S)
                socket.send_fds(self.sock, [LENGTH.pack(len(request)) + request], [theirs.fileno()])
                pid = PID.unpack(recv_exactly(self.sock, PID.size))[0]
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        return Channel(ours), Proc(pid)

    def alive(self) -> bool:
        return self.proc.poll() is None


_HELPER: _Helper | None = None
_HELPER_LOCK = threading.Lock()
#: Every ChromaProcess of this process: a process forked from this one must not use (or close) them.
_INSTANCES: weakref.WeakSet[ChromaProcess] = weakref.WeakSet()


def _fork(path: Path, owner_wait_s: float) -> tuple[Channel, Proc]:
    """Fork a child for ``path`` from this process's helper (started, or started again, as needed)."""
    global _HELPER
    with _HELPER_LOCK:
        for attempt in (1, 2):
            if _HELPER is None or not _HELPER.alive():
                _HELPER = _Helper()
            try:
                return _HELPER.fork(path, owner_wait_s)
            except (OSError, EOFError) as exc:
                _HELPER = None
                if attempt == 2:
                    raise StoreError(f"the Chroma helper process could not start a child for {path}: "
                                     f"{str(exc) or type(exc).__name__}") from exc
    raise AssertionError("unreachable")


def _after_fork_in_child() -> None:
    """In a process forked from this one: the helper and the children are the parent's, never ours."""
    global _HELPER, _HELPER_LOCK
    _HELPER_LOCK = threading.Lock()
    if _HELPER is not None:
        try:
            _HELPER.sock.close()  # our copy only: the parent's helper sees no end
        except OSError:
            pass
        _HELPER = None
    for index in list(_INSTANCES):
        index._disown()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class ChromaProcess:
    """The embedded Chroma index of ``path``, run in a child process.

    Args:
        path: the Chroma folder (``<data>/chroma``).
        timeout_s: the deadline of one call (see the module docstring).

    Raises:
        StoreError: the child could not start, or Chroma could not open the folder there
            (the message is Chroma's, as in-process).

    """

    def __init__(self, path: Path, *, timeout_s: float = 30.0) -> None:
        self.path = Path(path).resolve()
        self.timeout_s = float(timeout_s)
        self.pid: int | None = None
        #: Set once a child was killed in a call or while closing, or Chroma said its disk failed:
        #: its files may be damaged, so the next open of the data folder rebuilds them from SQLite.
        self.needs_check = False
        #: Called when ``needs_check`` is set (:func:`zep_core.stores.folder.open_folder` records it in the lock file).
        self.on_failure: Callable[[], None] | None = None
        self._chan: Channel | None = None
        self._proc: Proc | None = None
        self._finalizer: weakref.finalize | None = None
        self._lock = threading.Lock()
        self._closed = False
        with self._lock:
            if not free_folder(self.path):
                raise StoreError(f"another process still has the Chroma folder {self.path} open and it is not a "
                                 "leftover of zep-memory that could be stopped; stop it and open the folder again")
            self._start()
        _INSTANCES.add(self)

    # -- the child's life ----------------------------------------------------------------

    def _start(self) -> None:
        chan, proc = _fork(self.path, min(self.timeout_s, _OWNER_WAIT_S))
        opening_s = max(self.timeout_s, _OPEN_AT_LEAST_S)
        try:
            _answer(chan.recv(time.monotonic() + opening_s))
        except Stalled:
            self._kill(chan, proc)
            raise StoreUnavailableError(
                f"the Chroma process for {self.path} did not open it within {opening_s:.0f} s and was stopped; "
                f"{_WHAT_TO_DO}") from None
        except (EOFError, OSError) as exc:
            _stop(chan, proc, kill=True)
            raise StoreError(f"the Chroma process for {self.path} stopped while opening it; run "
                             "`zep-memory doctor` on the data folder") from exc
        except BaseException:
            _stop(chan, proc, kill=True)
            raise
        self._chan, self._proc, self.pid = chan, proc, proc.pid
        # At exit, or when this object is dropped unclosed: the child closes Chroma, never cut off mid-write.
        self._finalizer = weakref.finalize(self, _stop, chan, proc, timeout_s=self.timeout_s)

    def _call(self, name: str, *args: Any) -> Any:
        """Send one call to the child and return its answer, within the call's deadline.

        Every call is idempotent, so a child found dead (Chroma crashed in it, or it was
        killed) is started again and the call sent once more; a second death is an error.
        A child that does not answer in time is killed and the call is not sent again
        (whatever stuck it, a full disk say, would most likely stick the next one too).
        """
        timeout_s = self.timeout_s * (_WHOLE_INDEX if name in _WHOLE_INDEX_CALLS else 1)
        with self._lock:
            for attempt in (1, 2):
                if self._closed:
                    raise StoreError("the vector index is closed")
                if self._chan is None:
                    self._start()
                assert self._chan is not None and self._proc is not None
                deadline = time.monotonic() + timeout_s
                try:
                    self._chan.send((name, args), deadline)
                    reply = self._chan.recv(deadline)
                    break
                except Stalled:
                    self._kill(self._chan, self._proc)
                    raise StoreUnavailableError(
                        f"the Chroma process did not answer its {name} call within {timeout_s:.0f} s (a full disk "
                        f"can leave Chroma waiting forever) and was stopped; {_WHAT_TO_DO}") from None
                except (EOFError, OSError) as exc:
                    self._drop()
                    log.warning("the Chroma process stopped during %s%s", name,
                                "; starting it again" if attempt == 1 else "")
                    if attempt == 2:
                        raise StoreError(f"the Chroma process stopped twice during {name}: its files may be "
                                         "damaged; run `zep-memory doctor`, and `zep-memory rebuild` to make "
                                         "the vector index again from SQLite") from exc
        try:
            return _answer(reply)
        except StoreUnavailableError as exc:
            if is_io_failure(str(exc)):
                self._failed()  # Chroma itself says its disk failed
            raise

    def _failed(self) -> None:
        self.needs_check = True
        if self.on_failure is not None:
            self.on_failure()

    def _kill(self, chan: Channel, proc: Proc) -> None:
        """Kill a child that stopped answering and mark the folder for a check; the next call starts another."""
        log.warning("the Chroma process %d for %s did not answer in time; killing it", proc.pid, self.path)
        self._failed()
        if self._chan is chan:
            self._drop()
        else:
            _stop(chan, proc, kill=True)

    def _drop(self) -> None:
        """Forget a child that stopped answering (killing it, should it still run)."""
        if self._finalizer is not None:
            self._finalizer.detach()
        if self._chan is not None and self._proc is not None:
            _stop(self._chan, self._proc, kill=True)
        self._chan = self._proc = self._finalizer = None
        self.pid = None

    def _disown(self) -> None:
        """In a forked copy of the memory's process: let go of the parent's child without a word to it."""
        if self._finalizer is not None:
            self._finalizer.detach()
        if self._chan is not None:
            self._chan.close()
        if self._proc is not None:
            self._proc.close()
        self._chan = self._proc = self._finalizer = None
        self.pid = None
        self._closed = True

    def close(self) -> None:
        """Close Chroma in the child (it persists what it holds) and wait until it has, or the deadline passes."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._finalizer is not None and self._finalizer() is False:  # runs _stop once, and no more at exit
                self._failed()
            self._chan = self._proc = self._finalizer = None
            _INSTANCES.discard(self)

    # -- the VectorIndex protocol ----------------------------------------------------------

    def upsert(self, user_id: str, kind: str, ids: Sequence[str], vectors: np.ndarray) -> None:
        """Insert or replace vectors; idempotent."""
        vectors = np.asarray(vectors, dtype=np.float32)
        for i in range(0, len(ids), _CHUNK):
            self._call("upsert", user_id, kind, list(ids[i:i + _CHUNK]), vectors[i:i + _CHUNK])

    def delete(self, user_id: str, kind: str, ids: Sequence[str]) -> None:
        """Remove ids; missing ids are ignored."""
        for i in range(0, len(ids), _CHUNK):
            self._call("delete", user_id, kind, list(ids[i:i + _CHUNK]))

    def query(self, user_id: str, kind: str, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        """Up to ``k`` ``(id, cosine similarity)`` pairs, best first."""
        return self._call("query", user_id, kind, np.asarray(vector, dtype=np.float32), k)

    def ids(self, user_id: str, kind: str) -> set[str]:
        """Every id in a user's collection of that kind."""
        return self._call("ids", user_id, kind)

    def count(self, user_id: str, kind: str) -> int:
        """How many vectors a user's collection of that kind holds (0 when it does not exist)."""
        return self._call("count", user_id, kind)

    def drop_user(self, user_id: str) -> None:
        """Delete the user's collections."""
        self._call("drop_user", user_id)

    def reset(self) -> None:
        """Delete every collection of this index."""
        self._call("reset")

    def drop_retired(self) -> int:
        """Delete the collections of retired kinds; return how many."""
        return self._call("drop_retired")

    def collection_ids(self) -> dict[str, frozenset[str]]:
        """Every collection of this index by name, with the ids it holds (for checks and tests)."""
        return self._call("collection_ids")


_WHAT_TO_DO = ("the index writes stay queued in SQLite and nothing acknowledged is lost. Check that the disk holding "
               "the data folder has space, then retry; the next open checks the vector index and repairs it from "
               "SQLite if needed (`zep-memory doctor` reports it)")


def _answer(reply: tuple[str, Any]) -> Any:
    """The value of a child's reply, or its error raised here as the same kind of error."""
    status, value = reply
    if status == "ok":
        return value
    kind, message = value
    raise ValueError(message) if kind == "ValueError" else store_error(message)


def _stop(chan: Channel, proc: Proc, *, kill: bool = False, timeout_s: float = 0.0) -> bool:
    """Ask the child to close Chroma and wait up to ``timeout_s`` until it has; kill it if stuck or broken.

    Returns whether the child closed on its own (False: it was killed, maybe mid-write).
    """
    deadline = time.monotonic() + timeout_s
    if not kill:
        try:
            chan.send(None, deadline)
        except (Stalled, OSError):
            pass
    closed = not kill and chan.closed_by_peer(deadline)
    chan.close()
    if not closed:
        if not kill:
            log.warning("the Chroma process did not close within %.0f s; stopping it", timeout_s)
        proc.kill()
    proc.exited(_OWNER_WAIT_S)  # a killed child lets go of the folder's owner lock as it dies
    proc.close()
    return closed


# -- a folder's owner lock, and leftovers holding it ---------------------------------------

def _is_ours(pid: int) -> bool:
    """Whether ``pid`` runs this module's helper code (a helper, or a Chroma child forked from one)."""
    try:
        return _MARK.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def free_folder(path: Path, wait_s: float = _OWNER_WAIT_S) -> bool:
    """Make sure no leftover Chroma process has the folder open; call it holding the data folder's lock.

    Waits up to ``wait_s`` for the owner lock (a child closing lets go of it as it
    exits). If it is still held then, the holders are looked up (Linux): a process
    running this module that is not this process's own descendant is a leftover of an
    earlier holder of the data folder, which is gone (this process holds the folder's
    lock now), so it is killed, and the lock waited for once more. Returns whether the
    folder is free.
    """
    if not available() or not Path(path).is_dir():
        return True
    owner = owner_lock(str(path), time.monotonic() + wait_s)
    if owner is None and sys.platform.startswith("linux"):
        for pid in holders(Path(path) / OWNER_LOCK):
            if _is_ours(pid) and not descends_from(pid, os.getpid()):
                log.warning("killing process %d, a Chroma process left by an earlier holder of %s that is gone",
                            pid, path)
                leftover = Proc(pid)
                leftover.kill()
                leftover.exited(_OWNER_WAIT_S)
                leftover.close()
        owner = owner_lock(str(path), time.monotonic() + wait_s)
    if owner is None:
        return False
    os.close(owner)
    return True


def wait_for_owner(path: Path, timeout_s: float = _OWNER_WAIT_S) -> bool:
    """Wait until no Chroma child has the folder open (a leftover of a dead holder is killed).

    Call it before reading Chroma's files from outside a child (the check after a crash).
    Returns False if one still had it after ``timeout_s``.
    """
    return free_folder(path, timeout_s)
