"""The memory server: every :class:`~zep_core.Memory` verb as a JSON endpoint, each key bound to its users.

``zep-memory serve`` runs :func:`run_server`: one uvicorn process, one worker, which owns
the data folder (Kùzu allows one process per folder) and its single writer; any number
of processes reach it through :class:`~zep_core.server.RemoteMemory`. An acknowledged
``conversation_end`` has been committed to SQLite before the answer leaves (the
library's contract; there is no queue in front of it), so nothing acknowledged is lost
to a crash of the server: the next start replays the outbox.

Wire format, version 1 (the models are in :mod:`zep_core.server.wire`; ``GET /docs``
draws them):

- ``POST /v1/<verb>`` for each verb in :data:`VERBS` — the :class:`~zep_core.Memory`
  method of that name — with its keyword arguments as a JSON object
  (``{"input": "Where do I live?", "user_id": "alice", "limit": 5}``). Times are ISO
  8601 text; ``refresh_entities`` takes ``max_age_s`` (seconds) for ``max_age``.
- ``200 {"result": ...}``: records as :mod:`zep_core.serialize` writes them (a fact with
  its scores), an ingest result as :func:`~zep_core.server.wire.ingest_result_to_dict`.
- ``POST /v1/export_user`` answers the export itself, ``application/x-ndjson``, byte for
  byte what :meth:`Memory.export_user` writes; ``POST /v1/import_user?replace=false&user_id=alice``
  takes one as its body.
- ``GET /v1/info`` (the clock, speakers, scoring and limits a client mirrors), ``GET /v1/now``;
  ``GET /healthz`` (the process is up) and ``GET /readyz`` (the memory is open and its three
  stores answer) need no key.
- Every ``/v1`` request carries ``Authorization: Bearer <key>`` when the server has keys
  (:mod:`.keys`). A key may name only its own users: any other user id in a request —
  ``user_id``, an episode's user, an import's user — is ``403`` before the memory is
  touched; a verb over the whole store (``maintain``, ``flush``, ``rebuild``, and ``stats``,
  ``check_consistency``, ``episode_ids``, ``refresh_entities`` without a user) needs an
  admin key. ``users`` answers only the key's users; ``get_episode`` of another user's
  episode is ``404``, as for one that does not exist.
- Errors: ``{"error": {"type": "<ZepMemoryError subclass>", "message": "..."}}``, never a
  traceback, the data folder's path replaced by ``<data>``. Each error class has one status,
  given by the one table of them, :data:`zep_core.server.statuses.STATUSES` (``/openapi.json``
  lists it for every endpoint): a malformed request is a ``ValidationError``, an unknown
  endpoint a ``NotFoundError``, a body over ``max_body_bytes`` a ``ValidationError`` with 413,
  and anything that is not a ``ZepMemoryError`` is ``internal error`` (logged by the server).

Example:
    >>> app = create_app(memory, KeyRing.from_file("keys.json"))          # doctest: +SKIP
    >>> uvicorn.run(app, host="127.0.0.1", port=8765)                     # doctest: +SKIP

"""


import asyncio
import base64
import inspect
import ipaddress
import json
import logging
import math
import re
import signal
import socket
import sys
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path
from time import perf_counter
from typing import Annotated, Any, NamedTuple
from uuid import UUID

import orjson
from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.security.utils import get_authorization_scheme_param
from pydantic import BaseModel
from pydantic import ValidationError as ShapeError
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import __version__
from ..aio import ASYNC_THREADS
from ..errors import ConfigError, NotFoundError, PermissionDeniedError, ValidationError, ZepMemoryError
from ..memory import Memory
from ..serialize import entity_to_dict, episode_to_dict, fact_to_dict, message_to_dict
from ..transfer import _header, _json_lines  # the library's reading of an export's first line
from ..validation import check_limit
from . import wire
from .docs_page import docs_html
from .keys import OPEN, KeyRing, Principal
from .statuses import STATUSES, BodyTooLarge, Unauthenticated, public_class, status_of

