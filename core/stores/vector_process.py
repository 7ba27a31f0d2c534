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
* A child is the folder's only Chroma client: it holds an ``flock`` on
  ``chroma/.owner.lock`` while it has the folder open, so a child left behind by a killed
  memory finishes its call and closes before the next one opens the folder.
* It exits when the memory closes it or when its socket closes (the memory's process
  died), after closing Chroma; the helper exits with the memory's process too. A child
  found dead is started again and the call (every call is idempotent) sent once more; a
  child that dies twice on one call (Chroma crashing on a damaged file) is a
  :class:`~zep_core.StoreError` that says what to run.
* Where there is no ``fork`` (Windows), or with ``chroma_process=False``, Chroma runs in
  the memory's process as before.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import StoreError

__all__ = ["ChromaProcess", "available", "wait_for_owner"]

log = logging.getLogger("zep_core")

_START_TIMEOUT_S = 120.0   # the helper's first start imports chromadb; a busy machine can be slow
_CLOSE_TIMEOUT_S = 60.0    # closing Chroma persists what it holds
_OWNER_LOCK = ".owner.lock"
_CALLS = frozenset({"upsert", "delete", "query", "ids", "count", "drop_user", "reset", "drop_retired",
                    "collection_ids"})
#: Worker threads of Chroma's runtime in a child (its ``TOKIO_WORKER_THREADS``, unless the environment sets it).
#: A child serves one call at a time, so more workers only hand each call between threads: with one,
#: an upsert costs ~10 % less CPU, bulk ingest and the stream ran ~10 % faster, and queries the same
#: (bench/findings.md).
_CHROMA_WORKERS = 1
_LENGTH = struct.Struct("!I")
_PID = struct.Struct("!q")


def available() -> bool:
    """Whether this platform can run Chroma in a child (it needs ``fork`` and Unix sockets)."""
    return bool(sys.executable) and hasattr(os, "fork") and hasattr(socket, "send_fds") and sys.platform != "win32"


class _Helper:
    """The process that forks the Chroma children: a fresh interpreter with chromadb imported once."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        code = (f"import json, sys; sys.path[:0] = json.loads(sys.argv[1]); "
                f"from {__name__} import _helper_main; _helper_main({theirs.fileno()})")
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

    def fork(self, path: Path) -> tuple[Connection, int]:
        """A new child serving ``path``: the connection to it and its pid."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            request = str(path).encode("utf-8")
            with self.lock:
                self.sock.settimeout(_START_TIMEOUT_S)
                socket.send_fds(self.sock, [_LENGTH.pack(len(request)) + request], [theirs.fileno()])
                pid = _PID.unpack(_recv_exactly(self.sock, _PID.size))[0]
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        return Connection(ours.detach()), pid

    def alive(self) -> bool:
        return self.proc.poll() is None


_HELPER: _Helper | None = None
_HELPER_LOCK = threading.Lock()


def _fork(path: Path) -> tuple[Connection, int]:
    """Fork a child for ``path`` from this process's helper (started, or started again, as needed)."""
    global _HELPER
    with _HELPER_LOCK:
        for attempt in (1, 2):
            if _HELPER is None or not _HELPER.alive():
                _HELPER = _Helper()
            try:
                return _HELPER.fork(path)
            except (OSError, EOFError) as exc:
                _HELPER = None
                if attempt == 2:
                    raise StoreError(f"the Chroma helper process could not start a child for {path}: "
                                     f"{str(exc) or type(exc).__name__}") from exc
    raise AssertionError("unreachable")


