"""What every benchmark shares: token estimates, percentiles, memory use, progress, results.

Token counts are an estimate: words and punctuation marks (``\\w+|[^\\w\\s]``), which
lands within ~10 % of GPT tokenizers on English chat text. ``tiktoken`` is installed in
the venv but without its BPE files, and nothing may be downloaded at run time, so it is
not used.
"""

from __future__ import annotations

import json
import os
import platform
import re
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "LOCOMO_DEV",
    "LONGMEMEVAL_DEV",
    "RESULTS_DIR",
    "SHARED_DATA",
    "TOKEN_METHOD",
    "TRUTH_DEV",
    "Progress",
    "dir_size",
    "environment",
    "load_average",
    "percentiles",
    "rss_mb",
    "storage_reads",
    "token_estimate",
    "write_result",
]

RESULTS_DIR = Path(__file__).resolve().parent / "results"
#: The evaluation data, ``../shared/data`` relative to the repository root.
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
LOCOMO_DEV = SHARED_DATA / "locomo" / "locomo_dev.json"
LONGMEMEVAL_DEV = SHARED_DATA / "longmemeval" / "longmemeval_oracle_dev.json"
TRUTH_DEV = SHARED_DATA / "truth_chat" / "truth_dev.json"
TOKEN_METHOD = r"regex estimate: one token per \w+ run or punctuation mark"
_TOKEN_RE = re.compile(r"\w+|[^\w\s]")


def token_estimate(text: str) -> int:
    """Estimated LLM tokens in ``text`` (words plus punctuation marks)."""
    return len(_TOKEN_RE.findall(text))


def percentiles(values: Sequence[float], points: Iterable[int] = (50, 95, 99)) -> dict[str, float]:
    """``{"p50": …, "p95": …}`` of ``values`` (NaN when empty), rounded to 0.01."""
    arr = np.asarray(values, dtype=float)
    return {f"p{p}": (round(float(np.percentile(arr, p)), 2) if arr.size else float("nan")) for p in points}


def rss_mb() -> dict[str, float]:
    """Resident memory of this process and every process under it, now and at each one's peak, in MiB.

    The memory's Chroma client runs in a child (``chroma_process``), forked from
    multiprocessing's fork server, so the tree is summed: ``rss_mb`` counts pages the
    processes share once per process (an upper bound), ``pss_mb`` shares them out (what
    the tree costs the machine). Linux ``/proc`` only.
    """
    out = {"rss_mb": float("nan"), "peak_rss_mb": float("nan"), "pss_mb": float("nan"), "processes": 0}
    pids = [os.getpid(), *_descendants(os.getpid())]
    rss = peak = pss = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    rss += int(line.split()[1])
                elif line.startswith("VmHWM:"):
                    peak += int(line.split()[1])
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    pss += int(line.split()[1])
        except (OSError, ValueError):
            continue
        out["processes"] += 1
    if out["processes"]:
        out.update(rss_mb=round(rss / 1024, 1), peak_rss_mb=round(peak / 1024, 1), pss_mb=round(pss / 1024, 1))
    return out


def tree_cpu_s() -> float:
    """CPU seconds (user + system) of this process and every live process under it, a Chroma child included.

    ``time.process_time`` counts this process only, and the memory's Chroma child is not
    ours to wait for (multiprocessing's fork server forks it): its times are read from
    ``/proc/<pid>/stat``. A child that has exited is not counted: read it before closing.
    """
    total = time.process_time()
    tick = os.sysconf("SC_CLK_TCK")
    for pid in _descendants(os.getpid()):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except (OSError, ValueError, IndexError):
            continue
    return total


def _descendants(pid: int) -> list[int]:
    """Every live process under ``pid`` (children, their children, ...), from ``/proc/*/stat``."""
    parent_of: dict[int, int] = {}
    try:
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    stat = Path(f"/proc/{entry}/stat").read_text()
                    parent_of[int(entry)] = int(stat[stat.rindex(")") + 2:].split()[1])
                except (OSError, ValueError, IndexError):
                    pass
    except OSError:
        return []
    out, frontier = [], [pid]
    while frontier:
        kids = [child for child, parent in parent_of.items() if parent in frontier]
        out += kids
        frontier = kids
    return out


def dir_size(path: Path) -> int:
    """Bytes used by the files under ``path``."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages (other work on the machine skews timings)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def storage_reads() -> int | None:
    """Bytes this process has had read from storage so far (Linux's ``/proc/self/io``), None elsewhere.

    What a call read from disk, not from the operating system's file cache: the difference
    across it. Page faults on a memory-mapped file count, read-ahead included.
    """
    try:
        with open("/proc/self/io", encoding="ascii") as io:
            return next(int(line.split()[1]) for line in io if line.startswith("read_bytes:"))
    except (OSError, StopIteration, ValueError, IndexError):
        return None


def environment() -> dict[str, Any]:
    """Where a result was measured: machine, Python and the key package versions."""
    from importlib.metadata import PackageNotFoundError, version

    versions = {}
    for pkg in ("zep-memory", "chromadb", "kuzu", "onnxruntime", "numpy", "bm25s"):
        try:
            versions[pkg] = version(pkg)
        except PackageNotFoundError:
            versions[pkg] = None
    return {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
            "platform": platform.platform(), "packages": versions, "load_average": load_average(),
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


class Progress:
    """Prints ``[bench name  12.3s] message`` lines to stderr; ``quiet`` silences them."""

    def __init__(self, name: str, *, quiet: bool = False) -> None:
        self.name = name
        self.quiet = quiet
        self.start = time.perf_counter()

    @property
    def elapsed(self) -> float:
        """Seconds since this progress started."""
        return time.perf_counter() - self.start

    def __call__(self, message: str) -> None:
        """Print one progress line."""
        if not self.quiet:
            print(f"[{self.name} {self.elapsed:7.1f}s] {message}", file=sys.stderr, flush=True)


def write_result(name: str, data: dict[str, Any], out_dir: Path | None = None) -> Path:
    """Write ``data`` (plus the environment) to ``<out_dir>/<name>.json`` and return the path."""
    out_dir = Path(out_dir or RESULTS_DIR)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.json"
    payload = {"benchmark": name, "environment": environment(), **data}
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    return path


def options_for(settings: Any, folder: Path) -> dict[str, Any]:
    """The ``MemoryConfig`` fields a benchmark gives the memory in ``folder``.

    ``settings`` is a mapping (the same fields for every memory) or a function of the folder
    (``bench.backends`` gives each folder a PostgreSQL database of its own that way).
    """
    if settings is None:
        return {}
    return dict(settings(folder)) if callable(settings) else dict(settings)
