"""One user with 40,000 facts: ``get_context`` p95 against the floor (query embedding + bare Chroma query).

The scale benchmark spreads its facts over 100 users (about a thousand each). A long-lived
user of an assistant holds far more: here one synthetic user (:mod:`bench.synth`, seed 7)
grows to 40,000 facts, and the same measures as :mod:`bench.scale` are taken at that
size — latency of distinct queries against the floor, single and bulk ingest, RSS — with
a pyinstrument profile of ``get_context``. On one user every query's words and entities
meet the whole history: the user's name is in most facts, "live" in half of them.

Run: ``python -m bench.long_user [--quick] [--facts N]`` (quick: 10,000 facts); with
``--data-dir DIR`` the memory is kept there, and ``--data-dir DIR --remeasure`` measures it
again with the code as it is (no ingest; ``long_user_remeasured.json``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .common import Progress
from .scale import print_result, remeasure, run

__all__ = ["FACTS", "QUICK_FACTS", "main", "run_long_user"]

FACTS = 40_000
QUICK_FACTS = 10_000


def run_long_user(facts: int = FACTS, **options: Any) -> dict[str, Any]:
    """:func:`bench.scale.run` on one user grown to ``facts``, saved as ``long_user.json``."""
    options.setdefault("progress", Progress("long_user"))
    return run(sizes=[facts], users=1, name="long_user", **options)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Command line: ``python -m bench.long_user [--quick] [--facts N] [--out DIR]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_FACTS} facts")
    parser.add_argument("--facts", type=int, help=f"facts of the one user (default {FACTS})")
    parser.add_argument("--data-dir", help="keep the built memory here")
    parser.add_argument("--out", type=Path, help="results folder (default: bench/results)")
    parser.add_argument("--remeasure", action="store_true",
                        help="measure the memory kept in --data-dir again (no ingest): long_user_remeasured.json")
    args = parser.parse_args(argv)
    if args.remeasure:
        if not args.data_dir:
            parser.error("--remeasure needs the --data-dir a run kept")
        return remeasure(args.data_dir, size=args.facts or FACTS, users=1, progress=Progress("long_user"),
                         out_dir=args.out,
                         name="long_user_remeasured")
    facts = args.facts or (QUICK_FACTS if args.quick else FACTS)
    result = run_long_user(facts, quick=args.quick, data_dir=args.data_dir, out_dir=args.out)
    print_result(result)
    return result


if __name__ == "__main__":
    main()
