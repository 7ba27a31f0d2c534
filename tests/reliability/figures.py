"""Where the reliability tests leave their figures: ``bench/results/reliability-<name>.json``.

``docs/reliability.md`` quotes these files; rerun the tests to regenerate them.
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"


def record(name: str, figures: dict[str, Any], command: str) -> Path:
    """Write one test's figures with the command that reproduces them."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"reliability-{name}.json"
    payload = {"name": name, "command": command, "figures": figures,
               "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "python": platform.python_version(),
               "cpus": os.cpu_count()}
    path.write_text(json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    return path
