"""Prototype, not in the core: GetContext with a lexical (BM25) signal over the facts.

The benchmark uses it to show what adding a keyword match to ``get_context`` would
buy (e.g. SQLite FTS5 ``bm25()`` over fact content, which the core could keep beside
the facts table). It reads a user's current facts from the record store once, indexes
their ``content`` with bm25s, and fuses that ranking with the semantic ranking that
``get_context`` returns (same facts, same ids), either by reciprocal rank fusion or by
adding a weighted, max-normalised BM25 score to the cosine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .baselines import Hit

__all__ = ["LexicalFacts", "fuse_rrf", "fuse_weighted"]


class LexicalFacts:
    """BM25 over one user's current facts (read through :meth:`Memory.facts`).

    With ``context=True`` each fact is indexed together with the message said just
    before its source message (the question a reply answers, say); the fact returned
    is unchanged.
    """

    def __init__(self, memory: Any, user_id: str, *, context: bool = False) -> None:
        import bm25s

        self._bm25s = bm25s
        self.facts = {f.id: f for f in memory.facts(user_id) if f.is_current}
        self.ids = list(self.facts)
        vectors = memory.embedder.embed([f.content for f in self.facts.values()]) if self.ids else []
        self.vectors = dict(zip(self.ids, vectors))  # the same model and texts as the stored vectors
        before = _previous_messages(memory, self.facts.values()) if context else {}
        texts = [_joined(before, self.facts[i]) for i in self.ids]
        self.index = bm25s.BM25()
        self.index.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)

    def search(self, query: str, n: int) -> list[tuple[str, float]]:
        """Up to ``n`` ``(fact id, BM25 score)`` pairs with a positive score, best first."""
        tokens = self._bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)[0]
        known = [w for w in tokens if w in self.index.vocab_dict]
        if not known or not self.ids:
            return []
        docs, scores = self.index.retrieve([known], k=min(n, len(self.ids)), show_progress=False)
        return [(self.ids[int(i)], float(s)) for i, s in zip(docs[0], scores[0]) if s > 0]


def _previous_messages(memory: Any, facts: Any) -> dict[str, str]:
    """Message id -> the text of the message before it in its episode."""
    out: dict[str, str] = {}
    for episode_id in {f.episode_id for f in facts if f.episode_id}:
        msgs = memory.get_episode(episode_id).messages
        for prev, msg in zip(msgs, msgs[1:]):
            out[msg.id] = prev.content
    return out


def _joined(before: dict[str, str], fact: Any) -> str:
    ids = fact.source_message_ids
    return f"{before[ids[0]]}\n{fact.content}" if ids and ids[0] in before else fact.content


def _hits(lex: LexicalFacts, ids: Sequence[str], extra: dict[str, Any]) -> list[Hit]:
    out = []
    for i in ids:
        f = lex.facts.get(i) or extra[i]
        out.append(Hit(tuple(f.source_message_ids), f.content))
    return out


def fuse_rrf(semantic: Sequence[Any], lexical: Sequence[tuple[str, float]], lex: LexicalFacts, k: int,
             c: int = 10) -> list[Hit]:
    """Reciprocal rank fusion of the ``get_context`` ranking and the BM25 ranking."""
    score: dict[str, float] = {}
    for rank, f in enumerate(semantic):
        score[f.id] = score.get(f.id, 0.0) + 1.0 / (c + rank + 1)
    for rank, (fid, _) in enumerate(lexical):
        score[fid] = score.get(fid, 0.0) + 1.0 / (c + rank + 1)
    top = sorted(score, key=lambda i: -score[i])[:k]
    return _hits(lex, top, {f.id: f for f in semantic})


def fuse_weighted(memory: Any, user_id: str, query: str, semantic: Sequence[Any],
                  lexical: Sequence[tuple[str, float]], lex: LexicalFacts, k: int,
                  weight: float = 0.2) -> list[Hit]:
    """``(1 - weight) * cosine + weight * bm25 / max(bm25)`` over both candidate sets."""
    sm = {f.id: f.semantic_score for f in semantic}
    top_bm25 = max((s for _, s in lexical), default=1.0)
    lm = {fid: s / top_bm25 for fid, s in lexical}
    missing = [fid for fid in lm if fid not in sm and fid in lex.vectors]
    if missing:
        q = np.asarray(memory.embedder.embed_query(query), dtype=np.float32)
        for fid in missing:
            sm[fid] = float(lex.vectors[fid] @ q)
    score = {i: (1 - weight) * sm.get(i, 0.0) + weight * lm.get(i, 0.0) for i in set(sm) | set(lm)}
    top = sorted(score, key=lambda i: -score[i])[:k]
    return _hits(lex, top, {f.id: f for f in semantic})
