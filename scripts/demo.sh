#!/usr/bin/env bash
# The README's main job: install zep-memory into .venv and run the offline demo.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e .
exec .venv/bin/python -m zep_core.demo "$@"
