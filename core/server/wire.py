"""What travels between ``zep-memory serve`` and :class:`~zep_core.server.RemoteMemory`: pydantic models.

Requests are the keyword arguments of the :class:`~zep_core.Memory` verb of the same
name, as JSON (unknown fields are refused; types are strict: ``"5"`` is not a limit).
Times travel as ISO 8601 text and the library reads them, so a date is refused with
the same message as in-process. Every answer is ``{"result": ...}``; records in it are
the dicts of :mod:`zep_core.serialize` (a fact with its scores), described here so
FastAPI can draw the OpenAPI document (``/docs``). An error is
``{"error": {"type": "NotFoundError", "message": "..."}}`` (:class:`ErrorBody`).

A model that restates a record of the library keeps its fields: the two reports are made
from their dataclasses here, and a test holds the others (a fact, an entity, a message,
an episode, an ingest result; each request against the keyword arguments of its verb) to
the library's types.

The converters at the end turn what the verbs return that is not a record
(:class:`~zep_core.IngestResult`, :class:`~zep_core.MaintenanceReport`, the import
report) into those dicts and back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import MISSING, asdict
from typing import Any, Generic, TypeVar, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model

from ..maintenance import MaintenanceReport
from ..models import Discarded, IngestResult
from ..serialize import fact_from_dict, fact_to_dict
from ..transfer import ExportCounts, ImportReport

__all__ = [
    "ConsistencyRequest", "ContextBlockRequest", "ContextRequest", "ConversationEndManyRequest",
    "ConversationEndRequest", "CypherRequest", "EmptyRequest", "EntityOut", "EntityRequest", "EpisodeIdsRequest",
    "EpisodeIn", "EpisodeOut", "EpisodeRequest", "ErrorBody", "ErrorDetail", "ExportRequest", "FactOut",
    "ImportQuery", "ImportReportOut", "IngestResultOut", "Info", "MaintenanceReportOut", "MessageIn", "MessageOut",
    "MessagesRequest", "RebuildRequest", "RefreshRequest", "RelatedRequest", "Result", "SessionRequest",
    "SessionWindowRequest", "StatsRequest", "UserRequest", "export_counts_from_dict", "import_report_from_dict",
    "import_report_to_dict", "ingest_result_from_dict", "ingest_result_to_dict", "maintenance_report_from_dict",
    "maintenance_report_to_dict",
]

T = TypeVar("T")


class _Request(BaseModel):
    """A JSON request body: strict types, no unknown fields, no NaN or infinity."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


# -- requests ------------------------------------------------------------------------------------


class MessageIn(_Request):
    """A chat message: the fields of :class:`~zep_core.Message` (``timestamp`` as ISO 8601 text)."""

    content: str
    role: str = "user"
    name: str | None = None
    id: str | None = None
    timestamp: str | None = None
    extra: dict[str, Any] | None = None  # the session buffer's tool calls, blocks, kwargs (never extracted)


#: What ``user_id`` is on the verbs of one user.
USER_ID = ("the tenant; may be left out when the API key is bound to one user (it is that user), and is "
           "required otherwise: there is no shared default user")


class ConversationEndRequest(_Request):
    """:meth:`Memory.conversation_end`."""

    session_id: str
    messages: list[MessageIn]
    user_id: str | None = Field(None, description=USER_ID)
    episode_id: str | None = None


class EpisodeIn(ConversationEndRequest):
    """One episode of :meth:`Memory.conversation_end_many`: the arguments of one ``conversation_end``."""


class ConversationEndManyRequest(_Request):
    """:meth:`Memory.conversation_end_many` (progress is reported by the client, after the call)."""

    episodes: list[EpisodeIn]
    batch_size: int = 256


class ContextRequest(_Request):
    """:meth:`Memory.get_context`."""

    input: str
    user_id: str | None = Field(None, description=USER_ID)
    limit: int | None = None
    as_of: str | None = Field(None, description="ISO 8601: what was true then instead of now")
    require_both: bool | None = None
    threshold: float | None = None
    speaker: str | None = None


class ContextBlockRequest(_Request):
    """:meth:`Memory.context_block`."""

    input: str
    user_id: str | None = Field(None, description=USER_ID)
    limit: int | None = None
    as_of: str | None = Field(None, description="ISO 8601: what was true then instead of now")
    max_entities: int = 5
    speaker: str | None = None


class EntityRequest(_Request):
    """:meth:`Memory.entity_history` and :meth:`Memory.get_entity`."""

    name: str
    user_id: str | None = Field(None, description=USER_ID)


class RelatedRequest(_Request):
    """:meth:`Memory.related_entities`."""

    name: str
    user_id: str | None = Field(None, description=USER_ID)
    limit: int = 10


class CypherRequest(_Request):
    """:meth:`Memory.cypher`: read-only, over the user's graph only."""

    query: str
    params: dict[str, Any] | None = None
    user_id: str | None = Field(None, description=USER_ID)


