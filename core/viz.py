"""Pictures of a memory: an interactive HTML entity graph and a PNG fact timeline.

:func:`graph_html` draws a user's entities and the facts linking them as one
self-contained HTML page — inline SVG and a few dozen lines of vanilla JavaScript
(force layout, hover, drag, zoom), no CDN, no library — that opens offline.
Current facts are solid lines, superseded ones dashed; hovering shows the dates.

:func:`timeline_png` draws one entity's facts as bars over time, superseded ones
hatched and marked. It needs matplotlib (the ``viz`` extra), imported only there,
with the Agg renderer: no display, no pyplot state.

Example:
    >>> html = graph_html(memory, "alice")                          # doctest: +SKIP
    >>> timeline_png(memory.entity_history("Alice", user_id="alice"), "alice.png", entity="Alice")

"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ConfigError, NotFoundError
from .models import Fact, to_utc

if TYPE_CHECKING:
    from .memory import Memory

__all__ = ["graph_data", "graph_html", "render_graph_html", "timeline_png"]

_DAY = "%Y-%m-%d"


# -- the entity graph ------------------------------------------------------------------------


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
    return re.sub(r"__(TITLE|COUNTS|DATA)__", lambda m: values[m.group(1)], _PAGE)


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>__TITLE__</title>
<style>
  html, body { margin: 0; height: 100%; font: 14px system-ui, sans-serif; color: #1d2330; background: #f7f8fa; }
  header { position: absolute; top: 0; left: 0; right: 0; padding: 10px 16px; pointer-events: none; }
  header h1 { font-size: 17px; margin: 0 0 2px; }
  header p { margin: 0; color: #5b6475; font-size: 12px; }
  #legend { position: absolute; right: 14px; top: 12px; background: #fff; border: 1px solid #d9dde5;
            border-radius: 6px; padding: 8px 10px; font-size: 12px; }
  #legend svg { vertical-align: middle; margin-right: 6px; }
  svg#graph { width: 100%; height: 100%; display: block; cursor: grab; }
  .edge { fill: none; stroke-width: 2; }
  .edge.current { stroke: #3b5bdb; }
  .edge.superseded { stroke: #9aa1ad; stroke-dasharray: 7 5; }
  .edge:hover, .edge.hl { stroke-width: 4; }
  .hit { fill: none; stroke: transparent; stroke-width: 12; }
  .elabel { font-size: 11px; fill: #4a5263; paint-order: stroke; stroke: #f7f8fa; stroke-width: 3px; }
  .node circle { stroke: #fff; stroke-width: 2; cursor: pointer; }
  .node text { font-size: 13px; font-weight: 600; paint-order: stroke; stroke: #f7f8fa; stroke-width: 4px; }
  #tip { position: absolute; display: none; max-width: 360px; background: #1d2330; color: #fff;
         padding: 7px 9px; border-radius: 5px; font-size: 12px; line-height: 1.4; pointer-events: none; }
  #tip b { color: #ffd43b; font-weight: 600; }
</style></head>
<body>
<header><h1>__TITLE__</h1><p>__COUNTS__. Hover for dates, drag nodes, scroll to zoom.</p></header>
<div id="legend">
  <div><svg width="34" height="8"><line x1="0" y1="4" x2="34" y2="4" stroke="#3b5bdb"
       stroke-width="2"/></svg>current fact</div>
  <div><svg width="34" height="8"><line x1="0" y1="4" x2="34" y2="4" stroke="#9aa1ad" stroke-width="2"
       stroke-dasharray="7 5"/></svg>superseded fact</div>
</div>
<svg id="graph" xmlns="http://www.w3.org/2000/svg"><g id="view"><g id="edges"></g><g id="nodes"></g></g></svg>
<div id="tip"></div>
<script id="data" type="application/json">__DATA__</script>
<script>
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("data").textContent);
  var NS = "http://www.w3.org/2000/svg";
  var svg = document.getElementById("graph"), tip = document.getElementById("tip");
  var nodes = data.nodes, edges = data.edges, byId = {};
  var palette = ["#e8590c", "#2f9e44", "#7048e8", "#1098ad", "#d6336c", "#f59f00", "#5c940d", "#364fc7"];
  var types = {};
  nodes.forEach(function (n, i) {
    var a = 2 * Math.PI * i / Math.max(nodes.length, 1), r = 60 + 30 * Math.sqrt(nodes.length);
    n.x = r * Math.cos(a); n.y = r * Math.sin(a); n.vx = 0; n.vy = 0; byId[n.id] = n;
    if (!(n.type in types)) { types[n.type] = palette[Object.keys(types).length % palette.length]; }
  });

  // Force layout (Fruchterman-Reingold with cooling), run to completion before the first paint.
  var k = 140, temp = 120;
  for (var it = 0; it < 400; it++) {
    nodes.forEach(function (n) { n.dx = -n.x * 0.05; n.dy = -n.y * 0.05; });  // gravity keeps parts together
    for (var i = 0; i < nodes.length; i++) {
      for (var j = i + 1; j < nodes.length; j++) {
        var a = nodes[i], b = nodes[j], dx = a.x - b.x, dy = a.y - b.y;
        var d2 = Math.max(dx * dx + dy * dy, 1), f = d2 > 9 * k * k ? 0 : k * k / d2;
        a.dx += dx * f; a.dy += dy * f; b.dx -= dx * f; b.dy -= dy * f;
      }
    }
    edges.forEach(function (e) {
      var a = byId[e.source], b = byId[e.target];
      if (a === b) { return; }
      var dx = a.x - b.x, dy = a.y - b.y, d = Math.max(Math.sqrt(dx * dx + dy * dy), 1), f = d / k;
      a.dx -= dx * f; a.dy -= dy * f; b.dx += dx * f; b.dy += dy * f;
    });
    nodes.forEach(function (n) {
      var m = Math.sqrt(n.dx * n.dx + n.dy * n.dy) || 1, s = Math.min(m, temp) / m;
      n.x += n.dx * s; n.y += n.dy * s;
    });
    temp = Math.max(temp * 0.985, 2);
  }

  // Several facts between the same two entities bend apart so each stays visible.
  var pairs = {};
  edges.forEach(function (e) {
    var key = [e.source, e.target].sort().join("|");
    e.rank = (pairs[key] = (pairs[key] || 0) + 1) - 1;
  });
  edges.forEach(function (e) {
    var key = [e.source, e.target].sort().join("|"), n = pairs[key];
    e.bend = n === 1 ? 0 : (e.rank - (n - 1) / 2) * 46 * (e.source < e.target ? 1 : -1);
  });

  function el(tag, attrs, parent) {
    var x = document.createElementNS(NS, tag);
    for (var name in attrs) { x.setAttribute(name, attrs[name]); }
    if (parent) { parent.appendChild(x); }
    return x;
  }
  function line(text) { var d = document.createElement("div"); d.textContent = text; return d; }
  function showTip(ev, parts) {
    tip.textContent = "";
    parts.forEach(function (p) {
      var d = line(p[1]);
      if (p[0]) { var b = document.createElement("b"); b.textContent = p[0] + " "; d.insertBefore(b, d.firstChild); }
      tip.appendChild(d);
    });
    tip.style.display = "block"; moveTip(ev);
  }
  function moveTip(ev) { tip.style.left = (ev.clientX + 14) + "px"; tip.style.top = (ev.clientY + 14) + "px"; }
  function hideTip() { tip.style.display = "none"; }
  function span(e) { return e.valid_from + " \\u2192 " + (e.valid_until || "now"); }

  var gEdges = document.getElementById("edges"), gNodes = document.getElementById("nodes");
  edges.forEach(function (e) {
    var g = el("g", {}, gEdges);
    e.path = el("path", {"class": "edge " + (e.current ? "current" : "superseded")}, g);
    e.hit = el("path", {"class": "hit"}, g);
    el("title", {}, e.hit).textContent = e.content + " (" + span(e) + ")";
    e.label = el("text", {"class": "elabel", "text-anchor": "middle"}, g);
    e.label.textContent = e.predicate.replace(/_/g, " ");
    var parts = [["", e.content], ["valid", span(e)]];
    if (!e.current) { parts.push(["superseded by", e.superseded_by_content || e.superseded_by || "(closed)"]); }
    e.hit.addEventListener("mouseenter", function (ev) { e.path.classList.add("hl"); showTip(ev, parts); });
    e.hit.addEventListener("mousemove", moveTip);
    e.hit.addEventListener("mouseleave", function () { e.path.classList.remove("hl"); hideTip(); });
  });
  nodes.forEach(function (n) {
    n.r = 9 + 3 * Math.sqrt(n.degree);
    n.g = el("g", {"class": "node"}, gNodes);
    el("circle", {r: n.r, fill: types[n.type]}, n.g);
    var t = el("text", {x: n.r + 4, y: 4}, n.g);
    t.textContent = n.name;
    el("title", {}, n.g).textContent = n.name + " (" + n.type + ")";
    var parts = [[n.type, n.name]];
    if (n.summary) { parts.push(["", n.summary]); }
    n.attributes.slice(0, 8).forEach(function (a) {
      parts.push([a.current ? "\\u2022" : "\\u2022 (superseded)", a.content + " [" + span(a) + "]"]);
    });
    if (n.attributes.length > 8) { parts.push(["", "\\u2026 " + (n.attributes.length - 8) + " more facts"]); }
    n.g.addEventListener("mouseenter", function (ev) { showTip(ev, parts); });
    n.g.addEventListener("mousemove", moveTip);
    n.g.addEventListener("mouseleave", hideTip);
    n.g.addEventListener("pointerdown", function (ev) { ev.stopPropagation(); drag = n; hideTip(); });
  });

  function draw() {
    edges.forEach(function (e) {
      var a = byId[e.source], b = byId[e.target], d;
      var mx = (a.x + b.x) / 2, my = (a.y + b.y) / 2, dx = b.x - a.x, dy = b.y - a.y;
      var len = Math.sqrt(dx * dx + dy * dy) || 1, cx = mx - dy / len * e.bend, cy = my + dx / len * e.bend;
      if (a === b) { d = "M" + a.x + "," + a.y + " c 40,-60 80,0 0,0"; cx = a.x + 30; cy = a.y - 30; }
      else { d = "M" + a.x + "," + a.y + " Q" + cx + "," + cy + " " + b.x + "," + b.y; }
      e.path.setAttribute("d", d); e.hit.setAttribute("d", d);
      e.label.setAttribute("x", (mx + cx) / 2); e.label.setAttribute("y", (my + cy) / 2 - 4);
    });
    nodes.forEach(function (n) { n.g.setAttribute("transform", "translate(" + n.x + "," + n.y + ")"); });
  }

  // Fit everything in view, then let the user pan (drag the background), zoom (wheel) and drag nodes.
  var view = {x: 0, y: 0, w: 100, h: 100};
  function fit() {  // the whole graph (with its labels) below the header, centred
    var xs = nodes.map(function (n) { return n.x; }), ys = nodes.map(function (n) { return n.y; });
    var x0 = Math.min.apply(null, xs.concat([0])) - 60, x1 = Math.max.apply(null, xs.concat([0])) + 160;
    var y0 = Math.min.apply(null, ys.concat([0])) - 50, y1 = Math.max.apply(null, ys.concat([0])) + 50;
    var W = svg.clientWidth || 1200, H = svg.clientHeight || 800, top = 64, side = 16;
    var s = Math.max((x1 - x0) / (W - 2 * side), (y1 - y0) / (H - top - side), 0.5);
    view = {w: W * s, h: H * s, x: (x0 + x1 - W * s) / 2,
            y: y0 - top * s - ((H - top - side) * s - (y1 - y0)) / 2};
    setView();
  }
  function setView() { svg.setAttribute("viewBox", [view.x, view.y, view.w, view.h].join(" ")); }
  function toGraph(ev) {
    var r = svg.getBoundingClientRect();
    return {x: view.x + (ev.clientX - r.left) / r.width * view.w, y: view.y + (ev.clientY - r.top) / r.height * view.h};
  }
  var drag = null, pan = null;
  svg.addEventListener("pointerdown", function (ev) { pan = {x: ev.clientX, y: ev.clientY, vx: view.x, vy: view.y}; });
  window.addEventListener("pointermove", function (ev) {
    if (drag) { var p = toGraph(ev); drag.x = p.x; drag.y = p.y; draw(); }
    else if (pan) {
      var r = svg.getBoundingClientRect();
      view.x = pan.vx - (ev.clientX - pan.x) / r.width * view.w;
      view.y = pan.vy - (ev.clientY - pan.y) / r.height * view.h; setView();
    }
  });
  window.addEventListener("pointerup", function () { drag = null; pan = null; });
  svg.addEventListener("wheel", function (ev) {
    ev.preventDefault();
    var p = toGraph(ev), f = ev.deltaY > 0 ? 1.15 : 1 / 1.15;
    view = {x: p.x - (p.x - view.x) * f, y: p.y - (p.y - view.y) * f, w: view.w * f, h: view.h * f}; setView();
  }, {passive: false});
  window.addEventListener("resize", fit);
  draw(); fit();
})();
</script>
</body></html>
"""


