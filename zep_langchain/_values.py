"""What a ZepStore does with put values and with its ``index`` setting.

Put values: their exact JSON, their texts, ``InMemoryStore``'s filter rules; ``index``:
the embeddings and their length.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.store.base import MatchCondition
from langgraph.store.base.embed import ensure_embeddings
from zep_core import ValidationError

OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


def json_of(value: Any) -> str:
    """The exact JSON of a put value; refused if it would not come back equal."""
    if not isinstance(value, Mapping):
        raise ValidationError(f"a store value must be a dict, got {type(value).__name__}")
    try:
        text = json.dumps(dict(value), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"a store value must be JSON (str, int, float, bool, None, list, dict): {exc}") from None
    if json.loads(text) != dict(value):
        raise ValidationError("a store value must be plain JSON to come back exactly: use lists, not tuples, and "
                              "string keys in every dict")
    return text


def strings(value: Any) -> list[str]:
    """Every string in a JSON value, depth first."""
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def _operator(value: Any, operator: str, wanted: Any) -> bool:
    if operator == "$eq":
        return value == wanted
    if operator == "$ne":
        return value != wanted
    if operator not in OPERATORS:
        raise ValidationError(f"unknown filter operator {operator!r}; use one of {', '.join(OPERATORS)}")
    a, b = _number(value), _number(wanted)
    if a is None or b is None:
        return False
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[operator]


def matches(value: Any, wanted: Any) -> bool:
    """``InMemoryStore``'s filter rules: equality, nested dicts, lists element-wise, and ``$`` operators."""
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_operator(value, op, v) for op, v in wanted.items())
        return isinstance(value, dict) and all(matches(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (isinstance(value, (list, tuple)) and len(value) == len(wanted)
                and all(matches(a, b) for a, b in zip(value, wanted)))
    return value == wanted


def fits(pattern: Sequence[str], labels: Sequence[str]) -> bool:
    """Whether ``labels`` match ``pattern`` label by label (``*`` matches any)."""
    return all(p == "*" or p == label for p, label in zip(pattern, labels))


def condition_holds(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        return fits(path, namespace)
    if condition.match_type == "suffix":
        return fits(path[::-1], namespace[::-1])
    raise ValidationError(f"unknown namespace match type {condition.match_type!r}; use 'prefix' or 'suffix'")


def embeddings_of(embed: Any) -> Any:
    """``index["embed"]`` as LangChain embeddings: an ``Embeddings``, a function of texts, or a ``"provider:model"``."""
    if not (isinstance(embed, str) or callable(embed) or hasattr(embed, "embed_query")):
        raise ValidationError(f"index['embed'] must be LangChain Embeddings, a function of a list of texts, or a "
                              f"'provider:model' string, got {type(embed).__name__}")
    try:
        return ensure_embeddings(embed)
    except ValidationError:
        raise
    except Exception as e:  # an unknown provider, its package missing, a value of the wrong kind
        raise ValidationError(f"index['embed'] must be LangChain Embeddings, a function of a list of texts, or a "
                              f"'provider:model' string; {embed!r} failed: {e}") from e


def dims_of(dims: Any) -> int:
    if isinstance(dims, bool) or not isinstance(dims, int) or dims < 1:
        raise ValidationError(f"index['dims'] must be the embeddings' length, a positive integer, got {dims!r}")
    return dims
