"""The wire as a stranger meets it: ``GET /docs`` offline, and the curl lines of docs/server.md as written.

``/docs`` is drawn by the server from its OpenAPI document, with nothing loaded from
elsewhere, and every curl line it shows sends a body the server accepts. The curl block
of docs/server.md is parsed (URL path, key, JSON body) and sent to a real server on
127.0.0.1: each answer is 200, and the story it tells holds.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from zep_core.server.docs_page import example_body

from tests.server.conftest import HTTP, KEYS

SERVER_MD = Path(__file__).resolve().parents[2] / "docs" / "server.md"


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


def _curl_calls(markdown: str) -> list[tuple[str, dict]]:
    """(path, JSON body) of each ``curl`` of the page's wire section."""
    section = markdown.split("## From any language")[1].split("\n## ")[0]
    block = re.search(r"```bash\n(.*?)```", section, re.DOTALL).group(1).replace("\\\n", " ")
    calls = []
    for line in block.splitlines():
        if not line.startswith("curl "):
            continue
        words = shlex.split(line)
        url = next(w for w in words if w.startswith("http://"))
        calls.append((url.split("8765", 1)[1], json.loads(words[words.index("-d") + 1])))
    return calls


def test_the_curl_lines_of_docs_server_md_work_as_written(server):
    calls = _curl_calls(SERVER_MD.read_text(encoding="utf-8"))
    alice = {"Authorization": f"Bearer {KEYS['alice']}"}

    answers = {}
    for path, body in calls:
        answer = HTTP.post(f"{server.url}{path}", json=body, headers=alice)
        assert answer.status_code == 200, (path, answer.text)
        answers[path] = answer.json()["result"]

    assert [p for p, _ in calls] == ["/v1/conversation_end", "/v1/get_context", "/v1/context_block",
                                     "/v1/entity_history"]
    assert answers["/v1/get_context"][0]["content"] == "Alice works at Acme Robotics."
    assert "Alice works at Acme Robotics." in answers["/v1/context_block"]
    assert any(f["content"] == "Alice works at Acme Robotics." for f in answers["/v1/entity_history"])
