#!/usr/bin/env bash
# The README's test command: install zep-memory with every extra into .venv and run the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[all,test]'
exec .venv/bin/python -m pytest -q "$@"
