"""SQLite's own part of what retrieval reads: the lexical ranking by its rows, the history's vectors, the checks.

The rest is written once for both SQL stores (:mod:`..sql.search`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import numpy as np

from ...errors import RecordStoreError
from ...tenant import Tenant, key
from .. import fts
from ..rows import FactRow
from ..sql.search import SqlSearchRows
from .connection import _MAX_STEMS, Connection

_ROWID = len(FactRow._fields)  # the rowid follows the fact's columns, then the vector


#: The ranking's rows as fact ids, in its order: each fact found by its rowid, and the user's (``?1``). The unary
#: ``+`` has SQLite find the facts by rowid, not walk the user's facts.
_BY_FACT = ("SELECT f.id, r.score FROM ({ranking}) r JOIN facts f ON f.rowid = r.doc AND +f.user_id = ?1 "
            "ORDER BY r.score DESC, r.doc")


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

    def lexical_ranking(self, tenant: Tenant, text: str, *, limit: int, as_of: str | None = None,
                        context_weight: float = 1.0) -> list[tuple[str, float]]:
        """The user's best ``limit`` current (or as-of) facts by the words of ``text``: ``(fact id, BM25)``, best first.

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
                missing = [t for t in dict.fromkeys(terms) if (t, context) not in known]
                if missing:
                    sql = fts.postings_df(context, len(missing))
                    found = dict(self.db.execute(sql, [user_id, *missing]).fetchall())
                    known.update(((t, context), found.get(t, 0)) for t in missing)
                hits = {t: known[(t, context)] for t in terms}
                weighed = [(t, fts.idf(docs, hits[t])) for t in terms
                           if hits[t] and not (hits[t] >= fts.COMMON_MIN_ROWS and 2 * hits[t] > docs)]
                if not weighed:
                    return []
                sql = _BY_FACT.format(ranking=fts.ranking_sql(len(weighed), as_of=as_of is not None, context=context))
                rows = self.db.execute(sql, [user_id, tokens / docs, float(context_weight), limit, *at,
                                             *(v for pair in weighed for v in pair)]).fetchall()
            except sqlite3.Error as exc:
                raise RecordStoreError(f"SQLite read failed in {self.path}: {exc}") from exc
        return [(doc, score) for doc, score in rows]

    def _terms_of(self, words: Sequence[str]) -> list[str | None]:
        """Each word's FTS5 term (:func:`~zep_core.stores.fts.word_terms`, on this connection; call under the lock)."""
        return fts.word_terms(self.db.conn, words, self._stems)
