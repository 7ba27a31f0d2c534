"""The words the in-memory record store ranks facts by: FTS5's split, and the first step of Porter's stemmer.

The SQLite store's lexical index tokenizes with FTS5 (``porter unicode61``); the double
has no SQL, so it stems here: plurals and ``-ed``/``-ing`` (Porter's step 1, so "lives" and
"live" are one term, as in FTS5), nothing of the later steps. Enough for what a behaviour
test asks of the ranking; the scores stay the double's own.
"""

from __future__ import annotations

import re

from zep_core.stores.fts import query_terms

_WORD = re.compile(r"[^\W_]+")  # letters and digits, as FTS5's unicode61 splits


def doc_terms(text: str) -> list[str]:
    """Every word of a fact's text, stemmed, in order (repeats kept: BM25 counts them)."""
    return [stem(w) for w in _WORD.findall(text.casefold())]


def question_terms(text: str) -> set[str]:
    """The words of a question worth looking up (no stopwords, as the SQL stores ask), stemmed."""
    return {stem(w) for w in query_terms(text)}


def stem(word: str) -> str:
    """Porter's step 1 (1a plurals, 1b ``-eed``/``-ed``/``-ing``, 1c ``-y``) of one casefolded word."""
    w = word
    if len(w) <= 2:
        return w
    if w.endswith(("sses", "ies")):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    if w.endswith("eed"):
        w = w[:-1] if _measure(w[:-3]) > 0 else w
    else:
        for suffix in ("ed", "ing"):
            if w.endswith(suffix) and _has_vowel(w[: -len(suffix)]):
                w = w[: -len(suffix)]
                if w.endswith(("at", "bl", "iz")):
                    w += "e"
                elif len(w) > 1 and w[-1] == w[-2] and _consonant(w, len(w) - 1) and w[-1] not in "lsz":
                    w = w[:-1]
                elif _measure(w) == 1 and _cvc(w):
                    w += "e"
                break
    if w.endswith("y") and _has_vowel(w[:-1]):
        w = w[:-1] + "i"
    return w


def _consonant(w: str, i: int) -> bool:
    if w[i] in "aeiou":
        return False
    return w[i] != "y" or i == 0 or not _consonant(w, i - 1)


def _measure(stem: str) -> int:
    """Porter's m: how many vowel-consonant sequences the stem has."""
    forms = re.sub(r"(.)\1+", r"\1", "".join("c" if _consonant(stem, i) else "v" for i in range(len(stem))))
    return forms.count("vc")


def _has_vowel(stem: str) -> bool:
    return any(not _consonant(stem, i) for i in range(len(stem)))


def _cvc(w: str) -> bool:
    n = len(w)
    return n >= 3 and _consonant(w, n - 3) and not _consonant(w, n - 2) and _consonant(w, n - 1) and w[-1] not in "wxy"
