"""The lexical index: BM25 over each user's facts, in tables shared by every user.

Each fact has one row in ``lexical_docs`` and one row per term in ``lexical_postings``,
keyed by ``user_id`` first; ``lexical_stats`` keeps each user's totals (rows, tokens). A
lexical query reads the user's own key range only, so it can only find that user's facts,
and its BM25 statistics (how rare a word is, how long a row is on average) come from that
user's rows alone — another tenant's words change nothing. No table is made per user:
a folder of 100,000 users has the same three tables as one of one (schema version 6; until
5 each user had an FTS5 table, whose schema rows made SQLite's first statement grow with the
number of users, 2.2 s at 3,000). The record store writes it in the same transaction as the
facts (insert, replace, ``forget_user``, import) and rebuilds it from them (migration,
``rebuild()``).

**What a fact is found by.** Its *index text* is the fact's content, its subject, predicate
and object words and, for a canonical fact, the words of the message it came from (column
``text``), and — for a fact drawn from a reply — the end of the message said just before
its source turn in the episode, the question the reply answers (column ``context``), so
"Where did Kim's grandmother grow up?" finds "Kim: Gyeongju, near the coast.". The texts
are tokenized by FTS5 itself (``porter unicode61 remove_diacritics 2``, in a scratch table
of the connection's ``temp`` schema, read back through ``fts5vocab``), so the terms, and
the BM25 scores :func:`ranking_sql` computes in SQLite from the user's own totals, are
those an FTS5 table of the user's facts gave (``tests/core/test_lexical.py`` compares the two).

**Validity.** Each row and posting keeps whether its fact is current (``live``) and each
row when its fact holds (``valid_from``, ``valid_until``): a query of what is true now reads
the ``live = 1`` range of each term's postings, and one ``as_of`` a moment checks the rows'
validity; no fact row is read. The record store updates them whenever a fact's validity
changes, in the same transaction.

User input is always taken literally: :func:`query_terms` keeps only the words of the text,
each tokenized as a word; nothing in it is ever syntax.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

__all__ = ["COMMON_MIN_ROWS", "SCHEMA", "SCRATCH", "STOPWORDS", "TABLE_PREFIX", "Tokenizer", "idf", "postings_df",
           "query_terms", "ranking_sql", "word_terms"]

#: The names of the per-user FTS5 tables of folders before schema version 6 (dropped on open).
TABLE_PREFIX = "facts_fts_"

#: The English words a question shares with every fact; they are not looked up.
STOPWORDS = frozenset("""
a about above after again against all am an and any are aren't as at be because been before being below
between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each
few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself
him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most mustn't
my myself no nor not of off on once only or other ought our ours ourselves out over own same shan't she she'd
she'll she's should shouldn't so some such than that that's the their theirs them themselves then there there's
these they they'd they'll they're they've this those through to too under until up very was wasn't we we'd
we'll we're we've were weren't what what's when when's where where's which while who who's whom why why's with
won't would wouldn't you you'd you'll you're you've your yours yourself yourselves s t d ll m re ve
""".split())

_WORD = re.compile(r"[^\W_]+", re.UNICODE)  # letters and digits; FTS5's unicode61 splits on the rest

# The index text of the fact row ``f``, two SQL expressions. ``text``: content, subject,
# the predicate's words and the object, and for a canonical fact the start (300 characters)
# of the message it was drawn from: the words its speaker used ("I moved to Berlin" finds
# "Kim lives in Berlin."), since no quote of that message is kept beside it (rule 7 of
# zep_core.providers.talk). A statement's content already quotes its message.
# ``context``: the end (200 characters) of the message before the fact's first source
# message in its episode, when someone else said it — a reply is found by the question
# it answers, which usually ends that message; the rest of a long turn is left out.
_TEXT = """
{f}.content || ' ' || {f}.subject
|| CASE WHEN {f}.predicate = 'statement' THEN ''
        ELSE ' ' || replace({f}.predicate, '_', ' ') || ' ' || {f}.object || ' ' || coalesce((
             SELECT substr(s.content, 1, 300) FROM messages s INDEXED BY messages_key
             WHERE s.user_id = {f}.user_id AND s.episode_id = {f}.episode_id
               AND s.message_id = json_extract({f}.source_message_ids, '$[0]')
             LIMIT 1), '') END
