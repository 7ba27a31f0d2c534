"""A folder built by the last release before the tenants layout opens here, migrated, with nothing lost.

The release is taken from this repository's own history (``git archive``): its ``core``
package, imported as ``zep_core`` in a child process, builds a folder of many small users
and one larger one the way it always did — an FTS5 table and a Chroma collection per user
(schema version 5). This version opens it: the lexical index moves to the shared tables,
the small users' collections go (their vectors are searched in SQLite), and every fact,
episode and answer is what the release had.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import textwrap
from io import BytesIO
from pathlib import Path

import pytest
from zep_core import Memory, MemoryConfig
from zep_core.stores.schema import SCHEMA_VERSION

from tests.stores.state import lexical_index, lexical_tables

ROOT = Path(__file__).resolve().parents[2]
#: The last commit whose folders have a lexical table and a collection per user (schema version 5).
RELEASE = "00cbaf1"

BUILD = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])  # the release's zep_core, ahead of this checkout's
    import zep_core
    from zep_core import Memory, MemoryConfig
    from zep_core.stores.schema import SCHEMA_VERSION
    assert zep_core.__file__.startswith(sys.argv[1]), zep_core.__file__
    cities = ["Paris", "Berlin", "Lisbon", "Oslo", "Rome", "Porto"]
    answers = {}
    with Memory(MemoryConfig(data_dir=sys.argv[2])) as memory:
        for n in range(12):
            user = f"user-{n}"
            memory.conversation_end("s1", [
                {"role": "user", "name": f"Ann{n}", "content": f"I live in {cities[n % 6]} and I keep {n} bees."},
                {"role": "user", "name": f"Ann{n}", "content": f"My sister Rita{n} works at the aquarium."}],
                user_id=user)
            if n % 3 == 0:
                memory.conversation_end("s2", [{"role": "user", "name": f"Ann{n}",
                                                "content": f"I moved to {cities[(n + 1) % 6]}."}], user_id=user)
        memory.conversation_end("big", [{"role": "user", "name": "Bo", "content": f"I like thing{i}."}
                                        for i in range(60)], user_id="big")
        memory.flush()
        for user in [f"user-{n}" for n in range(12)] + ["big"]:
            answers[user] = {
                "facts": sorted(f.id for f in memory.facts(user)),
                "current": sorted(f.id for f in memory.facts(user) if f.is_current),
                "where": [f.content for f in memory.get_context("Where do I live? bees", user_id=user,
                                                                speaker=f"Ann{user[5:]}")][:3],
                "sister": [f.content for f in memory.get_context("Rita aquarium", user_id=user)][:2],
            }
        answers["thing"] = [f.content for f in memory.get_context("thing42", user_id="big", limit=1)]
    print(json.dumps({"schema": SCHEMA_VERSION, "answers": answers}))
""")


def _release(into: Path) -> Path:
    """The release's ``core`` package, importable as ``zep_core`` from ``into``."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs this repository's git history to take the release's code from")
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", RELEASE, "core"],
                             capture_output=True, timeout=120)
    if archive.returncode:
        pytest.skip(f"commit {RELEASE} is not in this clone's history (a shallow clone?): "
                    f"{archive.stderr.decode(errors='replace').strip()}")
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    (into / "zep_core").symlink_to(into / "core", target_is_directory=True)
    return into


def test_a_folder_built_by_the_release_migrates_on_open_and_loses_nothing(tmp_path):
    code, data = _release(tmp_path / "release"), tmp_path / "data"
    built = subprocess.run([sys.executable, "-c", BUILD, str(code), str(data)], cwd=tmp_path, capture_output=True,
                           text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-3000:]
    release = json.loads(built.stdout.strip().splitlines()[-1])
    assert release["schema"] == 5
    db = sqlite3.connect(data / "zep.db")
    assert len(lexical_tables(db)) == 13  # what is migrated: a lexical table per user
    db.close()

    with Memory(MemoryConfig(data_dir=data)) as memory:
        assert memory.check_consistency() == {}
        for user, was in release["answers"].items():
            if user == "thing":
                assert [f.content for f in memory.get_context("thing42", user_id="big", limit=1)] == was
                continue
            assert sorted(f.id for f in memory.facts(user)) == was["facts"]
            assert sorted(f.id for f in memory.facts(user) if f.is_current) == was["current"]
            assert [f.content for f in memory.get_context("Where do I live? bees", user_id=user,
                                                          speaker=f"Ann{user[5:]}")][:3] == was["where"]
            assert [f.content for f in memory.get_context("Rita aquarium", user_id=user)][:2] == was["sister"]
        assert len(lexical_index(memory)) == sum(len(a["facts"]) for u, a in release["answers"].items()
                                                 if u != "thing")
        vectors = memory._stores.vectors
        assert not any(vectors.promoted(u) for u in memory.users())  # all under the threshold: exact now
        assert vectors.collection_ids() == {} or all(not ids for ids in vectors.collection_ids().values())
        memory.conversation_end("s3", [{"role": "user", "name": "Ann1", "content": "I keep goats too."}],
                                user_id="user-1")
        assert "goats" in memory.context_block("What animals do I keep?", user_id="user-1", speaker="Ann1")
    db = sqlite3.connect(data / "zep.db")
    assert lexical_tables(db) == []
    assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (str(SCHEMA_VERSION),)
    db.close()
