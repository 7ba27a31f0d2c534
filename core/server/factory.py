"""The app: :func:`create_app` puts the verbs, info, health, docs and the error answers on one FastAPI app.

Each verb of :data:`~zep_core.server.verbs.VERBS` gets a FastAPI route (which draws it
in ``/openapi.json`` and ``/docs``, and answers the import and any body that is not
JSON), and :class:`~zep_core.server.asgi.VerbRouter` answers its JSON requests by the
same steps in front of FastAPI; :class:`~zep_core.server.asgi.BodyLimit` is outermost.
"""

# No ``from __future__ import annotations`` here: FastAPI reads the routes' annotations,
# which name the dependencies made inside create_app.

import inspect
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import __version__
from ..aio import ASYNC_THREADS
from ..errors import NotFoundError, ZepMemoryError
from ..memory import Memory
from ..validation import check_limit
from . import wire
from .asgi import BodyLimit, VerbRouter
from .auth import authenticator
from .dispatch import Serve, serving
from .docs_page import docs_html
from .error_answers import Scrub, error_json, error_response, log, malformed, refusal
from .keys import KeyRing, Principal
from .statuses import STATUSES, public_class
from .verbs import VERBS, ImportInput, Verb, plain

__all__ = ["DEFAULT_MAX_BODY_BYTES", "create_app"]

#: The largest request body accepted by default (16 MiB): an import of a large user may need more.
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024


def _error_responses() -> dict[int | str, dict[str, Any]]:
    """The error answers every endpoint may give, for the OpenAPI document: the table's rows by status."""
    means: dict[int, list[str]] = {}
    for row in STATUSES:
        means.setdefault(row.status, []).append(f"{public_class(row.error).__name__}: {row.means}")
    return {status: {"model": wire.ErrorBody, "description": "; ".join(what)} for status, what in sorted(means.items())}


_ERROR_RESPONSES = _error_responses()


def create_app(memory: Memory, keys: KeyRing | None, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> FastAPI:
    """The ASGI app serving ``memory``: the endpoints of :data:`~zep_core.server.verbs.VERBS`, info, health, docs.

    Args:
        memory: the open memory (the caller closes it after the server stops).
        keys: the accepted API keys; ``None`` lets every request use every user (bind
            such a server to 127.0.0.1 only: :func:`~zep_core.server.app.run_server`
            refuses anything else).
        max_body_bytes: requests with a larger body get 413.

    The verbs run in the app's own worker threads, ``app.state.workers`` (a
    ``ThreadPoolExecutor``); shut it down once the server has stopped, as
    :func:`~zep_core.server.app.run_server` does.

    Example:
        >>> app = create_app(memory, KeyRing.from_env())                 # doctest: +SKIP

    """
    max_body_bytes = check_limit(max_body_bytes, "max_body_bytes", maximum=2**40)
    scrub = Scrub(memory.data_dir)
    principal_of = authenticator(keys)
    bearer = HTTPBearer(auto_error=False, description="an API key from the server's keys file")

    async def authenticate(credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> Principal:
        return principal_of(credentials.credentials if credentials is not None else None)

    app = FastAPI(title="zep-memory", version=__version__, summary="A temporal knowledge-graph memory, served",
                  description="Every `zep_core.Memory` verb as `POST /v1/<verb>`; see `zep_core.server.app`.",
                  docs_url=None, redoc_url=None)  # FastAPI's pages load their scripts from a CDN: ours below
    # As wide as the async adapters' pool: the verbs mostly wait (on the vector process, an embedding API,
    # a lock), and the default width (cores + 4) would make the seventh concurrent request wait its turn.
    workers = app.state.workers = ThreadPoolExecutor(max_workers=ASYNC_THREADS, thread_name_prefix="zep-serve")
    serve = serving(memory, workers)
    for verb in VERBS:
        _add_verb(app, verb, _endpoint(verb, serve, authenticate, scrub))
    _add_info_and_health(app, memory, authenticate, scrub, max_body_bytes)
    _add_error_handlers(app, scrub)
    app.add_middleware(VerbRouter, verbs={f"/v1/{v.name}": v for v in VERBS if v.ndjson != "in"}, serve=serve,
                       authenticate=principal_of, scrub=scrub)
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)  # added last: outermost, so VerbRouter reads a bounded body
    return app


def _endpoint(verb: Verb, serve: Serve, authenticate: Callable[..., Any],
              scrub: Callable[[str], str]) -> Callable[..., Any]:
    """The function FastAPI calls for ``verb``: the import, and what :class:`VerbRouter` passes on."""

    async def endpoint(request: Request, principal: Principal, body: Any) -> Response:
        try:
            if verb.ndjson == "in":
                body = ImportInput.read(body, await request.body())
            return await serve(verb, principal, body)
        except Exception as exc:  # every error becomes the table's answer; none escapes with a traceback
            return error_response(exc, scrub)

    body = Annotated[verb.request, Query()] if verb.ndjson == "in" else verb.request
    kind = inspect.Parameter.KEYWORD_ONLY
    endpoint.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
        inspect.Parameter("request", kind, annotation=Request),
        inspect.Parameter("principal", kind, annotation=Principal, default=Depends(authenticate)),
        inspect.Parameter("body", kind, annotation=body),
    ])
    endpoint.__name__ = verb.name
    return endpoint


