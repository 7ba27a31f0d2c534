"""The lexical index: SQLite FTS5 over the facts, one table per user.

Each user's facts are indexed in that user's own FTS5 table (:func:`table_name`), as
each user's vectors live in their own Chroma collections: a lexical query reads one
table, so it can only find that user's facts, and its BM25 statistics (how rare a word
is) come from that user's facts alone — another tenant's words change nothing. The
record store writes it in the same transaction as the facts (insert, replace,
``forget_user``, import) and rebuilds it from them (migration, ``rebuild()``).

Each fact has one row in its user's table with the fact's ``rowid``. Its *index text*
is the fact's content, its subject, predicate and object words and, for a canonical fact,
the words of the message it came from (column ``text``), and —
for a fact drawn from a reply — the end of the message said just before its source turn
in the episode, the question the reply answers (column ``context``), so "Where did
Kim's grandmother grow up?" finds "Kim: Gyeongju, near the coast.".
The returned fact is unchanged; only what it is found by grows.

Beside the words, each row keeps when its fact holds, as the facts table has it
(unindexed columns ``live`` — 1 while current — ``valid_from`` and ``valid_until``, the
stored ISO strings), and the one word ``current`` or ``ended`` in the indexed column
``state``: a query ranks only the facts current (or valid at a moment) inside the index,
without reading a fact row. A query of what is true now asks for ``state : current`` in the
match itself, so the index's own word lists leave out the ended rows and no row of the
index is read to check them (at 40,000 facts, a quarter of the time of reading ``live``).
A user's name can match every one of their facts and a retired value ("where does Kim
live?") hundreds of its old statements; a fact row is ~2 kB with its vector. The record
store sets them whenever a fact's validity changes (:func:`state_sql`), in the same
transaction.

User input is always taken literally: :func:`match_expression` keeps only the words of
the text, each quoted as an FTS5 string, OR-ed together, so ``AND``, ``NEAR``, ``*``,
``:``, ``-``, quotes and parentheses are words or nothing, never syntax.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["COMMON_MIN_ROWS", "STOPWORDS", "TABLE_PREFIX", "common_terms_sql", "create_sql", "index_all_sql",
           "index_sql", "match_expression", "query_terms", "rank_sql", "rows_sql", "state_sql", "table_name"]

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
             SELECT substr(s.content, 1, 300) FROM messages s
             WHERE s.episode_id = {f}.episode_id AND s.message_id = json_extract({f}.source_message_ids, '$[0]')
             LIMIT 1), '') END
"""
_CONTEXT = """
coalesce((SELECT substr(p.content, -200) FROM messages m JOIN messages p
          ON p.episode_id = m.episode_id AND p.seq = m.seq - 1
          WHERE m.episode_id = {f}.episode_id
            AND m.message_id = json_extract({f}.source_message_ids, '$[0]')
            AND (p.role IS NOT m.role OR p.name IS NOT m.name)
          LIMIT 1), '')
"""


def table_name(user_id: str) -> str:
    """The name of ``user_id``'s own lexical index table (a hash: any user id is a safe name)."""
    return TABLE_PREFIX + hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:32]


