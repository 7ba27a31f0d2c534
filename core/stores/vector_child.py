"""The Chroma child's side of :mod:`~zep_core.stores.vector_process`, and the channel both sides speak.

:func:`helper_main` runs in the helper process: it imports chromadb once, then forks a
child per request, and when the memory's process is gone gives its children a moment
and goes too. Each child (:func:`_serve`) takes the folder's owner lock
(:func:`owner_lock`), opens Chroma as the folder's only client, and answers calls over a
:class:`Channel` (pickled messages on a Unix socket, each bounded by a deadline) until it
is told to stop or orphaned. :class:`Proc` is a process one may have to wait for or
kill, by pidfd where Linux has them; :func:`holders` and :func:`descends_from` are the
``/proc`` lookups that tell a leftover child from one's own. The memory's side (:class:`ChromaProcess
<zep_core.stores.vector_process.ChromaProcess>`, the helper's start, the leftovers'
check) is :mod:`~zep_core.stores.vector_process`.
"""

from __future__ import annotations

import json
import os
import pickle
import select
import signal
import socket
import struct
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import StoreError

__all__ = ["LENGTH", "OWNER_LOCK", "PID", "Channel", "Proc", "Stalled", "descends_from", "helper_main", "holders",
           "owner_lock", "recv_exactly"]

#: How long the helper lets its children finish their call once the memory's process is gone.
_ORPHAN_GRACE_S = 5.0
#: The file in a Chroma folder whose ``flock`` its one child holds while it has the folder open.
OWNER_LOCK = ".owner.lock"
_CALLS = frozenset({"upsert", "delete", "query", "ids", "count", "drop_user", "reset", "drop_retired",
                    "collection_ids"})
#: A fork request's length, a message frame's length, and the pid the helper answers with.
LENGTH = struct.Struct("!I")
_FRAME = struct.Struct("!Q")
PID = struct.Struct("!q")


class Stalled(Exception):
    """The other end did not answer before the deadline."""


class Channel:
    """Pickled messages over a Unix socket; sending and receiving can be bounded by a deadline."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def send(self, obj: Any, deadline: float | None = None) -> None:
        """Send one message; :class:`Stalled` if it cannot go before ``deadline`` (``time.monotonic()``)."""
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        self._timeout(deadline)
        try:
            self.sock.sendall(_FRAME.pack(len(data)) + data)
        except TimeoutError as exc:
            raise Stalled from exc

    def recv(self, deadline: float | None = None) -> Any:
        """Receive one message; :class:`Stalled` past ``deadline``, ``EOFError`` when the other end closed."""
        size = _FRAME.unpack(self._exactly(_FRAME.size, deadline))[0]
        return pickle.loads(self._exactly(size, deadline))

    def _exactly(self, n: int, deadline: float | None) -> bytes:
        buf = bytearray(n)
        view, got = memoryview(buf), 0
        while got < n:
            self._timeout(deadline)
            try:
                read = self.sock.recv_into(view[got:])
            except TimeoutError as exc:
                raise Stalled from exc
            if not read:
                raise EOFError("the other end closed")
            got += read
        return bytes(buf)

    def _timeout(self, deadline: float | None) -> None:
        if deadline is None:
            self.sock.settimeout(None)
            return
        left = deadline - time.monotonic()
        if left <= 0:
            raise Stalled
        self.sock.settimeout(left)

    def closed_by_peer(self, deadline: float) -> bool:
        """Whether the other end closes before ``deadline`` (what it sends meanwhile is dropped)."""
        try:
            while True:
                self._timeout(deadline)
                if not self.sock.recv(65536):
                    return True
        except Stalled:
            return False
        except TimeoutError:
            return False
        except OSError:
            return True

    def close(self) -> None:
        """Close this end (the other end sees its channel close)."""
        try:
            self.sock.close()
        except OSError:
            pass


class Proc:
    """A process we may have to kill or wait for, by pidfd where Linux has them (no pid-reuse race)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.fd: int | None = None
        if hasattr(os, "pidfd_open"):
            try:
                self.fd = os.pidfd_open(pid)
            except OSError:  # gone already, or an old kernel
                self.fd = None

    def exited(self, timeout_s: float = 0.0) -> bool:
        """Whether the process has exited, waiting up to ``timeout_s``."""
        if self.fd is not None:
            poller = select.poll()
            poller.register(self.fd, select.POLLIN)
            return bool(poller.poll(max(0, int(timeout_s * 1000))))
        deadline = time.monotonic() + timeout_s
        while True:
            if not _runs(self.pid):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)

    def kill(self) -> None:
        """Send it ``SIGKILL`` (nothing if it is gone already)."""
        try:
            if self.fd is not None:
                signal.pidfd_send_signal(self.fd, signal.SIGKILL)
            else:
                os.kill(self.pid, signal.SIGKILL)
        except OSError:  # already gone
            pass

    def close(self) -> None:
        """Let go of the pidfd (the process itself is left as it is)."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _runs(pid: int) -> bool:
    """Whether ``pid`` is a process that has not exited (a zombie has)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        if sys.platform.startswith("linux"):
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except OSError:
            return True
        return True
    return state not in ("Z", "X")


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    """Read exactly ``n`` bytes from ``sock`` (``EOFError`` if it closes first)."""
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError("the other end closed")
        data += chunk
    return data


