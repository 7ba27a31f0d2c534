"""The MCP server's tests run on both backends (their memories come from ``make_memory``).

:class:`McpServing` runs the real ``zep-memory mcp --transport streamable-http`` on a free
loopback port; :func:`ask` reaches it with the SDK's own streamable-HTTP client, sending a
key as an MCP host does (``Authorization: Bearer <key>`` on every request).
"""

from __future__ import annotations

import asyncio
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

#: The installed command, as a host starts it.
ZEP_MEMORY = str(Path(sys.executable).with_name("zep-memory"))
#: The environment variables that give zep-memory keys; a test sets the ones it means.
KEY_VARIABLES = ("ZEP_MEMORY_API_KEY", "ZEP_MEMORY_API_KEYS", "ZEP_MEMORY_KEYS_FILE")


def pytest_generate_tests(metafunc):
    from tests.pg import both_backends

    both_backends(metafunc)


def environment(**variables: str) -> dict[str, str]:
    """This process's environment without zep-memory's key variables, plus ``variables``."""
    return {**{k: v for k, v in os.environ.items() if k not in KEY_VARIABLES}, **variables}


class McpServing:
    """``zep-memory mcp ... --transport streamable-http --port 0``; :attr:`url` is its ``/mcp`` endpoint.

    Its stderr is read as it comes (so the pipe never fills) and kept in :attr:`err`.
    """

    def __init__(self, *args: str, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([ZEP_MEMORY, "mcp", *args, "--transport", "streamable-http", "--port", "0"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                     text=True, env=env)
        self.lines: queue.Queue[str] = queue.Queue()
        self.err: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.url = self._wait_for_url()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.err.append(line)
            self.lines.put(line)

    def _wait_for_url(self) -> str:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            found = re.search(r"MCP for user .* at (http://\S+/mcp) ", line)
            if found:
                return found.group(1)
        self.stop()
        raise AssertionError("zep-memory mcp did not start:\n" + "".join(self.err))

    def stop(self) -> int:
        """SIGTERM, and its exit code (bounded)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise

    def __enter__(self) -> McpServing:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Refused(Exception):
    """The SDK's client could not use the server; the message is what it said."""


def ask(url: str, key: str | None, *calls: tuple[str, dict]) -> list[str]:
    """The text of each tool call, in order, on one session of the SDK's client sending ``key`` (None: no header).

    Raises:
        Refused: the client raised an MCP error (its message), e.g. the server refused the key.

    """
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError

    async def run() -> list[str]:
        headers = {"Authorization": f"Bearer {key}"} if key is not None else {}
        with anyio.fail_after(60):
            async with httpx2.AsyncClient(headers=headers) as http, \
                    Client(streamable_http_client(url, http_client=http)) as client:
                return ["".join(c.text for c in (await client.call_tool(name, args)).content if c.type == "text")
                        for name, args in calls]

    try:
        return asyncio.run(run())
    except BaseException as exc:
        leaf = exc
        while len(getattr(leaf, "exceptions", ())) == 1:  # the client's task groups wrap it (3.10: the backport)
            leaf = leaf.exceptions[0]
        if isinstance(leaf, MCPError):
            raise Refused(leaf.message) from None
        raise
