"""Async calls for the adapters: native on a ``RemoteMemory``, threads sized for the work in process.

The memory's calls block: the record store, the indexes and the embedder. An async
adapter that wrapped them in :func:`asyncio.to_thread` would share the loop's default
executor, ``min(32, cores + 4)`` threads: six on a two-core machine, so the seventh
concurrent retrieval waits for one of the first six. Waiting is what these calls mostly
do (for the vector process, for an embedding API, for a lock), so they get a pool of
their own, :data:`ASYNC_THREADS` wide, shared by every memory in the process.

A ``RemoteMemory`` has native ``aget_context``, ``acontext_block`` and
``aconversation_end`` (an ``httpx.AsyncClient``): :func:`call` awaits those and uses the
pool only for what it lacks.

Example:
    >>> import asyncio
    >>> from zep_core.aio import in_thread
    >>> asyncio.run(in_thread(sum, [1, 2, 3]))
    6

"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["ASYNC_THREADS", "SharedPool", "call", "in_thread", "pool"]

#: Threads the blocking calls of async adapters run in (created on demand, shared by the process).
ASYNC_THREADS = 64

T = TypeVar("T")

class SharedPool:
    """A thread pool of the process, created on first use (importing creates no thread)."""

    def __init__(self, width: int, name: str) -> None:
        self.width, self.name = width, name
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def get(self) -> ThreadPoolExecutor:
        """The pool, created now if it was not yet."""
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.width, thread_name_prefix=self.name)
            return self._pool


_ASYNC_POOL = SharedPool(ASYNC_THREADS, "zep-async")


def pool() -> ThreadPoolExecutor:
    """The process's pool for blocking memory calls made from async code (created on first use)."""
    return _ASYNC_POOL.get()


async def in_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` in :func:`pool`, awaited; the caller's context variables go with it."""
    context = contextvars.copy_context()
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(pool(), functools.partial(context.run, fn, *args, **kwargs))


async def call(memory: Any, name: str, /, *args: Any, **kwargs: Any) -> Any:
    """``memory.<name>(...)``: its native ``a<name>`` where it has one (a ``RemoteMemory``), else :func:`in_thread`."""
    native = getattr(memory, f"a{name}", None)
    if native is not None and inspect.iscoroutinefunction(native):
        return await native(*args, **kwargs)
    return await in_thread(getattr(memory, name), *args, **kwargs)
