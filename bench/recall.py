"""Evidence recall@k: does the top of a ranking cite the turns that hold the answer?

A question is *covered* at k when the source message ids of the top-k items include
all of its evidence ids (``all``); ``frac`` is the share of its evidence ids found,
``any`` whether at least one was. Tokens are those of the top-k items' text.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .baselines import Hit
from .common import token_estimate

__all__ = ["Tally", "coverage"]


def coverage(hits: Sequence[Hit], evidence: Iterable[str], k: int) -> tuple[float, float, float]:
    """``(all, frac, any)`` of ``evidence`` among the top-``k`` hits' source ids."""
    wanted = set(evidence)
    if not wanted:
        raise ValueError("a question without evidence cannot be scored")
    found = {s for h in hits[:k] for s in h.source_ids} & wanted
    share = len(found) / len(wanted)
    return float(share == 1.0), share, float(bool(found))


@dataclass
class Tally:
    """Sums of per-question metrics by group (a category, or ``"1-4"``) and k."""

    ks: tuple[int, ...] = (5, 10)
    sums: dict[tuple[str, int], list[float]] = field(default_factory=lambda: defaultdict(lambda: [0.0] * 5))

    def add(self, groups: Iterable[str], hits: Sequence[Hit], evidence: Sequence[str]) -> dict[int, float]:
        """Count one question in every group of ``groups``; returns its ``all`` coverage per k."""
        covered = {}
        for k in self.ks:
            full, share, some = coverage(hits, evidence, k)
            tokens = sum(token_estimate(h.text) for h in hits[:k])
            covered[k] = full
            for g in groups:
                row = self.sums[(g, k)]
                for i, v in enumerate((1.0, full, share, some, tokens)):
                    row[i] += v
        return covered

    def table(self) -> dict[str, dict[str, dict[str, float]]]:
        """``{"k10": {group: {"n", "all", "frac", "any", "tokens"}}}`` with means rounded to 0.001."""
        out: dict[str, dict[str, dict[str, float]]] = {}
        for (group, k), (n, full, share, some, tokens) in sorted(self.sums.items()):
            out.setdefault(f"k{k}", {})[group] = {
                "n": int(n), "all": round(full / n, 3), "frac": round(share / n, 3),
                "any": round(some / n, 3), "tokens": round(tokens / n, 1)}
        return out
