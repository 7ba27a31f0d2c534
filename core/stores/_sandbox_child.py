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
"""

from __future__ import annotations

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
    memory_mb, keep = int(sys.argv[1]), int(sys.argv[2])
    try:
        import resource

        limit = memory_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError):  # not on this platform: the time limit still holds
        pass
    import kuzu

    graphs = _Graphs(kuzu, keep)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but replies goes to the parent's pipe
    _write(stdout, {"ready": True})
    while True:
        request = _read(stdin)
        if request is None or request.get("op") == "exit":
            return
        _write(stdout, _answer(graphs, request))


if __name__ == "__main__":
    main()
