r"""Whether a text holds any of many phrases as a whole word, in one pass over the text.

:class:`PhraseFinder` answers what a whole-word regular expression per phrase
(``(?<!\w)phrase(?!\w)``, each searched in turn) answers, in time linear in the text
rather than in the text times the number of phrases: the phrases are built once into an
Aho–Corasick automaton, and each text is read once, character by character. The offline
extractor asks it, for every clause of a message, whether the clause states one of the
message's values (:func:`zep_core.providers.rules._quotes`); with thousands of values in
a long message the regular expressions cost minutes.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable

__all__ = ["PhraseFinder"]

_WORD_CHAR = re.compile(r"\w")


class PhraseFinder:
    r"""The automaton of a set of phrases; :meth:`in_text` reads a text once.

    A phrase is found where it stands between two non-word characters (or the text's
    ends), as the regular expression ``(?<!\w)phrase(?!\w)`` finds it; the comparison is
    exact, so fold the case of both sides first where case should not count.

    Example:
        >>> finder = PhraseFinder(["berlin", "acme robotics"])
        >>> finder.in_text("i work at acme robotics"), finder.in_text("berliner weisse")
        (True, False)

    """

    def __init__(self, phrases: Iterable[str]) -> None:
        """Build the automaton of the non-empty ``phrases``."""
        self._next: list[dict[str, int]] = [{}]
        self._length: list[int] = [0]  # the phrase that ends at a node, 0: none
        for phrase in phrases:
            if phrase:
                self._add(phrase)
        self._fail = [0] * len(self._next)
        self._out = [0] * len(self._next)  # the nearest node down the fail links where a phrase ends, 0: none
        self._link()

    def _add(self, phrase: str) -> None:
        node = 0
        for char in phrase:
            found = self._next[node].get(char)
            if found is None:
                found = self._next[node][char] = len(self._next)
                self._next.append({})
                self._length.append(0)
            node = found
        self._length[node] = len(phrase)

    def _link(self) -> None:
        """Breadth first: each node's fail link is the longest proper suffix of its path that is a path."""
        queue = deque(self._next[0].values())
        while queue:
            node = queue.popleft()
            fail = self._fail[node]
            self._out[node] = fail if self._length[fail] else self._out[fail]
            for char, child in self._next[node].items():
                back = fail
                while back and char not in self._next[back]:
                    back = self._fail[back]
                target = self._next[back].get(char, 0)
                self._fail[child] = target if target != child else 0
                queue.append(child)

    def in_text(self, text: str) -> bool:
        """Whether ``text`` holds one of the phrases as a whole word.

        The work is linear in ``len(text)``, plus, where a phrase ends before a non-word
        character, the phrases that end there (at most a few).
        """
        nexts, fail, length, out = self._next, self._fail, self._length, self._out
        node, end = 0, len(text)
        for i, char in enumerate(text):
            while node and char not in nexts[node]:
                node = fail[node]
            node = nexts[node].get(char, 0)
            if not node or (i + 1 < end and _WORD_CHAR.match(text, i + 1)):
                continue
            hit = node if length[node] else out[node]
            while hit:
                start = i + 1 - length[hit]
                if start == 0 or not _WORD_CHAR.match(text, start - 1):
                    return True
                hit = out[hit]
        return False
