"""The connection deadlines and cap hold on both of uvicorn's HTTP protocols: h11 (plain uvicorn) and httptools.

`pip install 'zep-memory[server]'` brings plain uvicorn, which speaks HTTP/1.1 through h11;
where httptools is installed uvicorn uses it instead. The deadlines are read from what
both protocols share, so the app of :func:`create_app` runs here under each, in-process.
"""

from __future__ import annotations

import importlib
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn
from zep_core.server import RemoteMemory, create_app
from zep_core.server.connections import bounded_protocol

from tests.server.test_connection_limits import opened, read_until_closed

PROTOCOLS = ["h11_impl:H11Protocol", "httptools_impl:HttpToolsProtocol"]


def protocol_class(name: str) -> type:
    module, cls = name.split(":")
    if module == "httptools_impl":
        pytest.importorskip("httptools")
    return getattr(importlib.import_module(f"uvicorn.protocols.http.{module}"), cls)


@pytest.fixture(params=PROTOCOLS, ids=["h11", "httptools"])
def url(request, memory) -> Iterator[str]:
    """A server over ``memory`` whose connections have 1 s deadlines and a cap of 5, on one of the protocols."""
    protocol = bounded_protocol(protocol_class(request.param), head_timeout=1.0, body_timeout=1.0, max_connections=5)
    app = create_app(memory, None)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, http=protocol, timeout_keep_alive=0.5,
                                           log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.01)
    yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    server.should_exit = True
    thread.join(timeout=30)
    app.state.workers.shutdown(wait=True)


def test_each_kind_of_stall_is_closed_after_its_deadline_and_nothing_is_answered(url):
    stalls = {
        "nothing sent": opened(url),
        "half a head": opened(url, b"POST /v1/users HTTP/1.1\r\nHost: m\r\nContent-Ty"),
        "half a body": opened(url, b"POST /v1/users HTTP/1.1\r\nHost: m\r\nContent-Type: application/json\r\n"
                                   b"Content-Length: 50\r\n\r\n{\"user"),
    }
    for name, sock in stalls.items():
        seconds, got = read_until_closed(sock, within=10)
        assert seconds is not None and got == b"", (name, seconds, got)
        sock.close()


def test_a_kept_alive_connection_is_answered_then_closed_once_idle(url):
    sock = opened(url, b"GET /healthz HTTP/1.1\r\nHost: m\r\n\r\n")
    seconds, got = read_until_closed(sock, within=10)
    assert seconds is not None and got.startswith(b"HTTP/1.1 200") and got.endswith(b'{"status":"ok"}')
    sock.close()


def test_a_slow_client_within_the_deadlines_is_served(url):
    sock = opened(url)
    for part in (b"GET /healthz HTTP/1.1\r\n", b"Host: m\r\n", b"\r\n"):  # a head in three parts, 0.1 s apart
        sock.sendall(part)
        time.sleep(0.1)
    _, got = read_until_closed(sock, within=10)
    assert got.startswith(b"HTTP/1.1 200")
    sock.close()


def test_past_the_cap_a_connection_is_answered_503_with_what_to_do(url):
    held = [opened(url) for _ in range(5)]
    time.sleep(0.1)
    _, got = read_until_closed(opened(url, b"GET /healthz HTTP/1.1\r\nHost: m\r\n\r\n"), within=5)
    assert got.startswith(b"HTTP/1.1 503") and b"retry in a moment" in got
    for sock in held:
        sock.close()
    time.sleep(0.2)
    with RemoteMemory(url, retries=0) as client:
        assert client.users() == []