# -- a folder's owner lock, and who holds it ----------------------------------------------------

def owner_lock(path: str, deadline: float) -> int | None:
    """Take the folder's owner lock (an open descriptor), waiting until ``deadline``; None if still held then."""
    import fcntl

    os.makedirs(path, exist_ok=True)
    owner = os.open(os.path.join(path, OWNER_LOCK), os.O_RDWR | os.O_CREAT, 0o644)
    while True:  # a child being closed (or killed) lets go of it as it exits
        try:
            fcntl.flock(owner, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return owner
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(owner)
                return None
            time.sleep(0.02)


def holders(lock_file: Path) -> list[int]:
    """The processes (Linux) that have ``lock_file`` open."""
    try:
        target = lock_file.stat()
    except OSError:
        return []
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            fds = list((proc / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                st = fd.stat()
            except OSError:
                continue
            if (st.st_dev, st.st_ino) == (target.st_dev, target.st_ino):
                found.append(int(proc.name))
                break
    return found


def descends_from(pid: int, ancestor: int) -> bool:
    """Whether ``ancestor`` is among the parents of ``pid`` (Linux)."""
    seen = 0
    while pid > 1 and seen < 64:
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            return False
        if pid == ancestor:
            return True
        seen += 1
    return False


# -- the helper and the children -----------------------------------------------------------

def helper_main(fd: int) -> None:
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
    children: list[Proc] = []
    try:
        _fork_children(control, children)
    finally:  # the memory's process is gone: its children get a moment to finish, then go too
        deadline = time.monotonic() + _ORPHAN_GRACE_S
        for child in children:
            if not child.exited(max(0.0, deadline - time.monotonic())):
                child.kill()


def _fork_children(control: socket.socket, children: list[Proc]) -> None:
    helper = os.getpid()
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 65536, 1)
        except OSError:
            return
        if not message or not fds:
            return  # the memory's process closed its end: it is gone
        size = LENGTH.unpack(message[:LENGTH.size])[0]
        request = message[LENGTH.size:]
        if len(request) < size:
            request += recv_exactly(control, size - len(request))
        pid = os.fork()
        if pid == 0:  # the child
            control.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            code = 1
            try:
                _die_with(helper)
                spec = json.loads(request.decode("utf-8"))
                _serve(Channel(socket.socket(fileno=fds[0])), spec["path"], spec["owner_wait_s"])
                code = 0
            finally:
                os._exit(code)
        os.close(fds[0])
        for child in [c for c in children if c.exited()]:
            child.close()
            children.remove(child)
        children.append(Proc(pid))
        try:
            control.sendall(PID.pack(pid))
        except OSError:
            return


def _die_with(parent: int) -> None:
    """Linux: have the kernel kill this process when ``parent`` (the helper, single-threaded) exits."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the helper exited before the request took effect
        os._exit(1)


def _serve(chan: Channel, path: str, owner_wait_s: float) -> None:
    """The child: open the folder as its only Chroma client, answer calls until told to stop or orphaned."""
    from .vectors import ChromaVectorIndex

    owner = owner_lock(path, time.monotonic() + owner_wait_s)
    index = None
    try:
        if owner is None:
            chan.send(("error", ("StoreError", f"another process still has the Chroma folder {path} open")))
            return
        try:
            index = ChromaVectorIndex(Path(path))
        except Exception as exc:
            chan.send(("error", (type(exc).__name__, str(exc))))
            return
        chan.send(("ok", None))
        while True:
            try:
                message = chan.recv()
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
                reply: tuple[str, Any] = ("error", (type(exc).__name__, str(exc)))
            else:
                reply = ("ok", value)
            try:
                chan.send(reply)
            except OSError:  # the memory's process is gone
                return
    finally:
        if index is not None:
            index.close()  # waits (briefly) for Chroma's background close, as in-process
        if owner is not None:
            os.close(owner)  # releases the flock once Chroma has let go of the folder
        chan.close()
