"""The memory server: every :class:`~zep_core.Memory` verb as a JSON endpoint, each key bound to its users.

``zep-memory serve`` runs :func:`run_server`: one uvicorn process, one worker, which owns
the data folder (Kùzu allows one process per folder) and its single writer; any number
of processes reach it through :class:`~zep_core.server.RemoteMemory`. An acknowledged
``conversation_end`` has been committed to the record store before the answer leaves (the
library's contract; there is no queue in front of it), so nothing acknowledged is lost
to a crash of the server: the next start replays the outbox.

Wire format, version 1 (the models are in :mod:`zep_core.server.wire`; ``GET /docs``
draws them):

- ``POST /v1/<verb>`` for each verb in :data:`VERBS` — the :class:`~zep_core.Memory`
  method of that name — with its keyword arguments as a JSON object
  (``{"input": "Where do I live?", "user_id": "alice", "limit": 5}``). Times are ISO
  8601 text; ``refresh_entities`` takes ``max_age_s`` (seconds) for ``max_age``.
- ``200 {"result": ...}``: records as :mod:`zep_core.serialize` writes them (a fact with
  its scores), an ingest result as :func:`~zep_core.server.wire.ingest_result_to_dict`.
- ``POST /v1/export_user`` answers the export itself, ``application/x-ndjson``, byte for
  byte what :meth:`Memory.export_user` writes; ``POST /v1/import_user?replace=false&user_id=alice``
  takes one as its body.
- ``GET /v1/info`` (the clock, speakers, scoring and limits a client mirrors), ``GET /v1/now``;
  ``GET /healthz`` (the process is up) and ``GET /readyz`` (the memory is open and its three
  stores answer) need no key.
- Every ``/v1`` request carries ``Authorization: Bearer <key>`` when the server has keys
  (:mod:`.keys`). A key may name only its own users: any other user id in a request —
  ``user_id``, an episode's user, an import's user — is ``403`` before the memory is
  touched; a verb over the whole store (``maintain``, ``flush``, ``rebuild``, and ``stats``,
  ``check_consistency``, ``episode_ids``, ``refresh_entities`` without a user) needs an
  admin key. ``users`` answers only the key's users; ``get_episode`` of another user's
  episode is ``404``, as for one that does not exist.
- Errors: ``{"error": {"type": "<ZepMemoryError subclass>", "message": "..."}}``, never a
  traceback, the data folder's path replaced by ``<data>``. Each error class has one status,
  given by the one table of them, :data:`zep_core.server.statuses.STATUSES` (``/openapi.json``
  lists it for every endpoint): a malformed request is a ``ValidationError``, an unknown
  endpoint a ``NotFoundError``, a body over ``max_body_bytes`` a ``ValidationError`` with 413,
  and anything that is not a ``ZepMemoryError`` is ``internal error`` (logged by the server).

The server is built in parts, and its public names are re-exported here: :mod:`.statuses` (the one table of
error statuses), :mod:`.auth` (keys and scopes), :mod:`.verbs` (the verb table),
:mod:`.dispatch` (running a verb), :mod:`.error_answers` (errors as they leave),
:mod:`.asgi` (the body limit and the verbs' fast path), :mod:`.factory` (the app),
:mod:`.running` (the server's run), :mod:`.listening` (where it may listen, signals),
:mod:`.connections` (the deadlines and cap on connections) and :mod:`.limits` (their settings,
and the stop's deadline).

Example:
    >>> app = create_app(memory, KeyRing.from_file("keys.json"))          # doctest: +SKIP
    >>> uvicorn.run(app, host="127.0.0.1", port=8765)                     # doctest: +SKIP

"""

from .asgi import BodyLimit, VerbRouter
from .auth import Scope, authorize
from .dispatch import INLINE_MS, Serve
from .error_answers import error_response
from .factory import DEFAULT_MAX_BODY_BYTES, create_app
from .limits import DEFAULT_LIMITS, ServerLimits, StopDeadline
from .running import is_loopback, run_server
from .verbs import VERBS, Verb

__all__ = ["DEFAULT_LIMITS", "DEFAULT_MAX_BODY_BYTES", "INLINE_MS", "VERBS", "BodyLimit", "Scope", "Serve",
           "ServerLimits", "StopDeadline", "Verb", "VerbRouter", "authorize", "create_app", "error_response",
           "is_loopback", "run_server"]
