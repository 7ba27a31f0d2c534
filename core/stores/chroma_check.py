"""Check, in a child process, a Chroma folder that a crashed process was writing.

Chroma 1.5 writes its HNSW index files in place. A process killed while writing them
leaves files that crash (SIGSEGV) whichever process loads them next — every later
open of the data folder would die (chroma-core/chroma#7238). A segfault cannot be
caught, so after an unclean shutdown the collections whose files changed while the
crashed process held the folder are loaded in a short-lived child process first. If
the child dies, :class:`zep_core.Memory` rebuilds the vector index from SQLite: it is
derived data. After a clean close, or when nothing changed, no child is started.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

__all__ = ["changed_segments", "chroma_loads"]

log = logging.getLogger("zep_core")

#: The child: load each named collection (count and a one-vector query), then print "ok".
#: It drives Chroma's Rust bindings directly (0.3 s) and falls back to the public API
#: (1 s of imports) if those bindings have changed.
_PROBE = r"""
import json, sqlite3, sys
path, segments = sys.argv[1], set(json.loads(sys.stdin.read()))  # on stdin: thousands overflow argv
conn = sqlite3.connect(f"file:{path}/chroma.sqlite3?mode=ro", uri=True)
try:  # Chroma's own catalogue: which collection each segment folder belongs to, and its dimension
    rows = conn.execute("SELECT s.id, c.id, c.name, c.dimension FROM segments s JOIN collections c "
                        "ON s.collection = c.id").fetchall()
    targets = sorted({(cid, name, dim) for sid, cid, name, dim in rows if sid in segments})
except sqlite3.Error:
    targets = None  # unknown layout: load every collection
conn.close()
T, D = "default_tenant", "default_database"
try:
    import chromadb_rust_bindings as rb
    config = rb.SqliteDBConfig(hash_type=rb.MigrationHash.MD5, migration_mode=rb.MigrationMode.Validate,
                               url=path + "/chroma.sqlite3")
    api = rb.Bindings(allow_reset=False, sqlite_db_config=config, persist_path=path, hnsw_cache_size=64)
    if targets is None:
        targets = [(str(c.id), c.name, c.dimension) for c in api.list_collections(None, None, T, D)]
    for cid, _, dim in targets:
        if api.count(cid, T, D) and dim:
            api.query(cid, None, [[0.5] * dim], 1, None, None, [], T, D)
except Exception:
    import chromadb
    from chromadb.config import Settings
    client = chromadb.PersistentClient(path=path, settings=Settings(anonymized_telemetry=False))
    if targets is None:
        targets = [(None, c.name, None) for c in client.list_collections()]
    for _, name, dim in targets:
        col = client.get_collection(name)
        if col.count() and dim:
            col.query(query_embeddings=[[0.5] * dim], n_results=1, include=[])
print("ok")
"""


def changed_segments(chroma_dir: Path, since: float, *, slack_s: float = 5.0) -> list[str]:
    """Segment folders holding a file modified at or after ``since`` (epoch seconds)."""
    if not chroma_dir.is_dir():
        return []
    changed = []
    for folder in chroma_dir.iterdir():
        if folder.is_dir() and any(f.stat().st_mtime >= since - slack_s for f in folder.iterdir() if f.is_file()):
            changed.append(folder.name)
    return sorted(changed)


def chroma_loads(chroma_dir: Path, since: float, *, timeout_s: float = 600.0) -> bool:
    """Whether the collections written since ``since`` load without crashing a process.

    Returns True at once when no segment changed since then.
    """
    segments = changed_segments(chroma_dir, since)
    if not segments:
        return True
    try:
        child = subprocess.run([sys.executable, "-c", _PROBE, str(chroma_dir)], input=json.dumps(segments),
                               cwd=chroma_dir, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        log.warning("loading the Chroma index in %s took over %.0f s; treating it as damaged", chroma_dir, timeout_s)
        return False
    if child.returncode == 0 and child.stdout.strip().endswith("ok"):
        return True
    log.warning("the Chroma index in %s does not load after an unclean shutdown (exit %s): %s", chroma_dir,
                child.returncode, child.stderr.strip()[-500:])
    return False
