"""One status table: each error travels with its row's status, and comes back to the client as its class.

The server's answers, the OpenAPI document, the client's reading of a status, and the
table of docs/server.md all come from :data:`zep_core.server.statuses.STATUSES`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from zep_core import QueryError, StoreError, ZepMemoryError
from zep_core import errors as zep_errors
from zep_core.server import RemoteMemory
from zep_core.server.statuses import GATEWAY_STATUSES, STATUSES, public_class, status_of

from tests.server.conftest import HTTP, KEYS

SERVER_MD = Path(__file__).resolve().parents[2] / "docs" / "server.md"
ROUTE = "application/vnd.zep+json"  # FastAPI's route reads it as JSON; VerbRouter leaves it to FastAPI


def test_no_row_of_the_table_is_hidden_behind_an_earlier_one():
    for i, row in enumerate(STATUSES):
        earlier = [e.error.__name__ for e in STATUSES[:i] if issubclass(row.error, e.error)]
        assert not earlier, f"{row.error.__name__} would be answered as {earlier[0]}"
        assert status_of(row.error) == row.status
    assert STATUSES[-1].error is ZepMemoryError  # the row of every other error
    assert all(status_of(getattr(zep_errors, name)) for name in zep_errors.__all__)


@pytest.mark.parametrize("row", STATUSES, ids=lambda row: f"{row.status}-{row.error.__name__}")
def test_each_error_travels_with_its_status_and_comes_back_as_its_class(server, monkeypatch, row):
    message = f"refused as {row.error.__name__}"

    def refuse():
        raise row.error(message)

    monkeypatch.setattr(server.memory, "users", refuse)
    sent = public_class(row.error)
    auth = {"Authorization": f"Bearer {KEYS['admin']}"}
    for content_type in ("application/json", ROUTE):  # VerbRouter's answer, then FastAPI's route's
        answer = HTTP.post(f"{server.url}/v1/users", content=b"{}", headers={**auth, "Content-Type": content_type})
        assert answer.status_code == row.status, (content_type, answer.text)
        assert answer.json() == {"error": {"type": sent.__name__, "message": message}}
        assert ("www-authenticate" in answer.headers) == (row.status == 401)
    with RemoteMemory(server.url, api_key=KEYS["admin"], retries=0) as client, pytest.raises(ZepMemoryError) as got:
        client.users()
    assert type(got.value) is sent and str(got.value) == message


@contextmanager
def answering(status: int) -> Iterator[str]:
    """A plain HTTP server, not zep-memory's, that answers every request with ``status`` and an HTML page."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            page = f"<html><body>{status}</body></html>".encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.parametrize("status", sorted({row.status for row in STATUSES} | GATEWAY_STATUSES | {418}))
def test_an_answer_that_is_not_the_servers_is_the_class_its_status_stands_for(status):
    with answering(status) as url, RemoteMemory(url, retries=0) as client, pytest.raises(ZepMemoryError) as got:
        client.users()
    raised = type(got.value)
    assert f"answered {status}" in str(got.value)
    rows = {public_class(row.error) for row in STATUSES if row.status == status}
    if status in GATEWAY_STATUSES:
        assert raised is StoreError  # the server behind a proxy could not be reached, as a lost connection
    elif not rows:
        assert raised is ZepMemoryError
    else:  # the one class every row of the status shares: the class itself when the status has one
        assert all(issubclass(cls, raised) for cls in rows) and (raised in rows or raised is ZepMemoryError)
    if status == 400:
        assert raised is QueryError


def test_every_endpoint_of_the_openapi_document_lists_the_tables_statuses(server):
    spec = HTTP.get(f"{server.url}/openapi.json").json()
    statuses = {str(row.status) for row in STATUSES}
    for path, operations in spec["paths"].items():
        if not path.startswith("/v1/"):
            continue
        for method, operation in operations.items():
            errors = {code for code in operation["responses"] if code != "200"}
            assert errors == statuses, (method, path)
            for code in errors:
                described = operation["responses"][code]
                assert described["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorBody"}
                names = {public_class(row.error).__name__ for row in STATUSES if str(row.status) == code}
                assert all(name in described["description"] for name in names), (path, code)


def test_the_status_table_of_docs_server_md_is_the_servers():
    section = SERVER_MD.read_text(encoding="utf-8").split("## What each status means")[1].split("\n## ")[0]
    shown = {(int(status), name) for status, errors in re.findall(r"^\| (\d{3}) \| ([^|]+) \|", section, re.M)
             for name in re.findall(r"`(\w+)`", errors)}
    table = {(row.status, public_class(row.error).__name__) for row in STATUSES}
    assert table <= shown, table - shown
    for status, name in shown - table:  # a subclass shown beside its parent's row (InvariantError)
        assert name in zep_errors.__all__ and status_of(getattr(zep_errors, name)) == status, (status, name)
