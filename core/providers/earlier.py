"""What a correction looks back at: earlier texts, found by the words they mention and the values they hold.

A correction ("No sorry, Milan.", "I meant Victoria, not Vancouver") replaces a value
in the latest earlier sentence of its message, or message of its speaker, that holds
it (:mod:`~zep_core.providers.rules`). Asking every earlier text in turn costs the
number of corrections times the number of texts: minutes for a long message of
short sentences. :class:`Earlier` keeps the texts with two indexes — the texts each
word occurs in, and the texts holding values of each kind
(:func:`~zep_core.providers.talk.values_of_kind`) — so a correction looks only at the
texts that could hold what it looks for, newest first, and each text is read once.
The answers are those of asking every text: the indexes only leave out texts that
cannot match.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_left
from collections.abc import Callable, Iterator

from ..models import Message
from .extractive import split_sentences
from .sentences import Said
from .talk import is_small_talk, kind_of, values_of_kind

__all__ = ["Earlier", "Heard", "Own", "mentions"]

#: What :func:`mentions` counts as inside a word: a value is found between two characters that are not.
_RUN = re.compile(r"[\w'’]+")


def mentions(text: str, value: str) -> bool:
    """Whether ``value`` occurs in ``text`` as whole words, in any case."""
    return re.search(rf"(?<![\w'’]){re.escape(value)}(?![\w'’])", text, re.IGNORECASE) is not None


@functools.lru_cache(maxsize=4096)
def _ascii_fold(char: str) -> str:
    """The ASCII letter a non-ASCII character matches when case is ignored ("K", the Kelvin sign: "k"), else itself."""
    return next((a for a in "abcdefghijklmnopqrstuvwxyz" if re.fullmatch(a, char, re.IGNORECASE)), char)


def _words(text: str) -> set[str]:
    """The words of ``text`` (runs of :data:`_RUN`), as an ASCII value's words are matched when case is ignored."""
    return {run.lower() if run.isascii() else "".join(c.lower() if c.isascii() else _ascii_fold(c) for c in run)
            for run in _RUN.findall(text)}


class Earlier:
    """Earlier texts, oldest first, with the indexes that find the latest one a correction is about.

    A text found by :meth:`latest_mentioning` mentions the value as :func:`mentions`
    reads it; the word index only narrows the texts asked. Texts may be replaced (a
    correction carried out in an earlier sentence); what the indexes say of the old
    text is checked against the new one, and dropped once found stale.

    Example:
        >>> said = Earlier()
        >>> for text in ("I live in Rome.", "I like tea.", "I have 2 cats."):
        ...     said.add(text)
        >>> said.latest_mentioning("rome"), said.latest_with_value("Milan")
        (0, (0, 'Rome'))

    """

    def __init__(self) -> None:
        """No texts yet."""
        self.texts: list[str] = []
        self._by_word: dict[str, list[int]] = {}
        self._by_kind: dict[str, list[int]] = {}
        self._values: dict[tuple[int, str], list[str]] = {}

    def add(self, text: str) -> None:
        """Add the newest text."""
        self.texts.append(text)
        self._index(len(self.texts) - 1)

    def replace(self, i: int, text: str) -> None:
        """Text ``i`` now reads ``text``."""
        self.texts[i] = text
        for kind in {k for (j, k) in self._values if j == i}:
            del self._values[(i, kind)]
        self._index(i)

    def _index(self, i: int) -> None:
        for word in _words(self.texts[i]):
            _insert(self._by_word.setdefault(word, []), i)
        for kind, at in self._by_kind.items():
            if self.values(i, kind):
                _insert(at, i)

    def values(self, i: int, kind: str) -> list[str]:
        """The values of ``kind`` in text ``i`` (:func:`~zep_core.providers.talk.values_of_kind`), read once."""
        found = self._values.get((i, kind))
        if found is None:
            found = self._values[(i, kind)] = values_of_kind(self.texts[i], kind)
        return found

    def latest_mentioning(self, value: str, where: Callable[[int], bool] | None = None) -> int | None:
        """The latest text that mentions ``value`` (and for which ``where`` holds), or None."""
        for i in self.mentioning(value):
            if where is None or where(i):
                return i
        return None

    def mentioning(self, value: str) -> Iterator[int]:
        """The texts that mention ``value`` as :func:`mentions` reads it, newest first."""
        words = _words(value)
        if not value.isascii() or not words:  # the index folds case as the regex does for ASCII words only
            yield from (i for i in range(len(self.texts) - 1, -1, -1) if mentions(self.texts[i], value))
            return
        at = min((self._by_word.get(w, []) for w in words), key=len)
        for k in range(len(at) - 1, -1, -1):
            i = at[k]
            if mentions(self.texts[i], value):
                yield i
            elif k == len(at) - 1 and not words <= _words(self.texts[i]):
                at.pop()  # stale: the text was replaced; newest first, so nothing newer is left to ask

    def latest_with_value(self, right: str, *, mentioned: bool = False,
                          where: Callable[[int], bool] | None = None) -> tuple[int, str] | None:
        """The latest text holding a value of ``right``'s kind other than ``right``, and its last such value.

        Args:
            right: the value a correction means; texts whose values of its kind are all
                ``right`` are passed over.
            mentioned: pass over a text whose last such value it does not mention as
                :func:`mentions` reads it.
            where: pass over a text for which this does not hold.

        """
        kind = kind_of(right)
        at = self._by_kind.get(kind)
        if at is None:
            at = self._by_kind[kind] = [i for i in range(len(self.texts)) if self.values(i, kind)]
        lowered = right.lower()
        for k in range(len(at) - 1, -1, -1):
            i = at[k]
            values = [v for v in self.values(i, kind) if v.lower() != lowered]
            if not self.values(i, kind) and k == len(at) - 1:
                at.pop()  # stale: the text was replaced and holds no such value now
                continue
            if values and (not mentioned or mentions(self.texts[i], values[-1])) and (where is None or where(i)):
                return i, values[-1]
        return None


