"""Records: Episode, Fact, Entity, Message, and what an ingest returns.

Records are frozen dataclasses. They validate themselves on construction, so a
record that exists is a record that obeys the spec: confidence in [0, 1],
``valid_from <= valid_until or valid_until is None``, timezone-aware UTC times.
They never save themselves; :class:`zep_core.Memory` does that.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields
from datetime import datetime, timezone
from typing import Any, TypeVar

from .errors import InvariantError, ValidationError
from .validation import check_text

__all__ = [
    "EPISODE_STATUSES",
    "Discarded",
    "Entity",
    "Episode",
    "Fact",
    "IngestResult",
    "Message",
    "ROLES",
    "new_id",
    "to_utc",
]

UTC = timezone.utc
ROLES = ("user", "assistant", "system", "tool")
_ROLE_ALIASES = {"human": "user", "ai": "assistant", "bot": "assistant", "function": "tool"}


def new_id() -> str:
    """Return a new random record id (32 hex characters)."""
    return uuid.uuid4().hex


def to_utc(value: Any, what: str = "timestamp", *, strict: bool = False) -> datetime:
    """Return ``value`` as a timezone-aware UTC datetime.

    Args:
        value: a ``datetime`` or an ISO-8601 string.
        what: the field's name, used in error messages.
        strict: refuse naive datetimes instead of reading them as UTC.

    Raises:
        ValidationError: the value is not a datetime or ISO string, or is naive and
            ``strict`` is set.

    """
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValidationError(
                f"{what} {value!r} is not an ISO-8601 date; use e.g. '2024-05-08T13:56:00+00:00'"
            ) from None
    if not isinstance(value, datetime):
        raise ValidationError(f"{what} must be a datetime or ISO-8601 string, got {type(value).__name__}")
    if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
        if strict:
            raise ValidationError(f"{what} {value.isoformat()} has no timezone; pass an aware datetime")
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValidationError(f"{what} {value.isoformat()} is out of range once converted to UTC") from None


def _optional_utc(value: Any, what: str) -> datetime | None:
    return None if value is None else to_utc(value, what)


@dataclass(frozen=True)
class Message:
    """One chat message, as the handler receives it.

    Args:
        content: the text.
        role: ``user``, ``assistant``, ``system`` or ``tool`` (``human``/``ai`` accepted).
        name: the speaker's name; first-person statements resolve to it.
        id: a caller-supplied message id, kept as the citation of facts drawn from it.
        timestamp: when it was said; relative dates ("yesterday") are read against it.
        extra: JSON-ready data an adapter keeps with a chat turn in the session buffer
            (tool calls, content blocks, framework kwargs), each adapter under its own
            key (``{"llamaindex": {...}}``). Never read by extraction; not stored with
            an episode's messages.

    Example:
        >>> Message("I live in Paris", role="user", name="Alice").role
        'user'

    """

    content: str
    role: str = "user"
    name: str | None = None
    id: str | None = None
    timestamp: datetime | None = None
    extra: Mapping[str, Any] | None = field(default=None, hash=False)

    def __post_init__(self) -> None:
        check_text(self.content, "message content")
        role = self.role.lower().strip() if isinstance(self.role, str) else self.role
        role = _ROLE_ALIASES.get(role, role)
        if role not in ROLES:
            raise ValidationError(f"message role {self.role!r} is not one of {', '.join(ROLES)}")
        object.__setattr__(self, "role", role)
        if self.name is not None:
            check_text(self.name, "message name")
            object.__setattr__(self, "name", self.name.strip())
        if self.id is not None:
            check_text(self.id, "message id")
        object.__setattr__(self, "timestamp", _optional_utc(self.timestamp, "message timestamp"))
        if self.extra is not None:
            if not isinstance(self.extra, Mapping):
                raise ValidationError(f"message extra must be a mapping (or None), got {type(self.extra).__name__}")
            try:
                json.dumps(self.extra, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise ValidationError(f"message extra must be JSON-ready (dicts, lists, strings, numbers): {exc}") \
                    from None

    @classmethod
    def coerce(cls, obj: Any, index: int = 0) -> Message:
        """Build a Message from a Message, a mapping or a ``(role, content)`` pair.

        Mappings may use ``content`` or ``text``, ``name`` or ``speaker``, ``id`` or
        ``message_id``, ``timestamp`` or ``created_at``.

        Raises:
            ValidationError: naming the message's position and what is wrong.

        """
        if isinstance(obj, Message):
            return obj
        try:
            if isinstance(obj, Mapping):
                content = obj.get("content", obj.get("text"))
                if content is None:
                    raise ValidationError("it has no 'content'")
                return cls(
                    content=content,
                    role=obj.get("role", "user"),
                    name=obj.get("name", obj.get("speaker")),
                    id=obj.get("id", obj.get("message_id")),
                    timestamp=obj.get("timestamp", obj.get("created_at")),
                    extra=obj.get("extra"),
                )
            if isinstance(obj, (tuple, list)) and len(obj) == 2:
                return cls(content=obj[1], role=obj[0])
        except ValidationError as exc:
            raise ValidationError(f"message {index} is malformed: {exc}") from None
        raise ValidationError(
            f"message {index} is a {type(obj).__name__}; pass a Message, a dict with 'role' and "
            "'content', or a (role, content) pair"
        )


#: What ``Episode.status`` can be: stored and extraction to come, extracted, or given up on.
EPISODE_STATUSES = ("pending", "done", "failed")


@dataclass(frozen=True, kw_only=True)
class Episode:
    """A stored conversation: the spec's Episode plus ids, user and extraction status."""

    session_id: str
    messages: tuple[Message, ...]
    summary: str | None = None
    created_at: datetime
    id: str = field(default_factory=new_id)
    user_id: str = "default"
    status: str = "pending"
    error: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "messages", tuple(self.messages))
        object.__setattr__(self, "created_at", to_utc(self.created_at, "episode created_at"))

    @property
    def texts(self) -> list[str]:
        """The messages' contents: the spec's ``messages: string[]``."""
        return [m.content for m in self.messages]