__all__ = ["DEFAULT_MAX_BODY_BYTES", "VERBS", "Scope", "Verb", "VerbRouter", "create_app", "is_loopback", "run_server"]

log = logging.getLogger("zep_core.server")

#: The largest request body accepted by default (16 MiB): an import of a large user may need more.
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
_MAX_MESSAGE_CHARS = 2000  # an error message longer than this is cut


# -- who may do what ----------------------------------------------------------------------------


class Scope(NamedTuple):
    """What a request touches: these users, the whole store (``admin``), or nothing to check (both empty).

    "Nothing to check" is for verbs that filter their own answer to the key's users
    (``users``, ``get_episode`` without a user).
    """

    users: tuple[str, ...] = ()
    admin: bool = False


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def authorize(principal: Principal, scope: Scope) -> None:
    """Refuse a request its key may not make, before anything is read or written.

    Raises:
        PermissionDeniedError: a user the key is not bound to, or a whole-store verb
            without an admin key.

    """
    if scope.admin and not principal.admin:
        raise PermissionDeniedError("this request reads or changes every user's memory and needs an admin key; "
                                    "name one of this key's users (user_id) where the verb takes one")
    for user in scope.users:
        if not principal.may(user):
            raise PermissionDeniedError(f"this API key may not read or write user {_short(user)}; "
                                        "use a key bound to that user")


def _one_user(body: Any) -> Scope:
    return Scope((body.user_id,))


def _user_or_all(body: Any) -> Scope:
    return Scope((body.user_id,)) if body.user_id is not None else Scope(admin=True)


def _whole_store(body: Any) -> Scope:
    return Scope(admin=True)


def _episodes_users(body: wire.ConversationEndManyRequest) -> Scope:
    return Scope(tuple(dict.fromkeys(e.user_id for e in body.episodes)))


def _key_user(principal: Principal) -> str:
    """The user a request that names none is for: the key's only user; any other key must name one."""
    if not principal.admin and len(principal.users) == 1:
        return next(iter(principal.users))
    may = "any user" if principal.admin else f"{len(principal.users)} users"
    raise ValidationError(f"user_id is required: this key may use {may}, so say which one (there is no shared "
                          "default user; a key bound to one user may leave it out)")


def _named_user(verb: "Verb", body: Any, principal: Principal) -> Any:
    """``body`` with the key's user where a verb of one user names none (:func:`_key_user`)."""
    if verb.scope is _one_user and body.user_id is None:
        return body.model_copy(update={"user_id": _key_user(principal)})
    if verb.scope is _episodes_users and any(e.user_id is None for e in body.episodes):
        user = _key_user(principal)
        return body.model_copy(update={"episodes": [e if e.user_id is not None else e.model_copy(
            update={"user_id": user}) for e in body.episodes]})
    return body


def _episode_scope(body: wire.EpisodeRequest) -> Scope:
    return Scope((body.user_id,)) if body.user_id is not None else Scope()


# -- the verbs ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _ImportInput:
    """What ``/v1/import_user`` receives: the query string and the export's lines."""

    query: wire.ImportQuery
    lines: list[str]

    @property
    def header_user(self) -> str:
        """The user the export's header line names (the library refuses any record of another user).

        Raises:
            ValidationError: the first line is not an export header naming a user (the
                library's own check of it, with its message).

        """
        _, first = next(_json_lines(self.lines), (0, None))
        return _header(first)["user_id"]


def _import_scope(body: _ImportInput) -> Scope:
    users = [body.header_user] + ([body.query.user_id] if body.query.user_id is not None else [])
    return Scope(tuple(dict.fromkeys(users)))