class ChromaProcess:
    """The embedded Chroma index of ``path``, run in a child process.

    Args:
        path: the Chroma folder (``<data>/chroma``).

    Raises:
        StoreError: the child could not start, or Chroma could not open the folder there
            (the message is Chroma's, as in-process).

    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path).resolve()
        self.pid: int | None = None
        self._conn: Connection | None = None
        self._finalizer: weakref.finalize | None = None
        self._lock = threading.Lock()
        self._closed = False
        with self._lock:
            self._start()

    # -- the child's life ----------------------------------------------------------------

    def _start(self) -> None:
        conn, pid = _fork(self.path)
        try:
            if not conn.poll(_START_TIMEOUT_S):
                raise StoreError(f"the Chroma process for {self.path} did not open it within {_START_TIMEOUT_S:.0f} s")
            _answer(conn.recv())
        except (EOFError, OSError) as exc:
            _stop(conn, pid, kill=True)
            raise StoreError(f"the Chroma process for {self.path} stopped while opening it; run "
                             "`zep-memory doctor` on the data folder") from exc
        except BaseException:
            _stop(conn, pid, kill=True)
            raise
        self._conn, self.pid = conn, pid
        # At exit, or when this object is dropped unclosed: the child closes Chroma, never cut off mid-write.
        self._finalizer = weakref.finalize(self, _stop, conn, pid)

    def _call(self, name: str, *args: Any) -> Any:
        """Send one call to the child and return its answer.

        Every call is idempotent, so a child found dead (Chroma crashed in it, or it was
        killed) is started again and the call sent once more; a second death is an error.
        """
        with self._lock:
            for attempt in (1, 2):
                if self._closed:
                    raise StoreError("the vector index is closed")
                if self._conn is None:
                    self._start()
                assert self._conn is not None
                try:
                    self._conn.send((name, args))
                    reply = self._conn.recv()
                    break
                except (EOFError, OSError) as exc:
                    self._drop()
                    log.warning("the Chroma process stopped during %s%s", name,
                                "; starting it again" if attempt == 1 else "")
                    if attempt == 2:
                        raise StoreError(f"the Chroma process stopped twice during {name}: its files may be "
                                         "damaged; run `zep-memory doctor`, and `zep-memory rebuild` to make "
                                         "the vector index again from SQLite") from exc
        return _answer(reply)

    def _drop(self) -> None:
        """Forget a child that stopped answering (killing it, should it still run)."""
        if self._finalizer is not None:
            self._finalizer.detach()
        if self._conn is not None and self.pid is not None:
            _stop(self._conn, self.pid, kill=True)
        self._conn = self._finalizer = None
        self.pid = None

    def close(self) -> None:
        """Close Chroma in the child (it persists what it holds) and wait until it has."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._finalizer is not None:
                self._finalizer()  # runs _stop once, and no more at exit
            self._conn = self._finalizer = None

    # -- the VectorIndex protocol ----------------------------------------------------------

    def upsert(self, user_id: str, kind: str, ids: Sequence[str], vectors: np.ndarray) -> None:
        """Insert or replace vectors; idempotent."""
        if len(ids):
            self._call("upsert", user_id, kind, list(ids), np.asarray(vectors, dtype=np.float32))

    def delete(self, user_id: str, kind: str, ids: Sequence[str]) -> None:
        """Remove ids; missing ids are ignored."""
        if len(ids):
            self._call("delete", user_id, kind, list(ids))

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


def _answer(reply: tuple[str, Any]) -> Any:
    """The value of a child's reply, or its error raised here as the same kind of error."""
    status, value = reply
    if status == "ok":
        return value
    kind, message = value
    raise (ValueError if kind == "ValueError" else StoreError)(message)


def _stop(conn: Connection, pid: int, *, kill: bool = False) -> None:
    """Ask the child to close Chroma and wait until its end of the socket closes; kill it if stuck or broken.

    A child whose end of the socket is closed has exited (or is exiting, Chroma closed), so
    it is never signalled: its pid may already belong to another process.
    """
    if not kill:
        try:
            conn.send(None)
        except OSError:
            pass
    gone = _ended(conn, 0 if kill else _CLOSE_TIMEOUT_S)
    try:
        conn.close()
    except OSError:
        pass
    if not gone:
        if not kill:
            log.warning("the Chroma process did not close within %.0f s; stopping it", _CLOSE_TIMEOUT_S)
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:  # already gone
            pass