@dataclass(frozen=True, kw_only=True)
class Fact:
    """A fact with time: the spec's Fact plus ids, provenance and system times.

    ``attribute`` is what the fact is a claim about (:mod:`zep_core.attributes`: ``home``,
    ``work``…), when the extractor knew: a newer claim on a one-value attribute retires it.

    ``score`` (the total) and its parts ``semantic_score`` (cosine), ``lexical_score``
    (BM25, 0 when the words did not match) and ``graph_score`` (hop score) are set on
    facts returned by :meth:`zep_core.Memory.get_context`, and ``newer_fact_id`` when a
    newer fact in the same result says nearly the same thing (this one is then the
    earlier value). They take no part in equality.

    Raises:
        InvariantError: ``valid_until`` is earlier than ``valid_from``.
        ValidationError: confidence outside [0, 1] or an empty subject/predicate/object.

    """

    content: str
    subject: str
    predicate: str
    object: str
    confidence: float = 1.0
    valid_from: datetime
    valid_until: datetime | None = None
    superseded_by: str | None = None
    id: str = field(default_factory=new_id)
    user_id: str = "default"
    episode_id: str | None = None
    source_message_ids: tuple[str, ...] = ()
    created_at: datetime | None = None
    expired_at: datetime | None = None
    attribute: str | None = None
    score: float | None = field(default=None, compare=False)
    semantic_score: float | None = field(default=None, compare=False)
    graph_score: float | None = field(default=None, compare=False)
    lexical_score: float | None = field(default=None, compare=False)
    newer_fact_id: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        for name in ("content", "subject", "predicate", "object"):
            check_text(getattr(self, name), f"fact {name}")
        c = self.confidence
        if isinstance(c, bool) or not isinstance(c, (int, float)) or not math.isfinite(c) or not 0 <= c <= 1:
            raise ValidationError(f"fact confidence must be a number in [0, 1], got {c!r}")
        object.__setattr__(self, "confidence", float(c))
        object.__setattr__(self, "valid_from", to_utc(self.valid_from, "fact valid_from"))
        object.__setattr__(self, "valid_until", _optional_utc(self.valid_until, "fact valid_until"))
        object.__setattr__(self, "created_at", _optional_utc(self.created_at, "fact created_at"))
        object.__setattr__(self, "expired_at", _optional_utc(self.expired_at, "fact expired_at"))
        object.__setattr__(self, "source_message_ids", tuple(self.source_message_ids))
        if self.attribute is not None:
            check_text(self.attribute, "fact attribute")
        if self.valid_until is not None and self.valid_until < self.valid_from:
            raise InvariantError(
                f"fact {self.subject} {self.predicate} {self.object}: valid_until "
                f"{self.valid_until.isoformat()} is before valid_from {self.valid_from.isoformat()} "
                "(the spec requires valid_from <= valid_until or valid_until == null)"
            )

    @property
    def is_current(self) -> bool:
        """True while the fact is neither closed nor superseded."""
        return self.valid_until is None and self.superseded_by is None

    @property
    def taken_back(self) -> bool:
        """True for a fact its speaker corrected ("I meant Victoria, not Vancouver"): it never held.

        Kept in history with ``valid_until == valid_from``, and ``superseded_by`` the
        corrected fact when there is one; the memory retired it (``expired_at``). A fact that
        was stored already over, with no known start ("I quit climbing": ``valid_until ==
        valid_from`` too), was never retired: it is not taken back.
        """
        return self.valid_until is not None and self.valid_until == self.valid_from and self.expired_at is not None

    def valid_at(self, when: datetime) -> bool:
        """Whether the fact held at ``when`` (valid_from <= when < valid_until)."""
        when = to_utc(when, "as_of")
        return self.valid_from <= when and (self.valid_until is None or when < self.valid_until)

    def with_scores(self, score: float, semantic: float, graph: float, *, lexical: float = 0.0,
                    newer: str | None = None) -> Fact:
        """Return a copy carrying its retrieval score, the parts it came from, and a newer near-duplicate."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}  # checked already: no second check
        values.update(score=score, semantic_score=semantic, graph_score=graph, lexical_score=lexical,
                      newer_fact_id=newer)
        return unchecked(Fact, **values)


_R = TypeVar("_R")
_DEFAULTS: dict[type, tuple[tuple[str, Any, Any], ...]] = {}


def unchecked(cls: type[_R], **values: Any) -> _R:
    """Build a record from values that were checked when they were written (rows read back).

    The store validates every fact and entity on the way in (``__post_init__``, and the
    record store's CHECK constraints), so reading one back needs no second check: this skips
    ``__post_init__`` and sets the fields as given, the rest to their defaults. Only the
    record store calls it, with what its own columns hold.
    """
    spec = _DEFAULTS.get(cls)
    if spec is None:
        spec = _DEFAULTS[cls] = tuple((f.name, f.default, f.default_factory) for f in fields(cls))  # type: ignore[arg-type]
    obj = object.__new__(cls)
    for name, default, factory in spec:
        value = values[name] if name in values else (default if default is not MISSING else factory())
        object.__setattr__(obj, name, value)
    return obj


@dataclass(frozen=True, kw_only=True)
class Entity:
    """A named thing facts are about: the spec's Entity plus id, user and aliases."""

    name: str
    entity_type: str = "thing"
    summary: str = ""
    fact_count: int = 0
    last_updated: datetime | None = None
    id: str = field(default_factory=new_id)
    user_id: str = "default"
    aliases: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_text(self.name, "entity name")
        object.__setattr__(self, "last_updated", _optional_utc(self.last_updated, "entity last_updated"))
        object.__setattr__(self, "aliases", tuple(self.aliases))


@dataclass(frozen=True)
class Discarded:
    """A proposed fact the update rules did not store, and why."""

    fact: Fact
    reason: str
    conflicting_fact_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class IngestResult:
    """What :meth:`Memory.conversation_end` did with an episode.

    Attributes:
        episode_id: the stored episode.
        status: ``done``, ``pending`` (extraction failed; retried by ``maintain()``)
            or ``duplicate`` (this episode id was already ingested: nothing changed).
        added: facts newly stored (one a later message of this episode corrected is
            stored already closed, and listed in ``superseded`` too).
        reinforced: existing facts restated by this episode (after reinforcement).
        superseded: facts this episode retired, as they now are: stored ones first,
            then those said and corrected within the episode itself.
        discarded: proposed facts not stored, each with the reason.
        invalid: extractor output dropped by validation, as human-readable reasons.
        usage: provider token usage for this episode, if any.
        error: why extraction failed, when ``status == "pending"``.

    """

    episode_id: str
    status: str
    summary: str | None = None
    added: tuple[Fact, ...] = ()
    reinforced: tuple[Fact, ...] = ()
    superseded: tuple[Fact, ...] = ()
    discarded: tuple[Discarded, ...] = ()
    invalid: tuple[str, ...] = ()
    usage: Mapping[str, int] = field(default_factory=dict)
    error: str | None = None


def coerce_messages(messages: Sequence[Any]) -> list[Message]:
    """Validate and convert a list of message-like objects."""
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise ValidationError("messages must be a list of messages, not " + type(messages).__name__)
    return [Message.coerce(m, i) for i, m in enumerate(messages)]
