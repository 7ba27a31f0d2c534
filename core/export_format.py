"""The export format: the header, what each line may hold, and the references across a file.

:func:`parse_export` reads an export whole and checks every line on its own, as strictly
as ``conversation_end`` checks its input: message sizes and counts (the config's
limits), the type of every field, confidences and dates, vectors as base64 float32
(:func:`vector_from_text`); an entity's id must be the one its user derives from its
name. :func:`check_references` then checks the file across its lines: every id unique,
every reference pointing to a record of the same file. A failure is a one-line
:class:`~zep_core.ValidationError` naming the line and the field. What the file's
records are then checked against, and written to, is :mod:`zep_core.transfer`'s.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import reprlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from .config import MemoryConfig
from .errors import ValidationError
from .ingest import validate_messages
from .models import EPISODE_STATUSES, Entity, Episode, Fact, Message, to_utc
from .resolve import entity_id
from .stores.rows import StoredFact, iso
from .tenant import Tenant
from .validation import check_id, check_text

__all__ = ["EXPORT_FORMAT", "EXPORT_VERSION", "ChatRow", "EntityRow", "FactRow", "Parsed", "check_references",
           "json_lines", "parse_export", "read_header", "vector_from_text"]

EXPORT_FORMAT = "zep-memory-export"
EXPORT_VERSION = 1
_MAX_COUNT = 2**62  # fact_count: beyond it the record store's 64-bit integer overflows
_show = reprlib.Repr()
_show.maxstring = _show.maxother = 60
_show.maxlevel = 2


@dataclass(frozen=True)
class EntityRow:
    """An entity line: the entity, when it last changed, and its vector if the export carries one."""

    line: int
    entity: Entity
    changed_at: str | None
    vector: np.ndarray | None


@dataclass(frozen=True)
class FactRow:
    """A fact line: the fact with its entity ids and vector (empty when the export carries none)."""

    line: int
    stored: StoredFact
    has_vector: bool


@dataclass(frozen=True)
class ChatRow:
    """A chat-turn line: the turn, its session, and the episode it was learned in (if it was)."""

    line: int
    session_id: str
    message: Message
    episode_id: str | None


@dataclass
class Parsed:
    """A whole export, read and checked line by line: its header and its records, each with its line number."""

    header: dict[str, Any]
    episodes: list[tuple[int, Episode]] = field(default_factory=list)
    entities: list[EntityRow] = field(default_factory=list)
    facts: list[FactRow] = field(default_factory=list)
    chat: list[ChatRow] = field(default_factory=list)

    @property
    def user(self) -> Tenant:
        """The user the file is the memory of: the tenant every record of it is written under."""
        return Tenant.of(self.header["user_id"])


def vector_from_text(text: Any) -> np.ndarray:
    """A vector exported as base64 little-endian float32 (a ValidationError for anything else)."""
    if not isinstance(text, str):
        raise ValidationError("embedding must be a base64 string")
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValidationError("embedding is not valid base64") from None
    if len(raw) % 4:
        raise ValidationError("embedding is not a whole number of float32 values")
    return np.frombuffer(raw, dtype="<f4").astype(np.float32)


# -- reading the file: every line checked on its own -------------------------------------------


def parse_export(lines: Iterable[str], config: MemoryConfig) -> Parsed:
    """Read a whole export, every line checked on its own against ``config``'s limits (see the module)."""
    rows = json_lines(lines)
    _, first = next(rows, (0, None))
    parsed = Parsed(read_header(first))
    user = parsed.user
    for number, row in rows:
        where = f"line {number}"
        kind = row.get("type") if isinstance(row, dict) else None
        if not isinstance(kind, str) or kind not in ("episode", "entity", "fact", "chat_message"):
            raise ValidationError(f"{where}: unknown record type {_show.repr(kind)} (expected episode, entity, "
                                  "fact or chat_message)")
        if kind != "chat_message" and row.get("user_id") != user:
            raise ValidationError(f"{where}: the record belongs to user {_show.repr(row.get('user_id'))}, "
                                  f"but the export is of {user!r}")
        try:
            if kind == "episode":
                parsed.episodes.append((number, _episode_from(row, config)))
            elif kind == "entity":
                parsed.entities.append(_entity_from(row, number, config))
            elif kind == "fact":
                parsed.facts.append(_fact_from(row, number, config))
            else:
                parsed.chat.append(_chat_from(row, number, config))
        except ValidationError as exc:
            raise type(exc)(f"{where} ({kind}): {exc}") from None
    if (parsed.entities or parsed.facts) and not (parsed.episodes or parsed.chat):
        raise ValidationError("the export holds entities or facts but no episode or chat message; an export "
                              "of a user always holds what the memory was learned from")
    return parsed


