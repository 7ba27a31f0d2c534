"""The checks every value from outside goes through: ids, texts and limits.

One place says what a valid id or text is, so ``conversation_end``, the queries,
the chat-session buffer and the records (:mod:`zep_core.models`) refuse the same
input with the same message.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping
from typing import Any

from .errors import ValidationError

__all__ = ["MAX_ID_CHARS", "MAX_LIMIT", "check_episodes", "check_flag", "check_id", "check_limit", "check_text"]

MAX_ID_CHARS = 256
#: The largest ``limit`` a query takes: a bound the stores can serve (Chroma fails far above it).
MAX_LIMIT = 10_000


def check_text(value: Any, what: str, *, allow_empty: bool = False) -> str:
    """Return ``value`` if it is a string the record store and the embedder can take.

    Raises:
        ValidationError: not a string, a NUL byte, a lone surrogate, or empty.

    """
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be a string, got {type(value).__name__}")
    if "\x00" in value:
        raise ValidationError(f"{what} contains a NUL byte (\\x00); remove it and retry")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(
            f"{what} is not valid Unicode (it holds a lone surrogate); decode the text properly"
        ) from None
    if not allow_empty and not value.strip():
        raise ValidationError(f"{what} is empty")
    return value


def check_id(value: Any, what: str) -> str:
    """Return ``value`` if it is a usable id: a non-empty string of at most 256 characters.

    Raises:
        ValidationError: naming ``what`` and the problem.

    """
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{what} must be a non-empty string, got {value!r}")
    if len(value) > MAX_ID_CHARS:
        raise ValidationError(f"{what} is {len(value)} characters long; the limit is {MAX_ID_CHARS}")
    return check_text(value, what)


def check_limit(value: Any, what: str = "limit", *, maximum: int = MAX_LIMIT, minimum: int = 1) -> int:
    """Return ``value`` as an int if it is a whole number in ``minimum..maximum``.

    Raises:
        ValidationError: a float, a string, a bool, or a number out of range.

    """
    try:
        if isinstance(value, bool):
            raise TypeError
        limit = operator.index(value)
    except TypeError:
        raise ValidationError(f"{what} must be an integer >= {minimum}, got {value!r}") from None
    if limit < minimum:
        raise ValidationError(f"{what} must be >= {minimum}, got {limit}")
    if limit > maximum:
        raise ValidationError(f"{what} must be at most {maximum}, got {limit}")
    return limit


def check_flag(value: Any, what: str) -> bool:
    """Return ``value`` if it is ``True`` or ``False`` (``"no"`` is truthy: refused, not guessed).

    Raises:
        ValidationError: anything else.

    """
    if not isinstance(value, bool):
        raise ValidationError(f"{what} must be True or False, got {value!r}")
    return value


def check_episodes(episodes: Any, progress: Any) -> None:
    """The arguments of ``conversation_end_many``: an iterable of episodes (not one), and a callable or None.

    Raises:
        ValidationError: naming what was given and what to pass.

    """
    if progress is not None and not callable(progress):
        raise ValidationError(f"progress must be a callable (or None), got {type(progress).__name__}")
    if isinstance(episodes, (str, bytes, Mapping)) or not isinstance(episodes, Iterable):
        raise ValidationError("episodes must be an iterable of episodes (mappings with 'session_id' and "
                              f"'messages', or EpisodeInput), got {type(episodes).__name__}"
                              + ("; wrap a single episode in a list" if isinstance(episodes, Mapping) else ""))
