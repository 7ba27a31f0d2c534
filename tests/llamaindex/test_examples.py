"""The LlamaIndex examples run offline and show memory supplying the new city, not the old one."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

pytestmark = pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning")


def load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def last_session(output: str) -> str:
    return output.split("== session-3")[1]


def test_chat_example_runs_offline(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    load("llamaindex_chat").run(str(tmp_path))

    out = last_session(capsys.readouterr().out)
    supplied = out.split("memory supplied:")[1].split("assistant:")[0]
    assert "Ada lives in Berlin." in supplied and "Paris" not in supplied
    assert "Ada lives_in Berlin" in out  # the retriever's node metadata


def test_chat_example_stores_none_of_the_mock_models_words(tmp_path, capsys, monkeypatch):
    from zep_core import Memory

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    load("llamaindex_chat").run(str(tmp_path))
    capsys.readouterr()
    with Memory.open(tmp_path) as memory:
        said = [f.content for user in memory.users() for f in memory.facts(user)]
    assert said and not [s for s in said if s.startswith("Assistant:") or "mock" in s], said


def test_agent_example_runs_offline(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    load("llamaindex_agent").run(str(tmp_path))

    out = last_session(capsys.readouterr().out)
    supplied = out.split("memory supplied:")[1].split("tool entity_history")[0]
    assert "Ada lives in Berlin." in supplied and "Paris" not in supplied
    assert "Ada lives in Paris. (valid 2024-01-10 to 2024-02-14; superseded)" in out
    assert "Ada lives in Berlin. (valid 2024-02-14 to now; current)" in out


@pytest.mark.parametrize("name", ["llamaindex_chat", "llamaindex_agent"])
def test_examples_take_the_data_folder_as_the_cli_does_and_date_the_sessions(name, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert load(name).main(["--data", str(tmp_path / "kept")]) == 0

    out = capsys.readouterr().out
    assert "== session-2 (2024-02-14)" in out
    assert (tmp_path / "kept").is_dir()  # the memory was kept where --data said
