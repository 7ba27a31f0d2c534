"""The real `zep-memory serve` closes connections that stall, and idle sockets do not stop it serving."""

from __future__ import annotations

import resource
import socket
import time
from contextlib import ExitStack

import pytest
from zep_core import Message, StoreUnavailableError
from zep_core.server import RemoteMemory

from tests.server.test_cli_serve import Serving, serve_once

FAST = ("--head-timeout", "1", "--body-timeout", "1", "--keep-alive-timeout", "1")


def opened(url: str, sent: bytes = b"") -> socket.socket:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    if sent:
        sock.sendall(sent)
    return sock


def read_until_closed(sock: socket.socket, within: float) -> tuple[float | None, bytes]:
    """Seconds until the server closes ``sock`` (None: still open after ``within``), and what it sent."""
    start, got = time.monotonic(), b""
    sock.settimeout(0.2)
    while time.monotonic() - start < within:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        except ConnectionResetError:
            return time.monotonic() - start, got
        if not chunk:
            return time.monotonic() - start, got
        got += chunk
    return None, got


def test_stalled_connections_are_closed_after_their_timeouts_while_normal_requests_succeed(tmp_path):
    server = Serving("--data", str(tmp_path / "data"), *FAST)
    try:
        idle = opened(server.url)
        half_head = opened(server.url, b"POST /v1/users HTTP/1.1\r\nHost: memory\r\nContent-Le")
        half_body = opened(server.url, b"POST /v1/users HTTP/1.1\r\nHost: memory\r\nContent-Type: application/json\r\n"
                                       b"Content-Length: 1000\r\n\r\n{\"user_id\": ")
        kept = opened(server.url, b"GET /healthz HTTP/1.1\r\nHost: memory\r\n\r\n")
        started = time.monotonic()
        with RemoteMemory(server.url, retries=0) as client:  # served meanwhile
            said = client.conversation_end("s", [Message("I live in Oslo.", name="Ada")], user_id="ada")
            assert said.status == "done"
        closed = {}
        for name, sock in (("idle", idle), ("half a head", half_head), ("half a body", half_body),
                           ("kept alive", kept)):
            seconds, got = read_until_closed(sock, within=15)
            assert seconds is not None, f"{name}: still open 15 s later"
            closed[name] = time.monotonic() - started
            if name == "kept alive":
                assert got.startswith(b"HTTP/1.1 200") and b'{"status":"ok"}' in got
            else:
                assert got == b"", (name, got)  # closed, nothing answered
            sock.close()
        assert all(0.5 < s < 10 for s in closed.values()), closed  # by the 1 s timeouts: not at once, not never
        with RemoteMemory(server.url, retries=0) as client:
            assert client.users() == ["ada"]
    finally:
        assert server.stop() == 0, "".join(server.err)
    assert "Traceback" not in "".join(server.err)


def _few_open_files() -> None:
    """In the server's process before it starts: the soft open-files limit of a default systemd service, scaled down."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (200, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


@pytest.mark.skipif(resource.getrlimit(resource.RLIMIT_NOFILE)[1] < 2000, reason="needs a hard limit of 2,000 files")
def test_many_idle_sockets_do_not_stop_the_server_serving(tmp_path):
    """400 idle sockets against a soft limit of 200 open files: the server raised it, and still answers."""
    server = Serving("--data", str(tmp_path / "data"), "--head-timeout", "60", preexec_fn=_few_open_files)
    try:
        with ExitStack() as idle:
            for _ in range(400):
                idle.enter_context(opened(server.url))
            with RemoteMemory(server.url, retries=0, timeout=30) as client:
                assert client.conversation_end("s", [Message("I live in Oslo.", name="Ada")],
                                               user_id="ada").status == "done"
                assert client.get_context("Where does Ada live?", user_id="ada")[0].content == "Ada lives in Oslo."
    finally:
        assert server.stop() == 0, "".join(server.err)


def test_past_the_connection_cap_a_client_is_told_to_retry_and_is_served_once_idle_sockets_close(tmp_path):
    server = Serving("--data", str(tmp_path / "data"), "--max-connections", "20", "--head-timeout", "2")
    try:
        with ExitStack() as idle:
            for _ in range(20):
                idle.enter_context(opened(server.url))
            time.sleep(0.2)  # accepted
            _, answer = read_until_closed(opened(server.url), within=5)
            assert answer.startswith(b"HTTP/1.1 503") and b"--max-connections" in answer
            with RemoteMemory(server.url, retries=0) as client:
                with pytest.raises(StoreUnavailableError, match="20 connections open, its limit"):
                    client.users()
            time.sleep(3)  # the idle sockets are past --head-timeout: closed by the server
            with RemoteMemory(server.url, retries=0) as client:
                assert client.users() == []
    finally:
        assert server.stop() == 0, "".join(server.err)


@pytest.mark.parametrize("option, value, says", [
    ("--head-timeout", "0", "--head-timeout must be a positive number of seconds, got 0.0"),
    ("--body-timeout", "nan", "--body-timeout must be a positive number of seconds"),
    ("--max-connections", "-1", "--max-connections must be a positive whole number, got -1"),
])
def test_a_limit_that_is_not_positive_is_refused_before_the_folder_is_opened(tmp_path, option, value, says):
    done = serve_once("--data", str(tmp_path / "data"), option, value)
    assert done.returncode == 2 and done.stderr.startswith("error: ") and says in done.stderr, done.stderr
    assert not (tmp_path / "data").exists()