def _insert(at: list[int], i: int) -> None:
    """Put ``i`` in the sorted list ``at`` once (the newest text goes at the end, at no cost)."""
    if not at or at[-1] < i:
        at.append(i)
        return
    position = bisect_left(at, i)
    if at[position] != i:
        at.insert(position, i)


class Heard:
    """The messages of an episode read so far, indexed for the corrections of those to come.

    What :func:`~zep_core.providers.rules._corrections` asks of them: a speaker's latest
    message that states something (not only small talk), that mentions a value, or that
    holds a value of a kind; and the assistant's replies after a message that mention one.
    """

    def __init__(self) -> None:
        """Nothing heard yet."""
        self.messages: list[tuple[Message, Said]] = []
        self._own: dict[str, Own] = {}
        self._assistant = Earlier()
        self._assistant_at: list[tuple[int, Message, Said]] = []

    def add(self, message: Message, said: Said) -> None:
        """The message after those heard so far."""
        position = len(self.messages)
        self.messages.append((message, said))
        if said.assistant:
            self._assistant.add(message.content)
            self._assistant_at.append((position, message, said))
        else:
            self._own.setdefault(said.speaker, Own()).add(position, message)

    def own(self, speaker: str) -> Own:
        """What ``speaker`` said so far (not as the assistant)."""
        return self._own.get(speaker) or Own()

    def replies_after(self, position: int, value: str) -> list[tuple[Message, Said]]:
        """The assistant's messages after the one at ``position`` that mention ``value``, in order."""
        found = []
        for i in self._assistant.mentioning(value):
            at, message, said = self._assistant_at[i]
            if at < position:
                break
            found.append((message, said))
        return found[::-1]


class Own:
    """One speaker's messages of an episode, oldest first, with their positions among all messages heard."""

    def __init__(self) -> None:
        """None yet."""
        self.texts = Earlier()
        self.said: list[tuple[int, Message]] = []
        self._stating: list[int] = []

    def add(self, position: int, message: Message) -> None:
        """The speaker's next message, heard at ``position``."""
        if not all(is_small_talk(x) for x in split_sentences(message.content)):
            self._stating.append(len(self.said))
        self.said.append((position, message))
        self.texts.add(message.content)

    def latest_stating(self) -> tuple[int, Message] | None:
        """The latest message that is not only small talk."""
        return self.said[self._stating[-1]] if self._stating else None
