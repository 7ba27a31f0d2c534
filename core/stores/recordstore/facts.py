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

    def _unindex(self, user: Tenant, ids: Sequence[str]) -> None:
        """Take stored facts of a user out of their lexical index (before they are replaced)."""
        rowids = [r[0] for r in self._rows_in("SELECT rowid FROM facts INDEXED BY facts_key WHERE user_id = ? "
                                              "AND id IN ({ids})", ids, [user])]
        docs = self._lexical_docs(user, rowids) if rowids else {}
        if docs:
            self._forget_hits(user)
            self._many("DELETE FROM lexical_postings WHERE user_id = ? AND term = ? AND live = ? AND doc = ?",
                       [(user, term, live, doc) for doc, (live, _, _, terms, _) in docs.items() for term in terms])
            self._many("DELETE FROM lexical_docs WHERE user_id = ? AND doc = ?", [(user, doc) for doc in docs])
            self._exec("UPDATE lexical_stats SET docs = docs - ?, tokens = tokens - ? WHERE user_id = ?",
                       [len(docs), sum(d[4] for d in docs.values()), user])

    def _revalidate(self, user: Tenant, wanted: dict[int, tuple[int, str | None, str | None]]) -> None:
        """Give lexical rows their fact's new validity ``{doc: (live, valid_from, valid_until)}`` (where it changed).

        A reinforced fact's validity did not change: only the rows whose did are written.
        """
        changed = {doc: (old, wanted[doc]) for doc, old in self._lexical_docs(user, list(wanted)).items()
                   if old[:3] != wanted[doc]}
        self._many("UPDATE lexical_docs SET live = ?, valid_from = ?, valid_until = ? WHERE user_id = ? AND doc = ?",
                   [(*new, user, doc) for doc, (_, new) in changed.items()])
        self._many("UPDATE lexical_postings SET live = ? WHERE user_id = ? AND term = ? AND live = ? AND doc = ?",
                   [(new[0], user, term, old[0], doc) for doc, (old, new) in changed.items() if old[0] != new[0]
                    for term in old[3]])
