"""Export and import one user's memory as JSONL, exactly.

An export is a header line followed by one JSON object per record, in a fixed
order — episodes (with their messages), entities (with summaries and aliases), facts
(every field: ids, validity, ``superseded_by``, ``source_message_ids``, system times),
then the user's chat turns — so exporting the same memory twice gives the same bytes.
Import writes the records back as they were, without running extraction again:
stored vectors are reused when the export carries them (``embeddings=True``, base64
float32) and were made by the same embedder; otherwise the texts are embedded again.

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
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np

from .errors import ValidationError
from .models import Entity, Episode, Fact, Message
from .providers.base import Embedder
from .serialize import entity_to_dict, episode_to_dict, fact_to_dict, message_to_dict
from .stores.records import RecordStore, StoredFact, iso
from .sync import IndexSync, OutboxOp

if TYPE_CHECKING:
    from .memory import Memory

__all__ = ["EXPORT_FORMAT", "EXPORT_VERSION", "ExportCounts", "ImportReport", "export_records", "export_user",
           "import_records", "import_user", "write_export"]

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


def export_user(memory: Memory, user_id: str, out: TextIO, *, embeddings: bool = False) -> ExportCounts:
    """Write ``user_id``'s memory to ``out`` as JSONL (:meth:`Memory.export_user`)."""
    return memory.export_user(user_id, out, embeddings=embeddings)


def import_user(memory: Memory, lines: Iterable[str], *, replace: bool = False,
                user_id: str | None = None) -> ImportReport:
    """Write an export back into ``memory``, as it was (:meth:`Memory.import_user`)."""
    return memory.import_user(lines, replace=replace, user_id=user_id)


# -- export -----------------------------------------------------------------------------------


def _vector_to_text(vector: np.ndarray) -> str:
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def _vector_from_text(text: Any, where: str) -> np.ndarray:
    if not isinstance(text, str):
        raise ValidationError(f"{where}: embedding must be a base64 string")
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValidationError(f"{where}: embedding is not valid base64") from None
    if len(raw) % 4:
        raise ValidationError(f"{where}: embedding is not a whole number of float32 values")
    return np.frombuffer(raw, dtype="<f4").astype(np.float32)


