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

import asyncio
import json
import math
import random
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from typing import Any, TextIO

import httpx
import orjson

from .. import __version__
from ..config import LimitSettings, MemoryConfig, ScoringSettings
from ..errors import ConfigError, StoreError, ValidationError, ZepMemoryError
from ..maintenance import MaintenanceReport
from ..models import Entity, Episode, Fact, IngestResult, Message, coerce_messages, to_utc
from ..serialize import entity_from_dict, episode_from_dict, fact_from_dict, message_from_dict, message_to_dict
from ..transfer import ExportCounts, ImportReport
from ..validation import check_episodes
from . import wire
from .statuses import GATEWAY_STATUSES, error_class

__all__ = ["RemoteMemory"]

_EPISODE_KEYS = ("session_id", "messages", "user_id", "episode_id")


@dataclass(frozen=True)
class _Call:
    """One request, ready to send (again, if it may be retried)."""

    method: str
    path: str
    body: bytes | None = None
    params: Mapping[str, str] | None = None
    idempotent: bool = True
    content_type: str = "application/json"


def _json_body(payload: Mapping[str, Any], verb: str) -> bytes:
    try:
        return json.dumps(payload, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{verb}: an argument cannot be sent to the server as JSON ({exc}); pass strings, "
                              "numbers, booleans, lists and mappings of them") from None


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


