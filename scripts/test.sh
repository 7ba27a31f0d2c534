#!/usr/bin/env bash
# The README's test command: install zep-memory with every extra into .venv, run the suite, say how long it took.
#
#   bash scripts/test.sh                 the default selection (the README says what it leaves to CI)
#   bash scripts/test.sh --full          every test: the full matrix, what .ci/run runs (or ZEP_TEST_FULL=1)
#   bash scripts/test.sh tests/cli -x    any other argument goes to pytest
#   ZEP_TEST_NO_INSTALL=1                skip the venv and pip steps (.venv is already up to date)
#   ZEP_TEST_WORKERS=N                   pytest processes (pytest-xdist, one test file each at a time);
#                                        default: the machine's cores, at most 4; 1 runs in this process
set -euo pipefail
cd "$(dirname "$0")/.."
export ZEP_TEST_FULL="${ZEP_TEST_FULL:-0}"
if [ "${1:-}" = "--full" ]; then
    ZEP_TEST_FULL=1
    shift
fi
if [ "${ZEP_TEST_NO_INSTALL:-0}" = 0 ]; then
    python3 -m venv .venv
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q -e '.[all,test]'
fi
load_before="$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo '?')"
workers="${ZEP_TEST_WORKERS:-$(nproc 2>/dev/null || echo 1)}"
[ "$workers" -gt 4 ] && workers=4
parallel=()
[ "$workers" -gt 1 ] && parallel=(-n "$workers" --dist loadfile)
start=$(date +%s)
status=0
.venv/bin/python -m pytest -q --durations=10 "${parallel[@]}" "$@" || status=$?
took=$(( $(date +%s) - start ))
if [ "$ZEP_TEST_FULL" = 0 ]; then selection="the default selection; --full runs the full matrix"; else selection="the full matrix"; fi
echo "scripts/test.sh: pytest took $((took / 60)) min $((took % 60)) s ($selection) in $workers process(es) on $(nproc) cores," \
     "load average $load_before before, $(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo '?') after"
if [ "$status" = 5 ]; then
    echo "scripts/test.sh: no test matched the arguments ($*): nothing was tested" >&2
    exit 1
fi
exit "$status"