@dataclass(frozen=True)
class Verb:
    """One endpoint, ``POST /v1/<name>``: its request, its answer, whom it touches, and what it runs.

    Attributes:
        name: the :class:`~zep_core.Memory` method.
        request: the JSON body's model.
        result: the type inside ``{"result": ...}`` (for the OpenAPI document).
        scope: the users (or the whole store) a request touches, read from the checked body.
        run: ``run(memory, body, principal)`` → a JSON-ready value (or a Response).
        ndjson: ``"in"`` when the body is an export, ``"out"`` when the answer is one.
        quick: a short read (milliseconds, bounded by the user's own data): when no other
            verb request is in flight, and its recent calls took at most :data:`INLINE_MS`,
            it runs on the event loop itself (see :func:`_server`).

    """

    name: str
    request: type[BaseModel]
    result: Any
    scope: Callable[[Any], Scope]
    run: Callable[[Memory, Any, Principal], Any]
    ndjson: str | None = None
    quick: bool = False


#: ``serve(verb, principal, body)``: a verb request, checked and answered (:func:`_server`).
Serve = Callable[[Verb, Principal, Any], Awaitable[Response]]


def _messages(messages: Iterable[wire.MessageIn]) -> list[dict[str, Any]]:
    return [m.model_dump() for m in messages]


def _facts(facts: Iterable[Any]) -> list[dict[str, Any]]:
    return [fact_to_dict(f, scores=True) for f in facts]


def _conversation_end_many(memory: Memory, body: wire.ConversationEndManyRequest, _: Principal) -> Any:
    episodes = [{"session_id": e.session_id, "messages": _messages(e.messages), "user_id": e.user_id,
                 "episode_id": e.episode_id} for e in body.episodes]
    return [wire.ingest_result_to_dict(r) for r in memory.conversation_end_many(episodes, batch_size=body.batch_size)]


def _get_episode(memory: Memory, body: wire.EpisodeRequest, principal: Principal) -> Any:
    episode = memory.get_episode(body.episode_id, user_id=body.user_id)  # with a user: read under that user only
    if not principal.may(episode.user_id):
        raise NotFoundError(f"no episode {body.episode_id!r}")  # as if it did not exist: nothing of another user
    return episode_to_dict(episode)


def _end_session(memory: Memory, body: wire.SessionRequest, _: Principal) -> Any:
    result = memory.end_session(body.session_id, user_id=body.user_id)
    return None if result is None else wire.ingest_result_to_dict(result)


def _refresh(memory: Memory, body: wire.RefreshRequest, _: Principal) -> int:
    max_age = None
    if body.max_age_s is not None:
        try:
            max_age = timedelta(seconds=body.max_age_s)
        except (OverflowError, ValueError):
            raise ValidationError(f"max_age_s {body.max_age_s!r} is out of range") from None
    return memory.refresh_entities(user_id=body.user_id, max_age=max_age, batch_size=body.batch_size)


def _stats(memory: Memory, body: wire.StatsRequest, principal: Principal) -> Any:
    stats = memory.stats(body.user_id)
    if principal.admin:
        return stats
    return {"user": stats["user"], "embedder": stats["embedder"]}  # the store's totals are every user's


def _export_line(row: Mapping[str, Any]) -> str:
    """One export line, exactly as :func:`zep_core.transfer.write_export` writes it."""
    return json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n"


def _chunks(rows: Iterable[Mapping[str, Any]], size: int = 64 * 1024) -> Iterator[bytes]:
    buffer: list[str] = []
    held = 0
    for row in rows:
        line = _export_line(row)
        buffer.append(line)
        held += len(line)
        if held >= size:
            yield "".join(buffer).encode("utf-8")
            buffer, held = [], 0
    if buffer:
        yield "".join(buffer).encode("utf-8")


def _export(memory: Memory, body: wire.ExportRequest, _: Principal) -> Response:
    rows = memory.export_records(body.user_id, embeddings=body.embeddings)  # an unknown user fails here, as 404
    return StreamingResponse(_chunks(rows), media_type="application/x-ndjson")


def _import(memory: Memory, body: _ImportInput, _: Principal) -> Any:
    report = memory.import_user(body.lines, replace=body.query.replace, user_id=body.query.user_id)
    return wire.import_report_to_dict(report)


