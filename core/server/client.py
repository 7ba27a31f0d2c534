"""RemoteMemory: a :class:`~zep_core.Memory` that lives in ``zep-memory serve``, reached over HTTP.

Every verb has the name, the signature (keyword-only arguments and their defaults)
and the return type of the :class:`~zep_core.Memory` method: facts, entities, messages
and episodes come back as the same frozen records (:mod:`zep_core.serialize` reads them),
ingest results as :class:`~zep_core.IngestResult`. An error comes back as the
:class:`~zep_core.ZepMemoryError` subclass the server raised, with its message (a
``NotFoundError`` stays a ``NotFoundError``); a key the server refuses, or a user it may
not use, is a :class:`~zep_core.PermissionDeniedError`; a server that cannot be reached,
or does not answer within ``timeout``, a :class:`~zep_core.StoreError` naming the URL.

Calls that change nothing when repeated — every read, ``clear_messages``, ``flush``, and
``conversation_end``/``conversation_end_many`` when every episode has an ``episode_id``
(the server stores an episode id once) — are retried ``retries`` times, with backoff,
after a timeout, a lost connection or a 502/503/504. Any other call is sent once: a
retry after a lost answer could apply it twice.

Example:
    >>> with RemoteMemory("http://127.0.0.1:8765", api_key=key) as memory:     # doctest: +SKIP
    ...     memory.conversation_end("s1", [Message("I live in Paris", name="Alice")], user_id="alice",
    ...                             episode_id="alice-s1")
    ...     [f.content for f in memory.get_context("Where does Alice live?", user_id="alice")]
    ['Alice lives in Paris.']

"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import fields
from datetime import datetime, timedelta
from typing import Any, TextIO

import httpx

from ..config import LimitSettings, MemoryConfig, ScoringSettings
from ..errors import StoreError, ValidationError
from ..maintenance import MaintenanceReport
from ..models import Entity, Episode, Fact, IngestResult, Message, coerce_messages, to_utc
from ..serialize import entity_from_dict, episode_from_dict, fact_from_dict, message_from_dict, message_to_dict
from ..transfer import ExportCounts, ImportReport
from ..validation import check_episodes
from . import wire
from .transport import Call, Connection

__all__ = ["RemoteMemory"]

_EPISODE_KEYS = ("session_id", "messages", "user_id", "episode_id")


def _wire_messages(messages: Any) -> list[dict[str, Any]]:
    """Messages as the wire carries them, checked as the library checks them (the same errors)."""
    return [message_to_dict(m) for m in coerce_messages(messages)]


def _wire_time(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def _wire_episode(item: Any, position: int) -> dict[str, Any]:
    if isinstance(item, Mapping):
        fields_ = dict(item)
    else:
        fields_ = {k: getattr(item, k) for k in _EPISODE_KEYS if hasattr(item, k)}
    if "messages" in fields_:
        try:
            fields_["messages"] = _wire_messages(fields_["messages"])
        except ValidationError as exc:
            raise ValidationError(f"episode {position}: {exc}") from None
    return fields_


def _settings(cls: type, values: Mapping[str, Any]) -> Any:
    """A settings group from the server's values (lists back to tuples; fields this version lacks dropped)."""
    known = {f.name for f in fields(cls)}
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items() if k in known})


def _lines(chunks: Iterable[bytes]) -> Iterator[str]:
    """NDJSON lines split on newlines only (a record may hold U+2028, which ``splitlines`` would cut)."""
    held = b""
    for chunk in chunks:
        held += chunk
        *done, held = held.split(b"\n")
        for line in done:
            yield line.decode("utf-8")
    if held:
        yield held.decode("utf-8")


