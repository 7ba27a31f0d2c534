"""The LangChain examples run offline and show what the model was given from memory."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def _no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def test_agent_example_prints_the_memory_the_model_got(tmp_path, capsys):
    assert load("langchain_agent").main(["--data", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Model: scripted (offline)" in out
    third = out.split("=== s3 ===")[1]
    given = third.split("Tool entity_history returned:")[0]
    assert "Alice lives in Berlin. (valid from 2024-03-01)" in given and "Paris" not in given
    assert "Alice lives in Paris. (valid 2024-01-10 to 2024-03-01; superseded)" in third


def test_agent_example_stores_none_of_the_models_filler_nor_the_tools_answers(tmp_path, capsys):
    from zep_core import Memory

    assert load("langchain_agent").main(["--data", str(tmp_path)]) == 0
    capsys.readouterr()
    with Memory.open(tmp_path) as memory:
        said = [f.content for user in memory.users() for f in memory.facts(user)]
    assert said and not [s for s in said if s.startswith("Assistant:")], said  # "I'll remember that.", the tool
    assert not [s for s in said if "Facts in memory for" in s or "History of" in s], said


def test_rag_example_prints_the_retrieved_facts_and_answers_from_them(tmp_path, capsys):
    assert load("langchain_rag").main(["--data", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    now, then = out.split("Q: ")[1:3]
    assert "Alice lives in Berlin." in now and "Paris" not in now
    answer = now.split("A: ")[1].splitlines()[0]
    assert answer.startswith("According to memory:") and "Alice lives in Berlin." in answer
    assert "Alice works at Acme" in answer and "Paris" not in answer
    assert "Alice lives in Paris." in then and "Alice lives in Berlin." not in then
