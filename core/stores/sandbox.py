"""Tenant Cypher in a sandbox: each query sees a graph that holds only its tenant's rows.

``Memory.cypher()`` does not run the caller's text against the shared graph index.
It runs it in a separate process (:mod:`zep_core.stores._sandbox_child`) against an
in-memory Kùzu graph built from SQLite, the system of record, with the calling user's
entities and relationships and nothing else. Another tenant's data is not hidden from
the query; it is not there, so no pattern, subquery or function can reach it. The
graph is kept (a few tenants, least recently used first) until that tenant's next
write, which bumps its version (:meth:`zep_core.sync.IndexSync.version`).

The process also bounds what one query may cost, which Kùzu alone does not: a query
timeout (Kùzu's own, and a kill of the process when Kùzu does not stop in time), a
row cap, and an address-space limit, so ``UNWIND range(1, 10000000000)`` fails with a
:class:`~zep_core.errors.QueryError` instead of exhausting memory or crashing the
application. The process starts on the first query and stops with the memory.

Measured (bench/findings.md): a 450-fact tenant's graph builds in ~60 ms; a warm
query costs ~2 ms more than in-process; the process holds ~40 MB per cached tenant.
"""

from __future__ import annotations

import csv
import io
import logging
import os
import pickle
import select
import struct
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import QueryError
from .graph import SCHEMA as GRAPH_SCHEMA
from .record_protocols import GraphRecords

__all__ = ["GRAPH_SCHEMA", "CypherSandbox", "SandboxLimits"]

log = logging.getLogger("zep_core")

_HEADER = struct.Struct("!Q")
_CHILD = Path(__file__).with_name("_sandbox_child.py")
_START_TIMEOUT_S = 30.0
_GRACE_S = 2.0            # Kùzu checks its timeout between steps; a step can run on
_MIN_POOL_MB = 64
_BYTES_PER_ROW = 2048     # measured ~0.5 kB per row in Kùzu; the pool holds an in-memory graph whole
_SAFE = {("builtins", n) for n in ("dict", "list", "tuple", "set", "frozenset", "bytes", "bytearray", "complex")}
_SAFE |= {("datetime", n) for n in ("datetime", "date", "time", "timedelta", "timezone")}
_SAFE |= {("decimal", "Decimal"), ("uuid", "UUID")}


