"""The verbs: every :class:`~zep_core.Memory` method served as ``POST /v1/<name>``, in one table (:data:`VERBS`).

A row (:class:`Verb`) says what the request carries (a model of :mod:`.wire`), what the
answer holds, whom it touches (:mod:`.auth`) and what it runs on the memory; the
functions here turn the memory's answer into JSON-ready values (records through
:mod:`zep_core.serialize`). How a request reaches its verb is :mod:`.dispatch`'s job.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID

from fastapi.responses import Response, StreamingResponse
from pydantic import BaseModel

from ..errors import NotFoundError, ValidationError
from ..export_format import json_lines, read_header  # the library's reading of an export's first line
from ..memory import Memory
from ..serialize import entity_to_dict, episode_to_dict, fact_to_dict, message_to_dict
from . import wire
from .auth import Scope, episode_scope, episodes_users, one_user, user_or_all, whole_store
from .keys import Principal

__all__ = ["VERBS", "ImportInput", "Verb", "plain"]


@dataclass(frozen=True)
class ImportInput:
    """What ``/v1/import_user`` receives: the query string and the export's lines."""

    query: wire.ImportQuery
    lines: list[str]

    @classmethod
    def read(cls, query: wire.ImportQuery, raw: bytes) -> ImportInput:
        """The import of ``raw``, the request's body, split into lines.

        Raises:
            ValidationError: the body is not UTF-8 text.

        """
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValidationError(f"the export is not UTF-8 text ({exc.reason}); an export is UTF-8 JSONL") from None
        return cls(query, text.split("\n"))  # only "\n": a record may hold U+2028, which str.splitlines() splits on

    @property
    def header_user(self) -> str:
        """The user the export's header line names (the library refuses any record of another user).

        Raises:
            ValidationError: the first line is not an export header naming a user (the
                library's own check of it, with its message).

        """
        _, first = next(json_lines(self.lines), (0, None))
        return read_header(first)["user_id"]


def _import_scope(body: ImportInput) -> Scope:
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
            verb request is in flight, and its recent calls took at most
            :data:`~zep_core.server.dispatch.INLINE_MS`, it runs on the event loop itself
            (see :func:`~zep_core.server.dispatch.serving`).

    """

    name: str
    request: type[BaseModel]
    result: Any
    scope: Callable[[Any], Scope]
    run: Callable[[Memory, Any, Principal], Any]
    ndjson: str | None = None
    quick: bool = False


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


def _import(memory: Memory, body: ImportInput, _: Principal) -> Any:
    report = memory.import_user(body.lines, replace=body.query.replace, user_id=body.query.user_id)
    return wire.import_report_to_dict(report)


_FactList = list[wire.FactOut]
_V = Verb
#: Every endpoint but info, now and the health checks; the tenancy test walks this and the app's routes.
VERBS: tuple[Verb, ...] = (
    _V("conversation_end", wire.ConversationEndRequest, wire.IngestResultOut, one_user,
       lambda m, b, p: wire.ingest_result_to_dict(m.conversation_end(
           b.session_id, _messages(b.messages), user_id=b.user_id, episode_id=b.episode_id))),
    _V("conversation_end_many", wire.ConversationEndManyRequest, list[wire.IngestResultOut], episodes_users,
       _conversation_end_many),
    _V("get_context", wire.ContextRequest, _FactList, one_user,
       lambda m, b, p: _facts(m.get_context(b.input, user_id=b.user_id, limit=b.limit, as_of=b.as_of,
                                            require_both=b.require_both, threshold=b.threshold, speaker=b.speaker)),
       quick=True),
    _V("context_block", wire.ContextBlockRequest, str, one_user,
       lambda m, b, p: m.context_block(b.input, user_id=b.user_id, limit=b.limit, as_of=b.as_of,
                                       max_entities=b.max_entities, speaker=b.speaker), quick=True),
    _V("entity_history", wire.EntityRequest, _FactList, one_user,
       lambda m, b, p: _facts(m.entity_history(b.name, user_id=b.user_id)), quick=True),
    _V("related_entities", wire.RelatedRequest, list[wire.EntityOut], one_user,
       lambda m, b, p: [entity_to_dict(e) for e in m.related_entities(b.name, user_id=b.user_id, limit=b.limit)],
       quick=True),
    _V("get_entity", wire.EntityRequest, wire.EntityOut, one_user,
       lambda m, b, p: entity_to_dict(m.get_entity(b.name, user_id=b.user_id)), quick=True),
    _V("cypher", wire.CypherRequest, list[dict[str, Any]], one_user,
       lambda m, b, p: plain(m.cypher(b.query, b.params, user_id=b.user_id))),
    _V("has_user", wire.UserRequest, bool, one_user, lambda m, b, p: m.has_user(b.user_id), quick=True),
    _V("users", wire.EmptyRequest, list[str], lambda b: Scope(),
       lambda m, b, p: [u for u in m.users() if p.may(u)]),
    _V("get_episode", wire.EpisodeRequest, wire.EpisodeOut, episode_scope, _get_episode, quick=True),
    _V("episode_ids", wire.EpisodeIdsRequest, list[str], user_or_all,
       lambda m, b, p: m.episode_ids(user_id=b.user_id, status=b.status)),
    _V("facts", wire.UserRequest, _FactList, one_user, lambda m, b, p: _facts(m.facts(b.user_id))),
    _V("add_messages", wire.MessagesRequest, None, one_user,
       lambda m, b, p: m.add_messages(b.session_id, _messages(b.messages), user_id=b.user_id)),
    _V("get_messages", wire.SessionWindowRequest, list[wire.MessageOut], one_user,
       lambda m, b, p: [message_to_dict(x) for x in m.get_messages(b.session_id, user_id=b.user_id, limit=b.limit)],
       quick=True),
    _V("unended_count", wire.SessionRequest, int, one_user,
       lambda m, b, p: m.unended_count(b.session_id, user_id=b.user_id), quick=True),
    _V("clear_messages", wire.SessionRequest, None, one_user,
       lambda m, b, p: m.clear_messages(b.session_id, user_id=b.user_id)),
    _V("end_session", wire.SessionRequest, wire.IngestResultOut | None, one_user, _end_session),
    _V("forget_user", wire.UserRequest, None, one_user, lambda m, b, p: m.forget_user(b.user_id)),
    _V("export_user", wire.ExportRequest, None, one_user, _export, ndjson="out"),
    _V("import_user", wire.ImportQuery, wire.ImportReportOut, _import_scope, _import, ndjson="in"),
    _V("refresh_entities", wire.RefreshRequest, int, user_or_all, _refresh),
    _V("maintain", wire.EmptyRequest, wire.MaintenanceReportOut, whole_store,
       lambda m, b, p: wire.maintenance_report_to_dict(m.maintain())),
    _V("flush", wire.EmptyRequest, int, whole_store, lambda m, b, p: m.flush()),
    _V("rebuild", wire.RebuildRequest, dict[str, int], whole_store,
       lambda m, b, p: m.rebuild(reembed=b.reembed, batch_size=b.batch_size)),
    _V("check_consistency", wire.ConsistencyRequest, dict[str, list[str]], user_or_all,
       lambda m, b, p: m.check_consistency(b.user_id)),
    _V("stats", wire.StatsRequest, dict[str, Any], user_or_all, _stats),
)


def plain(value: Any) -> Any:
    """A Cypher value as JSON: times as ISO text, durations in seconds, bytes as base64, NaN as null."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(v) for v in value]
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, (Decimal, UUID, complex)):
        return str(value)
    return str(value)
