"""Export and import one user's memory as JSONL, exactly.

An export is a header line followed by one JSON object per record, in a fixed
order — episodes (with their messages), entities (with summaries and aliases), facts
(every field: ids, validity, ``superseded_by``, ``source_message_ids``, system times),
then the user's chat turns — so exporting the same memory twice gives the same bytes.
Import writes the records back as they were, without running extraction again:
stored vectors are reused when the export carries them (``embeddings=True``, base64
float32) and were made by the same embedder; otherwise the texts are embedded again.
The file is checked whole before anything is written, as strictly as ``conversation_end``
checks its input, and can only ever write its own user's records (:func:`import_records`).

::

    {"type": "zep-memory-export", "version": 1, "user_id": "alice", "embedder": {...}}
    {"type": "episode", "id": ..., "messages": [{"id": ..., "role": ..., ...}], ...}
    {"type": "entity", "id": ..., "name": ..., "aliases": [...], "embedding": "base64"?}
    {"type": "fact", "id": ..., "valid_from": ..., "superseded_by": ..., "embedding": "base64"?}
    {"type": "chat_message", "session_id": ..., "content": ..., "episode_id": ...}

Example:
    >>> with open("alice.jsonl", "w") as out:                        # doctest: +SKIP
    ...     export_user(memory, "alice", out, embeddings=True)
    >>> memory.forget_user("alice")                                  # doctest: +SKIP
    >>> with open("alice.jsonl") as f:                               # doctest: +SKIP
    ...     import_user(memory, f)

"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import reprlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, TextIO

import numpy as np

from .config import MemoryConfig
from .errors import ValidationError
from .indexing import unusable_vector
from .ingest import validate_messages
from .models import Entity, Episode, Fact, Message, to_utc
from .outbox import OutboxOp
from .providers.base import Embedder
from .resolve import entity_id
from .serialize import entity_to_dict, episode_to_dict, fact_to_dict, message_to_dict
from .stores.record_protocols import TransferRecords
from .stores.records import StoredFact, iso
from .sync import IndexSync
from .tenant import Tenant
from .validation import check_id, check_text

__all__ = ["EXPORT_FORMAT", "EXPORT_VERSION", "ExportCounts", "ImportReport", "Transferable", "export_records",
           "export_user", "import_records", "import_user", "write_export"]

EXPORT_FORMAT = "zep-memory-export"
EXPORT_VERSION = 1
_BATCH = 500


@dataclass(frozen=True)
class ExportCounts:
    """How many records :func:`export_user` wrote."""

    episodes: int
    entities: int
    facts: int
    chat_messages: int


@dataclass(frozen=True)
class ImportReport:
    """What :func:`import_user` wrote back."""

    user_id: str
    episodes: int
    entities: int
    facts: int
    chat_messages: int
    reembedded: bool
    replaced: bool


class Transferable(Protocol):
    """What :func:`export_user` and :func:`import_user` call: a :class:`zep_core.Memory`, or a ``RemoteMemory``.

    Typed by what it does, so this module needs nothing of :mod:`zep_core.memory`: the
    façade uses transfer, never the other way round.
    """

    def export_user(self, user_id: str, out: TextIO, *, embeddings: bool = False) -> ExportCounts:
        """Write a user's memory as JSONL."""

    def import_user(self, lines: Iterable[str], *, replace: bool = False,
                    user_id: str | None = None) -> ImportReport:
        """Write an export back."""


def export_user(memory: Transferable, user_id: str, out: TextIO, *, embeddings: bool = False) -> ExportCounts:
    """Write ``user_id``'s memory to ``out`` as JSONL (:meth:`Memory.export_user`)."""
    return memory.export_user(user_id, out, embeddings=embeddings)


def import_user(memory: Transferable, lines: Iterable[str], *, replace: bool = False,
                user_id: str | None = None) -> ImportReport:
    """Write an export back into ``memory``, as it was (:meth:`Memory.import_user`)."""
    return memory.import_user(lines, replace=replace, user_id=user_id)


# -- export -----------------------------------------------------------------------------------


def _vector_to_text(vector: np.ndarray) -> str:
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def _vector_from_text(text: Any) -> np.ndarray:
    if not isinstance(text, str):
        raise ValidationError("embedding must be a base64 string")
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValidationError("embedding is not valid base64") from None
    if len(raw) % 4:
        raise ValidationError("embedding is not a whole number of float32 values")
    return np.frombuffer(raw, dtype="<f4").astype(np.float32)