class _Unpickler(pickle.Unpickler):
    """Replies carry plain values only; anything else is refused, whatever the child sent."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _SAFE:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not a query result value")


class SandboxLimits:
    """What one tenant query may cost.

    Args:
        timeout_s: wall-clock seconds per query (Kùzu's timeout; the process is
            killed ``2`` s after it if Kùzu has not stopped).
        max_rows: rows a query may return; more is an error naming ``LIMIT``.
        memory_mb: the sandbox process's address space; each cached tenant graph
            reserves about 0.4 GB of it plus twice its buffer pool.
        tenants: tenant graphs kept between queries.

    """

    def __init__(self, *, timeout_s: float = 10.0, max_rows: int = 10_000, memory_mb: int = 4096,
                 tenants: int = 4) -> None:
        self.timeout_s, self.max_rows, self.memory_mb, self.tenants = timeout_s, max_rows, memory_mb, tenants


class _Dead(Exception):
    """The sandbox process exited or stopped answering."""


class CypherSandbox:
    """Runs read-only Cypher for one tenant at a time against that tenant's own graph.

    Args:
        records: the system of record the tenant graphs are built from.
        ddl: the graph schema (the same tables as the graph index).
        work_dir: where the CSV files a graph is loaded from are written (inside
            the data folder; each is deleted once loaded).
        limits: time, rows, memory and cache size.

    """

    def __init__(self, records: GraphRecords, ddl: tuple[str, ...], work_dir: Path,
                 limits: SandboxLimits | None = None) -> None:
        self.records = records
        self.ddl = ddl
        self.work_dir = work_dir
        self.limits = limits or SandboxLimits()
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()
        #: The Landlock ABI the sandbox process confined itself with (0: it could not; None: not started).
        self.confined: int | None = None
        self._warned = False

    def query(self, user_id: str, version: int, query: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The rows of ``query`` over ``user_id``'s graph as of ``version``.

        Raises:
            QueryError: the query failed, ran past the time limit, returned more than
                ``max_rows`` rows, or ran out of memory (the message says which).

        """
        key = (user_id, version)
        request = {"op": "query", "key": key, "query": query, "params": dict(params),
                   "max_rows": self.limits.max_rows, "timeout_ms": max(1, int(self.limits.timeout_s * 1000))}
        with self._lock:
            reply = self._call(request)
            if reply.get("need"):
                self._load(user_id, key)
                reply = self._call(request)
        return self._rows(reply)

    def _rows(self, reply: dict) -> list[dict[str, Any]]:
        if "rows" in reply:
            return reply["rows"]
        kind, message = reply.get("error"), str(reply.get("message", ""))
        if kind == "rows":
            raise QueryError(f"the Cypher query returned more than {self.limits.max_rows} rows; add LIMIT, "
                             "or raise cypher_max_rows")
        if kind == "timeout":
            raise QueryError(self._timeout_message())
        if kind == "memory":
            raise QueryError(f"the Cypher query ran out of memory (cypher_memory_mb={self.limits.memory_mb}): "
                             "narrow it, or aggregate instead of building large lists")
        raise QueryError(f"the Cypher query failed: {message}")

    def _timeout_message(self) -> str:
        return (f"the Cypher query ran past the {self.limits.timeout_s:g} s limit (cypher_timeout_s); "
                "narrow the MATCH or add LIMIT")

    def _load(self, user_id: str, key: tuple[str, int]) -> None:
        entities, rows = self.records.graph_rows(user_id)
        facts = [(*r[:7], bool(r[7])) for r in rows]
        self.work_dir.mkdir(parents=True, exist_ok=True)
        stem = self.work_dir / uuid.uuid4().hex
        paths = [stem.with_suffix(".entities.csv"), stem.with_suffix(".facts.csv")]
        try:
            for path, rows in zip(paths, (entities, facts)):
                _write_csv(path, rows)
            pool_mb = max(_MIN_POOL_MB, -(-(len(entities) + len(facts)) * _BYTES_PER_ROW >> 20))
            reply = self._call({"op": "load", "key": key, "ddl": list(self.ddl), "entities": str(paths[0]),
                                "facts": str(paths[1]), "buffer_pool_mb": pool_mb}, load=True)
        finally:
            for path in paths:
                path.unlink(missing_ok=True)
        if not reply.get("loaded"):
            kind = reply.get("error")
            if kind == "memory":
                raise QueryError(f"this user's graph does not fit in the Cypher sandbox "
                                 f"(cypher_memory_mb={self.limits.memory_mb}); raise cypher_memory_mb")
            raise QueryError(f"the user's graph could not be loaded for Cypher: {reply.get('message')}")

    # -- the process ----------------------------------------------------------------

    def _call(self, request: dict, *, load: bool = False) -> dict:
        """Send one request and wait for its reply; a dead or stuck process is replaced next time."""
        proc = self._process()
        timeout = _START_TIMEOUT_S if load else self.limits.timeout_s + _GRACE_S
        try:
            data = pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL)
            assert proc.stdin is not None
            proc.stdin.write(_HEADER.pack(len(data)) + data)
            proc.stdin.flush()
            return self._receive(proc, time.monotonic() + timeout)
        except (_Dead, OSError, pickle.PickleError, EOFError) as exc:
            code = self._stop()
            if isinstance(exc, _NoReply):
                raise QueryError(self._timeout_message()) from None
            if code is not None and code < 0:  # killed by a signal: a crash inside Kùzu, or the memory limit
                raise QueryError("the Cypher query crashed the query sandbox (nothing else was affected); "
                                 "narrow it, or aggregate instead of building large lists") from None
            raise QueryError(f"the Cypher sandbox failed ({type(exc).__name__}: {exc}); try again") from None

    def _process(self) -> subprocess.Popen:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        self._proc = None
        try:
            self._clear_work_dir()
            proc = subprocess.Popen(
                [sys.executable, str(_CHILD), str(self.limits.memory_mb), str(self.limits.tenants),
                 str(self.work_dir)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                cwd=str(self.work_dir), close_fds=True)
        except OSError as exc:
            raise QueryError(f"could not start the Cypher sandbox process: {exc}") from None
        self._proc = proc
        try:
            ready = self._receive(proc, time.monotonic() + _START_TIMEOUT_S)
        except (_Dead, OSError, pickle.PickleError, EOFError):
            self._stop()
            raise QueryError("the Cypher sandbox process did not start (is the kuzu package installed?)") from None
        if not ready.get("ready"):
            self._stop()
            raise QueryError("the Cypher sandbox process did not start")
        self.confined = int(ready.get("confined") or 0)
        if not self.confined and not self._warned:
            self._warned = True
            log.warning("the Cypher sandbox could not confine itself to its work folder: %s. Tenant graphs are "
                        "still built one tenant at a time, but a query that names a file is stopped only by the "
                        "query check (run on Linux 5.13 or later with Landlock enabled to close that route)",
                        ready.get("why") or "unknown reason")
        return proc

    def _clear_work_dir(self) -> None:
        """Remove load files a killed process left behind: the next sandbox may read its work folder."""
        self.work_dir.mkdir(parents=True, exist_ok=True)
        for leftover in self.work_dir.iterdir():
            if leftover.is_file():
                leftover.unlink(missing_ok=True)

    def _receive(self, proc: subprocess.Popen, deadline: float) -> dict:
        head = _read_exact(proc, _HEADER.size, deadline)
        (size,) = _HEADER.unpack(head)
        reply = _Unpickler(io.BytesIO(_read_exact(proc, size, deadline))).load()
        if not isinstance(reply, dict):
            raise _Dead("the sandbox sent something that is not a reply")
        return reply

    def _stop(self) -> int | None:
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            proc.kill()
        for stream in (proc.stdin, proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        try:
            return proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            return None

    def close(self) -> None:
        """Stop the sandbox process (a later query starts a new one)."""
        with self._lock:
            self._stop()


class _NoReply(_Dead):
    """No reply before the deadline."""


def _read_exact(proc: subprocess.Popen, size: int, deadline: float) -> bytes:
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    chunks, got = [], 0
    while got < size:
        left = deadline - time.monotonic()
        if left <= 0:
            raise _NoReply("no reply in time")
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, min(size - got, 1 << 20))
        if not chunk:
            raise _Dead("the sandbox process exited")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _write_csv(path: Path, rows: list[tuple]) -> None:
    """Rows as CSV Kùzu reads back exactly (quoted fields keep commas, quotes and newlines)."""
    with open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerows(tuple("true" if v is True else "false" if v is False else v for v in row) for row in rows)

