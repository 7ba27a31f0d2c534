"""SQLite's own part of the fact rows: the lexical index written with them (:mod:`zep_core.stores.fts`).

The fact rows themselves are written and read once for both SQL stores (:mod:`..sql.facts`).
"""

from __future__ import annotations

from collections.abc import Sequence

from ...tenant import Tenant
from .. import fts
from ..sql.facts import SqlFactRows
from .connection import _CHUNK, Connection


class FactRows(SqlFactRows, Connection):
    """Fact rows with SQLite's lexical index: its scratch FTS5 table, its shared tables, its counted terms."""

    def _forget_hits(self, user: str | None = None) -> None:
        """Drop the counted rows per term of a user (None: of everyone): their rows changed."""
        if user is None:
            self._hits.clear()
        else:
            self._hits.pop(user, None)

    def _user_deleted(self, tenant: Tenant) -> None:
        self._forget_hits(tenant)

    def _lexical_changed(self, tenant: Tenant | None) -> None:
        self._forget_hits(tenant)

    def _legacy_lexical_tables(self) -> set[str]:
        """The FTS5 tables, one per user, of folders before schema version 6."""
        return {r[0] for r in self._rows("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE ? "
                                         "AND sql LIKE 'CREATE VIRTUAL TABLE%'", [fts.TABLE_PREFIX + "%"])}

    def _index_lexical(self, user: str, ids: Sequence[str] | None) -> None:
        """Add the user's facts with these ids (None: all of them) to the lexical tables (inside a transaction).

        Their texts go through the connection's scratch FTS5 table, which tokenizes them as
        the index always has; their terms, counts and lengths are written under the user's
        key, and the user's totals (rows, tokens) grow by theirs.
        """
        self._clear_scratch()  # a write cut short inside a savepoint may have left rows
        self._forget_hits(user)
        unique = [None] if ids is None else list(dict.fromkeys(ids))
        chunks = [None] if ids is None else [unique[i:i + _CHUNK] for i in range(0, len(unique), _CHUNK)]
        for chunk in chunks:  # a write: a full disk marks the folder, as any write does
            self._exec(fts.scratch_sql(chunk and ",".join("?" * len(chunk))), [user, *(chunk or ())])
        self._exec(fts.COUNT_SQL)
        for chunk in chunks:
            self._exec(fts.docs_sql(chunk and ",".join("?" * len(chunk))), [user, *(chunk or ())])
        self._exec(fts.POSTINGS_SQL, [user])
        self._exec("INSERT INTO lexical_stats(user_id, docs, tokens) SELECT ?1, count(*), coalesce(sum(ld.length), 0) "
                   "FROM lexical_docs ld WHERE ld.user_id = ?1 AND ld.doc IN (SELECT rowid FROM temp.lexical_scratch) "
                   "ON CONFLICT(user_id) DO UPDATE SET docs = docs + excluded.docs, tokens = tokens + excluded.tokens",
                   [user])
        self._clear_scratch()

    def _clear_scratch(self) -> None:
        for statement in fts.CLEAR_SQL:
            self._exec(statement)
