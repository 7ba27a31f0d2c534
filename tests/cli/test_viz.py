"""`graph --html` and `timeline --png`: pictures of a user's memory, checked as a user would see them."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections import Counter, deque

import numpy as np
import pytest

from tests.core.fakes import ScriptedExtractor, said

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
INSTALL = "apt-get update && apt-get install -y chromium"
NODE_COLORS = {"organization": "#e8590c", "person": "#2f9e44", "place": "#7048e8", "thing": "#1098ad",
               "profession": "#d6336c"}


def graph_payload(html: str) -> dict:
    found = re.search(r'<script id="data" type="application/json">(.*?)</script>', html, re.S)
    return json.loads(found.group(1))


def test_graph_html_is_self_contained_and_holds_the_users_graph(cli, alice_data, tmp_path):
    out = tmp_path / "alice.html"
    result = cli("graph", "--data", alice_data, "--user", "alice", "--html", out)
    assert result.code == 0 and "7 entities, 6 facts between them" in result.out
    html = out.read_text(encoding="utf-8")
    assert "<script src" not in html and "<link" not in html and "@import" not in html
    assert re.findall(r"https?://[^\s\"'<>]+", html) == ["http://www.w3.org/2000/svg"] * html.count(
        "http://www.w3.org/2000/svg")  # the SVG namespace name only: nothing is fetched
    data = graph_payload(html)
    assert sorted(n["name"] for n in data["nodes"]) == ["Acme", "Alice", "Berlin", "Paris", "designer", "dog", "jazz"]
    lives = {e["content"]: e for e in data["edges"] if e["predicate"] == "lives_in"}
    assert lives["Alice lives in Paris."]["current"] is False
    assert lives["Alice lives in Paris."]["valid_until"] == "2024-02-01"
    assert lives["Alice lives in Paris."]["superseded_by_content"] == "Alice lives in Berlin."
    assert lives["Alice lives in Berlin."]["current"] is True and lives["Alice lives in Berlin."]["valid_until"] is None


def test_graph_html_escapes_names_that_look_like_markup(cli, tmp_path, open_memory):
    extractor = ScriptedExtractor()
    extractor.push(said("Eve", "works_at", "</script><b>Evil & Co"))
    memory = open_memory(tmp_path / "data", extractor=extractor)
    memory.conversation_end("s", [{"role": "user", "name": "Eve", "content": "I work at Evil & Co."}],
                            user_id="eve")
    memory.close()
    out = tmp_path / "eve.html"
    assert cli("graph", "--data", tmp_path / "data", "--user", "eve", "--html", out).code == 0
    html = out.read_text(encoding="utf-8")
    assert html.count("</script>") == 2 and "<b>Evil" not in html
    assert "</script><b>Evil & Co" in [n["name"] for n in graph_payload(html)["nodes"]]


def run_chromium(args: list[str], tmp_path) -> subprocess.CompletedProcess:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run",
             f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1200,800"]
    return subprocess.run([CHROMIUM, *flags, *args], capture_output=True, text=True, timeout=120)


def color_blobs(image: np.ndarray, hex_color: str, tolerance: float = 0.04) -> list[int]:
    """Sizes of the connected areas painted in ``hex_color`` (4-neighbourhood)."""
    target = np.array([int(hex_color[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    mask = np.all(np.abs(image[:, :, :3] - target) < tolerance, axis=2)
    seen = np.zeros_like(mask)
    sizes = []
    for y, x in zip(*np.nonzero(mask)):
        if seen[y, x]:
            continue
        seen[y, x] = True
        queue, size = deque([(y, x)]), 0
        while queue:
            cy, cx = queue.popleft()
            size += 1
            for ny, nx in ((cy + 1, cx), (cy - 1, cx), (cy, cx + 1), (cy, cx - 1)):
                if 0 <= ny < mask.shape[0] and 0 <= nx < mask.shape[1] and mask[ny, nx] and not seen[ny, nx]:
                    seen[ny, nx] = True
                    queue.append((ny, nx))
        sizes.append(size)
    return sizes


@pytest.mark.skipif(CHROMIUM is None, reason=f"needs a headless Chromium to render the page; install it: {INSTALL}")
def test_graph_renders_in_headless_chromium_with_every_node(cli, alice_data, tmp_path):
    image_module = pytest.importorskip("matplotlib.image", reason="reading the screenshot needs matplotlib")
    page = tmp_path / "alice.html"
    assert cli("graph", "--data", alice_data, "--user", "alice", "--html", page).code == 0
    data = graph_payload(page.read_text(encoding="utf-8"))
    types = Counter(n["type"] for n in data["nodes"])
    current = sum(1 for e in data["edges"] if e["current"])
    dom = run_chromium(["--dump-dom", page.as_uri()], tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert dom.stdout.count('<g class="node"') == len(data["nodes"]) == 7
    assert len(re.findall(r'class="edge current"', dom.stdout)) == current
    assert len(re.findall(r'class="edge superseded"', dom.stdout)) == len(data["edges"]) - current >= 1
    assert "NaN" not in dom.stdout
    row = r'<div class="ntype"><svg[^>]*><circle [^>]*fill="(#[0-9a-f]{6})"[^>]*></circle></svg>(\w+)</div>'
    legend = re.findall(row, dom.stdout)
    assert {t: c for c, t in legend} == {t: NODE_COLORS[t] for t in types}  # one legend row per type on the page

    shot = tmp_path / "alice.png"
    rendered = run_chromium([f"--screenshot={shot}", page.as_uri()], tmp_path)
    assert rendered.returncode == 0 and shot.exists(), rendered.stderr[-2000:]
    image = image_module.imread(str(shot))
    assert image.shape[:2] == (800, 1200)
    node_areas = {t: [s for s in color_blobs(image, c) if s > 120] for t, c in NODE_COLORS.items()}  # legend dots: ~80
    assert {t: len(a) for t, a in node_areas.items() if a} == dict(types)
    below_legend = image[80:, :, :]
    assert sum(color_blobs(below_legend, "#3b5bdb", 0.06)) > 300  # solid current edges
    assert len([s for s in color_blobs(below_legend, "#9aa1ad", 0.06) if s >= 4]) >= 5  # dashes


def test_timeline_png_draws_the_entitys_facts(cli, alice_data, tmp_path):
    image_module = pytest.importorskip("matplotlib.image", reason="the timeline needs the viz extra (matplotlib)")
    out = tmp_path / "alice.png"
    result = cli("timeline", "Alice", "--data", alice_data, "--user", "alice", "--png", out, "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out) == {"file": str(out), "facts": 6}
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = image_module.imread(str(out))
    assert sum(color_blobs(image, "#3b5bdb", 0.03)) > 5000  # the current bars
    assert sum(color_blobs(image, "#c92a2a", 0.08)) > 20  # the mark where Paris ended
    with_statements = cli("timeline", "Alice", "--data", alice_data, "--user", "alice", "--png", out,
                          "--statements", "--json")
    assert json.loads(with_statements.out)["facts"] == 7  # with "Alice: I have a dog called Rex."


def test_timeline_of_an_unknown_entity_is_an_error(cli, alice_data, tmp_path):
    result = cli("timeline", "Zorro", "--data", alice_data, "--user", "alice", "--png", tmp_path / "z.png")
    assert result.code == 2 and "no entity named 'Zorro'" in result.err and not (tmp_path / "z.png").exists()