def _add_verb(app: FastAPI, verb: Verb, endpoint: Callable[..., Any]) -> None:
    """``POST /v1/<verb>``, described for the OpenAPI document by the Memory method's docstring."""
    doc = inspect.getdoc(getattr(Memory, verb.name)) or ""
    extra = ({"requestBody": {"required": True, "content": {"application/x-ndjson": {"schema": {
        "type": "string", "description": "the export, one JSON record a line"}}}}}
        if verb.ndjson == "in" else None)
    ok = ({200: {"content": {"application/x-ndjson": {}}, "description": "the export, NDJSON"}}
          if verb.ndjson == "out" else {})
    app.add_api_route(f"/v1/{verb.name}", endpoint, methods=["POST"],
                      name=verb.name, summary=doc.split("\n", 1)[0], description=doc,
                      response_model=None if verb.ndjson == "out" else wire.Result[verb.result],
                      responses={**_ERROR_RESPONSES, **ok}, openapi_extra=extra)


def _add_info_and_health(app: FastAPI, memory: Memory, authenticate: Callable[..., Any],
                         scrub: Callable[[str], str], max_body_bytes: int) -> None:
    """``/v1/info`` and ``/v1/now`` (with a key), ``/healthz`` and ``/readyz`` (without), ``/docs``."""

    @app.get("/docs", include_in_schema=False)
    async def docs(request: Request) -> HTMLResponse:
        """Every endpoint with its fields and a curl line, drawn here: readable with no internet access."""
        return HTMLResponse(docs_html(app.openapi(), str(request.base_url).rstrip("/")))

    @app.get("/v1/info", response_model=wire.Result[wire.Info], responses=_ERROR_RESPONSES)
    async def info(principal: Annotated[Principal, Depends(authenticate)]) -> JSONResponse:
        """What a client needs to stand in for a Memory: the clock, speakers, scoring and limits."""
        cfg = memory.config
        return JSONResponse({"result": {
            "version": __version__, "now": memory.now().isoformat(), "default_speaker": cfg.default_speaker,
            "assistant_speaker": cfg.assistant_speaker,
            "single_valued_predicates": sorted(cfg.single_valued_predicates),
            "entity_refresh_interval_s": cfg.entity_refresh_interval.total_seconds(),
            "scoring": plain(asdict(cfg.scoring)), "limits": plain(asdict(cfg.limits)),
            "max_body_bytes": max_body_bytes,
            "embedder": {"name": memory.embedder.name, "dimension": memory.embedder.dimension},
            "key": {"name": principal.name, "admin": principal.admin, "users": sorted(principal.users)}}})

    @app.get("/v1/now", response_model=wire.Result[str], responses=_ERROR_RESPONSES)
    async def now(principal: Annotated[Principal, Depends(authenticate)]) -> JSONResponse:
        """The memory's clock (ISO 8601, UTC): what ``Memory.now()`` returns."""
        return JSONResponse({"result": memory.now().isoformat()})

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        """The process is up."""
        return {"status": "ok"}

    @app.get("/readyz", responses={503: {"model": wire.ErrorBody}})
    def readyz() -> JSONResponse:
        """The memory is open and its stores answer (a consistency check of no user)."""
        try:
            memory.check_consistency("zep-readyz-probe")
        except Exception as exc:  # not ready, whatever the error: 503, the readiness probe's answer
            log.warning("not ready: %s", exc)
            return error_json(503, public_class(type(exc)).__name__, "not ready: " + scrub(" ".join(str(exc).split())))
        return JSONResponse({"status": "ready"})


def _add_error_handlers(app: FastAPI, scrub: Callable[[str], str]) -> None:
    """Every failure FastAPI meets answered as the table says (:mod:`.error_answers`), never with a traceback."""

    async def on_error(request: Request, exc: Exception) -> Response:
        return error_response(exc, scrub)

    async def on_shape_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        return malformed(exc, scrub)

    async def on_http_error(request: Request, exc: Exception) -> Response:
        """FastAPI's own refusals: an unknown endpoint, a verb asked for with GET, and any other."""
        assert isinstance(exc, StarletteHTTPException)
        where = f"{request.method} {request.url.path}"
        if exc.status_code == 404:
            return refusal(NotFoundError, f"no endpoint {where[:200]}; see /docs for the endpoints")
        if exc.status_code == 405:
            return error_json(405, "ValidationError", f"{where[:200]}: method not allowed (the verbs are POST)")
        return error_json(exc.status_code, "ZepMemoryError", scrub(str(exc.detail))[:200])

    app.add_exception_handler(ZepMemoryError, on_error)
    app.add_exception_handler(RequestValidationError, on_shape_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(Exception, on_error)