def _ended(conn: Connection, timeout_s: float) -> bool:
    """Whether the child's end of the socket closes within ``timeout_s`` (what it sends meanwhile is dropped)."""
    deadline = time.monotonic() + timeout_s
    try:
        while conn.poll(max(0.0, deadline - time.monotonic())):
            conn.recv()
    except (EOFError, OSError):
        return True
    return False


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError("the other end closed")
        data += chunk
    return data


# -- the helper and the children -----------------------------------------------------------

def _helper_main(fd: int) -> None:
    """The helper: import chromadb once, then fork a child per request until the memory's process is gone."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    try:  # each child starts with these loaded: chromadb, and what its first client would import
        import chromadb  # noqa: F401
        import chromadb.api.rust  # noqa: F401
        import chromadb.telemetry.product.posthog  # noqa: F401

        from . import vectors  # noqa: F401
    except Exception:  # a child reports it, with the folder it was opening
        pass
    control = socket.socket(fileno=fd)
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 65536, 1)
        except OSError:
            return
        if not message or not fds:
            return  # the memory's process closed its end: it is gone
        size = _LENGTH.unpack(message[:_LENGTH.size])[0]
        request = message[_LENGTH.size:]
        if len(request) < size:
            request += _recv_exactly(control, size - len(request))
        pid = os.fork()
        if pid == 0:  # the child
            control.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            code = 1
            try:
                _serve(Connection(fds[0]), request.decode("utf-8"))
                code = 0
            finally:
                os._exit(code)
        os.close(fds[0])
        try:
            control.sendall(_PID.pack(pid))
        except OSError:
            return


def _owner_lock(path: str, deadline: float) -> int | None:
    """Take the folder's owner lock (an open descriptor), waiting until ``deadline``; None if still held then."""
    import fcntl

    os.makedirs(path, exist_ok=True)
    owner = os.open(os.path.join(path, _OWNER_LOCK), os.O_RDWR | os.O_CREAT, 0o644)
    while True:  # a child left behind by a killed memory may still be closing the folder
        try:
            fcntl.flock(owner, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return owner
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(owner)
                return None
            time.sleep(0.02)


def wait_for_owner(path: Path, timeout_s: float = _CLOSE_TIMEOUT_S) -> bool:
    """Wait until no Chroma child has the folder open (one left by a killed memory finishes first).

    Call it before reading Chroma's files from outside a child (the check after a crash).
    Returns False if one still had it after ``timeout_s``.
    """
    if not available() or not Path(path).is_dir():
        return True
    owner = _owner_lock(str(path), time.monotonic() + timeout_s)
    if owner is None:
        return False
    os.close(owner)
    return True


def _serve(conn: Connection, path: str) -> None:
    """The child: open the folder as its only Chroma client, answer calls until told to stop or orphaned."""
    from .vectors import ChromaVectorIndex

    owner = _owner_lock(path, time.monotonic() + _CLOSE_TIMEOUT_S)
    index = None
    try:
        if owner is None:
            conn.send(("error", ("StoreError", f"another process still has the Chroma folder {path} open")))
            return
        try:
            index = ChromaVectorIndex(Path(path))
        except Exception as exc:
            conn.send(("error", (type(exc).__name__, str(exc))))
            return
        conn.send(("ok", None))
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):  # the memory's process is gone
                return
            if message is None:
                return
            name, args = message
            try:
                if name not in _CALLS:
                    raise StoreError(f"unknown vector index call {name!r}")
                value = getattr(index, name)(*args)
            except Exception as exc:
                conn.send(("error", (type(exc).__name__, str(exc))))
            else:
                conn.send(("ok", value))
    finally:
        if index is not None:
            index.close()  # waits (briefly) for Chroma's background close, as in-process
        if owner is not None:
            os.close(owner)  # releases the flock once Chroma has let go of the folder
        conn.close()
