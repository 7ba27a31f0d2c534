"""The README's "Use it" snippet is code: it runs as written, and does what it says."""

from __future__ import annotations

import re
from pathlib import Path

from zep_core import Memory

README = Path(__file__).resolve().parents[2] / "README.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)


def test_the_use_it_snippet_runs_as_a_script_prints_berlin_and_supersedes_paris(tmp_path, monkeypatch):
    import subprocess
    import sys

    snippet = next(b for b in python_blocks(README.read_text(encoding="utf-8")) if "Memory.open(" in b)
    (tmp_path / "use_it.py").write_text(snippet, encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # it writes ./data
    run, again = (subprocess.run([sys.executable, "use_it.py"], capture_output=True, text=True, timeout=300,
                                 check=False) for _ in range(2))
    assert run.returncode == 0, run.stderr
    assert again.stdout == run.stdout, again.stderr  # run twice: the same episodes again, stored once
    said = re.search(r"Memory\.open\(\"\./data\"\) as memory:  # writes (.*)", snippet).group(1)
    assert sorted(re.findall(r"\./data/([\w.]+)", said)) == sorted(p.name for p in (tmp_path / "data").iterdir()
                                                              if not p.name.startswith("."))
    first = run.stdout.split("get_context")[1].splitlines()[1]
    assert "Alice lives in Berlin." in first, run.stdout
    assert "Alice lives in Paris." in run.stdout.split("entity_history")[1]  # in the history, with its end date
    with Memory.open("./data") as memory:
        block = memory.context_block("Where does Alice live?", user_id="alice")
        assert "Berlin" in block and "Paris" not in block
        assert [f.object for f in memory.entity_history("Alice", user_id="alice")
                if f.predicate == "lives_in"] == ["Paris", "Berlin"]
