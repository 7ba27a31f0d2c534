"""The command as a user meets it: help texts, the installed entry point, one-line errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from zep_core import Memory, MemoryConfig
from zep_core.cli.table import COMMANDS as COMMAND_TABLE

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = [c.name for c in COMMAND_TABLE]  # every command the parser knows, so a new one cannot go untested


def test_the_command_table_holds_the_documented_commands():
    assert COMMANDS == ["demo", "ingest", "context", "history", "related", "cypher", "stats", "maintain", "rebuild",
                        "export", "import", "forget", "doctor", "graph", "timeline", "serve", "mcp"]


def test_top_level_help_lists_every_command(cli):
    result = cli("--help")
    assert result.code == 0
    for command in COMMANDS:
        assert f"\n    {command} " in result.out or f"\n    {command}\n" in result.out, command
    assert "exit codes" in result.out


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_with_data_and_user(cli, command):
    result = cli(command, "--help")
    assert result.code == 0
    assert "--data DIR" in result.out and "--user ID" in result.out and "examples:" in result.out


def test_common_options_work_before_and_after_the_command(cli, alice_data):
    before = cli("--data", alice_data, "--user", "alice", "--json", "history", "Alice")
    after = cli("history", "Alice", "--data", alice_data, "--user", "alice", "--json")
    assert before.code == after.code == 0 and before.out == after.out and '"Alice lives in Berlin."' in after.out


def run_entry(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, timeout=120, env=env)


def test_the_installed_console_script_runs_the_demo(tmp_path):
    script = Path(sys.executable).parent / "zep-memory"
    assert script.exists(), "the console script is declared in pyproject.toml; reinstall with pip install -e ."
    demo = run_entry(str(script), "demo", "--data", str(tmp_path / "demo"))
    assert demo.returncode == 0, demo.stderr
    assert "Alice lives in Berlin." in demo.stdout and "superseded" in demo.stdout
    with Memory(MemoryConfig(data_dir=tmp_path / "demo")) as memory:
        history = memory.entity_history("Alice", user_id="alice")
    assert any(f.content == "Alice lives in Paris." and f.superseded_by for f in history)


def test_python_dash_m_reports_an_unknown_user_in_one_line_with_the_known_users(tmp_path):
    with Memory(MemoryConfig(data_dir=tmp_path / "data")) as memory:
        memory.conversation_end("s", [{"role": "user", "name": "Ann", "content": "I live in Oslo."}], user_id="ann")
    proc = run_entry(sys.executable, "-m", "zep_core.cli", "context", "hello", "--user", "nobody",
                     "--data", str(tmp_path / "data"))
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: unknown user 'nobody'") and proc.stderr.count("\n") == 1
    assert "known users: 'ann' (pass one with --user)" in proc.stderr
    assert proc.stdout == ""


READ_ONLY = [["context", "hello"], ["history", "Alice"], ["related", "Alice"], ["cypher", "MATCH (e) RETURN e"],
             ["stats"], ["export"], ["doctor"], ["maintain"], ["rebuild"], ["forget", "alice", "--yes"],
             ["graph", "--html", "g.html"], ["timeline", "Alice", "--png", "t.png"]]


@pytest.mark.parametrize("command", READ_ONLY, ids=[c[0] for c in READ_ONLY])
def test_a_wrong_data_folder_is_an_error_that_creates_nothing(cli, tmp_path, command):
    missing = tmp_path / "typo"
    result = cli(*command, "--data", missing, "--user", "alice")
    assert result.code == 2 and "does not exist; pass --data with the folder your memory is in" in result.err
    assert not missing.exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    result = cli(*command, "--data", empty, "--user", "alice")
    assert result.code == 2 and "holds no memory (no zep.db)" in result.err
    assert list(empty.iterdir()) == []


def test_python_dash_m_zep_core_is_the_same_command(tmp_path):
    proc = run_entry(sys.executable, "-m", "zep_core", "--version")
    assert proc.returncode == 0 and proc.stdout.startswith("zep-memory ")


def test_a_data_folder_in_use_elsewhere_is_a_one_line_error(cli, alice_data, open_memory):
    open_memory(alice_data)
    result = cli("stats", "--data", alice_data)
    assert result.code == 2
    assert result.err.startswith("error: the data folder") and "in use by" in result.err
    assert result.err.count("\n") == 1


def test_a_folder_built_with_another_embedder_is_a_one_line_error(cli, tmp_path, open_memory):
    from tests.core.fakes import HashEmbedder

    memory = open_memory(tmp_path / "hash", embedder=HashEmbedder())
    memory.conversation_end("s", [{"role": "user", "content": "I live in Paris."}])
    memory.close()
    result = cli("maintain", "--data", tmp_path / "hash")
    assert result.code == 2
    assert "was built with the embedder test:hash-64" in result.err and "rebuild" not in result.out


def test_config_references_name_a_config_or_a_function(cli, alice_data):
    assert cli("stats", "--config", "zep_core.config:MemoryConfig", "--data", alice_data, "--json").code == 0
    assert "could not" not in cli("stats", "--config", "tests.cli.configs:broken_extractor", "--data", alice_data).err
    missing = cli("stats", "--config", "zep_core:NoSuchThing.attr", "--data", alice_data)
    assert missing.code == 2 and "cannot be loaded" in missing.err


def test_a_bad_config_reference_is_explained(cli, tmp_path):
    assert "must look like MODULE:NAME" in cli("stats", "--config", "nocolon", "--data", tmp_path).err
    bad = cli("stats", "--config", "tests.cli.configs:not_a_config", "--data", tmp_path)
    assert bad.code == 2 and "gave a int, not a MemoryConfig" in bad.err


def test_usage_errors_exit_2(cli):
    assert cli().code == 2
    assert cli("no-such-command").code == 2
    assert cli("graph", "--data", "x").code == 2  # --html is required


def test_a_closed_pipe_ends_the_output_quietly(alice_data):
    """`zep-memory export | head`: the reader closes early; no traceback, no error, exit 0."""
    exe = Path(sys.executable).with_name("zep-memory")
    proc = subprocess.Popen([str(exe), "export", "--data", str(alice_data), "--user", "alice"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # before the command writes: its first write meets a closed pipe
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and err == b""


def test_forget_asks_first_and_needs_yes_without_a_terminal(cli, alice_data, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # not a terminal
    refused = cli("forget", "alice", "--data", alice_data)
    assert refused.code == 2 and "pass --yes to confirm" in refused.err

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr("sys.stdin", Terminal("n\n"))
    kept = cli("forget", "alice", "--data", alice_data)
    assert kept.code == 1 and "not deleted" in kept.err and "Delete everything stored for user 'alice'" in kept.out
    with Memory(MemoryConfig(data_dir=alice_data)) as memory:
        assert memory.has_user("alice")
    monkeypatch.setattr("sys.stdin", Terminal("y\n"))
    assert cli("forget", "alice", "--data", alice_data).code == 0
    assert cli("forget", "alice", "--data", alice_data, "--yes").code == 2  # now unknown
    with Memory(MemoryConfig(data_dir=alice_data)) as memory:
        assert not memory.has_user("alice")


def test_speaker_says_who_i_is(cli, alice_data):
    mine = cli("context", "Where do I live?", "--data", alice_data, "--user", "alice", "--speaker", "Alice",
               "--limit", "1")
    assert mine.code == 0 and "Alice lives in Berlin." in mine.out


def test_context_help_describes_the_ranking_the_default_configuration_runs():
    from zep_core import ScoringSettings

    run = subprocess.run([sys.executable, "-m", "zep_core", "context", "--help"], capture_output=True, text=True,
                         timeout=120)
    text = " ".join(run.stdout.split())
    s = ScoringSettings()

    assert run.returncode == 0 and s.fusion == "rrf"  # the help describes rank fusion: say otherwise if it changes
    assert "reciprocal rank fusion" in text and "BM25" in text and "0.7·semantic + 0.3·graph" not in text
    assert f"weight / ({s.rrf_k} + rank)" in text
    assert (f"weights {s.semantic_weight:g} meaning, {s.lexical_weight:g} words and {s.graph_weight:g} graph"
            in text)
