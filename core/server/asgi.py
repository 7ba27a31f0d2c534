"""The two plain ASGI layers in front of FastAPI: the body limit, and the fast path of a verb request.

:class:`BodyLimit` is outermost: no request body over the limit reaches anything else.
:class:`VerbRouter` answers ``POST /v1/<verb>`` with a JSON body by the same steps as
the verb's FastAPI route, without FastAPI's per-request machinery.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError as ShapeError

from .auth import bearer
from .dispatch import Serve
from .error_answers import error_response, malformed, refusal
from .keys import Principal
from .statuses import BodyTooLarge
from .verbs import Verb

__all__ = ["BodyLimit", "VerbRouter"]


class BodyLimit:
    """Pure ASGI middleware: a request body over ``max_bytes`` gets 413, counted as it streams in.

    A ``Content-Length`` over the limit is refused at once; otherwise the body is read
    (never more than the limit) before the app sees it, so the app never holds more.
    """

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        """Refuse a body over the limit; pass anything else on, its body read whole."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self._refuse(scope, receive, send)
            return
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(scope, receive, send)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body, replayed = b"".join(chunks), False

        async def replay() -> dict:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: dict, receive: Callable, send: Callable) -> None:
        response = refusal(BodyTooLarge, f"the request body is over the server's limit of {self.max_bytes} bytes "
                           "(zep-memory serve --max-body-bytes); send fewer episodes per call, or split the import")
        response.headers["connection"] = "close"
        await response(scope, receive, send)


def _says_json(scope: Mapping[str, Any]) -> bool:
    """Whether the request says its body is JSON, or says nothing (what FastAPI reads as JSON)."""
    for name, value in scope.get("headers") or ():
        if name == b"content-type":
            kind = value.decode("latin-1").split(";", 1)[0].strip().lower()
            return kind == "application/json"
    return True


class VerbRouter:
    """Pure ASGI middleware: ``POST /v1/<verb>`` with a JSON body, answered without FastAPI's machinery.

    FastAPI describes every verb (``/docs`` and ``/openapi.json`` come from its routes and the
    pydantic models) and answers everything else: the import, info, health, unknown paths,
    and a body that says it is not JSON. A verb request with a JSON body is answered here, by
    the same steps its route takes (the key, the body checked against the same model, the
    key's scope, the verb in a worker thread) and the same
    :func:`~zep_core.server.error_answers.error_response`, without the per-request routing,
    dependency solving and exception middleware: 0.5 ms of a call, a quarter of the 2 ms
    the server may add (bench/findings.md). ``BodyLimit`` sits outside it, so the body read
    here is already bounded.
    """

    def __init__(self, app: Any, verbs: Mapping[str, Verb], serve: Serve,
                 authenticate: Callable[[str | None], Principal], scrub: Callable[[str], str]) -> None:
        self.app, self.verbs, self.serve, self.authenticate, self.scrub = app, verbs, serve, authenticate, scrub

    def _verb(self, scope: Mapping[str, Any]) -> Verb | None:
        if scope["type"] != "http" or scope["method"] != "POST":
            return None
        path, root = scope["path"], scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root):]
        verb = self.verbs.get(path)
        return verb if verb is not None and _says_json(scope) else None

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        """Answer a verb request here, pass anything else on to FastAPI."""
        verb = self._verb(scope)
        if verb is None:
            await self.app(scope, receive, send)
            return
        chunks, more = [], True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        try:
            principal = self.authenticate(bearer(scope.get("headers") or ()))
            body = verb.request.model_validate_json(b"".join(chunks))
            response = await self.serve(verb, principal, body)
        except ShapeError as exc:
            response = malformed(exc, self.scrub)
        except Exception as exc:  # as in the route: every error is the table's answer, never a traceback
            response = error_response(exc, self.scrub)
        await response(scope, receive, send)
