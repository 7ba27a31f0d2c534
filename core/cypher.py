"""Read-only Cypher for :meth:`zep_core.Memory.cypher`: the checks before the sandbox.

Isolation is not done here. A query runs in :class:`zep_core.stores.sandbox.CypherSandbox`
against a graph holding only the calling tenant's rows, so there is nothing of another
tenant to reach, whatever the text says. What this module does is give early, helpful
errors and keep the sandbox's process and files to themselves:

1. comments are removed and string literals set aside, so a write clause cannot
   hide in a comment and a quoted word cannot trip the check;
2. one statement only; clauses that write or reach outside the graph (CREATE, MERGE,
   SET, DELETE, REMOVE, DROP, ALTER, COPY, LOAD, INSTALL, ATTACH, CALL, …) are refused
   whatever their case — the sandbox runs in a read-only transaction anyway, but LOAD
   and COPY would touch files and CALL could change its limits;
3. the text and the parameters are checked like every other input: valid text, a
   mapping of string names to plain values (strings, numbers, booleans, None, dates,
   lists and maps of them).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from .errors import QueryError, ValidationError
from .validation import check_text

__all__ = ["check", "check_query"]

_FORBIDDEN = re.compile(
    r"\b(CREATE|MERGE|SET|DELETE|DETACH|REMOVE|DROP|ALTER|COPY|LOAD|INSTALL|UNINSTALL|ATTACH|"
    r"IMPORT|EXPORT|CALL|BEGIN|COMMIT|ROLLBACK|CHECKPOINT|USE|FOREACH)\b",
    re.IGNORECASE,
)
_TOKEN = re.compile(r"//[^\n]*|/\*.*?(?:\*/|$)|'(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\"|`(?:``|[^`])*`", re.DOTALL)
_PARAM = re.compile(r"\$(\w+)")
_MAX_QUERY_CHARS = 20_000
_MAX_PARAM_DEPTH = 20
_PLAIN = (str, int, float, bool, type(None), datetime, date, time, timedelta, Decimal, uuid.UUID)


def _split(query: str) -> tuple[str, list[str]]:
    """Drop comments; replace literals by NUL-delimited numbered placeholders."""
    literals: list[str] = []

    def keep(m: re.Match) -> str:
        text = m.group(0)
        if text.startswith(("//", "/*")):
            return " "
        literals.append(text)
        return f"\x00{len(literals) - 1}\x00"

    return _TOKEN.sub(keep, query), literals


def check_query(query: Any) -> str:
    """The query, checked: one read-only statement of valid text.

    Raises:
        QueryError: saying what was refused and how to write the query instead.

    """
    if not isinstance(query, str) or not query.strip():
        raise QueryError("cypher() needs a non-empty query string")
    if len(query) > _MAX_QUERY_CHARS or "\x00" in query:
        raise QueryError("the Cypher query is too long or holds NUL bytes")
    code, _ = _split(query)
    if code.rstrip().rstrip(";").count(";"):
        raise QueryError("cypher() runs one statement; remove the ';'-separated extra statements")
    bad = _FORBIDDEN.search(code)
    if bad:
        raise QueryError(f"cypher() is read-only: the {bad.group(1).upper()} clause is refused. "
                         "Change memory through conversation_end() and forget_user() instead.")
    check_text(query, "cypher query")  # a lone surrogate would fail inside Kùzu
    return query.rstrip().rstrip(";")


def check(query: Any, params: Any) -> tuple[str, dict[str, Any]]:
    """The query and its parameters, checked (see :func:`check_query`).

    Raises:
        QueryError: the query is refused.
        ValidationError: params that are not a mapping of string names to plain values.

    """
    checked = check_query(query)
    code, _ = _split(checked)
    used = set(_PARAM.findall(code))
    if params is not None and not isinstance(params, Mapping):
        raise ValidationError(f"cypher params must be a mapping of names to values, got {type(params).__name__}")
    bound = dict(params or {})
    if any(not isinstance(k, str) for k in bound):
        raise ValidationError("cypher params must have string keys")
    for name, value in bound.items():
        _check_value(value, name, 0)
    return checked, {k: v for k, v in bound.items() if k in used}  # Kùzu refuses a parameter the query does not use


def _check_value(value: Any, name: str, depth: int) -> None:
    if depth > _MAX_PARAM_DEPTH:
        raise ValidationError(f"cypher param {name!r} is nested more than {_MAX_PARAM_DEPTH} levels deep")
    if isinstance(value, str):
        check_text(value, f"cypher param {name!r}")
    elif isinstance(value, (list, tuple)):
        for item in value:
            _check_value(item, name, depth + 1)
    elif isinstance(value, Mapping):
        if any(not isinstance(k, str) for k in value):
            raise ValidationError(f"cypher param {name!r} is a map with non-string keys")
        for item in value.values():
            _check_value(item, name, depth + 1)
    elif not isinstance(value, _PLAIN):
        raise ValidationError(f"cypher param {name!r} is a {type(value).__name__}; use strings, numbers, "
                              "booleans, None, dates, or lists and maps of them")
