"""Raw-turn baselines: BM25 (bm25s) and dense cosine (numpy over the same embedder).

Both index each turn as ``"<speaker>: <text>"`` — the same text our statement facts
carry — so the comparison is about ranking, not about who gets to see speaker names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["BM25Turns", "DenseTurns", "Hit", "RawTurn"]


@dataclass(frozen=True)
class RawTurn:
    """One turn of a conversation: its message id and the indexed text."""

    id: str
    text: str


@dataclass(frozen=True)
class Hit:
    """One retrieved item: the message ids it came from and the text handed to the LLM."""

    source_ids: tuple[str, ...]
    text: str


class BM25Turns:
    """BM25 (Lucene variant, English stop words, no stemmer) over raw turns."""

    name = "bm25-turns"

    def __init__(self, turns: Sequence[RawTurn]) -> None:
        import bm25s

        self._bm25s = bm25s
        self.turns = list(turns)
        self.index = bm25s.BM25()
        self.index.index(bm25s.tokenize([t.text for t in self.turns], stopwords="en", show_progress=False),
                         show_progress=False)

    def search(self, query: str, k: int) -> list[Hit]:
        """The ``k`` best turns for ``query`` (fewer when the query has no indexed word)."""
        tokens = self._bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)
        known = [[w for w in tokens[0] if w in self.index.vocab_dict]]
        if not known[0]:
            return []
        k = min(k, len(self.turns))
        docs, scores = self.index.retrieve(known, k=k, show_progress=False)
        return [Hit((self.turns[int(i)].id,), self.turns[int(i)].text)
                for i, s in zip(docs[0], scores[0]) if s > 0]


class DenseTurns:
    """Cosine similarity (numpy, exact) over raw turns embedded with ``embedder``."""

    name = "dense-turns"

    def __init__(self, turns: Sequence[RawTurn], embedder: Any, *, vectors: Any = None) -> None:
        self.turns = list(turns)
        self.embedder = embedder
        if vectors is None:  # else the turns' texts embedded already, by the caller who timed it
            vectors = embedder.embed([t.text for t in self.turns])
        self.vectors = np.asarray(vectors, dtype=np.float32)

    def search(self, query: str, k: int) -> list[Hit]:
        """The ``k`` turns most similar to ``query``."""
        q = np.asarray(self.embedder.embed_query(query), dtype=np.float32)
        sims = self.vectors @ q
        k = min(k, len(self.turns))
        top = np.argpartition(-sims, k - 1)[:k]
        top = top[np.argsort(-sims[top], kind="stable")]
        return [Hit((self.turns[int(i)].id,), self.turns[int(i)].text) for i in top]
