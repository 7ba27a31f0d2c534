"""Test doubles for the provider seams (never for the stores)."""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from typing import Iterable, Sequence

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