class UserRequest(_Request):
    """A verb of one user, named: :meth:`Memory.has_user`, :meth:`Memory.facts`, :meth:`Memory.forget_user`."""

    user_id: str


class EmptyRequest(_Request):
    """A verb without arguments: ``users``, ``maintain``, ``flush``."""


class EpisodeRequest(_Request):
    """:meth:`Memory.get_episode`; ``user_id``, when given, must be the episode's user."""

    episode_id: str
    user_id: str | None = None


class EpisodeIdsRequest(_Request):
    """:meth:`Memory.episode_ids` (every user's: admin keys only)."""

    user_id: str | None = None
    status: str | None = None


class MessagesRequest(_Request):
    """:meth:`Memory.add_messages`."""

    session_id: str
    messages: list[MessageIn]
    user_id: str | None = Field(None, description=USER_ID)


class SessionRequest(_Request):
    """A session verb: ``unended_count``, ``clear_messages``, ``end_session``."""

    session_id: str
    user_id: str | None = Field(None, description=USER_ID)


class SessionWindowRequest(_Request):
    """:meth:`Memory.get_messages`."""

    session_id: str
    user_id: str | None = Field(None, description=USER_ID)
    limit: int | None = None


class RefreshRequest(_Request):
    """:meth:`Memory.refresh_entities` (every user's: admin keys only); ``max_age`` in seconds."""

    user_id: str | None = None
    max_age_s: float | None = None
    batch_size: int = 50


class RebuildRequest(_Request):
    """:meth:`Memory.rebuild` (admin keys only)."""

    reembed: bool = False
    batch_size: int = 1000


class ConsistencyRequest(_Request):
    """:meth:`Memory.check_consistency` (every user's: admin keys only)."""

    user_id: str | None = None


class StatsRequest(_Request):
    """:meth:`Memory.stats`: a user key gets its user's counts and the embedder; an admin key everything."""

    user_id: str | None = None


class ExportRequest(_Request):
    """:meth:`Memory.export_user`: the answer is the export itself, NDJSON (``application/x-ndjson``)."""

    user_id: str
    embeddings: bool = False


class ImportQuery(BaseModel):
    """The query string of ``/v1/import_user``; the body is the export, NDJSON."""

    model_config = ConfigDict(extra="forbid")

    replace: bool = False
    user_id: str | None = None


# -- answers ---------------------------------------------------------------------------------------


class Result(BaseModel, Generic[T]):
    """Every answer: ``{"result": ...}``."""

    result: T


class FactOut(BaseModel):
    """A fact, as :func:`zep_core.serialize.fact_to_dict` (``scores=True``) writes it."""

    id: str
    user_id: str
    episode_id: str | None
    content: str
    subject: str
    predicate: str
    object: str
    confidence: float
    valid_from: str
    valid_until: str | None
    superseded_by: str | None
    source_message_ids: list[str]
    created_at: str | None
    expired_at: str | None
    attribute: str | None = Field(None, description="what the fact is a claim about (home, work…), when known")
    score: float | None
    semantic_score: float | None
    lexical_score: float | None
    graph_score: float | None
    newer_fact_id: str | None = Field(None, description="present when a newer fact says nearly the same")


class EntityOut(BaseModel):
    """An entity, as :func:`zep_core.serialize.entity_to_dict` writes it."""

    id: str
    user_id: str
    name: str
    entity_type: str
    summary: str
    fact_count: int
    last_updated: str | None
    aliases: list[str]


class MessageOut(BaseModel):
    """A message, as :func:`zep_core.serialize.message_to_dict` writes it."""

    id: str | None
    role: str
    name: str | None
    content: str
    timestamp: str | None
    extra: dict[str, Any] | None = None


class EpisodeOut(BaseModel):
    """An episode, as :func:`zep_core.serialize.episode_to_dict` writes it."""

    id: str
    user_id: str
    session_id: str
    summary: str | None
    created_at: str
    status: str
    error: str | None
    messages: list[MessageOut]


class DiscardedOut(BaseModel):
    """A proposed fact the update rules did not store, and why."""

    fact: FactOut
    reason: str
    conflicting_fact_id: str | None


class IngestResultOut(BaseModel):
    """What ``conversation_end`` did (:class:`~zep_core.IngestResult`)."""

    episode_id: str
    status: str
    summary: str | None
    added: list[FactOut]
    reinforced: list[FactOut]
    superseded: list[FactOut]
    discarded: list[DiscardedOut]
    invalid: list[str]
    usage: dict[str, int]
    error: str | None


