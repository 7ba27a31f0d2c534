"""Test doubles for the provider seams (never for the stores)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import replace

from zep_core.models import Message
from zep_core.providers.base import ExtractedFact, Extraction, ExtractionContext


def said(subject: str, predicate: str, obj: str, *, valid_from=None, valid_until=None, confidence=0.9,
         entity: bool = True, content: str | None = None, sources: Sequence[str] = ()) -> ExtractedFact:
    """An extracted fact in one line."""
    return ExtractedFact(subject=subject, predicate=predicate, object=obj,
                         content=content or f"{subject} {predicate.replace('_', ' ')} {obj}.",
                         confidence=confidence, valid_from=valid_from, valid_until=valid_until,
                         source_message_ids=tuple(sources), object_is_entity=entity)


class ScriptedExtractor:
    """Returns scripted extractions in order; an Exception in the script is raised."""

    needs_known_facts = True

    def __init__(self, script: Iterable[Extraction | Exception] = ()) -> None:
        self.script = deque(script)
        self.calls: list[tuple[list[Message], ExtractionContext]] = []

    def push(self, *facts: ExtractedFact, contradicted: Sequence[str] = (), summary: str = "scripted") -> None:
        self.script.append(Extraction(summary=summary, facts=tuple(facts),
                                      contradicted_fact_ids=tuple(contradicted)))

    def fail(self, exc: Exception) -> None:
        self.script.append(exc)

    def extract(self, messages, context):
        self.calls.append((list(messages), context))
        item = self.script.popleft()
        if isinstance(item, Exception):
            raise item
        first = tuple(m.id for m in messages)[:1]
        facts = tuple(f if f.source_message_ids else replace(f, source_message_ids=first) for f in item.facts)
        return replace(item, facts=facts)


class HashEmbedder:
    """A deterministic bag-of-words embedder: another model identity for tests."""

    def __init__(self, dimension: int = 64, name: str = "test:hash") -> None:
        self.dimension = dimension
        self.name = f"{name}-{dimension}"

    def embed(self, texts):
        import hashlib

        import numpy as np

        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                h = int(hashlib.md5(word.strip(".,!?").encode()).hexdigest(), 16)
                out[i, h % self.dimension] += 1.0
            norm = np.linalg.norm(out[i])
            out[i] = out[i] / norm if norm else out[i]
            if not norm:
                out[i, 0] = 1.0
        return out

    def embed_query(self, text):
        return self.embed([text])[0]
