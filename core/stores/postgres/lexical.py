"""The lexical index on PostgreSQL: the SQLite store's three shared tables, its terms, its BM25.

The tables and their meaning are :mod:`zep_core.stores.fts`'s. A fact's index text is built
by the same expressions, in PostgreSQL's SQL; its terms come from FTS5's own tokenizer
(:class:`~zep_core.stores.fts.Tokenizer`, an in-memory SQLite of this process), and the
ranking is the same BM25 statement. So a tenant's lexical scores are the SQLite store's,
from that tenant's rows alone. No count is cached in the process: another process may
write the same database.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...tenant import Tenant, key
from .. import fts
from .connection import PgConnection

#: A fact's index text (``text``) and the end of the message before its source turn (``context``): see fts._TEXT.
_TEXTS = """
SELECT f.rowid,
       f.content || ' ' || f.subject
       || CASE WHEN f.predicate = 'statement' THEN ''
               ELSE ' ' || replace(f.predicate, '_', ' ') || ' ' || f.object || ' ' || coalesce((
                    SELECT substr(s.content, 1, 300) FROM messages s
                    WHERE s.user_id = f.user_id AND s.episode_id = f.episode_id
                      AND s.message_id = (f.source_message_ids::jsonb ->> 0) LIMIT 1), '') END,
       coalesce((SELECT right(p.content, 200) FROM messages m JOIN messages p
                 ON p.user_id = m.user_id AND p.episode_id = m.episode_id AND p.seq = m.seq - 1
                 WHERE m.user_id = f.user_id AND m.episode_id = f.episode_id
                   AND m.message_id = (f.source_message_ids::jsonb ->> 0)
                   AND (p.role IS DISTINCT FROM m.role OR p.name IS DISTINCT FROM m.name) LIMIT 1), ''),
       (f.valid_until IS NULL AND f.superseded_by IS NULL)::int, f.valid_from, f.valid_until
FROM facts f WHERE f.user_id = %s
"""


def _ranking_sql(terms: int, *, as_of: bool, context: bool) -> str:
    """:func:`zep_core.stores.fts.ranking_sql` in PostgreSQL's SQL (the same score, the same order)."""
    values = ", ".join(f"(%(t{i})s::text, %(i{i})s::float8)" for i in range(terms))
    text_only = "" if context else " AND lp.tf_text > 0"
    f = "(lp.tf_text + %(cw)s * lp.tf_context)"
    score = (f"sum(q.idf * ({f} * {fts.K1 + 1.0!r}) / ({f} + {fts.K1!r} * "
             f"({1.0 - fts.B!r} + {fts.B!r} * lp.length / %(avgdl)s)))")
    if not as_of:
        source = f"q JOIN lexical_postings lp ON lp.user_id = %(u)s AND lp.term = q.term AND lp.live = 1{text_only}"
    else:
        source = (f"q JOIN lexical_postings lp ON lp.user_id = %(u)s AND lp.term = q.term{text_only} "
                  "JOIN lexical_docs ld ON ld.user_id = %(u)s AND ld.doc = lp.doc "
                  "AND ld.valid_from <= %(at)s AND (ld.valid_until IS NULL OR ld.valid_until > %(at)s)")
    return (f"WITH q(term, idf) AS (VALUES {values}) SELECT lp.doc, {score} AS score FROM {source} "
            "GROUP BY lp.doc ORDER BY score DESC, lp.doc LIMIT %(n)s")


