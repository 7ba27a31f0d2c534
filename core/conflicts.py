"""Which facts of one user contradict each other, and the index that finds them fast.

:func:`conflicts` is the spec's test of two facts: same subject, and either the same
single-valued predicate or a count of the same thing with another value, or a fact the
extractor said is contradicted. :class:`Rivals` keeps an update plan's facts by what
they could conflict with, so that :func:`~zep_core.temporal.plan_updates` asks
:func:`conflicts` of those only, not of every fact it holds.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

from .attributes import ONE_VALUE
from .models import Fact
from .names import normalize_name  # here before zep_core.names; re-exported

__all__ = ["Rivals", "conflicts", "counted_thing", "fact_key", "normalize_name"]


def fact_key(fact: Fact) -> tuple[str, str, str]:
    """The identity of a statement: normalized subject, predicate and object."""
    return normalize_name(fact.subject), normalize_name(fact.predicate), normalize_name(fact.object)


def conflicts(old: Fact, new: Fact, *, single_valued: Collection[str], contradicted: Collection[str] = (),
              by_attribute: bool = True) -> bool:
    """Whether ``new`` contradicts the current fact ``old``.

    Beside the spec's test, two claims on an attribute that holds one value at a time
    (:data:`zep_core.attributes.ONE_VALUE`: where one lives, one's work…) conflict whatever
    their predicates, unless one message says both.

    Args:
        old: a current fact already stored.
        new: a proposed fact.
        single_valued: predicates that hold one value at a time.
        contradicted: ids of known facts the extractor said this episode contradicts.
        by_attribute: whether ``new``'s attribute may retire (the extractor was sure of it).

    """
    if not old.is_current or new.valid_until is not None or old.user_id != new.user_id:
        return False
    old_s, old_p, old_o = fact_key(old)
    new_s, new_p, new_o = fact_key(new)
    if old_s != new_s or (old_p, old_o) == (new_p, new_o):
        return False
    if old.id in contradicted:
        return True
    if (by_attribute and old.attribute is not None and old.attribute == new.attribute and old.attribute in ONE_VALUE
            and not set(old.source_message_ids) & set(new.source_message_ids)):
        return True  # "we're in Leeds now" after "I live in Manchester": one home at a time, whatever the words
    thing = counted_thing(old_o)
    if old_p == new_p and old_p not in single_valued and thing and thing == counted_thing(new_o):
        return True  # "has 2 kids", then "has 3 kids": a count of one thing holds one value at a time
    return old_p == new_p and old_p in single_valued


_COUNT = re.compile(r"^\d+(?:[.,]\d+)?\s+(?P<noun>\D.*)$")


def counted_thing(obj: str) -> str | None:
    """The thing counted in an object such as "3 kids" (singular, normalized), else None."""
    match = _COUNT.match(obj)
    if match is None:
        return None
    noun = match["noun"].strip()
    return noun[:-3] + "y" if noun.endswith("ies") else noun[:-1] if noun.endswith("s") else noun


class Rivals:
    """An update plan's facts, by the facts they could conflict with (:func:`conflicts`).

    ``conflicts(old, new)`` holds only where ``old`` has ``new``'s subject and predicate
    — any value when the predicate is single-valued, a count of the same thing
    otherwise — or its one-value attribute, or is one of the ``contradicted``. So a proposed fact is compared with
    that bucket and those facts only: an episode of 1,000 facts was compared with every
    fact held, 500,000 times. A fact that is no longer current is never a rival again
    (nothing in a plan makes it current), so it leaves its bucket when next met.
    """

    def __init__(self, single_valued: Collection[str], contradicted: Collection[str] = ()) -> None:
        """Empty; ``single_valued`` and ``contradicted`` as :func:`conflicts` takes them."""
        self._single, self._contradicted = single_valued, frozenset(contradicted)
        self._order: dict[str, int] = {}
        self._buckets: dict[tuple[str, ...], list[str]] = {}
        self._named: list[str] = []

    def _bucket(self, fact: Fact) -> list[tuple[str, ...]]:
        subject, predicate, obj = fact_key(fact)
        keys: list[tuple[str, ...]] = []
        if fact.attribute is not None and fact.attribute in ONE_VALUE:
            keys.append((subject, "@" + fact.attribute))
        if predicate in self._single:
            keys.append((subject, predicate))
        elif thing := counted_thing(obj):
            keys.append((subject, predicate, thing))
        return keys

    def hold(self, fact: Fact) -> None:
        """``fact`` joined the plan (after those held before it)."""
        if fact.id in self._order:
            return
        self._order[fact.id] = len(self._order)
        for key in self._bucket(fact):
            self._buckets.setdefault(key, []).append(fact.id)
        if fact.id in self._contradicted:
            self._named.append(fact.id)

    def candidates(self, new: Fact, held: Mapping[str, Fact], *, also: Collection[str] = (),
                   named: bool = True) -> list[Fact]:
        """The held facts that could conflict with ``new`` (and those of ``also``), in the order they were held.

        Args:
            new: the proposed fact.
            held: every fact of the plan by id, as it stands now.
            also: ids to add, if held.
            named: add the ``contradicted`` facts (``conflicts(..., contradicted=())`` needs none).

        """
        ids: set[str] = set()
        for key in self._bucket(new):
            bucket = self._buckets.get(key, [])
            bucket[:] = [i for i in bucket if held[i].is_current]
            ids.update(bucket)
        ids.update(self._named if named else ())
        ids.update(i for i in also if i in held)
        return [held[i] for i in sorted(ids, key=self._order.__getitem__)]