_FactList = list[wire.FactOut]
_V = Verb
#: Every endpoint but info, now and the health checks; the tenancy test walks this and the app's routes.
VERBS: tuple[Verb, ...] = (
    _V("conversation_end", wire.ConversationEndRequest, wire.IngestResultOut, _one_user,
       lambda m, b, p: wire.ingest_result_to_dict(m.conversation_end(
           b.session_id, _messages(b.messages), user_id=b.user_id, episode_id=b.episode_id))),
    _V("conversation_end_many", wire.ConversationEndManyRequest, list[wire.IngestResultOut], _episodes_users,
       _conversation_end_many),
    _V("get_context", wire.ContextRequest, _FactList, _one_user,
       lambda m, b, p: _facts(m.get_context(b.input, user_id=b.user_id, limit=b.limit, as_of=b.as_of,
                                            require_both=b.require_both, threshold=b.threshold, speaker=b.speaker)),
       quick=True),
    _V("context_block", wire.ContextBlockRequest, str, _one_user,
       lambda m, b, p: m.context_block(b.input, user_id=b.user_id, limit=b.limit, as_of=b.as_of,
                                       max_entities=b.max_entities, speaker=b.speaker), quick=True),
    _V("entity_history", wire.EntityRequest, _FactList, _one_user,
       lambda m, b, p: _facts(m.entity_history(b.name, user_id=b.user_id)), quick=True),
    _V("related_entities", wire.RelatedRequest, list[wire.EntityOut], _one_user,
       lambda m, b, p: [entity_to_dict(e) for e in m.related_entities(b.name, user_id=b.user_id, limit=b.limit)],
       quick=True),
    _V("get_entity", wire.EntityRequest, wire.EntityOut, _one_user,
       lambda m, b, p: entity_to_dict(m.get_entity(b.name, user_id=b.user_id)), quick=True),
    _V("cypher", wire.CypherRequest, list[dict[str, Any]], _one_user,
       lambda m, b, p: _plain(m.cypher(b.query, b.params, user_id=b.user_id))),
    _V("has_user", wire.UserRequest, bool, _one_user, lambda m, b, p: m.has_user(b.user_id), quick=True),
    _V("users", wire.EmptyRequest, list[str], lambda b: Scope(),
       lambda m, b, p: [u for u in m.users() if p.may(u)]),
    _V("get_episode", wire.EpisodeRequest, wire.EpisodeOut, _episode_scope, _get_episode, quick=True),
    _V("episode_ids", wire.EpisodeIdsRequest, list[str], _user_or_all,
       lambda m, b, p: m.episode_ids(user_id=b.user_id, status=b.status)),
    _V("facts", wire.UserRequest, _FactList, _one_user, lambda m, b, p: _facts(m.facts(b.user_id))),
    _V("add_messages", wire.MessagesRequest, None, _one_user,
       lambda m, b, p: m.add_messages(b.session_id, _messages(b.messages), user_id=b.user_id)),
    _V("get_messages", wire.SessionWindowRequest, list[wire.MessageOut], _one_user,
       lambda m, b, p: [message_to_dict(x) for x in m.get_messages(b.session_id, user_id=b.user_id, limit=b.limit)],
       quick=True),
    _V("unended_count", wire.SessionRequest, int, _one_user,
       lambda m, b, p: m.unended_count(b.session_id, user_id=b.user_id), quick=True),
    _V("clear_messages", wire.SessionRequest, None, _one_user,
       lambda m, b, p: m.clear_messages(b.session_id, user_id=b.user_id)),
    _V("end_session", wire.SessionRequest, wire.IngestResultOut | None, _one_user, _end_session),
    _V("forget_user", wire.UserRequest, None, _one_user, lambda m, b, p: m.forget_user(b.user_id)),
    _V("export_user", wire.ExportRequest, None, _one_user, _export, ndjson="out"),
    _V("import_user", wire.ImportQuery, wire.ImportReportOut, _import_scope, _import, ndjson="in"),
    _V("refresh_entities", wire.RefreshRequest, int, _user_or_all, _refresh),
    _V("maintain", wire.EmptyRequest, wire.MaintenanceReportOut, _whole_store,
       lambda m, b, p: wire.maintenance_report_to_dict(m.maintain())),
    _V("flush", wire.EmptyRequest, int, _whole_store, lambda m, b, p: m.flush()),
    _V("rebuild", wire.RebuildRequest, dict[str, int], _whole_store,
       lambda m, b, p: m.rebuild(reembed=b.reembed, batch_size=b.batch_size)),
    _V("check_consistency", wire.ConsistencyRequest, dict[str, list[str]], _user_or_all,
       lambda m, b, p: m.check_consistency(b.user_id)),
    _V("stats", wire.StatsRequest, dict[str, Any], _user_or_all, _stats),
)