class PgLexicalRows(PgConnection):
    """The lexical index on PostgreSQL: written with the facts, ranked by the SQLite store's BM25."""

    _tokenizer: fts.Tokenizer | None = None

    @property
    def tokenizer(self) -> fts.Tokenizer:
        """FTS5's tokenizer (one per store, made on first use)."""
        if self._tokenizer is None:
            self._tokenizer = fts.Tokenizer()
        return self._tokenizer

    def _index_lexical(self, tenant: Tenant, ids: Sequence[str] | None) -> None:
        """Add the tenant's facts with these ids (None: all of them) to the lexical tables (inside a transaction)."""
        sql, params = _TEXTS, [tenant]
        rows: list[tuple] = []
        if ids is None:
            rows = self._rows(tenant, sql, params)
        else:
            rows = self._rows_in(tenant, sql + " AND f.id = ANY(%s)", ids, params)
        if not rows:
            return
        counts = self.tokenizer.counts([(r[0], r[1], r[2]) for r in rows])
        docs, postings, tokens = [], [], 0
        for doc, _, _, live, valid_from, valid_until in rows:
            terms = counts[doc]
            length = 1 + sum(a + b for a, b in terms.values())  # +1: FTS5's row had the state word
            tokens += length
            docs.append((tenant, doc, length, live, valid_from, valid_until, " ".join(terms)))
            postings += [(tenant, term, live, doc, a, b, length) for term, (a, b) in terms.items()]
        self._many(tenant, "INSERT INTO lexical_docs(user_id, doc, length, live, valid_from, valid_until, terms) "
                           "VALUES (%s, %s, %s, %s, %s, %s, %s)", docs)
        self._many(tenant, "INSERT INTO lexical_postings(user_id, term, live, doc, tf_text, tf_context, length) "
                           "VALUES (%s, %s, %s, %s, %s, %s, %s)", postings)
        self._exec(tenant, "INSERT INTO lexical_stats(user_id, docs, tokens) VALUES (%s, %s, %s) ON CONFLICT (user_id) "
                           "DO UPDATE SET docs = lexical_stats.docs + excluded.docs, "
                           "tokens = lexical_stats.tokens + excluded.tokens", [tenant, len(docs), tokens])

    def lexical_ranking(self, tenant: Tenant, text: str, *, limit: int, as_of: str | None = None,
                        context_weight: float = 1.0) -> list[tuple[str, float]]:
        """The tenant's best ``limit`` current (or as-of) facts by the words of ``text``: ``(fact id, BM25)``.

        As the SQLite store's (:meth:`~zep_core.stores.recordstore.search.SearchRows.lexical_ranking`):
        the words taken literally, FTS5's terms, the tenant's own statistics, a term in more than
        half of the tenant's rows (and at least :data:`~zep_core.stores.fts.COMMON_MIN_ROWS`) not
        looked up, equal scores to the older row.
        """
        tenant = key(tenant)
        context = context_weight > 0
        words = fts.query_terms(text)
        if not words or limit <= 0:
            return []
        stats = self._rows(tenant, "SELECT docs, tokens FROM lexical_stats WHERE user_id = %s", [tenant])
        if not stats or stats[0][0] <= 0:
            return []  # the tenant has no facts yet
        docs, tokens = stats[0]
        terms = [t for t in self.tokenizer.terms_of(words) if t is not None]
        if not terms:
            return []
        hits = dict(self._rows(tenant, "SELECT term, count(*) FROM lexical_postings WHERE user_id = %s "
                                       f"AND term = ANY(%s){'' if context else ' AND tf_text > 0'} GROUP BY term",
                               [tenant, sorted(set(terms))]))
        weighed = [(t, fts.idf(docs, hits[t])) for t in terms
                   if hits.get(t) and not (hits[t] >= fts.COMMON_MIN_ROWS and 2 * hits[t] > docs)]
        if not weighed:
            return []
        params: dict[str, object] = {"u": tenant, "avgdl": tokens / docs, "cw": float(context_weight), "n": limit,
                                     "at": as_of}
        for i, (term, weight) in enumerate(weighed):
            params[f"t{i}"], params[f"i{i}"] = term, weight
        rows = self._rows(tenant, "SELECT f.id, r.score FROM (" + _ranking_sql(len(weighed), as_of=as_of is not None,
                                                                          context=context)
                          + ") r JOIN facts f ON f.rowid = r.doc AND f.user_id = %(u)s ORDER BY r.score DESC, r.doc",
                          params)
        return [(doc, float(score)) for doc, score in rows]