class RemoteMemory:
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
        if not isinstance(url, str) or not url.startswith(("http://", "https://")) or len(url) < 10:
            raise ConfigError(f"url must be an http:// or https:// address, e.g. http://127.0.0.1:8765, got {url!r}")
        if api_key is not None and (not isinstance(api_key, str) or not api_key or any(c.isspace() for c in api_key)):
            raise ConfigError("api_key must be a non-empty string without whitespace (or None for a server "
                              "without keys)")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not (0 < timeout < math.inf):
            raise ConfigError(f"timeout must be a number of seconds > 0, got {timeout!r}")
        if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 10:
            raise ConfigError(f"retries must be an integer in 0..10, got {retries!r}")
        self.url = url.rstrip("/")
        self.timeout, self.retries = float(timeout), retries
        self._headers = {"User-Agent": f"zep-memory/{__version__}"}
        if api_key is not None:
            self._headers["Authorization"] = f"Bearer {api_key}"
        # httpx's transports (its connection pool, HTTP/1.1, TLS, timeouts) without httpx.Client on top: the
        # client's cookie jar, redirect and auth flows, which this protocol never uses, cost 0.4 ms a call
        # (bench/findings.md). So no cookies, no redirects followed, and no proxy read from the environment.
        self._timeouts = {"timeout": httpx.Timeout(self.timeout).as_dict()}
        self._http = httpx.HTTPTransport()
        self._ahttp: httpx.AsyncHTTPTransport | None = None
        self._aloop: asyncio.AbstractEventLoop | None = None
        self._urls: dict[str, httpx.URL] = {}
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

    def close(self) -> None:
        """Close the connections (the server and its memory stay up)."""
        self._http.close()

    async def aclose(self) -> None:
        """Close the connections, the async ones too."""
        self._http.close()
        if self._ahttp is not None:
            await self._ahttp.aclose()
            self._ahttp = None

    # -- sending --------------------------------------------------------------------------------

    def _verb(self, verb: str, payload: Mapping[str, Any], *, idempotent: bool = True) -> _Call:
        return _Call("POST", f"/v1/{verb}", _json_body(payload, verb), idempotent=idempotent)

    def _request(self, call: _Call) -> httpx.Request:
        url = self._urls.get(call.path)
        if url is None:
            url = self._urls[call.path] = httpx.URL(self.url + call.path)
        headers = self._headers if call.body is None else {**self._headers, "Content-Type": call.content_type}
        return httpx.Request(call.method, url, params=call.params, headers=headers, content=call.body,
                             extensions=self._timeouts)

    def _attempts(self, call: _Call) -> int:
        return self.retries + 1 if call.idempotent else 1

    @staticmethod
    def _backoff(attempt: int) -> float:
        return min(2.0, 0.1 * 2 ** attempt) * random.uniform(0.5, 1.0)

    def _send(self, call: _Call, *, stream: bool = False) -> httpx.Response:
        attempts = self._attempts(call)
        for attempt in range(attempts):
            request = self._request(call)
            try:
                response = self._http.handle_request(request)
                response.request = request
                if not stream:
                    response.read()  # reads the body whole and gives the connection back to the pool
            except httpx.TransportError as exc:
                if attempt + 1 == attempts:
                    raise self._transport_error(exc, call) from None
            else:
                if response.status_code not in GATEWAY_STATUSES or attempt + 1 == attempts:
                    if response.is_error:
                        response.read()
                        response.close()
                        raise self._error(response)
                    return response
                response.close()
            time.sleep(self._backoff(attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    def _async_transport(self) -> httpx.AsyncHTTPTransport:
        """The async transport of the running event loop (its connections belong to one loop)."""
        loop = asyncio.get_running_loop()
        if self._ahttp is None or self._aloop is not loop:
            self._ahttp = httpx.AsyncHTTPTransport()
            self._aloop = loop
        return self._ahttp

    async def _asend(self, call: _Call) -> httpx.Response:
        transport = self._async_transport()
        attempts = self._attempts(call)
        for attempt in range(attempts):
            request = self._request(call)
            try:
                response = await transport.handle_async_request(request)
                response.request = request
                await response.aread()
            except httpx.TransportError as exc:
                if attempt + 1 == attempts:
                    raise self._transport_error(exc, call) from None
            else:
                if response.status_code not in GATEWAY_STATUSES or attempt + 1 == attempts:
                    if response.is_error:
                        raise self._error(response)
                    return response
            await asyncio.sleep(self._backoff(attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    def _call(self, verb: str, payload: Mapping[str, Any], *, idempotent: bool = True) -> Any:
        return self._result(self._send(self._verb(verb, payload, idempotent=idempotent)))

    async def _acall(self, verb: str, payload: Mapping[str, Any], *, idempotent: bool = True) -> Any:
        return self._result(await self._asend(self._verb(verb, payload, idempotent=idempotent)))

    def _result(self, response: httpx.Response) -> Any:
        try:
            return orjson.loads(response.content)["result"]
        except (ValueError, KeyError, TypeError):
            raise StoreError(f"the server at {self.url} sent an answer that is not zep-memory's "
                             f"({response.status_code}, {response.headers.get('content-type', 'no content type')}); "
                             "is the url that of a zep-memory server?") from None

    def _error(self, response: httpx.Response) -> ZepMemoryError:
        """The error the server reported, as its own class, with its message."""
        try:
            detail = response.json()["error"]
            kind, message = detail["type"], detail["message"]
        except (ValueError, KeyError, TypeError):
            kind, message = None, (f"the server at {self.url} answered {response.status_code} "
                                   f"{response.reason_phrase} to {response.request.url.path}")
        return error_class(kind, response.status_code)(str(message))

    def _transport_error(self, exc: httpx.TransportError, call: _Call) -> StoreError:
        unsure = ("" if call.idempotent or isinstance(exc, httpx.ConnectError) else
                  "; the request may have been applied: check before sending it again (conversation_end with an "
                  "episode_id is safe to send again)")
        if isinstance(exc, httpx.ConnectError):
            return StoreError(f"cannot reach the zep-memory server at {self.url} ({exc}); is `zep-memory serve` "
                              "running there?")
        if isinstance(exc, httpx.TimeoutException):
            return StoreError(f"the zep-memory server at {self.url} did not answer {call.path} within "
                              f"{self.timeout:g} s (RemoteMemory timeout=){unsure}")
        return StoreError(f"the connection to the zep-memory server at {self.url} failed during {call.path} "
                          f"({type(exc).__name__}: {exc}){unsure}")

    # -- what the adapters read: the clock and the config ------------------------------------------

    def now(self) -> datetime:
        """The server's clock (timezone-aware UTC): the memory's ``now()``."""
        return to_utc(self._result(self._send(_Call("GET", "/v1/now"))), "the server's now")

    def info(self) -> dict[str, Any]:
        """What ``/v1/info`` says: version, clock, speakers, scoring, limits, body limit, embedder, this key."""
        return self._result(self._send(_Call("GET", "/v1/info")))

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

        The answer comes once the episode is committed to the server's SQLite.
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
        call = _Call("POST", "/v1/import_user", text.encode("utf-8"), params=params, idempotent=False,
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