def read_header(header: Any) -> dict[str, Any]:
    """Return the first line's value if it is an export header this version reads (of a valid user id)."""
    if not isinstance(header, dict) or header.get("type") != EXPORT_FORMAT:
        raise ValidationError(f"this is not a zep-memory export: line 1 must be the {EXPORT_FORMAT!r} header")
    version = header.get("version")
    if type(version) is not int or version != EXPORT_VERSION:
        raise ValidationError(f"export version {_show.repr(version)} is not supported "
                              f"(this zep-memory reads version {EXPORT_VERSION})")
    try:
        check_id(header.get("user_id"), "user_id")
    except ValidationError as exc:
        raise ValidationError(f"line 1: the export header's {exc}") from None
    made_by = header.get("embedder")
    if made_by is not None and not (isinstance(made_by, dict) and isinstance(made_by.get("name"), str)
                                    and type(made_by.get("dimension")) is int):
        raise ValidationError("line 1: the export header's embedder must be null or an object with a 'name' "
                              f"string and a 'dimension' integer, got {_show.repr(made_by)}")
    return header


def json_lines(lines: Iterable[str]) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of each non-blank line, from 1; text that is not UTF-8 JSON is a ValidationError."""
    number = 0
    it = iter(lines)
    while True:
        try:
            line = next(it)
        except StopIteration:
            return
        except UnicodeDecodeError as exc:
            raise ValidationError(f"the export is not UTF-8 text ({exc.reason}); an export is UTF-8 "
                                  "JSONL") from None
        number += 1
        if not line.strip():
            continue
        yield number, _loads(line, f"line {number}")


def _loads(text: str, where: str) -> Any:
    """One JSON value; anything malformed, too deep or too large is a one-line ValidationError."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValidationError(f"{where} is nested too deeply to be read as JSON; an export's records are "
                              "flat objects") from None
    except ValueError as exc:  # JSONDecodeError, or an integer too long to convert
        raise ValidationError(f"{where} is not valid JSON: {' '.join(str(exc).split())[:200]}") from None


def _get(row: dict[str, Any], key: str) -> Any:
    if key not in row:
        raise ValidationError(f"record has no {key!r}")
    return row[key]


def _text(row: dict[str, Any], key: str, *, required: bool = True, allow_empty: bool = False,
          limit: int | None = None) -> str | None:
    value = _get(row, key) if required else row.get(key)
    if value is None and not required:
        return None
    check_text(value, key, allow_empty=allow_empty)
    if limit is not None and len(value) > limit:
        raise ValidationError(f"{key} has {len(value)} characters, over max_message_chars={limit}")
    return value


def _ident(row: dict[str, Any], key: str, *, required: bool = True) -> str | None:
    value = _get(row, key) if required else row.get(key)
    return None if value is None and not required else check_id(value, key)


def _time(row: dict[str, Any], key: str, *, required: bool = False) -> datetime | None:
    value = _get(row, key) if required else row.get(key)
    return None if value is None else to_utc(value, key)


def _episode_from(row: dict[str, Any], config: MemoryConfig) -> Episode:
    episode_id = check_id(_get(row, "id"), "id")
    given = _get(row, "messages")
    try:
        messages = validate_messages(given, config)
    except ValidationError as exc:
        raise ValidationError(f"messages: {exc}") from None
    messages = [m if m.id is not None else dataclasses.replace(m, id=f"{episode_id}:{i}")
                for i, m in enumerate(messages)]
    if len({m.id for m in messages}) != len(messages):
        raise ValidationError("messages: message ids must be unique within an episode")
    status = _get(row, "status")
    if not isinstance(status, str) or status not in EPISODE_STATUSES:
        raise ValidationError(f"status must be one of {', '.join(EPISODE_STATUSES)}, got {_show.repr(status)}")
    return Episode(id=episode_id, user_id=row["user_id"], session_id=_ident(row, "session_id"),
                   summary=_text(row, "summary", required=False, allow_empty=True, limit=config.max_message_chars),
                   created_at=_time(row, "created_at", required=True), status=status,
                   error=_text(row, "error", required=False, allow_empty=True, limit=config.max_message_chars),
                   messages=tuple(messages))


def _entity_from(row: dict[str, Any], line: int, config: MemoryConfig) -> EntityRow:
    limit = config.max_message_chars
    count = row.get("fact_count") or 0
    if type(count) is not int or not 0 <= count <= _MAX_COUNT:
        raise ValidationError(f"fact_count must be a whole number >= 0, got {_show.repr(row.get('fact_count'))}")
    aliases = row.get("aliases") or []
    if not isinstance(aliases, list):
        raise ValidationError(f"aliases must be a list of strings, got {type(aliases).__name__}")
    for alias in aliases:
        check_text(alias, "alias")
        if len(alias) > limit:
            raise ValidationError(f"alias has {len(alias)} characters, over max_message_chars={limit}")
    entity = Entity(id=_ident(row, "id"), user_id=row["user_id"], name=_text(row, "name", limit=limit),
                    entity_type=_text(row, "entity_type", limit=limit),
                    summary=_text(row, "summary", required=False, allow_empty=True, limit=limit) or "",
                    fact_count=count, last_updated=_time(row, "last_updated"), aliases=tuple(aliases))
    derived = entity_id(entity.user_id, entity.name)
    if entity.id != derived:
        raise ValidationError(f"id {entity.id!r} is not the id of {entity.name!r} for user {entity.user_id!r} "
                              f"({derived}); an entity's id derives from its user and name, so a file cannot "
                              "name another user's entity")
    changed = _time(row, "changed_at")
    vector = vector_from_text(row["embedding"]) if "embedding" in row else None
    return EntityRow(line, entity, iso(changed), vector)


