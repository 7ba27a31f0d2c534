"""The wire as a stranger meets it: ``GET /docs`` offline, every curl line it shows accepted.

``/docs`` is drawn by the server from its OpenAPI document, with nothing loaded from
elsewhere, and every curl line it shows sends a body the server accepts. The curl block
of docs/server.md runs as written, with curl, against the server the page starts, in
tests/test_docs_blocks.py.
"""

from __future__ import annotations

import re

from zep_core.server.docs_page import example_body

from tests.server.conftest import HTTP, KEYS


def test_the_docs_page_is_self_contained_and_names_every_verb(server):
    page = HTTP.get(f"{server.url}/docs")

    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert not re.search(r"""(?:src|href)=["']?https?://""", page.text)  # no script, style or font from elsewhere
    spec = HTTP.get(f"{server.url}/openapi.json").json()
    for path in (p for p in spec["paths"] if p.startswith("/v1/")):
        assert f"<code>POST {path}</code>" in page.text or f"<code>GET {path}</code>" in page.text, path
    assert f"curl -fsS -X POST {server.url}/v1/get_context" in page.text


def test_every_curl_body_of_the_docs_page_is_accepted_by_the_server(server):
    spec = HTTP.get(f"{server.url}/openapi.json").json()
    admin = {"Authorization": f"Bearer {KEYS['admin']}"}
    tried = 0
    for path in (p for p in spec["paths"] if p.startswith("/v1/") and "post" in spec["paths"][p]):
        body = example_body(spec, path)
        if body is None:
            continue
        answer = HTTP.post(f"{server.url}{path}", json=body, headers=admin)
        assert answer.status_code != 422, (path, body, answer.text)  # the fields and their types are right
        tried += 1
    assert tried > 20
