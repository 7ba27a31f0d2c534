"""Conversation files to episodes: JSON, JSONL and LoCoMo, read without side effects.

The parsing functions are pure: they take already-decoded data and yield
:class:`EpisodeInput` tuples ``(user_id, session_id, episode_id, messages)``;
:func:`ingest` feeds them to :meth:`zep_core.Memory.conversation_end_many`.

Accepted shapes (a JSON document, or JSONL with one object per line):

- **LoCoMo** (``{"sample_id", "conversation": {"speaker_a", "speaker_b", "session_N": [turns],
  "session_N_date_time": "1:56 pm on 8 May, 2023"}}``, alone or in a list): each session is
  an episode dated by its ``session_N_date_time``; each turn ``{speaker, dia_id, text}`` is
  a message named after its speaker with ``dia_id`` as its id; the user is the ``sample_id``.
- **Conversations**: ``{"session_id", "messages": [...], "user_id"?, "episode_id"?,
  "timestamp"?}``, alone, in a list, or under ``"conversations"``. ``timestamp`` dates the
  messages that carry none.
- **Messages**: a list of message objects (``content``/``text``, ``role``, ``name``/``speaker``,
  ``id``, ``timestamp``); lines carrying ``session_id`` (and ``user_id``) are grouped into one
  episode per session, in order of first appearance.

Episode ids not given in the file are derived from the user, the session and the
messages, so ingesting the same file twice stores nothing new.

Example:
    >>> data = {"session_id": "s1", "messages": [{"role": "user", "content": "I live in Paris"}]}
    >>> [(e.user_id, e.session_id, len(e.messages)) for e in iter_episodes(data)]
    [('default', 's1', 1)]

"""

from __future__ import annotations

import json
import re
import reprlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from .episodes import episode_key
from .errors import ValidationError
from .models import IngestResult, Message, to_utc

if TYPE_CHECKING:
    from .memory import Memory

__all__ = ["EpisodeInput", "IngestTotals", "episode_key", "ingest", "iter_episodes",
           "parse_locomo_date", "parse_text", "read_file"]

DEFAULT_USER = "default"
_SESSION_KEY = re.compile(r"session_(\d+)")
_LOCOMO_DATE = re.compile(r"\s*(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([a-z]+),?\s+(\d{4})\s*", re.I)
_MONTHS = {m: i for i, m in enumerate(
    ("january", "february", "march", "april", "may", "june", "july", "august", "september",
     "october", "november", "december"), start=1)}


class EpisodeInput(NamedTuple):
    """One episode read from a file, ready for ``conversation_end``."""

    user_id: str
    session_id: str
    episode_id: str
    messages: list[Message]


# -- reading --------------------------------------------------------------------------


