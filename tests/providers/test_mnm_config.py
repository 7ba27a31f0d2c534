"""MemoryConfig.from_mnm: the spec file's config block configures the memory."""

from __future__ import annotations

from pathlib import Path

import pytest
from zep_core import ConfigError, MemoryConfig

SPEC_HEAD = '''
# zep_memory.mnm
# Temporal Knowledge Graph Memory System

config {
  storage: sqlite("./data/zep.db")
  vector: auto
  graph: auto
  embedding: openai("text-embedding-3-small")
  extractor: openai("gpt-4o-mini")
}

namespace zep_agent {
  memory Episode {
    session_id: string
  }
}
'''


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec" / "zep.mnm"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def block(*entries: str) -> str:
    return "config {\n" + "\n".join(f"  {e}" for e in entries) + "\n}\n"


def test_the_users_spec_configures_storage_and_providers(tmp_path):
    config = MemoryConfig.from_mnm(write(tmp_path, SPEC_HEAD))
    assert Path(config.data_dir) == tmp_path / "spec" / "data"
    assert (config.embedding_provider, config.embedding_model) == ("openai", "text-embedding-3-small")
    assert (config.extractor_provider, config.extractor_model) == ("openai", "gpt-4o-mini")
    assert config.openai_api_key is None and config.chroma_url is None


def test_the_environment_is_read_only_when_given_and_overrides_win(tmp_path):
    path = write(tmp_path, SPEC_HEAD)
    config = MemoryConfig.from_mnm(path, environ={"OPENAI_API_KEY": "sk-x"}, data_dir=tmp_path / "elsewhere")
    assert config.openai_api_key == "sk-x" and Path(config.data_dir) == tmp_path / "elsewhere"


def test_other_accepted_forms(tmp_path):
    text = block('storage: sqlite("/srv/memory/zep.db")   # absolute', "vector: chroma(\"http://localhost:8000\")",
                 "graph: kuzu", 'embedding: openai("text-embedding-3-large", dimensions: 256)', "extractor: rules")
    config = MemoryConfig.from_mnm(write(tmp_path, text))
    assert str(config.data_dir) == "/srv/memory" and config.chroma_url == "http://localhost:8000"
    assert (config.embedding_model, config.embedding_dimensions) == ("text-embedding-3-large", 256)
    assert config.extractor_provider == "local"


@pytest.mark.parametrize(("entry", "message"), [
    ("vectors: auto", "line 4: unknown config key 'vectors'"),
    ("vector: qdrant", "line 4: vector store 'qdrant' is not supported"),
    ("graph: neo4j(\"bolt://x\")", "line 4: graph store 'neo4j' is not supported"),
    ("storage: postgres(\"db\")", "line 4: storage must be sqlite"),
    ("storage: sqlite(\"./data/memory.db\")", "line 4: the SQLite file is always zep.db"),
    ("embedding: openai(\"m\", dims: 3)", "line 4: openai(…) has no option dims"),
    ("embedding: openai(\"m\", dimensions: many)", "line 4: dimensions must be a positive integer"),
    ("extractor: openai(\"gpt-4o-mini\"", "line 4: cannot read"),
    ("extractor = openai(\"gpt-4o-mini\")", "line 4: expected `key: value`"),
    ("extractor: openai(\"a\", \"b\")", "line 4: openai(…) takes at most 1"),
    ("graph: auto\n  graph: kuzu", "line 5: graph is already set on line 4"),
])
def test_unknown_or_malformed_entries_name_the_line(tmp_path, entry, message):
    path = write(tmp_path, "# spec\n" + block("# settings", entry))
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")) as caught:
        MemoryConfig.from_mnm(path)
    assert str(path) in str(caught.value)


def test_a_missing_or_unclosed_block_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="no `config"):
        MemoryConfig.from_mnm(write(tmp_path, "namespace x {\n}\n"))
    with pytest.raises(ConfigError, match="line 2: the config block opened here is never closed"):
        MemoryConfig.from_mnm(write(tmp_path, "\nconfig {\n  graph: auto\n"))
    with pytest.raises(ConfigError, match="cannot read the spec file"):
        MemoryConfig.from_mnm(tmp_path / "missing.mnm")


def test_comments_and_hashes_inside_quotes(tmp_path):
    text = block("# the models", 'extractor: openai("my#model")  # a local one')
    assert MemoryConfig.from_mnm(write(tmp_path, text)).extractor_model == "my#model"