def export_records(records: TransferRecords, embedder: Embedder, user_id: str, *,
                   embeddings: bool = False) -> Iterator[dict[str, Any]]:
    """Every record of a user as JSON-ready dicts, header first, in the export's fixed order.

    Args:
        records: the record store.
        embedder: the memory's embedder (its identity goes in the header).
        user_id: the user, known to exist.
        embeddings: include the stored vectors (base64 float32).

    """
    yield {"type": EXPORT_FORMAT, "version": EXPORT_VERSION, "user_id": user_id,
           "embedder": {"name": embedder.name, "dimension": embedder.dimension} if embeddings else None}
    for eid in records.episode_ids(user_id):
        episode = records.get_episode(user_id, eid)
        if episode is not None:
            yield {"type": "episode", **episode_to_dict(episode)}
    for ids in records.iter_entity_ids(user_id, batch=_BATCH):
        entities = records.get_entities(user_id, ids)
        changed = records.entity_changed_at(user_id, ids)
        vectors = {e.id: v for e, v in records.entity_rows(user_id, ids)} if embeddings else {}
        for eid in ids:
            row = {"type": "entity", **entity_to_dict(entities[eid]), "changed_at": changed.get(eid)}
            if embeddings:
                row["embedding"] = _vector_to_text(vectors[eid])
            yield row
    for ids in records.iter_fact_ids(user_id, batch=_BATCH):
        stored = records.stored_facts(user_id, ids)
        for fid in ids:
            s = stored[fid]
            row = {"type": "fact", **fact_to_dict(s.fact), "subject_id": s.subject_id, "object_id": s.object_id}
            if embeddings:
                row["embedding"] = _vector_to_text(s.embedding)
            yield row
    for session_id, message, episode_id in records.session_rows(user_id):
        yield {"type": "chat_message", "session_id": session_id, **message_to_dict(message),
               "episode_id": episode_id}


def write_export(rows: Iterable[Mapping[str, Any]], out: TextIO) -> ExportCounts:
    """Write export rows as JSONL; count what was written."""
    counts = {"episode": 0, "entity": 0, "fact": 0, "chat_message": 0}
    for row in rows:
        out.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
        if row["type"] in counts:
            counts[row["type"]] += 1
    return ExportCounts(episodes=counts["episode"], entities=counts["entity"], facts=counts["fact"],
                        chat_messages=counts["chat_message"])


# -- import ------------------------------------------------------------------------------------

#: What an imported episode's ``status`` may be (as :meth:`Memory.episode_ids` knows them).
_STATUSES = ("pending", "done", "failed")
_MAX_COUNT = 2**62  # fact_count: beyond it SQLite's INTEGER overflows
_show = reprlib.Repr()
_show.maxstring = _show.maxother = 60
_show.maxlevel = 2


@dataclass(frozen=True)
class _EntityRow:
    line: int
    entity: Entity
    changed_at: str | None
    vector: np.ndarray | None


@dataclass(frozen=True)
class _FactRow:
    line: int
    stored: StoredFact
    has_vector: bool


@dataclass(frozen=True)
class _ChatRow:
    line: int
    session_id: str
    message: Message
    episode_id: str | None


@dataclass
class _Parsed:
    header: dict[str, Any]
    episodes: list[tuple[int, Episode]] = field(default_factory=list)
    entities: list[_EntityRow] = field(default_factory=list)
    facts: list[_FactRow] = field(default_factory=list)
    chat: list[_ChatRow] = field(default_factory=list)

    @property
    def user(self) -> Tenant:
        """The user the file is the memory of: the tenant every record of it is written under."""
        return Tenant.of(self.header["user_id"])