def _model_of(record: type, name: str, doc: str) -> type[BaseModel]:
    """A model with the fields of the dataclass ``record`` (its types and defaults), for the OpenAPI document.

    For a record whose fields JSON carries as they are, so the wire cannot drift from it.
    """
    hints = get_type_hints(record)
    fields_: dict[str, Any] = {
        f.name: (hints[f.name], Field(default_factory=f.default_factory) if f.default_factory is not MISSING
                 else (... if f.default is MISSING else f.default)) for f in dataclasses.fields(record)}
    return create_model(name, __doc__=doc, __module__=__name__, **fields_)


#: What ``maintain`` did (:class:`~zep_core.MaintenanceReport`, field by field).
MaintenanceReportOut = _model_of(MaintenanceReport, "MaintenanceReportOut",
                                 "What ``maintain`` did (:class:`~zep_core.MaintenanceReport`).")
#: What ``import_user`` wrote back (:class:`~zep_core.transfer.ImportReport`, field by field).
ImportReportOut = _model_of(ImportReport, "ImportReportOut",
                            "What ``import_user`` wrote back (:class:`~zep_core.transfer.ImportReport`).")


class Info(BaseModel):
    """``/v1/info``: what a client needs to stand in for a :class:`~zep_core.Memory`."""

    version: str
    now: str
    default_speaker: str
    assistant_speaker: str | None
    single_valued_predicates: list[str]
    entity_refresh_interval_s: float
    scoring: dict[str, Any] = Field(description="config.scoring, field by field")
    limits: dict[str, Any] = Field(description="config.limits, field by field")
    max_body_bytes: int
    embedder: dict[str, Any]
    key: dict[str, Any] = Field(description="the calling key: its name, whether admin, its users")


class ErrorDetail(BaseModel):
    """The error: the :class:`~zep_core.ZepMemoryError` subclass by name, and its message."""

    type: str
    message: str


class ErrorBody(BaseModel):
    """Every error answer."""

    error: ErrorDetail


# -- converters of what the verbs return ----------------------------------------------------------


def ingest_result_to_dict(result: IngestResult) -> dict[str, Any]:
    """An :class:`~zep_core.IngestResult` as JSON-ready dicts (facts through the one serializer)."""
    return {
        "episode_id": result.episode_id, "status": result.status, "summary": result.summary,
        "added": [fact_to_dict(f, scores=True) for f in result.added],
        "reinforced": [fact_to_dict(f, scores=True) for f in result.reinforced],
        "superseded": [fact_to_dict(f, scores=True) for f in result.superseded],
        "discarded": [{"fact": fact_to_dict(d.fact, scores=True), "reason": d.reason,
                       "conflicting_fact_id": d.conflicting_fact_id} for d in result.discarded],
        "invalid": list(result.invalid), "usage": dict(result.usage), "error": result.error,
    }


def ingest_result_from_dict(data: Mapping[str, Any]) -> IngestResult:
    """The :class:`~zep_core.IngestResult` :func:`ingest_result_to_dict` wrote."""
    return IngestResult(
        episode_id=data["episode_id"], status=data["status"], summary=data.get("summary"),
        added=tuple(fact_from_dict(f) for f in data.get("added", ())),
        reinforced=tuple(fact_from_dict(f) for f in data.get("reinforced", ())),
        superseded=tuple(fact_from_dict(f) for f in data.get("superseded", ())),
        discarded=tuple(Discarded(fact_from_dict(d["fact"]), d["reason"], d.get("conflicting_fact_id"))
                        for d in data.get("discarded", ())),
        invalid=tuple(data.get("invalid", ())), usage=dict(data.get("usage") or {}), error=data.get("error"))


def maintenance_report_to_dict(report: MaintenanceReport) -> dict[str, Any]:
    """A :class:`~zep_core.MaintenanceReport` as a JSON-ready dict."""
    out = asdict(report)
    out["still_pending"], out["failed"] = list(report.still_pending), list(report.failed)
    return out


def maintenance_report_from_dict(data: Mapping[str, Any]) -> MaintenanceReport:
    """The :class:`~zep_core.MaintenanceReport` :func:`maintenance_report_to_dict` wrote."""
    known = {f.name for f in dataclasses.fields(MaintenanceReport)}
    return MaintenanceReport(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in known})


def import_report_to_dict(report: ImportReport) -> dict[str, Any]:
    """An :class:`~zep_core.transfer.ImportReport` as a JSON-ready dict."""
    return asdict(report)


def import_report_from_dict(data: Mapping[str, Any]) -> ImportReport:
    """The :class:`~zep_core.transfer.ImportReport` :func:`import_report_to_dict` wrote."""
    return ImportReport(**{k: data[k] for k in ImportReport.__dataclass_fields__})


def export_counts_from_dict(data: Mapping[str, int]) -> ExportCounts:
    """:class:`~zep_core.transfer.ExportCounts` from counts by record kind."""
    return ExportCounts(episodes=data.get("episode", 0), entities=data.get("entity", 0), facts=data.get("fact", 0),
                        chat_messages=data.get("chat_message", 0))