class RemoteMemory(Connection):
    """The memory of a ``zep-memory serve`` server, with the API of :class:`~zep_core.Memory`.

    Args:
        url: the server, e.g. ``http://127.0.0.1:8765`` (behind a TLS proxy: ``https://…``).
        api_key: the key the server's keys file binds to your users; None for a server
            without keys (loopback only).
        timeout: seconds to wait for the server (connect, send, and each read).
        retries: how many times an idempotent call is sent again (0..10).

    It connects to ``url`` itself (no forward proxy from ``HTTP_PROXY``), keeps no cookies
    and follows no redirects: it sends through httpx's transport, not ``httpx.Client``.

    Raises:
        ConfigError: a malformed url, key, timeout or retry count.

    Example:
        >>> memory = RemoteMemory("http://127.0.0.1:8765", api_key="...")     # doctest: +SKIP
        >>> memory.context_block("Where do I live?", user_id="alice")           # doctest: +SKIP

    """

    def __init__(self, url: str, api_key: str | None = None, *, timeout: float = 30.0, retries: int = 3) -> None:
        super().__init__(url, api_key, timeout=timeout, retries=retries)
        self._config: MemoryConfig | None = None

    def __repr__(self) -> str:
        return f"RemoteMemory({self.url!r})"

    # -- lifecycle -----------------------------------------------------------------------------

    def __enter__(self) -> RemoteMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> RemoteMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- what the adapters read: the clock and the config ------------------------------------------

    def now(self) -> datetime:
        """The server's clock (timezone-aware UTC): the memory's ``now()``."""
        return to_utc(self._result(self._send(Call("GET", "/v1/now"))), "the server's now")

    def info(self) -> dict[str, Any]:
        """What ``/v1/info`` says: version, clock, speakers, scoring, limits, body limit, embedder, this key."""
        return self._result(self._send(Call("GET", "/v1/info")))

    @property
    def config(self) -> MemoryConfig:
        """The server's configuration as far as a client uses it: scoring, limits, speakers, predicates.

        The storage and provider settings are the defaults here: they live on the server.
        Read once, on first use.
        """
        if self._config is None:
            info = self.info()
            self._config = MemoryConfig(
                default_speaker=info["default_speaker"], assistant_speaker=info["assistant_speaker"],
                single_valued_predicates=frozenset(info["single_valued_predicates"]),
                entity_refresh_interval=timedelta(seconds=info["entity_refresh_interval_s"]),
                scoring=_settings(ScoringSettings, info["scoring"]), limits=_settings(LimitSettings, info["limits"]))
        return self._config

    # -- the handler -------------------------------------------------------------------------------

    def conversation_end(self, session_id: str, messages: Sequence[Any], *, user_id: str | None = None,
                         episode_id: str | None = None) -> IngestResult:
        """:meth:`Memory.conversation_end` on the server; retried only when ``episode_id`` is given.

        The answer comes once the episode is committed to the server's record store.
        """
        return wire.ingest_result_from_dict(self._call("conversation_end", self._end_payload(
            session_id, messages, user_id, episode_id), idempotent=episode_id is not None))

    async def aconversation_end(self, session_id: str, messages: Sequence[Any], *, user_id: str | None = None,
                                episode_id: str | None = None) -> IngestResult:
        """:meth:`conversation_end`, awaited."""
        return wire.ingest_result_from_dict(await self._acall("conversation_end", self._end_payload(
            session_id, messages, user_id, episode_id), idempotent=episode_id is not None))

    @staticmethod
    def _end_payload(session_id: str, messages: Any, user_id: str, episode_id: str | None) -> dict[str, Any]:
        return {"session_id": session_id, "messages": _wire_messages(messages), "user_id": user_id,
                "episode_id": episode_id}

    def conversation_end_many(self, episodes: Iterable[Any], *, batch_size: int = 256,
                              progress: Callable[[int, IngestResult], None] | None = None) -> list[IngestResult]:
        """:meth:`Memory.conversation_end_many` on the server, in one request.

        ``progress`` is called for each episode, in order, once the server has answered.
        Retried only when every episode has an ``episode_id``.
        """
        check_episodes(episodes, progress)
        items = [_wire_episode(item, i) for i, item in enumerate(episodes)]
        safe = bool(items) and all(item.get("episode_id") is not None for item in items)
        found = self._call("conversation_end_many", {"episodes": items, "batch_size": batch_size}, idempotent=safe)
        results = [wire.ingest_result_from_dict(r) for r in found]
        if progress is not None:
            for i, result in enumerate(results):
                progress(i, result)
        return results

    # -- queries -------------------------------------------------------------------------------------

    def get_context(self, input: str, *, user_id: str | None = None, limit: int | None = None,
                    as_of: datetime | str | None = None, require_both: bool | None = None,
                    threshold: float | None = None, speaker: str | None = None) -> list[Fact]:
        """:meth:`Memory.get_context` on the server: the facts, each with its score and parts."""
        return [fact_from_dict(f) for f in self._call("get_context", self._context_payload(
            input, user_id, limit, as_of, require_both=require_both, threshold=threshold, speaker=speaker))]

    async def aget_context(self, input: str, *, user_id: str | None = None, limit: int | None = None,
                           as_of: datetime | str | None = None, require_both: bool | None = None,
                           threshold: float | None = None, speaker: str | None = None) -> list[Fact]:
        """:meth:`get_context`, awaited."""
        return [fact_from_dict(f) for f in await self._acall("get_context", self._context_payload(
            input, user_id, limit, as_of, require_both=require_both, threshold=threshold, speaker=speaker))]

    def context_block(self, input: str, *, user_id: str | None = None, limit: int | None = None,
                      as_of: datetime | str | None = None, max_entities: int = 5,
                      speaker: str | None = None) -> str:
        """:meth:`Memory.context_block` on the server."""
        return self._call("context_block", self._context_payload(input, user_id, limit, as_of,
                                                                 max_entities=max_entities, speaker=speaker))

    async def acontext_block(self, input: str, *, user_id: str | None = None, limit: int | None = None,
                             as_of: datetime | str | None = None, max_entities: int = 5,
                             speaker: str | None = None) -> str:
        """:meth:`context_block`, awaited."""
        return await self._acall("context_block", self._context_payload(input, user_id, limit, as_of,
                                                                        max_entities=max_entities, speaker=speaker))

    @staticmethod
    def _context_payload(input: Any, user_id: str, limit: Any, as_of: Any, **options: Any) -> dict[str, Any]:
        return {"input": input, "user_id": user_id, "limit": limit, "as_of": _wire_time(as_of), **options}

    def entity_history(self, name: str, *, user_id: str | None = None) -> list[Fact]:
        """:meth:`Memory.entity_history` on the server."""
        return [fact_from_dict(f) for f in self._call("entity_history", {"name": name, "user_id": user_id})]

    def related_entities(self, name: str, *, user_id: str | None = None, limit: int = 10) -> list[Entity]:
        """:meth:`Memory.related_entities` on the server."""
        found = self._call("related_entities", {"name": name, "user_id": user_id, "limit": limit})
        return [entity_from_dict(e) for e in found]

    def get_entity(self, name: str, *, user_id: str | None = None) -> Entity:
        """:meth:`Memory.get_entity` on the server."""
        return entity_from_dict(self._call("get_entity", {"name": name, "user_id": user_id}))

    def cypher(self, query: str, params: Mapping[str, Any] | None = None, *,
               user_id: str | None = None) -> list[dict[str, Any]]:
        """:meth:`Memory.cypher` on the server: read-only, over the user's graph only.

        Values that JSON cannot hold come back as text (times as ISO 8601), durations as
        seconds, bytes as base64.
        """
        sent = dict(params) if isinstance(params, Mapping) else params
        return self._call("cypher", {"query": query, "params": sent, "user_id": user_id})

    # -- what is stored -------------------------------------------------------------------------------

    def has_user(self, user_id: str) -> bool:
        """:meth:`Memory.has_user` on the server."""
        return self._call("has_user", {"user_id": user_id})

    def users(self) -> list[str]:
        """:meth:`Memory.users` on the server: the known users this key may use (all of them for an admin key)."""
        return self._call("users", {})

    def get_episode(self, episode_id: str, *, user_id: str | None = None) -> Episode:
        """:meth:`Memory.get_episode` on the server (an episode of a user this key may not use is not found)."""
        body = {"episode_id": episode_id} if user_id is None else {"episode_id": episode_id, "user_id": user_id}
        return episode_from_dict(self._call("get_episode", body))

    def episode_ids(self, *, user_id: str | None = None, status: str | None = None) -> list[str]:
        """:meth:`Memory.episode_ids` on the server (every user's needs an admin key)."""
        return self._call("episode_ids", {"user_id": user_id, "status": status})

    def facts(self, user_id: str) -> list[Fact]:
        """:meth:`Memory.facts` on the server."""
        return [fact_from_dict(f) for f in self._call("facts", {"user_id": user_id})]

    def export_records(self, user_id: str, *, embeddings: bool = False) -> Iterator[dict[str, Any]]:
        """:meth:`Memory.export_records` on the server, read as it streams in.

        Raises:
            NotFoundError: the user is unknown (at once, before the first record).

        """
        response = self._send(self._verb("export_user", {"user_id": user_id, "embeddings": embeddings}), stream=True)
        return self._export_rows(response, user_id)

    def _export_rows(self, response: httpx.Response, user_id: str) -> Iterator[dict[str, Any]]:
        count = 0
        try:
            for line in _lines(response.iter_bytes()):
                if line.strip():
                    count += 1
                    yield json.loads(line)
        except httpx.TransportError as exc:
            raise StoreError(f"the export of {user_id!r} from {self.url} was cut off after {count} records "
                             f"({type(exc).__name__}); export again") from None
        finally:
            response.close()

    def export_user(self, user_id: str, out: TextIO, *, embeddings: bool = False) -> ExportCounts:
        """:meth:`Memory.export_user` on the server: the same JSONL, byte for byte, written to ``out``."""
        kinds: Counter[str] = Counter()
        for row in self.export_records(user_id, embeddings=embeddings):
            out.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
            kinds[row.get("type", "")] += 1
        return wire.export_counts_from_dict(kinds)

    def import_user(self, lines: Iterable[str], *, replace: bool = False,
                    user_id: str | None = None) -> ImportReport:
        """:meth:`Memory.import_user` on the server: the export goes up whole, checked there before any write."""
        if isinstance(lines, (str, bytes)) or not isinstance(lines, Iterable):
            raise ValidationError(f"lines must be an open file or an iterable of JSON lines, got "
                                  f"{type(lines).__name__}" + (" (split a whole export with .splitlines())"
                                                               if isinstance(lines, (str, bytes)) else ""))
        if not isinstance(replace, bool):
            raise ValidationError(f"replace must be True or False, got {replace!r}")
        try:
            text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
        except UnicodeDecodeError as exc:
            raise ValidationError(f"the export is not UTF-8 text ({exc.reason}); an export is UTF-8 JSONL") from None
        except (TypeError, AttributeError):
            raise ValidationError("lines must hold text (str), one JSON record each") from None
        params = {"replace": "true" if replace else "false"}
        if user_id is not None:
            params["user_id"] = user_id
        call = Call("POST", "/v1/import_user", text.encode("utf-8"), params=params, idempotent=False,
                     content_type="application/x-ndjson")
        return wire.import_report_from_dict(self._result(self._send(call)))

    # -- chat sessions ------------------------------------------------------------------------------------

    def add_messages(self, session_id: str, messages: Sequence[Any], *, user_id: str | None = None) -> None:
        """:meth:`Memory.add_messages` on the server (sent once: a retry could store the turns twice)."""
        self._call("add_messages", {"session_id": session_id, "messages": _wire_messages(messages),
                                    "user_id": user_id}, idempotent=False)

    def get_messages(self, session_id: str, *, user_id: str | None = None, limit: int | None = None) -> list[Message]:
        """:meth:`Memory.get_messages` on the server."""
        found = self._call("get_messages", {"session_id": session_id, "user_id": user_id, "limit": limit})
        return [message_from_dict(m) for m in found]

    def unended_count(self, session_id: str, *, user_id: str | None = None) -> int:
        """:meth:`Memory.unended_count` on the server."""
        return self._call("unended_count", {"session_id": session_id, "user_id": user_id})

    def clear_messages(self, session_id: str, *, user_id: str | None = None) -> None:
        """:meth:`Memory.clear_messages` on the server."""
        self._call("clear_messages", {"session_id": session_id, "user_id": user_id})

    def end_session(self, session_id: str, *, user_id: str | None = None) -> IngestResult | None:
        """:meth:`Memory.end_session` on the server."""
        found = self._call("end_session", {"session_id": session_id, "user_id": user_id}, idempotent=False)
        return None if found is None else wire.ingest_result_from_dict(found)

    # -- maintenance ---------------------------------------------------------------------------------------

    def refresh_entities(self, *, user_id: str | None = None, max_age: timedelta | None = None,
                         batch_size: int = 50) -> int:
        """:meth:`Memory.refresh_entities` on the server (every user's needs an admin key)."""
        if max_age is not None and (not isinstance(max_age, timedelta) or max_age < timedelta(0)):
            raise ValidationError(f"max_age must be a timedelta >= 0 (or None for the config's "
                                  f"entity_refresh_interval), got {max_age!r}")
        seconds = None if max_age is None else max_age.total_seconds()
        return self._call("refresh_entities", {"user_id": user_id, "max_age_s": seconds, "batch_size": batch_size},
                          idempotent=False)

    def maintain(self) -> MaintenanceReport:
        """:meth:`Memory.maintain` on the server (admin keys only)."""
        return wire.maintenance_report_from_dict(self._call("maintain", {}, idempotent=False))

    def flush(self) -> int:
        """:meth:`Memory.flush` on the server (admin keys only)."""
        return self._call("flush", {})

    def forget_user(self, user_id: str) -> None:
        """:meth:`Memory.forget_user` on the server."""
        self._call("forget_user", {"user_id": user_id}, idempotent=False)

    def rebuild(self, *, reembed: bool = False, batch_size: int = 1000) -> dict[str, int]:
        """:meth:`Memory.rebuild` on the server (admin keys only)."""
        return self._call("rebuild", {"reembed": reembed, "batch_size": batch_size}, idempotent=False)

    def check_consistency(self, user_id: str | None = None) -> dict[str, list[str]]:
        """:meth:`Memory.check_consistency` on the server (every user's needs an admin key)."""
        return self._call("check_consistency", {"user_id": user_id})

    def stats(self, user_id: str | None = None) -> dict[str, Any]:
        """:meth:`Memory.stats` on the server.

        An admin key gets every count; a user key only its user's (``"user"``) and the embedder.
        """
        return self._call("stats", {"user_id": user_id})