def import_records(records: TransferRecords, sync: IndexSync, embedder: Embedder, lines: Iterable[str], *,
                   replace: bool = False, user_id: str | None = None, data_dir: Path | None = None,
                   config: MemoryConfig | None = None) -> ImportReport:
    """Write an export back, as it was, without re-extraction, in one transaction.

    The whole file is read and checked before anything is written, as strictly as
    ``conversation_end`` checks its input: message sizes and counts (``config``'s limits),
    the types of every field, confidences and dates, vectors (finite, of the embedder's
    dimension). Every entity id must be the one the user derives from the entity's name
    (:func:`zep_core.resolve.entity_id`), so a file can never name another user's entity;
    every id must be free in every tenant (or the importing user's own, with ``replace``);
    and every reference (a fact's entities, episode, sources and ``superseded_by``, a chat
    turn's episode) must point to a record of the same file. A file that fails anywhere
    leaves the stores as they were: nothing committed, no index write queued.

    Args:
        records: the record store.
        sync: the write step (the indexes are brought in line before returning).
        embedder: re-embeds the texts when the export carries no vectors of this embedder.
        lines: the JSONL export (an open file works).
        replace: forget the user's current memory first; without it, importing a
            user that already has memory is refused.
        user_id: when given, the export must be of this user (entity ids derive from
            the user, so a memory cannot be imported under another user id).
        data_dir: named in error messages.
        config: the limits messages are checked against (the defaults when None).

    Returns:
        What was written, and whether the texts had to be embedded again.

    Raises:
        ValidationError: a malformed line (named by number, with the field at fault), a
            record of another user, a dangling reference, a user that already has memory
            (without ``replace``), or ids already used by another user.

    """
    parsed = _parse(lines, config or MemoryConfig())
    user = parsed.user
    if user_id is not None and user_id != user:
        raise ValidationError(f"the export holds the memory of {user!r}, not {user_id!r}; a memory is imported "
                              "under its own user id")
    _check_references(parsed)
    reembed = _needs_reembedding(embedder, parsed)
    _check_free(records, parsed, replace, data_dir)  # early, before the texts are embedded
    entity_vecs, fact_vecs = _vectors(embedder, parsed, reembed)
    with sync.transaction(apply_now=True) as ops:  # one transaction: a failed import leaves the old memory
        _check_free(records, parsed, replace, data_dir)  # again, under the writers' lock
        replaced = replace and records.has_records(user)
        if replaced:
            records.delete_user(user)
            ops.append(OutboxOp.forget_user(user))
        for _, episode in parsed.episodes:
            records.insert_episode(episode, [str(m.id) for m in episode.messages])
            if episode.error is not None:
                records.set_episode_status(user, episode.id, episode.status, error=episode.error)
        by_changed: dict[str | None, list[tuple[Entity, np.ndarray]]] = {}
        for row, vec in zip(parsed.entities, entity_vecs):
            by_changed.setdefault(row.changed_at, []).append((row.entity, vec))
        for changed_at, rows in by_changed.items():
            records.insert_entities(rows, changed_at)
        records.set_entity_summaries((user, r.entity.id, r.entity.summary, r.entity.fact_count,
                                      iso(r.entity.last_updated)) for r in parsed.entities)
        records.add_aliases((user, alias, r.entity.id) for r in parsed.entities for alias in r.entity.aliases)
        records.write_facts(StoredFact(r.stored.fact, r.stored.subject_id, r.stored.object_id, v)
                            for r, v in zip(parsed.facts, fact_vecs))
        records.insert_session_rows(user, [(c.session_id, c.message, c.episode_id) for c in parsed.chat])
        ops += [OutboxOp.entity(user, r.entity.id) for r in parsed.entities]
        ops += [OutboxOp.fact(user, r.stored.fact.id) for r in parsed.facts]
    return ImportReport(user_id=user, episodes=len(parsed.episodes), entities=len(parsed.entities),
                        facts=len(parsed.facts), chat_messages=len(parsed.chat), reembedded=reembed,
                        replaced=replaced)


# -- reading the file: every line checked on its own -------------------------------------------


def _parse(lines: Iterable[str], config: MemoryConfig) -> _Parsed:
    rows = _json_lines(lines)
    _, first = next(rows, (0, None))
    parsed = _Parsed(_header(first))
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


def _header(header: Any) -> dict[str, Any]:
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