def _plain(value: Any) -> Any:
    """A Cypher value as JSON: times as ISO text, durations in seconds, bytes as base64, NaN as null."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(v) for v in value]
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, (Decimal, UUID, complex)):
        return str(value)
    return str(value)


# -- errors -------------------------------------------------------------------------------------------

class _Scrub:
    """Replaces the server's paths (the data folder first) in text that leaves over the network."""

    #: an absolute path of three or more parts (``/home/u/x``; not ``/v1/get_context``), or a Windows one
    _ANY_PATH = re.compile(r"(?<![\w:/.~-])/(?:[^\s/'\"]+/){2,}[^\s'\",;)]*|\b[A-Za-z]:\\[^\s'\"]+")

    def __init__(self, data_dir: Path) -> None:
        roots = {str(data_dir): "<data>", str(data_dir.absolute()): "<data>", str(data_dir.resolve()): "<data>",
                 str(Path(__file__).resolve().parents[1]): "<zep_core>", sys.prefix: "<python>"}
        self.roots = sorted(((r, n) for r, n in roots.items() if len(r) > 1), key=lambda rn: -len(rn[0]))

    def __call__(self, text: str) -> str:
        for root, name in self.roots:
            text = text.replace(root, name)
        text = self._ANY_PATH.sub("<path>", text)
        return text if len(text) <= _MAX_MESSAGE_CHARS else text[:_MAX_MESSAGE_CHARS - 3] + "..."


def _error(status: int, kind: str, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"type": kind, "message": message}}, status_code=status, headers=headers)


def refusal(cls: type[ZepMemoryError], message: str) -> JSONResponse:
    """The answer for an error of class ``cls``: the status of the table (:mod:`.statuses`), ``message`` as it is."""
    headers = {"WWW-Authenticate": "Bearer"} if issubclass(cls, Unauthenticated) else None
    return _error(status_of(cls), public_class(cls).__name__, message, headers)


def error_response(exc: BaseException, scrub: Callable[[str], str]) -> JSONResponse:
    """The answer to an exception: its status from the table (:mod:`.statuses`), its message scrubbed, no traceback."""
    if not isinstance(exc, ZepMemoryError):
        log.error("internal error answering a request", exc_info=exc)
        return refusal(ZepMemoryError, "internal error")
    return refusal(type(exc), scrub(" ".join(str(exc).split()) or type(exc).__name__))


def _shape_message(exc: RequestValidationError | ShapeError) -> str:
    """A malformed request in one line: where each problem is and what it is (the input itself is not echoed)."""
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err.get("loc", ()) if p not in ("body", "query"))
        parts.append(f"{where or 'the body'}: {err.get('msg', 'invalid')}")
    more = len(exc.errors()) - len(parts)
    return "malformed request: " + "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


# -- the body limit -------------------------------------------------------------------------------------


class BodyLimit:
    """Pure ASGI middleware: a request body over ``max_bytes`` gets 413, counted as it streams in.

    A ``Content-Length`` over the limit is refused at once; otherwise the body is read
    (never more than the limit) before the app sees it, so the app never holds more.
    """

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
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