"""
_CONTEXT = """
coalesce((SELECT substr(p.content, -200) FROM messages m INDEXED BY messages_key JOIN messages p INDEXED BY messages_key
          ON p.user_id = m.user_id AND p.episode_id = m.episode_id AND p.seq = m.seq - 1
          WHERE m.user_id = {f}.user_id AND m.episode_id = {f}.episode_id
            AND m.message_id = json_extract({f}.source_message_ids, '$[0]')
            AND (p.role IS NOT m.role OR p.name IS NOT m.name)
          LIMIT 1), '')
"""


#: The tables of the lexical index, shared by every user and keyed by ``user_id`` first, so a
#: user's rows are contiguous and every read is a range of the primary key. ``doc`` is the
#: fact's ``rowid``; ``length`` its token count as FTS5 counts it (text, context, and the one
#: ``state`` word FTS5's row had); ``terms`` its distinct terms (space-separated: a term never
#: holds a space), so its postings are found by key when it changes or goes.
SCHEMA = """
CREATE TABLE IF NOT EXISTS lexical_docs (
    user_id TEXT NOT NULL, doc INTEGER NOT NULL, length INTEGER NOT NULL, live INTEGER NOT NULL,
    valid_from TEXT, valid_until TEXT, terms TEXT NOT NULL,
    PRIMARY KEY (user_id, doc)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS lexical_postings (
    user_id TEXT NOT NULL, term TEXT NOT NULL, live INTEGER NOT NULL, doc INTEGER NOT NULL,
    tf_text INTEGER NOT NULL, tf_context INTEGER NOT NULL, length INTEGER NOT NULL,
    PRIMARY KEY (user_id, term, live, doc)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS lexical_stats (
    user_id TEXT PRIMARY KEY, docs INTEGER NOT NULL, tokens INTEGER NOT NULL) WITHOUT ROWID;
"""

_TOKENIZER = "porter unicode61 remove_diacritics 2"

#: The connection's own scratch tables (the ``temp`` schema: no table in the database file). The
#: texts of the facts being indexed go through an FTS5 table with the tokenizer the index has
#: always had, and ``fts5vocab`` reads each token back: a fact's terms are FTS5's, stemmed by its
#: Porter stemmer, so the rankings are those of an FTS5 table per user.
SCRATCH = f"""
CREATE VIRTUAL TABLE IF NOT EXISTS temp.lexical_scratch USING fts5(
    text, context, content = '', tokenize = '{_TOKENIZER}');
CREATE VIRTUAL TABLE IF NOT EXISTS temp.lexical_tokens USING fts5vocab(temp, lexical_scratch, instance);
CREATE TABLE IF NOT EXISTS temp.lexical_counts (
    doc INTEGER NOT NULL, term TEXT NOT NULL, tf_text INTEGER NOT NULL, tf_context INTEGER NOT NULL,
    PRIMARY KEY (doc, term)) WITHOUT ROWID;
CREATE VIRTUAL TABLE IF NOT EXISTS temp.lexical_words USING fts5(word, content = '', tokenize = '{_TOKENIZER}');
CREATE VIRTUAL TABLE IF NOT EXISTS temp.lexical_word_tokens USING fts5vocab(temp, lexical_words, instance);
"""

_LIVE = "(f.valid_until IS NULL AND f.superseded_by IS NULL)"


def _facts_of(ids: str | None) -> str:
    """The user's facts with these ids (``?1`` = user id; None: all of them), by their key ``(user_id, id)``."""
    return "facts f INDEXED BY facts_key WHERE f.user_id = ?1" + (f" AND f.id IN ({ids})" if ids is not None else "")


def scratch_sql(ids: str | None) -> str:
    """Put the index texts of the user's facts with these ids (None: all) in the scratch table (``?1`` = user id)."""
    return (f"INSERT INTO temp.lexical_scratch(rowid, text, context) SELECT f.rowid, {_TEXT.format(f='f')}, "
            f"{_CONTEXT.format(f='f')} FROM {_facts_of(ids)}")

#: The scratch texts' term counts per fact and column.
COUNT_SQL = ("INSERT INTO temp.lexical_counts(doc, term, tf_text, tf_context) SELECT doc, term, "
             "sum(col = 'text'), sum(col = 'context') FROM temp.lexical_tokens GROUP BY doc, term")

def docs_sql(ids: str | None) -> str:
    """The scratch facts' rows: their length (+1: FTS5's row had the ``state`` word) and terms.

    ``?1`` is the user id; ``ids`` the same as :func:`scratch_sql`'s.
    """
    return f"""
INSERT INTO lexical_docs(user_id, doc, length, live, valid_from, valid_until, terms)
SELECT ?1, f.rowid,
       1 + coalesce((SELECT sum(c.tf_text + c.tf_context) FROM temp.lexical_counts c WHERE c.doc = f.rowid), 0),
       {_LIVE}, f.valid_from, f.valid_until,
       coalesce((SELECT group_concat(c.term, ' ') FROM temp.lexical_counts c WHERE c.doc = f.rowid), '')
FROM {_facts_of(ids)}
"""

#: The scratch facts' postings (``?`` = user id), after :func:`docs_sql`.
POSTINGS_SQL = """
INSERT INTO lexical_postings(user_id, term, live, doc, tf_text, tf_context, length)
SELECT ?1, c.term, ld.live, c.doc, c.tf_text, c.tf_context, ld.length
FROM temp.lexical_counts c JOIN lexical_docs ld ON ld.user_id = ?1 AND ld.doc = c.doc
"""

#: Empty the scratch tables.
CLEAR_SQL = ("INSERT INTO temp.lexical_scratch(lexical_scratch) VALUES ('delete-all')",
             "DELETE FROM temp.lexical_counts")


def postings_df(context: bool, terms: int) -> str:
    """How many of a user's facts have each of ``terms`` terms: in their text, or text or context.

    Parameters: the user id, then the terms. Rows ``(term, facts)``, one per term that has
    any (a term of no fact has no row): one statement for all the words of a question.
    """
    where = "" if context else " AND tf_text > 0"
    marks = ", ".join("?" * terms)
    return f"SELECT term, count(*) FROM lexical_postings WHERE user_id = ? AND term IN ({marks}){where} GROUP BY term"


#: BM25's constants, FTS5's.
K1, B = 1.2, 0.75


def ranking_sql(terms: int, *, as_of: bool, context: bool) -> str:
    """The best rows of a user by BM25 over ``terms`` query terms, scored in SQLite: ``doc, score``, best first.

    FTS5's ``bm25()``: a row's score sums, term by term, the term's IDF (:func:`idf`) times
    ``f·(k1+1) / (f + k1·(1 - b + b·D/avgdl))``, where ``f`` is the term's hits in the text
    plus the context's weight times those in the context, ``D`` the row's tokens and
    ``avgdl`` the user's tokens per row.

    Parameters: ``?1`` user id, ``?2`` avgdl (the user's tokens per row), ``?3`` the
    context's weight, ``?4`` how many rows, ``?5`` the moment (``as_of`` only), then each
    term and its IDF. Each term's postings are one range of the key ``(user_id, term,
    live)`` (``as_of``: both ``live`` values, each row's validity read from its
    ``lexical_docs`` row). A term given twice counts twice, as FTS5 counts a phrase twice.
    Scoring here, not in Python, spares reading a common term's postings out of SQLite:
    at one user of 40,000 facts the lexical lookup's p95 fell from 3.4 to 2.1 ms.
    """
    first = 6 if as_of else 5
    values = ", ".join(f"(?{first + 2 * i}, ?{first + 2 * i + 1})" for i in range(terms))
    text_only = "" if context else " AND lp.tf_text > 0"
    f = "(lp.tf_text + ?3 * lp.tf_context)"
    score = f"sum(q.idf * ({f} * {K1 + 1.0!r}) / ({f} + {K1!r} * ({1.0 - B!r} + {B!r} * lp.length / ?2)))"
    if not as_of:
        source = f"q JOIN lexical_postings lp ON lp.user_id = ?1 AND lp.term = q.term AND lp.live = 1{text_only}"
    else:
        source = (f"q JOIN lexical_postings lp ON lp.user_id = ?1 AND lp.term = q.term{text_only} "
                  "JOIN lexical_docs ld ON ld.user_id = ?1 AND ld.doc = lp.doc "
                  "AND ld.valid_from <= ?5 AND (ld.valid_until IS NULL OR ld.valid_until > ?5)")
    return (f"WITH q(term, idf) AS (VALUES {values}) SELECT lp.doc, {score} AS score FROM {source} "
            "GROUP BY lp.doc ORDER BY score DESC, lp.doc LIMIT ?4")


def idf(docs: int, hits: int) -> float:
    """FTS5's IDF of a phrase in ``hits`` of ``docs`` rows: clamped to 1e-6 where it would be negative."""
    value = math.log((docs - hits + 0.5) / (hits + 0.5))
    return value if value > 0.0 else 1e-6


#: A word of the question in more than half of a user's index rows, and in at least this many, is
#: not looked up: FTS5 clamps its IDF, log((N - n + 0.5) / (n + 0.5)), to 1e-6 once it is negative, so it
#: ranks nothing, and on a long history (the user's own name, in 30,000 of 40,000 rows) reading its
#: postings would cost more than all the others'.
COMMON_MIN_ROWS = 1000


def query_terms(text: str, max_terms: int = 64) -> list[str]:
    """The words of ``text`` worth looking up: casefolded, deduplicated, no stopwords, at most ``max_terms``."""
    words = dict.fromkeys(w.casefold() for w in _WORD.findall(text))
    return [w for w in words if w not in STOPWORDS][:max_terms]


class Tokenizer:
    """FTS5's tokenizer for a store that is not SQLite: the terms and counts the lexical tables hold.

    A private in-memory SQLite connection with the :data:`SCRATCH` tables (nothing on disk):
    the index texts go through the same FTS5 table and ``fts5vocab`` reads as the SQLite
    store's own connection does, so a PostgreSQL store's lexical rows, and the BM25 scores of
    :func:`ranking_sql`'s statement there, are the SQLite store's.
    """

    def __init__(self) -> None:
        import sqlite3
        import threading

        self._conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self._conn.executescript(SCRATCH)
        self._lock = threading.Lock()
        self._stems: dict[str, tuple[str, ...]] = {}

    def counts(self, texts: list[tuple[int, str, str]]) -> dict[int, dict[str, tuple[int, int]]]:
        """``{doc: {term: (hits in the text, hits in the context)}}`` of ``(doc, text, context)`` rows."""
        with self._lock:
            conn = self._conn
            try:
                conn.executemany("INSERT INTO temp.lexical_scratch(rowid, text, context) VALUES (?, ?, ?)", texts)
                conn.execute(COUNT_SQL)
                out: dict[int, dict[str, tuple[int, int]]] = {doc: {} for doc, _, _ in texts}
                for doc, term, tf_text, tf_context in conn.execute(
                        "SELECT doc, term, tf_text, tf_context FROM temp.lexical_counts"):
                    out[doc][term] = (tf_text, tf_context)
                return out
            finally:
                for statement in CLEAR_SQL:
                    conn.execute(statement)

    def terms_of(self, words: list[str]) -> list[str | None]:
        """Each word's term (its Porter stem), None where the tokenizer makes none or a phrase of several."""
        with self._lock:
            return word_terms(self._conn, words, self._stems)


#: Query words whose terms a store remembers (its cache is emptied past this many).
MAX_STEMS = 50_000


def word_terms(conn: Any, words: Sequence[str], stems: dict[str, tuple[str, ...]]) -> list[str | None]:
    """Each word's FTS5 term (its Porter stem), None where the tokenizer makes none or a phrase of several.

    ``conn`` is a SQLite connection with the :data:`SCRATCH` tables; ``stems`` the caller's
    cache of words already tokenized (call under the caller's lock). A quoted word of an FTS5
    query is tokenized as the text is; a word it splits in two would be a phrase, which no
    fact's word lists can rank as FTS5 did: left out.
    """
    missing = [w for w in dict.fromkeys(words) if w not in stems]
    if missing:
        if len(stems) + len(missing) > MAX_STEMS:
            stems.clear()
        conn.executemany("INSERT INTO temp.lexical_words(rowid, word) VALUES (?, ?)", list(enumerate(missing, 1)))
        found: dict[int, list[str]] = {}
        for doc, term in conn.execute("SELECT doc, term FROM temp.lexical_word_tokens ORDER BY doc, offset"):
            found.setdefault(doc, []).append(term)
        conn.execute("INSERT INTO temp.lexical_words(lexical_words) VALUES ('delete-all')")
        for n, word in enumerate(missing, 1):
            stems[word] = tuple(found.get(n, ()))
    return [stems[w][0] if len(stems[w]) == 1 else None for w in words]