def _json_lines(lines: Iterable[str]) -> Iterator[tuple[int, Any]]:
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
    if not isinstance(status, str) or status not in _STATUSES:
        raise ValidationError(f"status must be one of {', '.join(_STATUSES)}, got {_show.repr(status)}")
    return Episode(id=episode_id, user_id=row["user_id"], session_id=_ident(row, "session_id"),
                   summary=_text(row, "summary", required=False, allow_empty=True, limit=config.max_message_chars),
                   created_at=_time(row, "created_at", required=True), status=status,
                   error=_text(row, "error", required=False, allow_empty=True, limit=config.max_message_chars),
                   messages=tuple(messages))


def _entity_from(row: dict[str, Any], line: int, config: MemoryConfig) -> _EntityRow:
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
    vector = _vector_from_text(row["embedding"]) if "embedding" in row else None
    return _EntityRow(line, entity, iso(changed), vector)


def _fact_from(row: dict[str, Any], line: int, config: MemoryConfig) -> _FactRow:
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
                expired_at=_time(row, "expired_at"))
    if fact.superseded_by is not None and fact.valid_until is None:
        raise ValidationError("superseded_by is set but valid_until is not; a superseded fact has ended")
    subject_id = _ident(row, "subject_id")
    object_id = _ident(row, "object_id", required=False)
    has_vector = "embedding" in row
    vector = _vector_from_text(row["embedding"]) if has_vector else np.zeros(0, dtype=np.float32)
    return _FactRow(line, StoredFact(fact, subject_id, object_id, vector), has_vector)


def _chat_from(row: dict[str, Any], line: int, config: MemoryConfig) -> _ChatRow:
    session = _ident(row, "session_id")
    message = validate_messages([row], config)[0]
    return _ChatRow(line, session, message, _ident(row, "episode_id", required=False))


# -- checks across the file and against the stores ---------------------------------------------


def _check_references(parsed: _Parsed) -> None:
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


def _needs_reembedding(embedder: Embedder, parsed: _Parsed) -> bool:
    """Whether the stored vectors are missing or were made by another embedder; refuse unusable ones."""
    made_by = parsed.header.get("embedder") or {}
    same = made_by.get("name") == embedder.name and made_by.get("dimension") == embedder.dimension
    complete = (all(r.vector is not None for r in parsed.entities) and all(r.has_vector for r in parsed.facts))
    if not (same and complete):
        return True
    rows = [(r.line, "entity", r.vector) for r in parsed.entities] + [
        (r.line, "fact", r.stored.embedding) for r in parsed.facts]
    for line, kind, vector in rows:
        why = unusable_vector(vector, embedder.dimension)
        if why:
            raise ValidationError(f"line {line} ({kind}): embedding {why}; the export is damaged (export it "
                                  "again, or drop the embeddings and the texts are embedded again)")
    return False


def _check_free(records: TransferRecords, parsed: _Parsed, replace: bool, data_dir: Path | None) -> None:
    """Refuse to overwrite a user's memory, or ids that belong to another user (or to anyone, without replace)."""
    user = parsed.user
    if not replace and records.has_records(user):
        raise ValidationError(f"user {user!r} already has memory in {data_dir}; forget it first "
                              "(`zep-memory forget`) or import with --replace")
    for kind, table, ids in (("episode", "episodes", [e.id for _, e in parsed.episodes]),
                             ("entity", "entities", [r.entity.id for r in parsed.entities]),
                             ("fact", "facts", [r.stored.fact.id for r in parsed.facts])):
        for i in range(0, len(ids), _BATCH):
            owners = records.record_owners(table, ids[i:i + _BATCH])
            taken = next(((rid, owner) for rid, owner in owners.items() if owner != user), None)
            if taken:
                raise ValidationError(f"{kind} id {taken[0]!r} already belongs to another user; an import "
                                      "cannot reuse another user's ids")


def _vectors(embedder: Embedder, parsed: _Parsed, reembed: bool) -> tuple[list[np.ndarray], list[np.ndarray]]:
    if not reembed:
        return [r.vector for r in parsed.entities], [r.stored.embedding for r in parsed.facts]  # type: ignore[misc]
    return (_embed(embedder, [r.entity.name for r in parsed.entities]),
            _embed(embedder, [r.stored.fact.content for r in parsed.facts]))


def _embed(embedder: Embedder, texts: list[str]) -> list[np.ndarray]:
    out: list[np.ndarray] = []
    for i in range(0, len(texts), _BATCH):
        out.extend(np.asarray(embedder.embed(texts[i:i + _BATCH]), dtype=np.float32))
    return out