def _bearer(scope: Mapping[str, Any]) -> str | None:
    """The key of an ``Authorization: Bearer <key>`` header, as FastAPI's ``HTTPBearer`` reads it; else None."""
    for name, value in scope.get("headers") or ():
        if name == b"authorization":
            scheme, key = get_authorization_scheme_param(value.decode("latin-1"))
            return key if scheme.lower() == "bearer" and key else None
    return None


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
    key's scope, the verb in a worker thread) and the same :func:`error_response`, without
    the per-request routing, dependency solving and exception middleware: 0.5 ms of a call,
    a quarter of the 2 ms the server may add (bench/findings.md). ``BodyLimit`` sits
    outside it, so the body read here is already bounded.
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
            principal = self.authenticate(_bearer(scope))
            body = verb.request.model_validate_json(b"".join(chunks))
            response = await self.serve(verb, principal, body)
        except ShapeError as exc:
            response = refusal(ValidationError, self.scrub(_shape_message(exc)))
        except Exception as exc:  # as in the route: every error is the table's answer, never a traceback
            response = error_response(exc, self.scrub)
        await response(scope, receive, send)


# -- the app ----------------------------------------------------------------------------------------------


def _decode(raw: bytes) -> list[str]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError(f"the export is not UTF-8 text ({exc.reason}); an export is UTF-8 JSONL") from None
    return text.split("\n")  # only "\n": a record may hold U+2028, which str.splitlines() would split on


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


#: A quick read runs on the event loop only while its calls typically take at most this long: a
#: request that arrives meanwhile waits that long. A query embedded by a remote API takes 100 ms or
#: more, and on the loop every concurrent request would wait for the one before it.
INLINE_MS = 10.0


def _server(memory: Memory, workers: Executor) -> Serve:
    """What every verb request comes to, however it was routed: check the key's scope, then run the verb.

    A verb runs in a worker thread, so that the event loop keeps reading requests and the
    waits of concurrent verbs on the stores overlap; a plain executor thread
    (``loop.run_in_executor``), not Starlette's ``run_in_threadpool``, whose capacity limiter
    and cancel scopes cost 0.3 ms more. Even so, the two thread hand-offs cost about
    0.7 ms a call on a small VM, a third of the 2 ms the server may add (bench/findings.md).
    So a quick read (:attr:`Verb.quick`) that finds no other verb request in flight runs on
    the event loop itself: nothing is waiting for the loop then, and a request that arrives
    meanwhile waits for that one read at most, a few milliseconds: the verb's calls are
    timed (a moving average), and one whose calls take longer than :data:`INLINE_MS` (a
    query embedded by a remote API) goes to the workers like any other verb.
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
        body = _named_user(verb, body, principal)
        authorize(principal, verb.scope(body))
        if verb.quick and not in_flight and typical_ms.get(verb.name, 0.0) <= INLINE_MS:
            return timed(verb, body, principal)  # no await: nothing else runs on the loop meanwhile
        in_flight += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(workers, timed, verb, body, principal)
        finally:
            in_flight -= 1

    return serve


def _endpoint(verb: Verb, serve: Serve, authenticate: Callable[..., Principal],
              scrub: Callable[[str], str]) -> Callable[..., Any]:
    """The function FastAPI calls for ``verb``: the import, and what :class:`VerbRouter` passes on."""

    async def endpoint(request: Request, principal: Principal, body: Any) -> Response:
        try:
            if verb.ndjson == "in":
                body = _ImportInput(body, _decode(await request.body()))
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


def _error_responses() -> dict[int | str, dict[str, Any]]:
    """The error answers every endpoint may give, for the OpenAPI document: the table's rows by status."""
    means: dict[int, list[str]] = {}
    for row in STATUSES:
        means.setdefault(row.status, []).append(f"{public_class(row.error).__name__}: {row.means}")
    return {status: {"model": wire.ErrorBody, "description": "; ".join(what)} for status, what in sorted(means.items())}


_ERROR_RESPONSES = _error_responses()


