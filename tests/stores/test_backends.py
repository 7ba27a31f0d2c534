"""The registry of backends: which one a config chooses, what an unknown one says, what each says of itself."""

from __future__ import annotations

import pytest
from zep_core import ConfigError, Memory, MemoryConfig
from zep_core.cli import main
from zep_core.stores.backends import BACKENDS, Backend, backend_for, is_database_url


def test_a_config_without_a_url_lives_in_its_data_folder_and_a_url_chooses_by_its_scheme():
    assert backend_for(MemoryConfig()).name == "sqlite"
    for url in ("postgresql://zep@db/memory", "postgres://zep@db/memory", "PostgreSQL://zep@db/memory"):
        assert backend_for(MemoryConfig(database_url=url)).name == "postgres", url


def test_an_unknown_scheme_is_one_clear_error_naming_the_known_ones_and_never_the_password(tmp_path, embedder):
    config = MemoryConfig(data_dir=tmp_path / "data", database_url="mysql://root:secret@localhost/memory",
                          embedder=embedder)
    with pytest.raises(ConfigError) as chosen:
        backend_for(config)
    with pytest.raises(ConfigError) as opened:
        Memory(config)
    with pytest.raises(ConfigError) as by_open:
        Memory.open("mysql://root:secret@localhost/memory", embedder=embedder)
    for error in (chosen.value, opened.value, by_open.value):
        text = str(error)
        assert "names no database zep-memory knows: it starts 'mysql://'" in text, text
        assert "postgresql:// (PostgreSQL), postgres:// (PostgreSQL)" in text and "data folder" in text, text
        assert "secret" not in text
    assert not (tmp_path / "data").exists()  # refused before anything was made
    with pytest.raises(ConfigError, match=r"it is not a URL \(scheme://…\)"):
        backend_for(MemoryConfig(database_url="db.example.com/memory"))


def test_the_cli_refuses_an_unknown_scheme_with_exit_code_2_and_the_known_ones(tmp_path, capsys):
    code = main(["stats", "--database-url", "sqlserver://sa:secret@db/memory", "--data", str(tmp_path / "scratch")])
    err = capsys.readouterr().err
    assert code == 2
    assert "it starts 'sqlserver://'" in err and "postgresql://" in err and "secret" not in err


def test_a_path_is_a_data_folder_and_only_a_known_url_is_a_database():
    assert not is_database_url("./data") and not is_database_url("/srv/memory")
    assert not is_database_url("C:\\memory") and not is_database_url("./postgresql://x")
    assert is_database_url("postgresql://zep@db/memory")
    with pytest.raises(ConfigError, match="'redis://'"):
        is_database_url("redis://localhost/0")


def test_a_database_is_shown_with_its_password_hidden_and_saved_without_it(tmp_path):
    config = MemoryConfig(data_dir=tmp_path, database_url="postgresql://zep:s3cret@db:5432/memory?sslmode=require")
    backend = backend_for(config)
    assert backend.public_url(config) == "postgresql://zep:***@db:5432/memory?sslmode=require"
    assert backend.where(config) == backend.public_url(config)
    assert backend.reference(config) == {"database_url": "postgresql://zep@db:5432/memory?sslmode=require",
                                         "data_dir": str(tmp_path.resolve())}


def test_a_data_folder_has_no_url_and_is_saved_by_its_folder(tmp_path):
    config = MemoryConfig(data_dir=tmp_path / "data")
    backend = backend_for(config)
    assert backend.public_url(config) is None and backend.saved_url(config) is None
    assert backend.where(config) == str((tmp_path / "data").resolve())
    assert backend.reference(config) == {"data_dir": str((tmp_path / "data").resolve())}


def test_a_data_folder_says_why_it_holds_no_memory_until_one_is_stored(tmp_path, make_memory):
    config = MemoryConfig(data_dir=tmp_path / "data")
    backend = backend_for(config)
    assert backend.missing(config) == f"the data folder {tmp_path / 'data'} does not exist"
    (tmp_path / "data").mkdir()
    assert backend.missing(config) == f"the data folder {tmp_path / 'data'} holds no memory (no zep.db)"
    make_memory(tmp_path / "data").close()
    assert backend.missing(config) is None
    assert backend.remove_if_unused(config) is None  # a memory is there: nothing to undo


def test_a_first_open_that_stored_nothing_is_undone_and_one_that_stored_is_kept(tmp_path, make_memory):
    from zep_core import Message

    for stored in (False, True):
        folder = tmp_path / f"stored-{stored}"
        config = MemoryConfig(data_dir=folder)
        undo = backend_for(config).remove_if_unused(config)
        memory = make_memory(folder)
        if stored:
            memory.conversation_end("s1", [Message("I live in Paris.", name="Ann")], user_id="ann")
        memory.close()
        undo()
        assert folder.exists() is stored


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
def test_every_backend_says_what_stats_doctor_and_rebuild_print(backend):
    """An entry is complete: every text the CLI prints of a backend is the entry's own."""
    for text in ("place", "records", "own_vector_index", "graph", "agree", "rebuilds", "rebuilt"):
        assert isinstance(getattr(backend, text), str) and getattr(backend, text), text
    assert "{users}" in backend.own_vector_index
    assert backend.parts and all(key != "total" for key, _ in backend.parts)
    for method in ("open", "disk_use"):  # what a backend must do itself
        assert getattr(type(backend), method) is not getattr(Backend, method), method


def test_each_scheme_chooses_one_backend_and_one_backend_is_the_default():
    schemes = [s for b in BACKENDS for s in b.schemes]
    assert len(schemes) == len(set(schemes))
    assert [b.name for b in BACKENDS if not b.schemes] == [BACKENDS[0].name]
    assert len({b.name for b in BACKENDS}) == len(BACKENDS)