def export_records(records: RecordStore, embedder: Embedder, user_id: str, *,
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
    for eid in records.episode_ids(user_id=user_id):
        episode = records.get_episode(eid)
        if episode is not None:
            yield {"type": "episode", **episode_to_dict(episode)}
    for ids in records.iter_entity_ids(user_id, batch=_BATCH):
        entities = records.get_entities(user_id, ids)
        changed = records.entity_changed_at(ids)
        vectors = {e.id: v for e, v in records.entity_rows(ids)} if embeddings else {}
        for eid in ids:
            row = {"type": "entity", **entity_to_dict(entities[eid]), "changed_at": changed.get(eid)}
            if embeddings:
                row["embedding"] = _vector_to_text(vectors[eid])
            yield row
    for ids in records.iter_fact_ids(user_id, batch=_BATCH):
        stored = records.stored_facts(ids)
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


@dataclass
class _Parsed:
    header: dict[str, Any]
    episodes: list[Episode]
    entities: list[tuple[Entity, str | None, np.ndarray | None]]
    facts: list[tuple[StoredFact, bool]]
    chat: list[tuple[str, Message, str | None]]


def import_records(records: RecordStore, sync: IndexSync, embedder: Embedder, lines: Iterable[str], *,
                   replace: bool = False, user_id: str | None = None, data_dir: Path | None = None) -> ImportReport:
    """Write an export back, as it was, without re-extraction, in one transaction.

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

    Returns:
        What was written, and whether the texts had to be embedded again.

    Raises:
        ValidationError: a malformed line (named by number), a record of another user,
            a user that already has memory (without ``replace``), or ids already used
            by another user.

    """
    parsed = _parse(lines)
    user = parsed.header["user_id"]
    if user_id is not None and user_id != user:
        raise ValidationError(f"the export holds the memory of {user!r}, not {user_id!r}; a memory is imported "
                              "under its own user id")
    reembed = _needs_reembedding(embedder, parsed)
    _check_free(records, parsed, replace, data_dir)
    entity_vecs, fact_vecs = _vectors(embedder, parsed, reembed)
    with sync.transaction(apply_now=True) as ops:  # one transaction: a failed import leaves the old memory
        replaced = replace and records.has_user(user)
        if replaced:
            records.delete_user(user)
            ops.append(OutboxOp.forget_user(user))
        for episode in parsed.episodes:
            records.insert_episode(episode, [m.id for m in episode.messages])
            if episode.error is not None:
                records.set_episode_status(episode.id, episode.status, error=episode.error)
        by_changed: dict[str | None, list[tuple[Entity, np.ndarray]]] = {}
        for (entity, changed_at, _), vec in zip(parsed.entities, entity_vecs):
            by_changed.setdefault(changed_at, []).append((entity, vec))
        for changed_at, rows in by_changed.items():
            records.insert_entities(rows, changed_at)
        records.set_entity_summaries((user, e.id, e.summary, e.fact_count, iso(e.last_updated))
                                     for e, _, _ in parsed.entities)
        records.add_aliases((user, alias, e.id) for e, _, _ in parsed.entities for alias in e.aliases)
        records.write_facts(StoredFact(s.fact, s.subject_id, s.object_id, v)
                            for (s, _), v in zip(parsed.facts, fact_vecs))
        records.insert_session_rows(user, parsed.chat)
        ops += [OutboxOp.entity(user, e.id) for e, _, _ in parsed.entities]
        ops += [OutboxOp.fact(user, s.fact.id) for s, _ in parsed.facts]
    return ImportReport(user_id=user, episodes=len(parsed.episodes), entities=len(parsed.entities),
                        facts=len(parsed.facts), chat_messages=len(parsed.chat), reembedded=reembed,
                        replaced=replaced)


def _parse(lines: Iterable[str]) -> _Parsed:
    rows = _json_lines(lines)
    number, header = next(rows, (0, None))
    if not isinstance(header, dict) or header.get("type") != EXPORT_FORMAT:
        raise ValidationError(f"this is not a zep-memory export: line 1 must be the {EXPORT_FORMAT!r} header")
    if header.get("version") != EXPORT_VERSION:
        raise ValidationError(f"export version {header.get('version')!r} is not supported "
                              f"(this zep-memory reads version {EXPORT_VERSION})")
    user = header.get("user_id")
    if not isinstance(user, str) or not user.strip():
        raise ValidationError("the export header has no user_id")
    parsed = _Parsed(header, [], [], [], [])
    for number, row in rows:
        where = f"line {number}"
        kind = row.get("type") if isinstance(row, dict) else None
        if kind == "chat_message":
            parsed.chat.append(_chat_from(row, where))
            continue
        if kind not in ("episode", "entity", "fact"):
            raise ValidationError(f"{where}: unknown record type {kind!r} (expected episode, entity, fact "
                                  "or chat_message)")
        if row.get("user_id") != user:
            raise ValidationError(f"{where}: the record belongs to user {row.get('user_id')!r}, "
                                  f"but the export is of {user!r}")
        try:
            if kind == "episode":
                parsed.episodes.append(_episode_from(row))
            elif kind == "entity":
                parsed.entities.append(_entity_from(row, where))
            else:
                parsed.facts.append(_fact_from(row, where))
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValidationError(f"{where}: malformed {kind} record ({type(exc).__name__}: {exc})") from None
        except ValidationError as exc:
            raise ValidationError(f"{where}: {exc}") from None
    return parsed


def _json_lines(lines: Iterable[str]) -> Iterator[tuple[int, Any]]:
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValidationError(f"line {number} is not valid JSON: {exc}") from None


def _episode_from(row: dict[str, Any]) -> Episode:
    messages = tuple(Message(m["content"], role=m["role"], name=m.get("name"), id=m["id"],
                             timestamp=m.get("timestamp")) for m in row["messages"])
    if not messages:
        raise ValidationError("an episode needs at least one message")
    return Episode(id=row["id"], user_id=row["user_id"], session_id=row["session_id"], summary=row.get("summary"),
                   created_at=row["created_at"], status=row["status"], error=row.get("error"), messages=messages)


def _entity_from(row: dict[str, Any], where: str) -> tuple[Entity, str | None, np.ndarray | None]:
    entity = Entity(id=row["id"], user_id=row["user_id"], name=row["name"], entity_type=row["entity_type"],
                    summary=row.get("summary") or "", fact_count=int(row.get("fact_count") or 0),
                    last_updated=row.get("last_updated"), aliases=tuple(row.get("aliases") or ()))
    changed = row.get("changed_at")
    vector = _vector_from_text(row["embedding"], where) if "embedding" in row else None
    return entity, iso(changed) if changed else None, vector


def _fact_from(row: dict[str, Any], where: str) -> tuple[StoredFact, bool]:
    fact = Fact(id=row["id"], user_id=row["user_id"], episode_id=row.get("episode_id"), content=row["content"],
                subject=row["subject"], predicate=row["predicate"], object=row["object"],
                confidence=row["confidence"], valid_from=row["valid_from"], valid_until=row.get("valid_until"),
                superseded_by=row.get("superseded_by"), source_message_ids=tuple(row.get("source_message_ids") or ()),
                created_at=row.get("created_at"), expired_at=row.get("expired_at"))
    if not isinstance(row.get("subject_id"), str):
        raise ValidationError("a fact needs its subject_id")
    has_vector = "embedding" in row
    vector = _vector_from_text(row["embedding"], where) if has_vector else np.zeros(0, dtype=np.float32)
    return StoredFact(fact, row["subject_id"], row.get("object_id"), vector), has_vector


def _chat_from(row: Any, where: str) -> tuple[str, Message, str | None]:
    try:
        message = Message(row["content"], role=row["role"], name=row.get("name"), id=row.get("id"),
                          timestamp=row.get("timestamp"))
        session = row["session_id"]
    except (KeyError, TypeError) as exc:
        raise ValidationError(f"{where}: malformed chat_message record ({exc})") from None
    except ValidationError as exc:
        raise ValidationError(f"{where}: {exc}") from None
    return session, message, row.get("episode_id")


def _needs_reembedding(embedder: Embedder, parsed: _Parsed) -> bool:
    """Whether the stored vectors are missing or were made by another embedder."""
    made_by = parsed.header.get("embedder") or {}
    same = made_by.get("name") == embedder.name and made_by.get("dimension") == embedder.dimension
    complete = (all(v is not None for _, _, v in parsed.entities) and all(has for _, has in parsed.facts))
    if not (same and complete):
        return True
    dim = embedder.dimension
    bad = [e.id for e, _, v in parsed.entities if len(v) != dim] + [s.fact.id for s, _ in parsed.facts
                                                                   if len(s.embedding) != dim]
    if bad:
        raise ValidationError(f"{len(bad)} embeddings (e.g. {bad[0]}) are not {dim}-dimensional although the "
                              "header names this embedder; the export is damaged")
    return False


def _check_free(records: RecordStore, parsed: _Parsed, replace: bool, data_dir: Path | None) -> None:
    """Refuse to overwrite a user's memory, or ids that belong to another user."""
    user = parsed.header["user_id"]
    if records.has_user(user) and not replace:
        raise ValidationError(f"user {user!r} already has memory in {data_dir}; forget it first "
                              "(`zep-memory forget`) or import with --replace")
    for episode in parsed.episodes:
        owner = records.episode_owner(episode.id)
        if owner is not None and owner != user:
            raise ValidationError(f"episode id {episode.id!r} already belongs to user {owner!r}")
    fact_ids = [s.fact.id for s, _ in parsed.facts]
    for i in range(0, len(fact_ids), _BATCH):
        taken = [s for s in records.stored_facts(fact_ids[i:i + _BATCH]).values() if s.fact.user_id != user]
        if taken:
            raise ValidationError(f"fact id {taken[0].fact.id!r} already belongs to user {taken[0].fact.user_id!r}")


def _vectors(embedder: Embedder, parsed: _Parsed, reembed: bool) -> tuple[list[np.ndarray], list[np.ndarray]]:
    if not reembed:
        return [v for _, _, v in parsed.entities], [s.embedding for s, _ in parsed.facts]
    return (_embed(embedder, [e.name for e, _, _ in parsed.entities]),
            _embed(embedder, [s.fact.content for s, _ in parsed.facts]))


def _embed(embedder: Embedder, texts: list[str]) -> list[np.ndarray]:
    out: list[np.ndarray] = []
    for i in range(0, len(texts), _BATCH):
        out.extend(np.asarray(embedder.embed(texts[i:i + _BATCH]), dtype=np.float32))
    return out
