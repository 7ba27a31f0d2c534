"""A real server for each test: uvicorn on 127.0.0.1 (a free port), over a Memory on real stores in tmp_path."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from zep_core import Memory
from zep_core.server import KeyRing, RemoteMemory, create_app

#: One HTTP client for the raw requests of every test (a client per request costs ~0.1 s on this machine).
HTTP = httpx.Client(timeout=60)

#: The API keys of the test server: alice's and bob's bound to their user, one admin key.
KEYS = {"alice": "alice-key-0123456789abcdef", "bob": "bob-key-0123456789abcdef",
        "carol": "carol-key-0123456789abcdef", "admin": "admin-key-0123456789abcdef"}


def keyring() -> KeyRing:
    return KeyRing.from_data({"keys": [
        {"key": KEYS["alice"], "users": ["alice"], "name": "alice"},
        {"key": KEYS["bob"], "users": ["bob"], "name": "bob"},
        {"key": KEYS["carol"], "users": ["carol", "alice"], "name": "carol and alice"},
        {"key": KEYS["admin"], "admin": True, "name": "admin"},
    ]})


@contextmanager
def serving(app: FastAPI) -> Iterator[str]:
    """Run ``app`` under uvicorn in a thread on 127.0.0.1 and a free port; yield its URL; stop it on the way out."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, name="zep-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        if hasattr(app.state, "workers"):  # create_app's worker threads (not an app that mounts one)
            app.state.workers.shutdown(wait=True)


@dataclass
class Served:
    url: str
    memory: Memory  # the same Memory the server serves: what the library answers in-process
    app: FastAPI


@pytest.fixture
def server(memory) -> Iterator[Served]:
    """The server, with the keys of :data:`KEYS`, over the test's ``memory``."""
    app = create_app(memory, keyring())
    with serving(app) as url:
        yield Served(url, memory, app)


@pytest.fixture
def remote(server) -> Iterator:
    """``remote("alice")`` is a RemoteMemory with alice's key (``remote(None)``: no key); closed after the test."""
    opened: list[RemoteMemory] = []

    def make(who: str | None = "admin", **options) -> RemoteMemory:
        client = RemoteMemory(server.url, api_key=KEYS[who] if who else None, **options)
        opened.append(client)
        return client

    yield make
    for client in opened:
        client.close()
