"""The Cypher sandbox process: one in-memory Kùzu graph per tenant, nothing else.

Run by :class:`zep_core.stores.sandbox.CypherSandbox` as a plain script (it imports
only the standard library and Kùzu, so it starts in well under a second), it reads
framed pickled requests on stdin and writes framed pickled replies on stdout:

* ``{"op": "load", "key", "ddl", "entities", "facts", "buffer_pool_mb"}`` builds a
  tenant's graph from two CSV files its parent wrote, holding that tenant's rows only;
* ``{"op": "query", "key", "query", "params", "max_rows", "timeout_ms"}`` runs a query
  in a read-only transaction against the graph of ``key`` and nothing else, or answers
  ``{"need": True}`` when that graph is not loaded.

The process limits its own address space (``RLIMIT_AS``), so a query that tries to
materialise a huge list fails with an error here instead of taking the machine's
memory or crashing the application; its parent kills it when a query outruns the time
limit. The tenant graphs are kept least recently used first, up to a count.

Before it reads a request, the process confines itself with Landlock (Linux 5.13 and
later, unprivileged): from then on it can open no file but the load files in its work
folder, write none, and open no network connection. So a query that reaches for the
data folder (``ATTACH`` of the graph index, ``LOAD FROM`` the SQLite file, ``COPY TO``,
``EXPORT DATABASE``) finds nothing there to read, whatever the parent's query check let
through. The ready reply says whether that worked (``confined``: the Landlock ABI, or 0).
"""

from __future__ import annotations

import ctypes
import os
import pickle
import struct
import sys
from collections import OrderedDict
from typing import Any

_HEADER = struct.Struct("!Q")


def _read(stream: Any) -> Any:
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(head)
    return pickle.loads(stream.read(size))  # noqa: S301 - the parent is the only writer


def _write(stream: Any, reply: dict) -> None:
    try:
        data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # a value Kùzu returned that pickle cannot carry
        data = pickle.dumps({"error": "failed", "message": f"a result value cannot be returned: {exc}"})
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


class _Graphs:
    def __init__(self, kuzu: Any, keep: int) -> None:
        self.kuzu = kuzu
        self.keep = keep
        self.loaded: OrderedDict[Any, tuple[Any, Any]] = OrderedDict()

    def load(self, request: dict) -> dict:
        self.loaded.pop(request["key"], None)
        while len(self.loaded) >= self.keep:
            self.loaded.popitem(last=False)
        try:
            graph = self._build(request)
        except (MemoryError, RuntimeError) as exc:
            if not (self.loaded and _is_memory(exc)):
                raise
            self.loaded.clear()  # make room and try once more
            graph = self._build(request)
        self.loaded[request["key"]] = graph
        return {"loaded": True}

    def _build(self, request: dict) -> tuple[Any, Any]:
        pool = int(request["buffer_pool_mb"]) << 20
        db = self.kuzu.Database(":memory:", buffer_pool_size=pool, max_num_threads=1, max_db_size=2 * pool)
        conn = self.kuzu.Connection(db)
        for ddl in request["ddl"]:
            conn.execute(ddl)
        options = "(header=false, parallel=false, quote='\"', escape='\"')"
        for table, path in (("Entity", request["entities"]), ("FACT", request["facts"])):
            if os.path.getsize(path):
                conn.execute(f"COPY {table} FROM '{path}' {options}")
        return db, conn

    def query(self, request: dict) -> dict:
        graph = self.loaded.get(request["key"])
        if graph is None:
            return {"need": True}
        self.loaded.move_to_end(request["key"])
        conn = graph[1]
        conn.set_query_timeout(int(request["timeout_ms"]))
        conn.execute("BEGIN TRANSACTION READ ONLY")
        try:
            result = conn.execute(request["query"], request["params"])
            names = result.get_column_names()
            rows, cap = [], int(request["max_rows"])
            while result.has_next():
                if len(rows) == cap:
                    return {"error": "rows", "message": str(cap)}
                rows.append(dict(zip(names, result.get_next())))
            return {"rows": rows}
        finally:
            try:
                conn.execute("ROLLBACK")
            except RuntimeError:  # Kùzu already ended the transaction the query failed in
                pass


# Landlock (linux/landlock.h): the syscall numbers are the same on every architecture.
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION, _RULE_PATH_BENEATH, _PR_SET_NO_NEW_PRIVS = 1, 1, 38
_FS_READ_FILE, _FS_READ_DIR = 1 << 2, 1 << 3


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _confine(readable: str) -> tuple[int, str]:
    """Allow this process to read files under ``readable`` and nothing else; return (ABI, why not)."""
    if not sys.platform.startswith("linux"):
        return 0, "Landlock is Linux-only"
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        abi = libc.syscall(_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION)
        if abi < 1:
            return 0, f"this kernel has no Landlock ({os.strerror(ctypes.get_errno())})"
        fs = (1 << 13) - 1 | (1 << 13 if abi >= 2 else 0) | (1 << 14 if abi >= 3 else 0) | (1 << 15 if abi >= 5 else 0)
        attr = _RulesetAttr(fs, 0b11 if abi >= 4 else 0, 0b11 if abi >= 6 else 0)  # TCP bind+connect; sockets+signals
        size = 8 if abi < 4 else 16 if abi < 6 else 24
        ruleset = libc.syscall(_CREATE_RULESET, ctypes.byref(attr), size, 0)
        if ruleset < 0:
            return 0, f"Landlock refused the ruleset ({os.strerror(ctypes.get_errno())})"
        try:
            folder = os.open(readable, os.O_PATH | os.O_DIRECTORY)
            try:
                rule = _PathBeneathAttr(_FS_READ_FILE | _FS_READ_DIR, folder)
                if libc.syscall(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
                    return 0, f"Landlock refused the rule ({os.strerror(ctypes.get_errno())})"
            finally:
                os.close(folder)
            if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or libc.syscall(_RESTRICT_SELF, ruleset, 0) != 0:
                return 0, f"Landlock could not be applied ({os.strerror(ctypes.get_errno())})"
        finally:
            os.close(ruleset)
    except (OSError, AttributeError) as exc:
        return 0, f"Landlock is not available ({exc})"
    return abi, ""


def _is_memory(exc: BaseException) -> bool:
    return isinstance(exc, MemoryError) or "bad_alloc" in str(exc) or "Buffer manager" in str(exc)


def _answer(graphs: _Graphs, request: dict) -> dict:
    try:
        if request["op"] == "load":
            return graphs.load(request)
        return graphs.query(request)
    except (MemoryError, RuntimeError) as exc:
        message = str(exc) or type(exc).__name__
        kind = "memory" if _is_memory(exc) else "timeout" if message.strip() == "Interrupted." else "failed"
        return {"error": kind, "message": message}


def main() -> None:
    memory_mb, keep, work_dir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    try:
        import resource

        limit = memory_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError):  # not on this platform: the time limit still holds
        pass
    import datetime  # noqa: F401 - what Kùzu turns values into, imported before the files are shut
    import decimal  # noqa: F401
    import uuid  # noqa: F401

    import kuzu

    confined, why = _confine(work_dir)
    graphs = _Graphs(kuzu, keep)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but replies goes to the parent's pipe
    _write(stdout, {"ready": True, "confined": confined, "why": why})
    while True:
        request = _read(stdin)
        if request is None or request.get("op") == "exit":
            return
        _write(stdout, _answer(graphs, request))


if __name__ == "__main__":
    main()
