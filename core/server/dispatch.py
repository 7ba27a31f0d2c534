"""How a checked verb request is answered: the key's scope checked, the verb run, its answer encoded.

Both routes to a verb — :class:`~zep_core.server.asgi.VerbRouter`'s fast path and the
verb's FastAPI route — end in the one ``serve`` function :func:`serving` makes, so they
take the same steps and give the same answers.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from time import perf_counter
from typing import Any

import orjson
from fastapi.responses import Response

from ..errors import StoreUnavailableError
from ..memory import Memory
from .auth import authorize, named_user
from .error_answers import refusal
from .keys import Principal
from .verbs import Verb

__all__ = ["INLINE_MS", "STOPPING", "Serve", "serving"]

#: ``serve(verb, principal, body)``: a verb request, checked and answered (:func:`serving`).
Serve = Callable[[Verb, Principal, Any], Awaitable[Response]]


def _answer(verb: Verb, memory: Memory, body: Any, principal: Principal) -> Response:
    """Run ``verb`` and encode its answer, both in the worker thread (the event loop only moves bytes).

    The answer says how long the verb itself took in a ``Server-Timing`` header
    (``verb;dur=<ms>``), so a client can tell the memory's time from the network's.
    """
    started = perf_counter()
    value = verb.run(memory, body, principal)
    timing = {"Server-Timing": f"verb;dur={(perf_counter() - started) * 1000:.3f}"}
    if isinstance(value, Response):
        value.headers.update(timing)
        return value
    return Response(_encode({"result": value}), media_type="application/json", headers=timing)


def _encode(answer: Any) -> bytes:
    """An answer as JSON: orjson (ten times the speed of ``json`` on a list of facts), ``json`` for what it refuses."""
    try:
        return orjson.dumps(answer, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:  # an integer over 64 bits (Cypher): json writes it; anything else json refuses too
        return json.dumps(answer, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")


#: The answer to a verb still running when the server's shutdown grace is over (it goes on in its thread until the
#: process exits; a write it had not committed is not stored).
STOPPING = ("the server is stopping and this request ran past its --shutdown-timeout: it was cut short, and what "
            "it had not finished is not stored; send it again once the server is back (with the same episode_id, "
            "conversation_end is safe to send again)")

#: A quick read runs on the event loop only while its calls typically take at most this long: a
#: request that arrives meanwhile waits that long. A query embedded by a remote API takes 100 ms or
#: more, and on the loop every concurrent request would wait for the one before it.
INLINE_MS = 10.0


def serving(memory: Memory, workers: Executor) -> Serve:
    """What every verb request comes to, however it was routed: check the key's scope, then run the verb.

    A verb runs in a worker thread, so that the event loop keeps reading requests and the
    waits of concurrent verbs on the stores overlap; a plain executor thread
    (``loop.run_in_executor``), not Starlette's ``run_in_threadpool``, whose capacity limiter
    and cancel scopes cost 0.3 ms more. Even so, the two thread hand-offs cost about
    0.7 ms a call on a small VM, a third of the 2 ms the server may add (bench/findings.md).
    So a quick read (:attr:`Verb.quick <zep_core.server.verbs.Verb.quick>`) that finds no
    other verb request in flight runs on the event loop itself: nothing is waiting for the
    loop then, and a request that arrives meanwhile waits for that one read at most, a few
    milliseconds: the verb's calls are timed (a moving average), and one whose calls take
    longer than :data:`INLINE_MS` (a query embedded by a remote API) goes to the workers
    like any other verb.
    """
    in_flight = 0
    typical_ms: dict[str, float] = {}

    def timed(verb: Verb, body: Any, principal: Principal) -> Response:
        start = perf_counter()
        try:
            return _answer(verb, memory, body, principal)
        finally:
            took = (perf_counter() - start) * 1000
            last = typical_ms.get(verb.name)
            typical_ms[verb.name] = took if last is None else 0.8 * last + 0.2 * took

    async def serve(verb: Verb, principal: Principal, body: Any) -> Response:
        nonlocal in_flight
        body = named_user(verb, body, principal)
        authorize(principal, verb.scope(body))
        if verb.quick and not in_flight and typical_ms.get(verb.name, 0.0) <= INLINE_MS:
            return timed(verb, body, principal)  # no await: nothing else runs on the loop meanwhile
        in_flight += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(workers, timed, verb, body, principal)
        except asyncio.CancelledError:  # uvicorn's shutdown grace is over: answer, rather than a bare 500
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            return refusal(StoreUnavailableError, STOPPING)
        finally:
            in_flight -= 1

    return serve
