"""Facts, fact histories and entities as text for a model: the one renderer of them.

The context block (:meth:`Memory.context_block <zep_core.Memory.context_block>`, which
the adapters put in prompts) and the answers of the memory tools
(:mod:`zep_core.tools`, served to LangChain, LlamaIndex and MCP hosts) write a fact
with :func:`fact_line` and a fact's past with :func:`history_line`, so a model reads a
fact the same way wherever it meets one. Pure functions over records; no store is read.

Example:
    >>> print(history_answer("Alice", facts))                              # doctest: +SKIP
    History of Alice (oldest first, including facts no longer true):
    - Alice lives in Paris. (valid 2024-01-01 to 2024-03-01; superseded)
    - Alice lives in Berlin. (valid 2024-03-01 to now; current)

"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from .models import Entity, Fact

__all__ = ["entity_label", "fact_line", "facts_answer", "history_answer", "history_line", "related_answer",
           "render_context_block"]


def _day(value: datetime | None, missing: str) -> str:
    return value.date().isoformat() if value else missing


def fact_line(fact: Fact) -> str:
    """A fact as it holds at the time asked: since when, until when if it ended, and a newer fact's mark.

    Example:
        - Alice lives in Berlin. (valid from 2024-03-01)

    """
    span = f"valid from {_day(fact.valid_from, '?')}"
    if fact.valid_until:
        span += f" until {_day(fact.valid_until, '?')}"
    if fact.newer_fact_id:
        span = f"earlier: {span}; the fact above is newer"
    return f"- {fact.content} ({span})"


def history_line(fact: Fact) -> str:
    """A fact in a timeline: from when to when it held, and whether it is current, superseded or ended.

    Example:
        - Alice lives in Paris. (valid 2024-01-01 to 2024-03-01; superseded)

    """
    state = "current" if fact.is_current else "superseded" if fact.superseded_by else "ended"
    return f"- {fact.content} (valid {_day(fact.valid_from, '?')} to {_day(fact.valid_until, 'now')}; {state})"


def entity_label(entity: Entity) -> str:
    """An entity's name and type: ``Berlin (place)``."""
    return f"{entity.name} ({entity.entity_type})"


def render_context_block(facts: Sequence[Fact], entities: Sequence[Entity] = (), *,
                         as_of: datetime | None = None) -> str:
    """Render facts (with validity dates) and entity summaries for a prompt.

    Example:
        FACTS (what is true now; dates say since when):
        - Alice lives in Berlin. (valid from 2024-03-01)
        ENTITIES:
        - Alice (person): Alice lives in Berlin; works at Acme.

    """
    if not facts and not entities:
        return ""
    when = f"at {as_of.date().isoformat()}" if as_of else "now"
    lines = [f"FACTS (what is true {when}; dates say since when):", *map(fact_line, facts)]
    summaries = [e for e in entities if e.summary]
    if summaries:
        lines.append("ENTITIES:")
        lines.extend(f"- {entity_label(e)}: {e.summary}" for e in summaries)
    return "\n".join(lines)


def facts_answer(query: str, facts: Sequence[Fact], *, as_of: str | datetime | None = None) -> str:
    """The facts found for ``query``, most relevant first, under a line that says what was asked.

    Args:
        query: the question as asked.
        facts: the facts, best first (not empty).
        as_of: the time asked about, as given (an ISO string or a datetime); None for now.

    """
    when = "true now" if as_of is None else f"true on {_day(as_of, '?') if isinstance(as_of, datetime) else as_of}"
    return "\n".join([f'Facts in memory for "{query}" ({when}, most relevant first):', *map(fact_line, facts)])


def history_answer(name: str, facts: Sequence[Fact]) -> str:
    """An entity's timeline, oldest first (``facts`` in that order, not empty)."""
    return "\n".join([f"History of {name} (oldest first, including facts no longer true):",
                      *map(history_line, facts)])


def related_answer(name: str, entities: Sequence[Entity]) -> str:
    """The entities connected to ``name``, nearest first (not empty)."""
    return f"Entities connected to {name} (within 2 hops): " + ", ".join(map(entity_label, entities))
