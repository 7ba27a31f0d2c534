#!/usr/bin/env bash
# Render `zep-memory graph --html` in headless Chromium and save a screenshot. Installs nothing.
#
#   scripts/render_graph.sh [OUT.png] [DATA_DIR USER]
#
# Without DATA_DIR it runs the offline demo into a temporary folder (user "alice") and draws that.
# Needs a Chromium on PATH (Debian: apt-get update && apt-get install -y chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(realpath -m "${1:-graph.png}")"
python="${PYTHON:-.venv/bin/python}"
browser="${CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}"
if [ -z "$browser" ]; then
    echo "error: no Chromium found; install it (apt-get update && apt-get install -y chromium) or set CHROMIUM" >&2
    exit 2
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if [ $# -ge 3 ]; then
    data="$2"; user="$3"
else
    data="$work/data"; user="alice"
    "$python" -m zep_core.cli demo --data "$data" > /dev/null
fi
"$python" -m zep_core.cli graph --data "$data" --user "$user" --html "$work/graph.html"
"$browser" --headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update \
    --disable-sync --no-first-run --user-data-dir="$work/profile" --window-size=1200,800 \
    --screenshot="$out" "file://$work/graph.html" 2> "$work/chromium.log" || {
    cat "$work/chromium.log" >&2; exit 2; }
test -s "$out" || { echo "error: Chromium wrote no screenshot" >&2; cat "$work/chromium.log" >&2; exit 2; }
echo "wrote $out"
