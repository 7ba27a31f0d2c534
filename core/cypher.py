"""Read-only, tenant-scoped Cypher for :meth:`zep_core.Memory.cypher`.

A query is checked before it reaches Kùzu:

1. comments are removed and string literals set aside, so a write clause cannot
   hide in a comment and a quoted word cannot trip the check;
2. one statement only; clauses that write or reach outside the graph (CREATE, MERGE,
   SET, DELETE, REMOVE, DROP, ALTER, COPY, LOAD, INSTALL, ATTACH, CALL, …) are refused
   whatever their case;
3. every ``:Entity`` node pattern gets ``user_id: $__zep_user`` added, and every
   comma-separated pattern part must contain one, so a query only ever sees the
   calling user's subgraph (relationships never cross users).

It then runs inside a read-only transaction, and rows holding another user's nodes
are dropped as a last line of defence.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .errors import QueryError, ValidationError
from .validation import check_text

__all__ = ["USER_PARAM", "own_rows", "prepare", "scope_query"]

USER_PARAM = "__zep_user"
_FORBIDDEN = re.compile(
    r"\b(CREATE|MERGE|SET|DELETE|DETACH|REMOVE|DROP|ALTER|COPY|LOAD|INSTALL|UNINSTALL|ATTACH|"
    r"IMPORT|EXPORT|CALL|BEGIN|COMMIT|ROLLBACK|CHECKPOINT|USE|FOREACH)\b",
    re.IGNORECASE,
)
_ENTITY_NODE = re.compile(r"\(\s*([A-Za-z_]\w*)?\s*:\s*Entity\b\s*(\{)?")
_CLAUSE_END = re.compile(r"\b(WHERE|RETURN|WITH|UNWIND|ORDER|LIMIT|SKIP|UNION|OPTIONAL|MATCH)\b", re.IGNORECASE)
_MATCH = re.compile(r"\bMATCH\b", re.IGNORECASE)
_TOKEN = re.compile(r"//[^\n]*|/\*.*?(?:\*/|$)|'(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\"|`(?:``|[^`])*`", re.DOTALL)
_MAX_QUERY_CHARS = 20_000


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


def _join(code: str, literals: list[str]) -> str:
    return re.sub(r"\x00(\d+)\x00", lambda m: literals[int(m.group(1))], code)


def _pattern_parts(code: str) -> list[str]:
    parts: list[str] = []
    for m in _MATCH.finditer(code):
        start = m.end()
        end = _CLAUSE_END.search(code, start)
        clause = code[start:end.start() if end else len(code)]
        depth, current = 0, []
        for ch in clause:
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append("".join(current))
                current = []
            else:
                current.append(ch)
        parts.append("".join(current))
    return parts


def scope_query(query: str) -> str:
    """Check a Cypher query and return it scoped to ``$__zep_user``.

    Raises:
        QueryError: saying what was refused and how to write the query instead.

    """
    if not isinstance(query, str) or not query.strip():
        raise QueryError("cypher() needs a non-empty query string")
    if len(query) > _MAX_QUERY_CHARS or "\x00" in query:
        raise QueryError("the Cypher query is too long or holds NUL bytes")
    code, literals = _split(query)
    if code.rstrip().rstrip(";").count(";"):
        raise QueryError("cypher() runs one statement; remove the ';'-separated extra statements")
    bad = _FORBIDDEN.search(code)
    if bad:
        raise QueryError(f"cypher() is read-only: the {bad.group(1).upper()} clause is refused. "
                         "Change memory through conversation_end() and forget_user() instead.")
    if USER_PARAM in code:
        raise QueryError(f"${USER_PARAM} is reserved for zep-memory")

    def scope(m: re.Match) -> str:
        head = f"({m.group(1) or ''}:Entity {{user_id: ${USER_PARAM}"
        return head + (", " if m.group(2) else "}")

    scoped = _ENTITY_NODE.sub(scope, code)
    for part in _pattern_parts(scoped):
        if part.strip() and f"${USER_PARAM}" not in part:
            raise QueryError(
                "every MATCH pattern must start from an :Entity node, e.g. "
                "MATCH (e:Entity {name: $name})-[r:FACT]-(x) RETURN x.name; "
                f"this part has none: {_join(part, literals).strip()!r}")
    if not _MATCH.search(scoped) and re.search(r"\b(Entity|FACT)\b", scoped):
        raise QueryError("read the graph through MATCH (e:Entity …) patterns")
    return _join(scoped, literals).rstrip().rstrip(";")


def prepare(query: str, params: Mapping[str, Any] | None, user_id: str) -> tuple[str, dict[str, Any]]:
    """The scoped query and its parameters, the caller's user bound where the query uses it.

    Raises:
        QueryError: the query is refused (see :func:`scope_query`).
        ValidationError: a query that is not valid text, params that are not a mapping,
            or a parameter name that is not a string.

    """
    if params is not None and not isinstance(params, Mapping):
        raise ValidationError(f"cypher params must be a mapping of names to values, got {type(params).__name__}")
    scoped = scope_query(query)
    check_text(query, "cypher query")  # a lone surrogate would fail inside Kùzu
    bound = dict(params or {})
    if any(not isinstance(k, str) for k in bound):
        raise ValidationError("cypher params must have string keys")
    if f"${USER_PARAM}" in scoped:  # Kùzu refuses a parameter the query does not use
        bound[USER_PARAM] = user_id
    return scoped, bound


def own_rows(rows: list[dict[str, Any]], user_id: str) -> list[dict[str, Any]]:
    """The rows holding no node or relationship of another user (the last line of defence)."""
    return [r for r in rows if not _foreign(r, user_id)]


def _foreign(row: Mapping[str, Any], user_id: str) -> bool:
    """Whether a Cypher result row holds a node or relationship of another user."""
    for value in row.values():
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, dict):
                if item.get("user_id") not in (None, user_id):
                    return True
                if _foreign({k: v for k, v in item.items() if isinstance(v, (dict, list))}, user_id):
                    return True
    return False