def _fact_from(row: dict[str, Any], line: int, config: MemoryConfig) -> FactRow:
    sources = row.get("source_message_ids") or []
    if not isinstance(sources, list):
        raise ValidationError(f"source_message_ids must be a list of message ids, got {type(sources).__name__}")
    for source in sources:
        check_id(source, "source_message_ids item")
    confidence = _get(row, "confidence")
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 <= confidence <= 1:
        raise ValidationError(f"confidence must be a number in [0, 1], got {_show.repr(confidence)}")
    limit = config.max_message_chars
    fact = Fact(id=_ident(row, "id"), user_id=row["user_id"], episode_id=_ident(row, "episode_id", required=False),
                content=_text(row, "content", limit=limit), subject=_text(row, "subject", limit=limit),
                predicate=_text(row, "predicate", limit=limit), object=_text(row, "object", limit=limit),
                confidence=confidence, valid_from=_time(row, "valid_from", required=True),
                valid_until=_time(row, "valid_until"), superseded_by=_ident(row, "superseded_by", required=False),
                source_message_ids=tuple(sources), created_at=_time(row, "created_at"),
                expired_at=_time(row, "expired_at"),
                attribute=_text(row, "attribute", required=False))
    if fact.superseded_by is not None and fact.valid_until is None:
        raise ValidationError("superseded_by is set but valid_until is not; a superseded fact has ended")
    subject_id = _ident(row, "subject_id")
    object_id = _ident(row, "object_id", required=False)
    has_vector = "embedding" in row
    vector = vector_from_text(row["embedding"]) if has_vector else np.zeros(0, dtype=np.float32)
    return FactRow(line, StoredFact(fact, subject_id, object_id, vector), has_vector)


def _chat_from(row: dict[str, Any], line: int, config: MemoryConfig) -> ChatRow:
    session = _ident(row, "session_id")
    message = validate_messages([row], config)[0]
    return ChatRow(line, session, message, _ident(row, "episode_id", required=False))


# -- checks across the file ---------------------------------------------------------------------


def check_references(parsed: Parsed) -> None:
    """Every id is unique in the file, and every reference points to a record of the file."""
    episodes = _unique("episode", [(n, e.id) for n, e in parsed.episodes])
    entities = _unique("entity", [(r.line, r.entity.id) for r in parsed.entities])
    facts = _unique("fact", [(r.line, r.stored.fact.id) for r in parsed.facts])
    # A restated fact cites the messages of every episode that said it, not only of its own.
    messages = {m.id for _, e in parsed.episodes for m in e.messages} | {c.message.id for c in parsed.chat}
    hint = "references must point to records in the same export"
    for r in parsed.facts:
        f, where = r.stored.fact, f"line {r.line} (fact):"
        for key, ref in (("subject_id", r.stored.subject_id), ("object_id", r.stored.object_id)):
            if ref is not None and ref not in entities:
                raise ValidationError(f"{where} {key} {ref!r} is not an entity of this export; {hint}")
        if f.episode_id is not None and f.episode_id not in episodes:
            raise ValidationError(f"{where} episode_id {f.episode_id!r} is not an episode of this export; {hint}")
        if f.superseded_by is not None and f.superseded_by not in facts:
            raise ValidationError(f"{where} superseded_by {f.superseded_by!r} is not a fact of this export; {hint}")
        stray = [s for s in f.source_message_ids if s not in messages]
        if stray:
            raise ValidationError(f"{where} source_message_ids {stray[0]!r} is not a message of this export; {hint}")
    for c in parsed.chat:
        if c.episode_id is not None and c.episode_id not in episodes:
            raise ValidationError(f"line {c.line} (chat_message): episode_id {c.episode_id!r} is not an episode "
                                  f"of this export; {hint}")


def _unique(kind: str, ids: list[tuple[int, str]]) -> dict[str, int]:
    seen: dict[str, int] = {}
    for line, rid in ids:
        if rid in seen:
            raise ValidationError(f"line {line} ({kind}): id {rid!r} is already used on line {seen[rid]}; "
                                  "ids are unique in an export")
        seen[rid] = line
    return seen
