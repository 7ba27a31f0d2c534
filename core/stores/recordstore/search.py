"""SQLite's own part of what retrieval reads: the lexical ranking by its rows, the history's vectors, the checks.

The rest is written once for both SQL stores (:mod:`..sql.search`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence

import numpy as np

from ...errors import RecordStoreError
from ...tenant import Tenant, key
from .. import fts
from ..schema import FactRow
from ..sql.search import SqlSearchRows
from .connection import _MAX_STEMS, Connection

_ROWID = len(FactRow._fields)  # the rowid follows the fact's columns, then the vector


class SearchRows(SqlSearchRows, Connection):
    """SQLite's own part of what retrieval reads: its lexical ranking, the history's exact search, lexical checks."""

    def history_search(self, tenant: Tenant, vector: np.ndarray, k: int, as_of: str) -> list[tuple[str, float]]:
        """The ``k`` superseded facts of a user valid at ``as_of`` nearest to ``vector``: ``(id, cosine)``, best first.

        What an ``as_of`` query needs beside the current facts' index: the facts that were
        true then and are no longer. Their vectors are the stored ones (unit length, as
        the embedder wrote them), searched exactly: only the facts valid at that moment
        are read, so the search grows with what was true then, not with the history.
        Vectors that cannot be compared (another dimension, not finite) are skipped.
        """
        user_id = key(tenant)
        rows = self._rows("SELECT id, embedding FROM facts WHERE user_id = ? AND "
                          "(valid_until IS NOT NULL OR superseded_by IS NOT NULL) AND valid_from <= ? AND "
                          "(valid_until IS NULL OR valid_until > ?)", [user_id, as_of, as_of])
        width = 4 * len(vector)
        rows = [r for r in rows if len(r[1]) == width]
        if not rows or k <= 0:
            return []
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), len(vector))
        scores = matrix @ np.asarray(vector, dtype=np.float32)
        finite = np.isfinite(scores)
        order = [i for i in np.argsort(-np.where(finite, scores, -np.inf), kind="stable")[:k] if finite[i]]
        return [(rows[i][0], float(scores[i])) for i in order]

    def _ranked_docs(self, tenant: Tenant, text: str, *, limit: int, as_of: str | None = None,
                     context_weight: float = 1.0) -> list[tuple[int, float]]:
        """The user's best ``limit`` current (or as-of) lexical rows by the words of ``text``: ``(doc, BM25)``.

        The words are taken literally (:func:`~zep_core.stores.fts.query_terms`: words, never
        syntax), made into terms by FTS5's tokenizer, and looked up under the user's key
        only; the BM25 statistics (rows, tokens per row, rows with the term) are the user's
        own, so another tenant's facts change no score. The scores are FTS5's ``bm25()``
        over a table of the user's facts, computed in SQLite (:func:`~zep_core.stores.fts.ranking_sql`).
        The message before a fact counts ``context_weight`` times the fact's own words (0: not
        looked up). Equal scores go to the older row. A term in more than half of the user's rows
        (and at least :data:`~zep_core.stores.fts.COMMON_MIN_ROWS`) is not looked up: it has
        no BM25 weight.
        """
        user_id = key(tenant)
        context = context_weight > 0
        words = fts.query_terms(text)
        if not words or limit <= 0:
            return []
        at = [as_of] if as_of is not None else []
        with self._lock:
            try:
                stats = self.db.execute("SELECT docs, tokens FROM lexical_stats WHERE user_id = ?",
                                        [user_id]).fetchone()
                if not stats or stats[0] <= 0:
                    return []  # the user has no facts yet
                docs, tokens = stats
                terms = [t for t in self._terms_of(words) if t is not None]
                known = self._hits.setdefault(user_id, {})
                if len(known) > _MAX_STEMS:
                    known.clear()
                for t in dict.fromkeys(terms):
                    if (t, context) not in known:
                        known[(t, context)] = self.db.execute(fts.postings_df(context), [user_id, t]).fetchone()[0]
                hits = {t: known[(t, context)] for t in terms}
                weighed = [(t, fts.idf(docs, hits[t])) for t in terms
                           if hits[t] and not (hits[t] >= fts.COMMON_MIN_ROWS and 2 * hits[t] > docs)]
                if not weighed:
                    return []
                sql = fts.ranking_sql(len(weighed), as_of=as_of is not None, context=context)
                rows = self.db.execute(sql, [user_id, tokens / docs, float(context_weight), limit, *at,
                                             *(v for pair in weighed for v in pair)]).fetchall()
            except sqlite3.Error as exc:
                raise RecordStoreError(f"SQLite read failed in {self.path}: {exc}") from exc
        return [(doc, score) for doc, score in rows]

    def _terms_of(self, words: Sequence[str]) -> list[str | None]:
        """Each word's FTS5 term (:func:`~zep_core.stores.fts.word_terms`, on this connection; call under the lock)."""
        return fts.word_terms(self.db.conn, words, self._stems)

    def _legacy_lexical_tables(self) -> set[str]:
        """The FTS5 tables, one per user, of folders before schema version 6."""
        return {r[0] for r in self._rows("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE ? "
                                         "AND sql LIKE 'CREATE VIRTUAL TABLE%'", [fts.TABLE_PREFIX + "%"])}

    def rebuild_lexical(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Rebuild the lexical index from the facts (call inside :meth:`transaction`); returns its rows.

        Folders from before schema version 6 lose their per-user FTS5 tables here.
        ``progress(users done, users)`` is called as it goes.
        """
        for table in self._legacy_lexical_tables():
            self._exec(f"DROP TABLE {table}")
        for table in ("lexical_postings", "lexical_docs", "lexical_stats"):
            self._exec(f"DELETE FROM {table}")
        self._forget_hits()
        users = [r[0] for r in self._rows("SELECT DISTINCT user_id FROM facts")]
        for n, user in enumerate(users, 1):
            self._index_lexical(user, None)
            if progress is not None:
                progress(n, len(users))
        return self._rows("SELECT count(*) FROM lexical_docs")[0][0]

    def lexical_problems(self, tenant: Tenant | None = None) -> dict[str, list[str]]:
        """What is wrong with the lexical index.

        Facts missing from it, rows whose validity differs from their fact's, rows with no
        fact, postings that disagree with their row, totals that differ from the rows', and
        rows of no user.
        """
        user_id = None if tenant is None else key(tenant)
        users = [user_id] if user_id is not None else [r[0] for r in self._rows("SELECT DISTINCT user_id FROM facts")]
        live = "(f.valid_until IS NULL AND f.superseded_by IS NULL)"
        found: dict[str, list[str]] = {"lexical_missing": [], "lexical_validity_differs": [], "lexical_orphans": [],
                                       "lexical_postings_differ": [], "lexical_totals_differ": []}
        for user in users:
            found["lexical_missing"] += [r[0] for r in self._rows(
                "SELECT id FROM facts f WHERE user_id = ? AND NOT EXISTS "
                "(SELECT 1 FROM lexical_docs ld WHERE ld.user_id = f.user_id AND ld.doc = f.rowid)", [user])]
            found["lexical_validity_differs"] += [r[0] for r in self._rows(
                f"SELECT f.id FROM facts f JOIN lexical_docs ld ON ld.user_id = f.user_id AND ld.doc = f.rowid "
                f"WHERE f.user_id = ? AND (ld.live IS NOT {live} OR ld.valid_from IS NOT f.valid_from "
                "OR ld.valid_until IS NOT f.valid_until)", [user])]
            found["lexical_orphans"] += [f"{user}: rowid {r[0]}" for r in self._rows(
                "SELECT ld.doc FROM lexical_docs ld WHERE ld.user_id = ? AND NOT EXISTS "
                "(SELECT 1 FROM facts f WHERE f.rowid = ld.doc AND f.user_id = ld.user_id)", [user])]
            found["lexical_postings_differ"] += [f"{user}: rowid {r[0]}" for r in self._rows(
                "SELECT DISTINCT lp.doc FROM lexical_postings lp WHERE lp.user_id = ? AND NOT EXISTS "
                "(SELECT 1 FROM lexical_docs ld WHERE ld.user_id = lp.user_id AND ld.doc = lp.doc "
                "AND ld.live = lp.live AND ld.length = lp.length "
                "AND instr(' ' || ld.terms || ' ', ' ' || lp.term || ' '))", [user])]
            totals = self._rows("SELECT (SELECT count(*) FROM lexical_docs WHERE user_id = ?1), "
                                "(SELECT coalesce(sum(length), 0) FROM lexical_docs WHERE user_id = ?1), "
                                "(SELECT docs FROM lexical_stats WHERE user_id = ?1), "
                                "(SELECT tokens FROM lexical_stats WHERE user_id = ?1)", [user])[0]
            if totals[0] and (totals[0], totals[1]) != (totals[2], totals[3]):
                found["lexical_totals_differ"].append(f"{user}: {totals[0]} rows of {totals[1]} tokens, totals say "
                                                      f"{totals[2]} of {totals[3]}")
        if user_id is None:
            known = set(users)
            found["lexical_index_of_no_user"] = sorted(
                {r[0] for r in self._rows("SELECT DISTINCT user_id FROM lexical_docs")} - known
                | {f"table {t}" for t in self._legacy_lexical_tables()})
        return {k: v for k, v in found.items() if v}