def create_app(memory: Memory, keys: KeyRing | None, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> FastAPI:
    """The ASGI app serving ``memory``: the endpoints of :data:`VERBS`, info, health, docs.

    Args:
        memory: the open memory (the caller closes it after the server stops).
        keys: the accepted API keys; ``None`` lets every request use every user (bind
            such a server to 127.0.0.1 only: :func:`run_server` refuses anything else).
        max_body_bytes: requests with a larger body get 413.

    The verbs run in the app's own worker threads, ``app.state.workers`` (a
    ``ThreadPoolExecutor``); shut it down once the server has stopped, as
    :func:`run_server` does.

    Example:
        >>> app = create_app(memory, KeyRing.from_env())                 # doctest: +SKIP

    """
    max_body_bytes = check_limit(max_body_bytes, "max_body_bytes", maximum=2**40)
    scrub = _Scrub(memory.data_dir)
    bearer = HTTPBearer(auto_error=False, description="an API key from the server's keys file")

    def principal_of(key: str | None) -> Principal:
        if keys is None:
            return OPEN
        if key is None:
            raise Unauthenticated("this server needs an API key: send 'Authorization: Bearer <key>' "
                                   "(RemoteMemory(url, api_key=...))")
        principal = keys.authenticate(key)
        if principal is None:
            raise Unauthenticated("unknown API key: the server does not accept it; check the key")
        return principal

    async def authenticate(credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> Principal:
        return principal_of(credentials.credentials if credentials is not None else None)

    app = FastAPI(title="zep-memory", version=__version__, summary="A temporal knowledge-graph memory, served",
                  description="Every `zep_core.Memory` verb as `POST /v1/<verb>`; see `zep_core.server.app`.",
                  docs_url=None, redoc_url=None)  # FastAPI's pages load their scripts from a CDN: ours below

    @app.get("/docs", include_in_schema=False)
    async def docs(request: Request) -> HTMLResponse:
        """Every endpoint with its fields and a curl line, drawn here: readable with no internet access."""
        return HTMLResponse(docs_html(app.openapi(), str(request.base_url).rstrip("/")))

    # As wide as the async adapters' pool: the verbs mostly wait (on the vector process, an embedding API,
    # a lock), and the default width (cores + 4) would make the seventh concurrent request wait its turn.
    workers = app.state.workers = ThreadPoolExecutor(max_workers=ASYNC_THREADS, thread_name_prefix="zep-serve")
    serve = _server(memory, workers)
    for verb in VERBS:
        doc = inspect.getdoc(getattr(Memory, verb.name)) or ""
        extra = ({"requestBody": {"required": True, "content": {"application/x-ndjson": {"schema": {
            "type": "string", "description": "the export, one JSON record a line"}}}}}
            if verb.ndjson == "in" else None)
        ok = ({200: {"content": {"application/x-ndjson": {}}, "description": "the export, NDJSON"}}
              if verb.ndjson == "out" else {})
        app.add_api_route(f"/v1/{verb.name}", _endpoint(verb, serve, authenticate, scrub),
                          methods=["POST"],
                          name=verb.name, summary=doc.split("\n", 1)[0], description=doc,
                          response_model=None if verb.ndjson == "out" else wire.Result[verb.result],
                          responses={**_ERROR_RESPONSES, **ok}, openapi_extra=extra)

    @app.get("/v1/info", response_model=wire.Result[wire.Info], responses=_ERROR_RESPONSES)
    async def info(principal: Annotated[Principal, Depends(authenticate)]) -> JSONResponse:
        """What a client needs to stand in for a Memory: the clock, speakers, scoring and limits."""
        cfg = memory.config
        return JSONResponse({"result": {
            "version": __version__, "now": memory.now().isoformat(), "default_speaker": cfg.default_speaker,
            "assistant_speaker": cfg.assistant_speaker,
            "single_valued_predicates": sorted(cfg.single_valued_predicates),
            "entity_refresh_interval_s": cfg.entity_refresh_interval.total_seconds(),
            "scoring": _plain(asdict(cfg.scoring)), "limits": _plain(asdict(cfg.limits)),
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
        """The memory is open and SQLite, Chroma and Kùzu answer (a consistency check of no user)."""
        try:
            memory.check_consistency("zep-readyz-probe")
        except Exception as exc:
            log.warning("not ready: %s", exc)
            return _error(503, public_class(type(exc)).__name__, "not ready: " + scrub(" ".join(str(exc).split())))
        return JSONResponse({"status": "ready"})

    async def on_zep_error(request: Request, exc: Exception) -> Response:
        return error_response(exc, scrub)

    async def on_shape_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        return refusal(ValidationError, scrub(_shape_message(exc)))

    async def on_http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        where = f"{request.method} {request.url.path}"
        if exc.status_code == 404:
            return refusal(NotFoundError, f"no endpoint {where[:200]}; see /docs for the endpoints")
        if exc.status_code == 405:
            return _error(405, "ValidationError", f"{where[:200]}: method not allowed (the verbs are POST)")
        return _error(exc.status_code, "ZepMemoryError", scrub(str(exc.detail))[:200])

    async def on_unexpected(request: Request, exc: Exception) -> Response:
        return error_response(exc, scrub)

    app.add_exception_handler(ZepMemoryError, on_zep_error)
    app.add_exception_handler(RequestValidationError, on_shape_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(Exception, on_unexpected)
    app.add_middleware(VerbRouter, verbs={f"/v1/{v.name}": v for v in VERBS if v.ndjson != "in"}, serve=serve,
                       authenticate=principal_of, scrub=scrub)
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)  # added last: outermost, so VerbRouter reads a bounded body
    return app


# -- running it ---------------------------------------------------------------------------------------------


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine only (127.0.0.0/8, ::1, a name that resolves only there)."""
    name = host.strip().strip("[]")
    if name.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        pass
    try:
        found = {info[4][0] for info in socket.getaddrinfo(name, None)}
    except (OSError, UnicodeError):
        return False
    try:
        return bool(found) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in found)
    except ValueError:
        return False


def _listen(host: str, port: int) -> socket.socket:
    """Bind the listening socket here, so a taken port is a one-line error rather than uvicorn's exit."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]
        sock = socket.socket(family, kind, proto)
    except (OSError, UnicodeError) as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; is another server using "
                          "the port? choose another --port") from None
    sock.set_inheritable(True)
    return sock


def _exit_cleanly(signum: int, frame: Any) -> None:
    raise SystemExit(0)


def run_server(memory: Memory, keys: KeyRing | None, *, host: str = "127.0.0.1", port: int = 8765,
               max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, log_level: str = "info", access_log: bool = False,
               on_listening: Callable[[str], None] | None = None) -> None:
    """Serve ``memory`` until SIGTERM or SIGINT: one process, one worker, requests in worker threads.

    On SIGTERM the server stops taking connections, finishes the requests in flight and
    returns (``SystemExit(0)``), so the caller's ``with Memory(...)`` closes the memory
    and drains its outbox; SIGINT ends the same way with ``KeyboardInterrupt``.

    Args:
        memory: the open memory; the caller closes it.
        keys: the API keys, or None (only on a loopback ``host``).
        host: the address to bind.
        port: the port (0: any free one; ``on_listening`` gets the URL).
        max_body_bytes: the largest request body accepted.
        log_level: uvicorn's log level.
        access_log: log every request.
        on_listening: called with the server's URL once the port is bound.

    Raises:
        ConfigError: no keys on a non-loopback host, or the port cannot be bound.

    """
    import uvicorn

    if keys is None and not is_loopback(host):
        raise ConfigError(f"refusing to listen on {host} without API keys: anyone who can reach it could read and "
                          "write every user's memory; give --keys FILE (or set ZEP_MEMORY_API_KEYS or "
                          "ZEP_MEMORY_KEYS_FILE), or listen on 127.0.0.1")
    app = create_app(memory, keys, max_body_bytes=max_body_bytes)
    sock = _listen(host, port)
    bound = sock.getsockname()
    shown = f"[{bound[0]}]" if sock.family == socket.AF_INET6 else bound[0]
    if on_listening is not None:
        on_listening(f"http://{shown}:{bound[1]}")
    config = uvicorn.Config(app, log_level=log_level, access_log=access_log, lifespan="off",
                            timeout_graceful_shutdown=30, server_header=False)
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _exit_cleanly) if main else None  # uvicorn re-raises it after
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)
        sock.close()
        app.state.workers.shutdown(wait=True)
