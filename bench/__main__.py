"""Run every benchmark: ``python -m bench [--quick] [--only NAME …]``.

Each benchmark runs in its own Python process (so the memory figures of one are not
inflated by another), writes ``bench/results/<name>.json``, and prints its tables and
progress as it goes; then ``docs/benchmarks.md`` and ``docs/latency.png`` are written.
``--quick`` takes a few minutes (one LoCoMo conversation, a few LongMemEval questions
per type, sizes 1k and 10k, 20 sessions for the cost; the chat and truth sets run
whole either way, in under a minute); the full run publishes the tables (all data,
sizes up to 100k facts).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from .common import LOCOMO_DEV, LONGMEMEVAL_DEV, RESULTS_DIR

BENCHMARKS = ("chat", "truth", "locomo", "longmemeval", "scale", "long_user", "cost", "server")
LOCOMO = str(LOCOMO_DEV)
LONGMEMEVAL = str(LONGMEMEVAL_DEV)
ROOT = Path(__file__).resolve().parents[1]


def _command(name: str, args: argparse.Namespace) -> list[str] | None:
    quick = ["--quick"] if args.quick else []
    out = ["--out", str(args.out)]
    if name == "locomo":
        return ["--data", args.locomo, *quick, *out]
    if name == "longmemeval":
        return ["--data", args.longmemeval, *quick, *out]
    if name in ("scale", "server", "long_user"):
        return [*quick, *out]
    if name in ("chat", "truth"):
        return out
    if not (ROOT / "bench" / "cost.py").is_file():  # another helper's benchmark
        return None
    return [args.locomo, "--episodes", "20" if args.quick else "60", "--quiet", *out]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the selected benchmarks, then write the docs; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few minutes instead of the full run")
    parser.add_argument("--only", nargs="*", choices=BENCHMARKS, help="run only these")
    parser.add_argument("--locomo", default=LOCOMO, help="LoCoMo json (default: %(default)s)")
    parser.add_argument("--longmemeval", default=LONGMEMEVAL, help="LongMemEval json (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results folder (default: bench/results)")
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite docs/benchmarks.md")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    timings: dict[str, float] = {}
    failed = []
    for name in args.only or BENCHMARKS:
        cmd = _command(name, args)
        if cmd is None:
            print(f"[bench] {name}: bench/{name}.py not found, skipped", file=sys.stderr, flush=True)
            continue
        print(f"[bench] {name} …", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", f"bench.{name}", *cmd], cwd=ROOT)
        timings[name] = round(time.perf_counter() - t0, 1)
        if done.returncode != 0:
            failed.append(name)
            print(f"[bench] {name} failed (exit {done.returncode})", file=sys.stderr, flush=True)
    total = round(time.perf_counter() - start, 1)
    mode = "quick" if args.quick else "full"
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "run.json"
    previous = json.loads(path.read_text()) if path.is_file() else {}
    seconds = {**previous.get("seconds", {}), **timings} if previous.get("mode") == mode else timings
    run_info = {"mode": mode, "seconds": seconds, "total_seconds": round(sum(seconds.values()), 1),
                "failed": failed}
    path.write_text(json.dumps(run_info, indent=2) + "\n")
    if not args.no_docs:
        from .report import write_docs

        for path in write_docs(args.out):
            print(f"written: {path}")
    print(f"bench finished in {total:.0f} s ({mode}): "
          + ", ".join(f"{k} {v:.0f} s" for k, v in timings.items()))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
