"""GetContext scoring and the prompt-ready context block, as pure functions.

The spec's query::

    where semantic_match(input, threshold: 0.6) as sm
      and graph_match(input, hops: 2) as gm
      and valid_until == null
    order by (sm * 0.7 + gm * 0.3) desc
    limit 10

``sm`` is the cosine similarity of the fact to the input; a fact *matches*
semantically when ``sm >= threshold``. ``gm`` is the graph score of a fact within
``hops`` of an entity named in the input (1.0 at one hop, 0.5 at two by default),
0 otherwise. A fact is a candidate when either matches (``require_both`` gives the
spec's literal AND); candidates are ranked by ``w_s * sm + w_g * gm``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from .models import Entity, Fact

__all__ = ["Scored", "ScoringParams", "render_context_block", "score_candidates"]


@dataclass(frozen=True)
class ScoringParams:
    """The numbers of the spec's GetContext (all from :class:`MemoryConfig`)."""

    threshold: float = 0.6
    semantic_weight: float = 0.7
    graph_weight: float = 0.3
    limit: int = 10
    require_both: bool = False


@dataclass(frozen=True)
class Scored:
    """A candidate's id, total score and the parts it came from."""

    fact_id: str
    score: float
    semantic: float
    graph: float


def score_candidates(semantic: Mapping[str, float], graph: Mapping[str, float], params: ScoringParams,
                     *, recency: Mapping[str, str] | None = None) -> list[Scored]:
    """Rank candidates by the spec's formula; ties go to the newer fact.

    Args:
        semantic: cosine similarity of every candidate (graph-only ones included).
        graph: graph score of the candidates found through the graph.
        params: threshold, weights, limit and AND/OR.
        recency: sortable ``valid_from`` per id, used to break ties.

    """
    out: list[Scored] = []
    for fid in set(semantic) | set(graph):
        sm = max(0.0, float(semantic.get(fid, 0.0)))
        gm = float(graph.get(fid, 0.0))
        sem_match, graph_match = sm >= params.threshold, gm > 0
        keep = (sem_match and graph_match) if params.require_both else (sem_match or graph_match)
        if keep:
            out.append(Scored(fid, params.semantic_weight * sm + params.graph_weight * gm, sm, gm))
    recency = recency or {}
    out.sort(key=lambda s: (s.score, recency.get(s.fact_id, "")), reverse=True)
    return out[: params.limit]


def _date(value: datetime | None) -> str:
    return value.date().isoformat() if value else "?"


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
    lines = [f"FACTS (what is true {when}; dates say since when):"]
    for f in facts:
        span = f"valid from {_date(f.valid_from)}"
        if f.valid_until:
            span += f" until {_date(f.valid_until)}"
        lines.append(f"- {f.content} ({span})")
    summaries = [e for e in entities if e.summary]
    if summaries:
        lines.append("ENTITIES:")
        lines.extend(f"- {e.name} ({e.entity_type}): {e.summary}" for e in summaries)
    return "\n".join(lines)
