"""The interactive HTML entity graph: a user's entities and the facts linking them.

:func:`graph_data` reads a user's export records into plain data (nodes, edges,
attributes); :func:`render_graph_html` pours that data into the page template
``graph.html`` (package data, read at render time): one self-contained HTML page —
inline SVG and a few dozen lines of vanilla JavaScript (force layout, hover, drag,
zoom), no CDN, no library — that opens offline. Current facts are solid lines,
superseded ones dashed; hovering shows the dates.

Example:
    >>> html = graph_html(memory, "alice")                          # doctest: +SKIP

"""

from __future__ import annotations

import html
import json
import re
from importlib.resources import files
from typing import TYPE_CHECKING, Any

from ..models import to_utc

if TYPE_CHECKING:
    from ..memory import Memory

__all__ = ["graph_data", "graph_html", "render_graph_html"]

_DAY = "%Y-%m-%d"


def graph_data(memory: Memory, user_id: str, *, max_nodes: int = 400) -> dict[str, Any]:
    """A user's entity graph as plain data: nodes, edges (facts between entities), attributes.

    Facts whose object is not an entity (``Alice age 30``) are listed on their
    subject node. Above ``max_nodes`` entities, the best-connected are kept.

    Raises:
        NotFoundError: the user is unknown.

    """
    entities: dict[str, dict[str, Any]] = {}
    edges, attributes = [], {}
    contents = {}
    for row in memory.export_records(user_id):
        if row["type"] == "entity":
            entities[row["id"]] = row
        elif row["type"] == "fact":
            current = row["valid_until"] is None and row["superseded_by"] is None
            contents[row["id"]] = row["content"]
            if row["object_id"] and row["object_id"] in entities and row["subject_id"] in entities:
                edges.append({"id": row["id"], "source": row["subject_id"], "target": row["object_id"],
                              "predicate": row["predicate"], "content": row["content"], "current": current,
                              **_dates(row)})
            elif row["subject_id"] in entities:
                attributes.setdefault(row["subject_id"], []).append(
                    {"content": row["content"], "current": current, **_dates(row)})
    for e in edges:
        e["superseded_by_content"] = contents.get(e["superseded_by"]) if e["superseded_by"] else None
    degree = {eid: 0 for eid in entities}
    for e in edges:
        degree[e["source"]] += 1
        degree[e["target"]] += 1
    keep = set(sorted(entities, key=lambda i: (-degree[i], entities[i]["name"]))[:max_nodes])
    nodes = [{"id": eid, "name": e["name"], "type": e["entity_type"], "summary": e["summary"], "degree": degree[eid],
              "attributes": sorted(attributes.get(eid, []), key=lambda a: a["valid_from"])}
             for eid, e in sorted(entities.items(), key=lambda kv: kv[1]["name"].lower()) if eid in keep]
    edges = sorted((e for e in edges if e["source"] in keep and e["target"] in keep),
                   key=lambda e: (e["valid_from"], e["id"]))
    return {"user_id": user_id, "nodes": nodes, "edges": edges, "omitted_nodes": len(entities) - len(keep)}


def _dates(fact: dict[str, Any]) -> dict[str, Any]:
    """A fact row's validity as days (``YYYY-MM-DD``)."""
    return {"valid_from": _day_of(fact["valid_from"]), "valid_until": _day_of(fact["valid_until"]),
            "superseded_by": fact["superseded_by"]}


def _day_of(text: str | None) -> str | None:
    return to_utc(text).strftime(_DAY) if text else None


def graph_html(memory: Memory, user_id: str, *, title: str | None = None) -> str:
    """The user's entity graph as a self-contained interactive HTML page.

    Raises:
        NotFoundError: the user is unknown.

    """
    return render_graph_html(graph_data(memory, user_id), title=title or f"zep-memory: {user_id}")


def render_graph_html(data: dict[str, Any], *, title: str) -> str:
    """Render :func:`graph_data` output as HTML (inline SVG + vanilla JS, works offline)."""
    payload = json.dumps(data, ensure_ascii=False, sort_keys=True)
    payload = payload.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
    counts = (f"{len(data['nodes'])} entities, {sum(e['current'] for e in data['edges'])} current and "
              f"{sum(not e['current'] for e in data['edges'])} superseded facts between them")
    if data.get("omitted_nodes"):
        counts += f" ({data['omitted_nodes']} less connected entities not shown)"
    values = {"TITLE": html.escape(title), "COUNTS": html.escape(counts), "DATA": payload}
    return re.sub(r"__(TITLE|COUNTS|DATA)__", lambda m: values[m.group(1)], _page())


def _page() -> str:
    """The page template: ``graph.html`` beside this module, with ``__TITLE__``, ``__COUNTS__`` and ``__DATA__``."""
    return files("zep_core.viz").joinpath("graph.html").read_text(encoding="utf-8")
