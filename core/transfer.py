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
Reading and checking the lines is :mod:`~zep_core.export_format`'s; this module writes
exports, and checks an import against the stores and writes it.

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
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TextIO

import numpy as np

from .config import MemoryConfig
from .errors import ValidationError
from .export_format import EXPORT_FORMAT, EXPORT_VERSION, Parsed, check_references, parse_export
from .indexing import unusable_vector
from .models import Entity
from .outbox import OutboxOp
from .providers.base import Embedder
from .serialize import entity_to_dict, episode_to_dict, fact_to_dict, message_to_dict
from .stores.record_protocols import TransferRecords
from .stores.rows import StoredFact, iso
from .sync import IndexSync

__all__ = ["EXPORT_FORMAT", "EXPORT_VERSION", "ExportCounts", "ImportReport", "Transferable", "export_records",
           "export_user", "import_records", "import_user", "write_export"]

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
    parsed = parse_export(lines, config or MemoryConfig())
    user = parsed.user
    if user_id is not None and user_id != user:
        raise ValidationError(f"the export holds the memory of {user!r}, not {user_id!r}; a memory is imported "
                              "under its own user id")
    check_references(parsed)
    reembed = _needs_reembedding(embedder, parsed)
    _check_free(records, parsed, replace, data_dir)  # early, before the texts are embedded
    entity_vecs, fact_vecs = _vectors(embedder, parsed, reembed)
    with sync.transaction(apply_now=True) as ops:  # one transaction: a failed import leaves the old memory
        records.lock_tenants([user])  # the user's writers in other processes wait (PostgreSQL)
        _check_free(records, parsed, replace, data_dir)  # again, under the writers' lock
        replaced = replace and records.has_records(user)
        if replaced:
            records.delete_user(user)
            ops.append(OutboxOp.forget_user(user))
        for _, episode in parsed.episodes:
            if not records.insert_episode(episode, [str(m.id) for m in episode.messages]):
                raise ValidationError(f"episode id {episode.id!r} was stored by another writer during the import; "
                                      "nothing was imported: import again (with replace=True to overwrite it)")
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


# -- checks against the stores -----------------------------------------------------------------


def _needs_reembedding(embedder: Embedder, parsed: Parsed) -> bool:
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


def _check_free(records: TransferRecords, parsed: Parsed, replace: bool, data_dir: Path | None) -> None:
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


def _vectors(embedder: Embedder, parsed: Parsed, reembed: bool) -> tuple[list[np.ndarray], list[np.ndarray]]:
    if not reembed:
        return [r.vector for r in parsed.entities], [r.stored.embedding for r in parsed.facts]  # type: ignore[misc]
    return (_embed(embedder, [r.entity.name for r in parsed.entities]),
            _embed(embedder, [r.stored.fact.content for r in parsed.facts]))


def _embed(embedder: Embedder, texts: list[str]) -> list[np.ndarray]:
    out: list[np.ndarray] = []
    for i in range(0, len(texts), _BATCH):
        out.extend(np.asarray(embedder.embed(texts[i:i + _BATCH]), dtype=np.float32))
    return out
