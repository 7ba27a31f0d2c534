"""How names are compared: the key every layer matches names by, and the two names the rules single out.

Below the stores and the providers, which both compare names the way the update rules
(:mod:`zep_core.temporal`) do; it imports nothing of ours. ``zep_core.temporal`` and
``zep_core.conflicts`` re-export these names, so older imports keep working.
"""

from __future__ import annotations

import functools
import re

__all__ = ["STATEMENT", "is_own", "normalize_name"]

#: Predicate of the raw-utterance facts the extractor keeps so nothing said goes unindexed.
STATEMENT = "statement"

_SPACES = re.compile(r"\s+")
_EDGE_PUNCT = ".,;:!?\"'`()[]{} "


@functools.lru_cache(maxsize=1 << 16)
def normalize_name(text: str) -> str:
    """Casefold, collapse whitespace and trim punctuation: the key names are compared by.

    Pure and called for every name of every candidate fact the update rules compare,
    so its results are cached.

    Example:
        >>> normalize_name("  Alice's   TEAM! ")
        "alice's team"

    """
    return _SPACES.sub(" ", text.casefold()).strip(_EDGE_PUNCT)


def is_own(subject: str, speaker: str) -> bool:
    """Whether ``subject`` is ``speaker`` or the speaker's own ("Maya's team"); both normalized."""
    return subject == speaker or subject.startswith(f"{speaker}'s ")