def create_sql(table: str) -> str:
    """The statement that creates one user's lexical index table."""
    return (f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5(text, context, live UNINDEXED, "
            "valid_from UNINDEXED, valid_until UNINDEXED, state, tokenize = 'porter unicode61 remove_diacritics 2')")


#: The ``state`` column's word for a row: ``current`` while its fact is, else ``ended`` (SQL; ``{live}``: 0 or 1).
_STATE = "CASE WHEN {live} THEN 'current' ELSE 'ended' END"


def _insert(table: str) -> str:
    """The start of a statement that indexes the facts ``f`` it selects (their words and validity)."""
    live = "f.valid_until IS NULL AND f.superseded_by IS NULL"
    return (f"INSERT INTO {table}(rowid, text, context, live, valid_from, valid_until, state) SELECT f.rowid, "
            f"{_TEXT.format(f='f')}, {_CONTEXT.format(f='f')}, {live}, f.valid_from, f.valid_until, "
            f"{_STATE.format(live=live)} FROM facts f ")


def index_all_sql(table: str) -> str:
    """Index every fact of the user (``?`` = user id)."""
    return _insert(table) + "WHERE f.user_id = ?"


def index_sql(table: str) -> str:
    """Index the user's facts with these ids (``?`` = user id, ``{ids}`` = the id list).

    The facts are found by id (``+f.user_id`` keeps SQLite from walking every fact of the
    user through an index on ``user_id`` instead).
    """
    return _insert(table) + "WHERE +f.user_id = ? AND f.id IN ({ids})"


def state_sql(table: str) -> str:
    """Set a row's validity (``live, valid_from, valid_until, rowid``), only where it changed.

    FTS5 rewrites a whole row on any update, so rows whose validity is unchanged (a
    reinforced fact) are left alone.
    """
    return (f"UPDATE {table} SET live = ?1, valid_from = ?2, valid_until = ?3, state = {_STATE.format(live='?1')} "
            "WHERE rowid = ?4 AND (live IS NOT ?1 OR valid_from IS NOT ?2 OR valid_until IS NOT ?3)")


def rank_sql(table: str, *, as_of: bool) -> str:
    """The best current (``as_of``: valid then) matches: ``(rowid, BM25)``, best first, equal scores to the older.

    Parameters: the context column's weight, the match expression, then ``as_of`` twice
    when asked, then the limit.
    """
    match = (f"{table} MATCH ? AND valid_from <= ? AND (valid_until IS NULL OR valid_until > ?)" if as_of
             else f"{table} MATCH '(' || ? || ') AND state : current'")
    # weights: text 1, context as given, the unindexed columns nothing, state 0 (it only filters)
    return (f"SELECT rowid, -bm25({table}, 1.0, ?, 0.0, 0.0, 0.0, 0.0) AS s FROM {table} WHERE {match} "
            "ORDER BY s DESC, rowid LIMIT ?")


#: A word of the question in more than half of a user's index rows, and in at least this many, is
#: not looked up (:func:`common_terms_sql`).
COMMON_MIN_ROWS = 1000


def query_terms(text: str, max_terms: int = 64) -> list[str]:
    """The words of ``text`` worth looking up: casefolded, deduplicated, no stopwords, at most ``max_terms``."""
    words = dict.fromkeys(w.casefold() for w in _WORD.findall(text))
    return [w for w in words if w not in STOPWORDS][:max_terms]


def rows_sql(table: str) -> str:
    """How many rows a user's index table has (a scan of its row sizes: cached by the record store)."""
    return f"SELECT count(*) FROM {table}_docsize"


def common_terms_sql(table: str, n_terms: int, *, context: bool = True) -> str:
    """How many index rows match each of ``n_terms`` words (``?`` each, quoted), in one row.

    A word in more than half the rows has no weight in BM25: FTS5 clamps its IDF, log((N - n
    + 0.5) / (n + 0.5)), to 1e-6 once it is negative. On a long history the user's own name
    is such a word (in 30,000 of 40,000 facts), and looking it up would make every one of
    those rows a match to read and score for nothing; :meth:`RecordStore.lexical_ranking`
    leaves it out when it is in at least :data:`COMMON_MIN_ROWS` of them. Counting a
    word's rows reads its index entry only, no row.
    """
    columns = "{text context}" if context else "text"
    return "SELECT " + ", ".join(f"(SELECT count(*) FROM {table} WHERE {table} MATCH '{columns} : ' || ?)"
                                 for _ in range(n_terms))


def match_expression(text: str, *, context: bool = True, max_terms: int = 64,
                     leave_out: frozenset[str] = frozenset()) -> str | None:
    """An FTS5 query for the words of ``text``, taken literally.

    Each word that is not a stopword becomes a quoted string; the words are OR-ed
    (BM25 ranks the facts that match more and rarer words first) and looked up in the
    fact's text and, with ``context``, in the message before it. None when the text
    has no word worth looking up; words in ``leave_out`` are not.

    Example:
        >>> match_expression('Kim AND "NEAR(work*)" -x')
        '{text context} : ("kim" OR "near" OR "work" OR "x")'

    """
    terms = [w for w in query_terms(text, max_terms) if w not in leave_out]
    if not terms:
        return None
    columns = "{text context}" if context else "text"
    return f"{columns} : (" + " OR ".join(f'"{w}"' for w in terms) + ")"
