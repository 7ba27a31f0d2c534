"""Retrieval with the vector tiers against every user in Chroma: LoCoMo and LongMemEval, in one run.

Issue 33 moved the vectors of users under ``vector_exact_below`` current facts (default
1,000; every user of these benchmarks but the longest) out of Chroma: their query is an
exact search over the vectors SQLite keeps. This runs the LoCoMo and LongMemEval dev halves
(the defaults' scoring, ``vector_exact_below`` left at its default) and again with
``vector_exact_below=0`` (every user's vectors in a Chroma collection, as before the tiers),
in the same process, and prints the rows side by side. Exact search returns the true
nearest vectors, HNSW approximate ones, so the tiers can only move a row where Chroma
missed a neighbour.

Run: ``python -m bench.tiers_retrieval [--quick] [--long-per-type N]`` (here: quick about 8
minutes, full about 30, full without the long histories about 6). Writes
``bench/results/tiers_retrieval.json``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import locomo, longmemeval
from .common import LOCOMO_DEV, LONGMEMEVAL_DEV, Progress, write_result

__all__ = ["run"]

SETTINGS = {"tiers (default)": {}, "every user in Chroma": {"vector_exact_below": 0}}


def _rows(lo: dict[str, Any], lme: dict[str, Any]) -> dict[str, float]:
    """The rows compared: all-evidence recall at 5 and 10 of the defaults' scoring."""
    zep_lo = lo["systems"][f"zep: {locomo.VARIANTS[0].name}"]["recall"]
    zep_lme = lme["systems"][f"zep: {longmemeval.LME_VARIANTS[0].name}"]["recall"]
    out = {f"LoCoMo 1-4 all@{k}": zep_lo[f"k{k}"][locomo.MAIN]["all"] for k in locomo.KS}
    out |= {f"LongMemEval all@{k}": zep_lme[f"k{k}"][longmemeval.ALL]["all"] for k in longmemeval.KS}
    long = lme.get("long_history") or {}
    for name in ("oracle", "long"):
        if name in long:
            recall = long[name]["systems"]["zep: defaults"]["recall"]
            out |= {f"LongMemEval {name} history all@{k}": recall[f"k{k}"][longmemeval.ALL]["all"]
                    for k in longmemeval.KS}
    return out


def run(*, quick: bool = False, long_per_type: int | None = None, out_dir: Path | None = None,
        save: bool = True) -> dict[str, Any]:
    """Both benchmarks under each setting; the rows and their differences.

    ``long_per_type``: LongMemEval questions per type also asked on a long history (its
    default: 8, quick 2; 0 for none: the long histories are most of the run's time).
    """
    progress = Progress("tiers_retrieval")
    results: dict[str, dict[str, float]] = {}
    for label, settings in SETTINGS.items():
        lo = locomo.run(LOCOMO_DEV, quick=quick, variants=locomo.VARIANTS[:1], settings=settings, save=False,
                        progress=progress)
        lme = longmemeval.run(LONGMEMEVAL_DEV, quick=quick, variants=longmemeval.LME_VARIANTS[:1],
                              assistant_speakers=("Assistant",), long_per_type=long_per_type, settings=settings,
                              save=False, progress=progress)
        results[label] = _rows(lo, lme)
        progress(f"{label}: {results[label]}")
    tiers, chroma = (results[label] for label in SETTINGS)
    result = {"mode": "quick" if quick else "full", "long_per_type": long_per_type,
              "settings": {k: dict(v) for k, v in SETTINGS.items()},
              "rows": results, "difference": {row: round(tiers[row] - chroma[row], 3) for row in tiers},
              "seconds": round(progress.elapsed, 1)}
    if save:
        result["path"] = str(write_result("tiers_retrieval", result, out_dir))
    return result


def format_table(result: dict[str, Any]) -> str:
    """The rows under each setting, and tiers minus Chroma."""
    labels = list(result["rows"])
    lines = ["| row | " + " | ".join(labels) + " | difference |", "|---|" + "---|" * (len(labels) + 1)]
    for row, diff in result["difference"].items():
        lines.append(f"| {row} | " + " | ".join(f"{result['rows'][label][row]:.3f}" for label in labels)
                     + f" | {diff:+.3f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Command line: ``python -m bench.tiers_retrieval [--quick] [--out DIR]``."""
    parser = argparse.ArgumentParser(prog="python -m bench.tiers_retrieval", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one LoCoMo conversation, a few questions per type")
    parser.add_argument("--long-per-type", type=int, help="LongMemEval questions per type on a long history "
                        "(default 8, quick 2; 0: none)")
    parser.add_argument("--out", type=Path, help="results folder (default: bench/results)")
    args = parser.parse_args(argv)
    result = run(quick=args.quick, long_per_type=args.long_per_type, out_dir=args.out)
    print(format_table(result))
    return result


if __name__ == "__main__":
    main()
