"""MCP over streamable HTTP behind the memory service's API keys: ``zep-memory mcp --transport streamable-http``.

:class:`KeyGate` wraps the SDK's streamable-HTTP app: every HTTP request must carry
``Authorization: Bearer <key>`` with a key of a :class:`~zep_core.server.keys.KeyRing` (the
keys, file and variables of ``zep-memory serve``) that may use the server's one user. No key,
or one the ring does not hold, is ``401``; a key of other users only is ``403``. The reason
travels as a JSON-RPC error, which the SDK's client shows as it is, with the
``WWW-Authenticate`` challenge HTTP expects. :func:`run_mcp_http` serves it until SIGTERM.

The SDK's own hook (``MCPServer(token_verifier=..., auth=AuthSettings(...))``) is for OAuth: it
needs an issuer URL, advertises OAuth discovery (which sends hosts into a sign-in flow instead
of using the header they were given) and answers every refusal "Authentication required".

Example:
    >>> app = KeyGate(server.streamable_http_app(), KeyRing.from_file("keys.json"), "alice")   # doctest: +SKIP

"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .errors import ConfigError, PermissionDeniedError
from .server.auth import Scope, authenticator, authorize, bearer
from .server.listening import listen, refuse_without_keys, serve_until_stopped, url_of
from .server.statuses import Unauthenticated, status_of

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from .server.keys import KeyRing

__all__ = ["KeyGate", "check_listener", "run_mcp_http"]

#: Where an MCP host sets the key, for the message of a request without one.
HOW = 'the MCP host\'s config: "headers": {"Authorization": "Bearer <key>"}'
#: JSON-RPC's "Invalid Request": what the SDK's transport answers its own HTTP-level refusals with.
INVALID_REQUEST = -32600
#: How long a stop waits for the requests in flight (an idle host's event stream never ends by itself).
GRACEFUL_S = 5.0


def _serving(keys: KeyRing, user_id: str) -> None:
    if not keys.serves(user_id):
        raise ConfigError(f"none of the {len(keys)} API keys may use user {user_id!r}, so this MCP server would "
                          f'refuse every request; bind a key to it ("users": ["{user_id}"]) or add an admin key')


def check_listener(keys: KeyRing | None, *, user_id: str, host: str, keys_required: bool = False) -> None:
    """Refuse to serve ``user_id`` over HTTP on ``host`` where a client without a good key could reach it.

    Args:
        keys: the API keys the listener takes, or None.
        user_id: the server's one user.
        host: the address it would listen on.
        keys_required: refuse without keys on a loopback address too (the server holds a key to a
            memory service, which any local client would otherwise use).

    Raises:
        ConfigError: no keys on a non-loopback ``host`` (on any, with ``keys_required``), or no key
            of ``keys`` may use ``user_id``.

    """
    exposes = f"the memory of user {user_id!r}" + (" with the service key this server holds" if keys_required else "")
    refuse_without_keys(host, keys, exposes=exposes, loopback_too=keys_required)
    if keys is not None:
        _serving(keys, user_id)


class KeyGate:
    """Pure ASGI middleware: an HTTP request passes only with a key of ``keys`` that may use ``user_id``.

    Compared in constant time by :meth:`KeyRing.authenticate <zep_core.server.keys.KeyRing.authenticate>`;
    the refusal's reason comes from the service's own :func:`~zep_core.server.auth.authenticator`
    and :func:`~zep_core.server.auth.authorize`. Lifespan events pass; a websocket is closed.

    Args:
        app: the SDK's streamable-HTTP app (``MCPServer.streamable_http_app()``).
        keys: the keys it takes.
        user_id: the server's one user.

    Raises:
        ConfigError: no key of ``keys`` may use ``user_id``.

    """

    def __init__(self, app: Any, keys: KeyRing, user_id: str) -> None:
        _serving(keys, user_id)
        self.app, self.scope = app, Scope((user_id,))
        self.principal_of = authenticator(keys, how=HOW, server="this MCP server")

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        """Pass a request whose key may use the user; answer any other with 401 or 403."""
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        key = bearer(scope.get("headers") or ())
        try:
            authorize(self.principal_of(key), self.scope)
        except PermissionDeniedError as exc:
            if scope["type"] == "http":
                await _refuse(exc, presented=key is not None, send=send)
            else:
                await send({"type": "websocket.close", "code": 1008})
            return
        await self.app(scope, receive, send)


async def _refuse(exc: PermissionDeniedError, *, presented: bool, send: Callable) -> None:
    """401 or 403 (the service's table of statuses), the reason as a JSON-RPC error, and RFC 6750's challenge."""
    message = " ".join(str(exc).split())
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": message}}).encode()
    if isinstance(exc, Unauthenticated):
        challenge = 'Bearer realm="zep-memory"' + (', error="invalid_token"' if presented else "")
    else:
        challenge = 'Bearer realm="zep-memory", error="insufficient_scope"'
    await send({"type": "http.response.start", "status": status_of(type(exc)), "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", challenge.encode())]})
    await send({"type": "http.response.body", "body": body})


def run_mcp_http(server: MCPServer, keys: KeyRing | None, *, user_id: str, host: str = "127.0.0.1",
                 port: int = 8766, keys_required: bool = False, log_level: str = "info",
                 on_listening: Callable[[str], None] | None = None) -> None:
    """Serve ``server`` over streamable HTTP at ``/mcp`` until SIGTERM or SIGINT, behind ``keys``.

    Args:
        server: the MCP server (:func:`~zep_core.mcp_server.create_mcp_server`).
        keys: the API keys every request needs, or None (only on a loopback ``host``, and not
            with ``keys_required``).
        user_id: the server's one user: each request's key must be allowed to use it.
        host: the address to bind; on a loopback one the SDK also refuses other ``Host`` headers
            (DNS rebinding).
        port: the port (0: any free one; ``on_listening`` gets the URL).
        keys_required: refuse to run without keys on loopback too (see :func:`check_listener`).
        log_level: uvicorn's log level.
        on_listening: called with the endpoint's URL (``http://host:port/mcp``) once the port is bound.

    Raises:
        ConfigError: what :func:`check_listener` refuses, or the port cannot be bound.

    """
    check_listener(keys, user_id=user_id, host=host, keys_required=keys_required)
    app: Any = server.streamable_http_app(host=host)
    if keys is not None:
        app = KeyGate(app, keys, user_id)
    sock = listen(host, port)
    try:
        if on_listening is not None:
            on_listening(f"{url_of(sock)}/mcp")
        serve_until_stopped(app, sock, log_level=log_level, lifespan="on", graceful_s=GRACEFUL_S)
    finally:
        sock.close()
