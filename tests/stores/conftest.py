"""A real Chroma server (`chroma run`) for the whole test session, always stopped at the end."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest


def chroma_executable() -> Path | None:
    """The ``chroma`` command installed beside this Python (in the same virtual environment)."""
    for name in ("chroma", "chroma.exe"):
        path = Path(sys.executable).parent / name
        if path.exists():
            return path
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_heartbeat(url: str, proc: subprocess.Popen, log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"chroma run exited with {proc.returncode}:\n{log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"chroma run did not answer its heartbeat within {timeout:.0f} s:\n{log.read_text()[-2000:]}")


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory, request) -> str:
    """Start ``chroma run --path TMP --host 127.0.0.1 --port FREE``; yield its URL; stop it in a finalizer."""
    exe = chroma_executable()
    if exe is None:
        pytest.skip(f"no `chroma` executable beside {sys.executable}; install chromadb into this environment "
                    "(pip install 'chromadb>=1.5') to run the server-mode tests")
    root = tmp_path_factory.mktemp("chroma-server")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = root / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(exe), "run", "--path", str(root / "db"), "--host", "127.0.0.1",
                                 "--port", str(port)], stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)

    def stop() -> None:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)

    request.addfinalizer(stop)
    wait_for_heartbeat(url, proc, log)
    return url