# -- the timeline ------------------------------------------------------------------------------


def timeline_png(facts: Sequence[Fact], path: str | Path, *, entity: str, now: datetime | None = None,
                 include_statements: bool = False, max_facts: int = 40) -> int:
    """Draw facts as bars over time (valid_from → valid_until or now) into a PNG.

    Current facts are solid bars running to ``now``; superseded ones are hatched grey
    with a mark where they ended. Free-text ``statement`` facts are left out unless
    ``include_statements`` (or nothing else is left); beyond ``max_facts`` the most
    recent are drawn.

    Args:
        facts: e.g. :meth:`zep_core.Memory.entity_history`.
        path: the PNG file to write.
        entity: the name in the title.
        now: the right edge for facts still true (default: the current time).
        include_statements: draw ``statement`` facts too.
        max_facts: at most this many bars.

    Returns:
        How many bars were drawn.

    Raises:
        ConfigError: matplotlib is not installed.
        NotFoundError: there are no facts to draw.

    """
    try:
        from matplotlib import dates as mdates
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch
    except ImportError:
        raise ConfigError("the timeline needs matplotlib: pip install 'zep-memory[viz]'") from None
    chosen = [f for f in facts if include_statements or f.predicate != "statement"] or list(facts)
    if not chosen:
        raise NotFoundError(f"{entity} has no facts to draw")
    chosen = sorted(chosen, key=lambda f: (f.valid_from, f.id))
    hidden = max(len(chosen) - max_facts, 0)
    chosen = chosen[hidden:]
    now = now or datetime.now(timezone.utc)
    end_of_time = max([now] + [f.valid_until or f.valid_from for f in chosen])
    span = max(end_of_time - chosen[0].valid_from, timedelta(days=1))

    fig = Figure(figsize=(11, 1.6 + 0.42 * len(chosen)), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for row, f in enumerate(chosen):
        start = f.valid_from
        stop = f.valid_until or end_of_time
        width = max(stop - start, span / 200)
        if f.is_current:
            ax.barh(row, width, left=start, height=0.55, color="#3b5bdb")
        else:
            ax.barh(row, width, left=start, height=0.55, color="#dee2e6", edgecolor="#868e96", hatch="///")
            ax.plot([stop], [row], marker="X", color="#c92a2a", markersize=8, zorder=3)
        ax.text(start, row - 0.38, f"{start:%Y-%m-%d}" + (f" → {f.valid_until:%Y-%m-%d}" if f.valid_until else ""),
                fontsize=7, color="#495057", va="bottom")
    ax.axvline(now, color="#868e96", linewidth=1, linestyle=":")
    ax.set_yticks(range(len(chosen)), [_short(f.content) for f in chosen], fontsize=9)
    ax.set_ylim(len(chosen) - 0.5, -0.95)
    ax.set_xlim(chosen[0].valid_from - span * 0.03, end_of_time + span * 0.03)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(ax.xaxis.get_major_locator()))
    ax.grid(axis="x", color="#e9ecef")
    ax.set_axisbelow(True)
    title = f"{entity}: facts over time"
    if hidden:
        title += f" (the {len(chosen)} most recent; {hidden} earlier not shown)"
    ax.set_title(title, fontsize=12, loc="left")
    ax.legend(handles=[Patch(color="#3b5bdb", label="current"),
                       Patch(facecolor="#dee2e6", edgecolor="#868e96", hatch="///", label="superseded (× = ended)")],
              loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=2, fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(str(path), format="png")
    return len(chosen)


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"
