"""GetContext: candidates (semantic, graph, ``as_of`` history) → scores → facts → context block.

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

The ranking (:func:`score_candidates`) and the block (:func:`render_context_block`)
are pure functions over ids, floats and records; :class:`Retriever` gathers the
candidates from the stores. Every number comes from ``MemoryConfig.scoring``
(:class:`~zep_core.config.ScoringSettings`); ``SPEC_SCORING`` is the spec literally.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from .config import MemoryConfig, ScoringSettings
from .errors import NotFoundError, ValidationError
from .models import Entity, Fact, to_utc
from .providers.base import Embedder
from .resolve import input_aliases, mentions_first_person
from .stores.base import GraphIndex, VectorIndex
from .stores.records import RecordStore, iso
from .temporal import normalize_name
from .validation import check_limit, check_text

__all__ = ["ContextQuery", "Retriever", "Scored", "render_context_block", "score_candidates"]


@dataclass(frozen=True)
class ContextQuery:
    """One GetContext call, checked: the text, the tenant, the numbers and the time.

    Attributes:
        text: the question or input.
        user_id: the tenant searched.
        scoring: the config's scoring settings with this call's overrides.
        as_of: answer what was true then; None for now.
        asker: who "I" is when the text speaks in the first person, else None.

    """

    text: str
    user_id: str
    scoring: ScoringSettings
    as_of: datetime | None = None
    asker: str | None = None

    @classmethod
    def parse(cls, config: MemoryConfig, text: Any, *, user_id: str, limit: Any = None, as_of: Any = None,
              require_both: Any = None, threshold: Any = None, speaker: Any = None) -> ContextQuery:
        """Check the arguments of ``get_context`` against the config.

        Raises:
            ValidationError: what is wrong with which argument.

        """
        if not isinstance(text, str):
            raise ValidationError(f"input must be a string, got {type(text).__name__}")
        if not text.strip():
            return cls(text, user_id, config.scoring)  # nothing to look for: no facts
        if len(text) > config.max_message_chars:
            raise ValidationError(f"input has {len(text)} characters, over max_message_chars")
        if threshold is not None and not (isinstance(threshold, (int, float)) and 0 <= threshold <= 1):
            raise ValidationError(f"threshold must be a number in [0, 1], got {threshold!r}")
        changes: dict[str, Any] = {}
        if threshold is not None:
            changes["semantic_threshold"] = float(threshold)
        if limit is not None:
            changes["context_limit"] = check_limit(limit)
        if require_both is not None:
            changes["require_both"] = bool(require_both)
        when = to_utc(as_of, "as_of", strict=config.strict_timezones) if as_of is not None else None
        asker = check_text(speaker or config.default_speaker, "speaker") if mentions_first_person(text) else None
        return cls(text, user_id, replace(config.scoring, **changes) if changes else config.scoring, when, asker)


@dataclass(frozen=True)
class Scored:
    """A candidate's id, total score and the parts it came from."""

    fact_id: str
    score: float
    semantic: float
    graph: float


def score_candidates(semantic: Mapping[str, float], graph: Mapping[str, float], scoring: ScoringSettings,
                     *, recency: Mapping[str, str] | None = None) -> list[Scored]:
    """Rank candidates by the spec's formula; ties go to the newer fact.

    Args:
        semantic: cosine similarity of every candidate (graph-only ones included).
        graph: graph score of the candidates found through the graph.
        scoring: threshold, weights, limit and AND/OR.
        recency: sortable ``valid_from`` per id, used to break ties.

    """
    out: list[Scored] = []
    for fid in set(semantic) | set(graph):
        sm = max(0.0, float(semantic.get(fid, 0.0)))
        gm = float(graph.get(fid, 0.0))
        sem_match, graph_match = sm >= scoring.semantic_threshold, gm > 0
        keep = (sem_match and graph_match) if scoring.require_both else (sem_match or graph_match)
        if keep:
            out.append(Scored(fid, scoring.semantic_weight * sm + scoring.graph_weight * gm, sm, gm))
    recency = recency or {}
    out.sort(key=lambda s: (s.score, recency.get(s.fact_id, "")), reverse=True)
    return out[: scoring.context_limit]


