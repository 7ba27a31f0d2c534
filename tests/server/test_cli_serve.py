"""The real `zep-memory serve` in a subprocess: it starts, answers, stops cleanly, and refuses what is unsafe."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time

import pytest
from zep_core import Memory, MemoryConfig, Message
from zep_core.cli import build_parser
from zep_core.server import RemoteMemory

from tests.server.conftest import HTTP

KEY = "serve-test-key-0123456789"
SERVE = [sys.executable, "-m", "zep_core.cli", "serve"]


class Serving:
    """A `zep-memory serve` process; its stderr is read as it comes, so the pipe never fills."""

    def __init__(self, *args: str, env: dict[str, str] | None = None, preexec_fn=None) -> None:
        self.proc = subprocess.Popen([*SERVE, "--port", "0", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True, env={**os.environ, **(env or {})}, preexec_fn=preexec_fn)
        self.lines: queue.Queue[str] = queue.Queue()
        self.err: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.url = self._wait_for_url()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.err.append(line)
            self.lines.put(line)

    def _wait_for_url(self) -> str:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            found = re.search(r"serving .* at (http://\S+) ", line)
            if found:
                return found.group(1)
        self.stop()
        raise AssertionError("zep-memory serve did not start:\n" + "".join(self.err))

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise


def serve_once(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run `zep-memory serve` expecting it to refuse to start (bounded, in case it does not)."""
    return subprocess.run([*SERVE, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def test_serve_answers_with_keys_from_the_environment_and_stops_cleanly_on_sigterm(tmp_path, embedder):
    data = tmp_path / "data"
    keys = json.dumps({"keys": [{"key": KEY, "users": ["alice"], "name": "test"}]})
    server = Serving("--data", str(data), env={"ZEP_MEMORY_API_KEYS": keys})
    try:
        assert HTTP.get(f"{server.url}/healthz").json() == {"status": "ok"}
        assert HTTP.get(f"{server.url}/readyz").json() == {"status": "ready"}
        assert HTTP.post(f"{server.url}/v1/users", json={}).status_code == 401
        with RemoteMemory(server.url, api_key=KEY) as alice:
            result = alice.conversation_end("s1", [Message("I live in Paris.", name="Alice")], user_id="alice",
                                            episode_id="e1")
            assert result.status == "done"
            assert [f.content for f in alice.get_context("Where does Alice live?", user_id="alice")][0] == (
                "Alice lives in Paris.")
    finally:
        code = server.stop(signal.SIGTERM)
    assert code == 0, "".join(server.err)
    assert "Traceback" not in "".join(server.err)
    with Memory(MemoryConfig(data_dir=data, embedder=embedder)) as memory:  # the folder is free, the data there
        assert memory.get_episode("e1").user_id == "alice"
        assert memory.check_consistency() == {}


def test_serve_refuses_a_public_address_without_keys(tmp_path):
    data = tmp_path / "data"
    done = serve_once("--data", str(data), "--host", "0.0.0.0", env={"ZEP_MEMORY_API_KEYS": "",
                                                                     "ZEP_MEMORY_KEYS_FILE": ""})
    assert done.returncode == 2
    assert done.stderr.startswith("error: refusing to listen on 0.0.0.0 without API keys")
    assert "Traceback" not in done.stderr
    assert not data.exists()  # refused before the data folder was opened


@pytest.mark.parametrize("text, says", [
    ("{not json", "is not valid JSON"),
    (json.dumps({"keys": [{"key": "short-XYZZY1", "users": ["alice"]}]}), "keys[0]: the key is 12 characters"),
    (json.dumps({"keys": [{"key": "long-enough-XYZZY-22", "users": ["alice"], "admn": True}]}), "unknown field"),
])
def test_serve_refuses_a_malformed_keys_file(tmp_path, text, says):
    keys = tmp_path / "keys.json"
    keys.write_text(text)
    done = serve_once("--data", str(tmp_path / "data"), "--keys", str(keys))
    assert done.returncode == 2
    assert done.stderr.startswith("error: keys file") and says in done.stderr, done.stderr
    assert "XYZZY" not in done.stderr and "Traceback" not in done.stderr  # the key itself is never shown
    assert not (tmp_path / "data").exists()


def test_serve_on_a_folder_another_process_holds_says_so(tmp_path, embedder):
    data = tmp_path / "data"
    with Memory(MemoryConfig(data_dir=data, embedder=embedder)):
        done = serve_once("--data", str(data))
    assert done.returncode == 2
    assert done.stderr.startswith("error: the data folder") and "is in use by" in done.stderr, done.stderr
    assert f"zep-memory serve --data {data}" in done.stderr and "RemoteMemory" in done.stderr  # how to share it
    assert "Traceback" not in done.stderr


def test_serve_is_in_the_command_table_and_takes_no_key_on_the_command_line():
    args = build_parser().parse_args(["serve", "--data", "d", "--keys", "keys.json", "--port", "9000"])
    assert (args.host, args.port, args.keys) == ("127.0.0.1", 9000, "keys.json")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--api-key", "s3cret-s3cret-s3cret"])


def serve_on_a_busy_port(data) -> int:
    """``zep-memory serve --data DATA`` in process, on a port another socket holds; its exit code."""
    import socket

    from zep_core.cli import main

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        return main(["serve", "--data", str(data), "--port", str(busy.getsockname()[1])])


def test_a_port_in_use_leaves_no_new_data_folder_behind(tmp_path, capsys):
    """The start fails after the folder was opened (the port is bound last): the empty new folder goes."""
    code = serve_on_a_busy_port(tmp_path / "new")
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error:") and "Traceback" not in err, err
    assert not (tmp_path / "new").exists()


def test_a_folder_with_memory_in_it_is_kept_when_a_start_fails(tmp_path, capsys, embedder):
    with Memory(MemoryConfig(data_dir=tmp_path / "kept", embedder=embedder)) as memory:
        memory.conversation_end("s1", [Message("I live in Oslo.", name="Ada")], user_id="ada")
    assert serve_on_a_busy_port(tmp_path / "kept") == 2
    with Memory(MemoryConfig(data_dir=tmp_path / "kept", embedder=embedder)) as memory:
        assert memory.users() == ["ada"]