def read_file(path: str | Path) -> Any:
    """Decode a ``.json`` or ``.jsonl`` file (the content decides, not the name).

    Raises:
        ValidationError: the file is missing, unreadable or not JSON/JSONL.

    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValidationError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValidationError(f"{path}: cannot read it as UTF-8 text ({exc})") from None
    return parse_text(text, str(path))


def parse_text(text: str, name: str = "<input>") -> Any:
    """Decode JSON, or JSONL (one value per non-empty line) into a list.

    Raises:
        ValidationError: naming the line of the first malformed JSONL record.

    """
    if not text.strip():
        raise ValidationError(f"{name} is empty; expected JSON or JSONL conversations")
    try:
        return _loads(text, name)
    except json.JSONDecodeError as whole:
        rows: list[Any] = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rows.append(_loads(line, f"{name} line {number}"))
            except json.JSONDecodeError as exc:
                if not rows:  # not JSONL either: report the JSON error
                    raise ValidationError(f"{name} is neither JSON nor JSONL: {whole}") from None
                raise ValidationError(f"{name} line {number} is not valid JSON: {exc}") from None
        return rows


def _loads(text: str, where: str) -> Any:
    """``json.loads``, with input too deep or too large for it as a one-line ValidationError.

    A syntax error stays a ``JSONDecodeError``: :func:`parse_text` then tries JSONL.
    """
    try:
        return json.loads(text)
    except RecursionError:
        raise ValidationError(f"{where} is nested too deeply to be read as JSON; conversations are a few "
                              "levels deep") from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # e.g. an integer longer than Python converts
        raise ValidationError(f"{where} cannot be read as JSON: {' '.join(str(exc).split())[:200]}") from None


# -- parsing ----------------------------------------------------------------------------


def iter_episodes(data: Any, *, user_id: str | None = None) -> Iterator[EpisodeInput]:
    """Yield the episodes held by decoded JSON/JSONL ``data``.

    Args:
        data: what :func:`read_file` or :func:`parse_text` returned.
        user_id: put every episode under this user instead of the file's own
            (``user_id`` fields, LoCoMo's ``sample_id``; ``"default"`` when absent).

    Raises:
        ValidationError: the shape is not one of those in the module docstring,
            naming the record at fault.

    """
    if isinstance(data, Mapping):
        if "conversations" in data:
            yield from iter_episodes(_list(data["conversations"], "'conversations'"), user_id=user_id)
        elif "conversation" in data:
            yield from locomo_episodes(data, user_id=user_id)
        elif "messages" in data:
            yield _conversation(data, "the conversation", user_id)
        else:
            raise ValidationError("the file holds an object without 'messages', 'conversations' or "
                                  "'conversation' (LoCoMo); see `zep-memory ingest --help` for the formats")
        return
    items = _list(data, "the file")
    if not items:
        return
    if all(isinstance(x, Mapping) and "conversation" in x for x in items):
        for item in items:
            yield from locomo_episodes(item, user_id=user_id)
    elif all(isinstance(x, Mapping) and "messages" in x for x in items):
        for i, item in enumerate(items):
            yield _conversation(item, f"conversation {i}", user_id)
    else:
        yield from _grouped_messages(items, user_id)


def locomo_episodes(sample: Mapping[str, Any], *, user_id: str | None = None) -> Iterator[EpisodeInput]:
    """Yield one LoCoMo sample's sessions as episodes, in session order.

    Raises:
        ValidationError: a session without its date, or a malformed turn.

    """
    sample_id = str(sample.get("sample_id") or "locomo")
    conv = sample["conversation"]
    if not isinstance(conv, Mapping):
        raise ValidationError(f"LoCoMo sample {sample_id}: 'conversation' is not an object")
    user = user_id or sample_id
    numbers = sorted(int(m.group(1)) for k in conv if (m := _SESSION_KEY.fullmatch(k)))
    for n in numbers:
        key = f"session_{n}"
        where = f"LoCoMo sample {sample_id} {key}"
        turns = _list(conv[key], where)
        if not turns:
            continue
        if f"{key}_date_time" not in conv:
            raise ValidationError(f"{where} has no {key}_date_time")
        when = parse_locomo_date(conv[f"{key}_date_time"])
        messages = [_locomo_message(t, when, f"{where} turn {i}") for i, t in enumerate(turns)]
        session = f"{sample_id}:{key}"
        yield EpisodeInput(user, session, episode_key(user, session, messages), messages)


def _locomo_message(turn: Any, when: datetime, where: str) -> Message:
    if not isinstance(turn, Mapping) or not isinstance(turn.get("text"), str):
        raise ValidationError(f"{where} is not an object with 'speaker', 'dia_id' and 'text'")
    text = turn["text"]
    caption = turn.get("blip_caption")
    if isinstance(caption, str) and caption.strip():
        text = f"{text} [shared an image: {caption.strip()}]"
    try:
        return Message(text, role="user", name=turn.get("speaker") or None,
                       id=str(turn["dia_id"]) if turn.get("dia_id") is not None else None, timestamp=when)
    except ValidationError as exc:
        raise ValidationError(f"{where}: {exc}") from None


def parse_locomo_date(text: str) -> datetime:
    """Read LoCoMo's ``"1:56 pm on 8 May, 2023"`` as a UTC datetime.

    Raises:
        ValidationError: the text is not in that form.

    Example:
        >>> parse_locomo_date("1:56 pm on 8 May, 2023").isoformat()
        '2023-05-08T13:56:00+00:00'

    """
    m = _LOCOMO_DATE.fullmatch(text) if isinstance(text, str) else None
    if m is None or m.group(5).lower() not in _MONTHS:
        raise ValidationError(f"LoCoMo date {reprlib.repr(text)} is not like '1:56 pm on 8 May, 2023'")
    hour, minute, half, day, month, year = m.groups()
    hour24 = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
    try:
        return datetime(int(year), _MONTHS[month.lower()], int(day), hour24, int(minute), tzinfo=timezone.utc)
    except ValueError as exc:
        raise ValidationError(f"LoCoMo date {text!r} is not a real date: {exc}") from None


def _conversation(obj: Mapping[str, Any], where: str, user_id: str | None) -> EpisodeInput:
    session = obj.get("session_id", obj.get("session"))
    if not isinstance(session, str) or not session.strip():
        raise ValidationError(f"{where} has no 'session_id' string")
    user = user_id or _optional_str(obj.get("user_id"), f"{where} user_id") or DEFAULT_USER
    default_time = obj.get("timestamp", obj.get("date", obj.get("created_at")))
    if default_time is not None:
        default_time = _time(default_time, f"{where} timestamp")
    messages = _messages(_list(obj["messages"], f"{where} 'messages'"), where, default_time)
    episode = _optional_str(obj.get("episode_id"), f"{where} episode_id")
    return EpisodeInput(user, session, episode or episode_key(user, session, messages), messages)


def _grouped_messages(items: list[Any], user_id: str | None) -> Iterator[EpisodeInput]:
    """Messages, one per record; records naming a session are grouped by it."""
    groups: dict[tuple[str, str], list[tuple[int, Any]]] = {}
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise ValidationError(f"record {i} is a {type(item).__name__}, not a message or conversation object")
        user = user_id or _optional_str(item.get("user_id"), f"record {i} user_id") or DEFAULT_USER
        session = _optional_str(item.get("session_id", item.get("session")), f"record {i} session_id") or "session"
        groups.setdefault((user, session), []).append((i, item))
    for (user, session), rows in groups.items():
        messages = []
        for i, row in rows:
            try:
                messages.append(Message.coerce(row, i))
            except ValidationError as exc:
                raise ValidationError(f"record {i}: {exc}") from None
        yield EpisodeInput(user, session, episode_key(user, session, messages), messages)


def _messages(items: list[Any], where: str, default_time: datetime | None) -> list[Message]:
    out = []
    for i, item in enumerate(items):
        try:
            message = Message.coerce(item, i)
        except ValidationError as exc:
            raise ValidationError(f"{where}: {exc}") from None
        if message.timestamp is None and default_time is not None:
            message = Message(message.content, role=message.role, name=message.name, id=message.id,
                              timestamp=default_time)
        out.append(message)
    return out


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValidationError(f"{where} must be a list, got {type(value).__name__}")
    return value


def _optional_str(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, (str, int)) or isinstance(value, bool) or not str(value).strip():
        raise ValidationError(f"{where} must be a non-empty string, got {reprlib.repr(value)}")
    return str(value)


def _time(value: Any, where: str) -> datetime:
    if isinstance(value, str):
        try:
            return parse_locomo_date(value)
        except ValidationError:
            pass
    return to_utc(value, where)


# -- ingesting ----------------------------------------------------------------------------


@dataclass
class IngestTotals:
    """What :func:`ingest` did, summed over the episodes."""

    episodes: int = 0
    messages: int = 0
    done: int = 0
    duplicate: int = 0
    pending: int = 0
    facts_added: int = 0
    facts_reinforced: int = 0
    facts_superseded: int = 0
    facts_discarded: int = 0

    def add(self, episode: EpisodeInput, result: IngestResult) -> None:
        """Count one episode's result."""
        self.episodes += 1
        self.messages += len(episode.messages)
        setattr(self, result.status, getattr(self, result.status, 0) + 1)
        self.facts_added += len(result.added)
        self.facts_reinforced += len(result.reinforced)
        self.facts_superseded += len(result.superseded)
        self.facts_discarded += len(result.discarded)


def ingest(memory: Memory, episodes: Iterable[EpisodeInput], *,
           progress: Callable[[int, EpisodeInput, IngestResult], None] | None = None,
           batch_size: int = 256) -> IngestTotals:
    """Ingest the episodes with :meth:`~zep_core.Memory.conversation_end_many`; episodes already stored are skipped.

    Every episode is checked before anything is written, then they go in batches of
    ``batch_size`` (stored, embedded and committed together).

    Args:
        memory: an open :class:`~zep_core.Memory`.
        episodes: from :func:`iter_episodes`.
        progress: called for each episode, after its batch commits, with its 1-based
            position in ``episodes``, input and result (batches group each user's
            episodes, so positions can come out of order).
        batch_size: episodes per batch.

    Raises:
        ValidationError: an episode is malformed, naming its position; nothing was written.

    Example:
        >>> totals = ingest(memory, iter_episodes(read_file("locomo_dev.json")))  # doctest: +SKIP

    """
    items = list(episodes)
    totals = IngestTotals()

    def on_result(position: int, result: IngestResult) -> None:
        episode = items[position]
        totals.add(episode, result)
        if progress is not None:
            progress(position + 1, episode, result)

    memory.conversation_end_many(items, batch_size=batch_size, progress=on_result)
    return totals
