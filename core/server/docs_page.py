"""``GET /docs``: the server's endpoints as one self-contained HTML page, readable offline.

FastAPI's own ``/docs`` loads Swagger UI from a CDN, so a server with no internet access
showed a blank page. This page is drawn on the server from the same OpenAPI document
(``/openapi.json``), with no script, style sheet or font from elsewhere: for each endpoint
its summary, the fields of its JSON body (type, required or default, description) and a
``curl`` line that works as written once the key and the values are yours.
"""

from __future__ import annotations

import html
import json
from typing import Any

__all__ = ["docs_html", "example_body"]

_STYLE = """
body { font: 15px/1.5 system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
code, pre { font: 13px/1.4 ui-monospace, monospace; background: #f4f4f4; }
pre { padding: .6rem; overflow-x: auto; }
table { border-collapse: collapse; margin: .4rem 0 1rem; }
td, th { border-bottom: 1px solid #ddd; padding: .2rem .6rem; text-align: left; vertical-align: top; }
h2 { margin-top: 2.2rem; border-top: 1px solid #ccc; padding-top: 1rem; }
"""

#: Values a curl example uses for the fields it must send.
_SAMPLES = {"user_id": "alice", "session_id": "s1", "input": "Where do I live?", "name": "Alice",
            "query": "MATCH (e:Entity) RETURN e.name AS name LIMIT 5", "episode_id": "alice-s1",
            "content": "I live in Lisbon."}


def _resolve(schema: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = spec.get("components", {}).get("schemas", {}).get(name, {})
    if "allOf" in schema and len(schema["allOf"]) == 1:
        return _resolve(schema["allOf"][0], spec)
    return schema


def _type(schema: dict[str, Any], spec: dict[str, Any]) -> str:
    schema = _resolve(schema, spec)
    if "anyOf" in schema:
        return " | ".join(_type(s, spec) for s in schema["anyOf"])
    if schema.get("type") == "array":
        return f"list of {_type(schema.get('items', {}), spec)}"
    if schema.get("title") and schema.get("type") == "object" and schema.get("properties"):
        return f"object ({schema['title']})"
    return str(schema.get("type", "any"))


def _sample(name: str, schema: dict[str, Any], spec: dict[str, Any]) -> Any:
    schema = _resolve(schema, spec)
    if name in _SAMPLES:
        return _SAMPLES[name]
    if schema.get("type") == "array":
        item = _resolve(schema.get("items", {}), spec)
        return [_object(item, spec)] if item.get("properties") else []
    if schema.get("properties"):
        return _object(schema, spec)
    return {"integer": 5, "number": 0.5, "boolean": True, "string": "text"}.get(schema.get("type", ""), None)


def _object(schema: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    props, required = schema.get("properties", {}), set(schema.get("required", ()))
    return {name: _sample(name, sub, spec) for name, sub in props.items() if name in required or name == "user_id"}


def example_body(spec: dict[str, Any], path: str) -> dict[str, Any] | None:
    """The JSON body the page's curl line sends to ``path``: the required fields, and ``user_id``."""
    post = spec["paths"].get(path, {}).get("post", {})
    content = post.get("requestBody", {}).get("content", {})
    if "application/json" not in content:
        return None
    return _object(_resolve(content["application/json"]["schema"], spec), spec)


def _fields(schema: dict[str, Any], spec: dict[str, Any]) -> list[str]:
    schema = _resolve(schema, spec)
    required = set(schema.get("required", ()))
    rows = []
    for name, sub in schema.get("properties", {}).items():
        need = "required" if name in required else f"default {json.dumps(sub.get('default'))}"
        rows.append(f"<tr><td><code>{html.escape(name)}</code></td><td>{html.escape(_type(sub, spec))}</td>"
                    f"<td>{need}</td><td>{html.escape(sub.get('description', ''))}</td></tr>")
    return rows


def docs_html(spec: dict[str, Any], base_url: str = "http://127.0.0.1:8765") -> str:
    """The page: every ``/v1`` endpoint of ``spec`` (an OpenAPI document) with its fields and a curl line."""
    info = spec.get("info", {})
    out = ["<!doctype html><html><head><meta charset='utf-8'>",
           f"<title>{html.escape(info.get('title', 'zep-memory'))} API</title><style>{_STYLE}</style></head><body>",
           f"<h1>{html.escape(info.get('title', ''))} {html.escape(str(info.get('version', '')))}</h1>",
           f"<p>{html.escape(info.get('description', ''))} The machine-readable form is "
           "<a href='/openapi.json'><code>/openapi.json</code></a>. Every <code>/v1</code> request carries "
           "<code>Authorization: Bearer $KEY</code> when the server has keys; a key bound to one user may leave "
           "<code>user_id</code> out. Answers are <code>{\"result\": ...}</code>, errors "
           "<code>{\"error\": {\"type\": ..., \"message\": ...}}</code>.</p>"]
    for path, methods in spec.get("paths", {}).items():
        if not path.startswith("/v1/"):
            continue
        for method, op in methods.items():
            out.append(f"<h2 id='{html.escape(path[4:])}'><code>{method.upper()} {html.escape(path)}</code></h2>")
            out.append(f"<p>{html.escape(op.get('description') or op.get('summary') or '')}</p>"
                       .replace("\n\n", "</p><p>"))
            content = op.get("requestBody", {}).get("content", {})
            if "application/json" in content:
                rows = _fields(content["application/json"]["schema"], spec)
                if rows:
                    out.append("<table><tr><th>field</th><th>type</th><th></th><th></th></tr>" + "".join(rows)
                               + "</table>")
                body = json.dumps(example_body(spec, path), ensure_ascii=False)
                out.append(f"<pre>curl -fsS -X POST {html.escape(base_url + path)} -H 'Authorization: Bearer $KEY' "
                           f"-H 'Content-Type: application/json' -d '{html.escape(body)}'</pre>")
            elif method == "get":
                out.append(f"<pre>curl -fsS {html.escape(base_url + path)} -H 'Authorization: Bearer $KEY'</pre>")
            elif content:
                kind = next(iter(content))
                out.append(f"<p>Body: <code>{html.escape(kind)}</code>.</p>")
    out.append("</body></html>")
    return "\n".join(out)