class Retriever:
    """GetContext over the stores: candidates (semantic, graph, as_of) → scores → facts.

    Args:
        records, vectors, graph: the stores.
        embedder: embeds the query.
        catch_up: applies queued index writes before the indexes are read.

    """

    def __init__(self, records: RecordStore, vectors: VectorIndex, graph: GraphIndex, embedder: Embedder,
                 catch_up: Callable[[], None]) -> None:
        self.records, self.vectors, self.graph = records, vectors, graph
        self.embedder, self._catch_up = embedder, catch_up

    def get_context(self, query: ContextQuery) -> list[Fact]:
        """The most relevant facts current at ``query.as_of`` (now by default), best first."""
        if not query.text.strip():
            return []
        scoring, user, when = query.scoring, query.user_id, query.as_of
        vector = self.embedder.embed_query(f"{query.asker}: {query.text}" if query.asker else query.text)
        self._catch_up()
        k = max(scoring.semantic_candidates, scoring.context_limit)
        semantic = dict(self.vectors.query(user, "current", vector, k))
        if when is not None:
            semantic.update(self.vectors.query(user, "history", vector, k))
        use_graph = scoring.graph_hops and (scoring.graph_weight or scoring.require_both)
        graph = self._graph_match(query) if use_graph else {}
        missing = [f for f in graph if f not in semantic]
        for fid, vec in self.records.fact_vectors(user, missing).items():
            semantic[fid] = float(vec @ vector)
        facts = self.records.get_facts(user, list(set(semantic) | set(graph)))
        valid = {i: f for i, f in facts.items() if (f.valid_at(when) if when else f.is_current)}
        ranked = score_candidates({i: s for i, s in semantic.items() if i in valid},
                                  {i: g for i, g in graph.items() if i in valid}, scoring,
                                  recency={i: iso(f.valid_from) for i, f in valid.items()})
        return [valid[s.fact_id].with_scores(round(s.score, 6), round(s.semantic, 6), s.graph) for s in ranked]

    def _graph_match(self, query: ContextQuery) -> dict[str, float]:
        """Facts within ``graph_hops`` of an entity the text names, scored by hop."""
        scoring, user = query.scoring, query.user_id
        as_of = iso(query.as_of) if query.as_of else None
        names = input_aliases(query.text) + ([normalize_name(query.asker)] if query.asker else [])
        named = set(self.records.entity_ids_for_aliases(user, names).values())
        scores: dict[str, float] = {}
        cap = scoring.graph_candidates
        frontier, seen = named, set(named)
        for hop in range(scoring.graph_hops):
            if not frontier or len(scores) >= cap:
                break
            for fid in self.records.facts_touching(user, list(frontier), as_of=as_of, limit=cap - len(scores)):
                scores.setdefault(fid, scoring.hop_scores[hop])
            if hop + 1 < scoring.graph_hops and len(scores) < cap:  # else the next hop adds nothing
                frontier = self.graph.neighbours(user, list(frontier), as_of=as_of) - seen
                seen |= frontier
        return scores

    def entity_id(self, name: Any, user_id: str) -> str:
        """The id of the user's entity called ``name`` (or one of its aliases).

        Raises:
            ValidationError: ``name`` is not a non-empty string.
            NotFoundError: the user has no such entity.

        """
        if not isinstance(name, str) or not name.strip():
            raise ValidationError("entity name must be a non-empty string")
        found = self.records.entity_ids_for_aliases(user_id, [normalize_name(name)])
        if not found:
            raise NotFoundError(f"no entity named {name!r} for user {user_id!r}")
        return next(iter(found.values()))

    def related_entities(self, name: str, user_id: str, *, limit: int) -> list[Entity]:
        """The spec's RelatedEntities: distinct entities 1..2 hops from ``name``, nearest first."""
        eid = self.entity_id(name, user_id)
        self._catch_up()
        ids = self.graph.related(user_id, eid, hops=2, limit=limit)
        found = self.records.get_entities(user_id, ids)
        return [found[i] for i in ids if i in found]

    def context_block(self, query: ContextQuery, *, max_entities: int = 5) -> str:
        """The GetContext facts with their dates, and the summaries of the entities they name."""
        facts = self.get_context(query)
        names: list[str] = []
        for f in facts:
            names += [normalize_name(f.subject), normalize_name(f.object)]
        ids = list(dict.fromkeys(self.records.entity_ids_for_aliases(query.user_id, names).values()))
        entities = self.records.get_entities(query.user_id, ids)
        ordered = [entities[i] for i in ids if i in entities][:max_entities]
        return render_context_block(facts, ordered, as_of=query.as_of)


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
