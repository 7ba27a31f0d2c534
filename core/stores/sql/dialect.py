"""What really differs between the SQL record stores: the dialect, the scope of a statement, and the primitives.

The shared jobs (:mod:`zep_core.stores.sql`) write their statements once, in SQLite's
SQL: ``?`` placeholders, ``IN ({ids})`` for a chunked list of ids, ``INDEXED BY`` hints and
the unary ``+`` that keeps SQLite off an index. A :class:`Dialect` turns that text into its
database's (:meth:`Dialect.sql`) and says how a list, a vector and a truth value are passed
or read. Every statement names its scope: a :class:`~zep_core.tenant.Tenant`, or
:data:`STORE` for work over every tenant; PostgreSQL's row-level security runs it under
that scope, SQLite (one process holds its file) needs none.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from ...models import Message
from ...tenant import Tenant, key
from ..rows import blob, fact_row, parse_time

__all__ = ["POSTGRES", "SQLITE", "STORE", "Dialect", "Scope", "SqlBase", "by_user", "extra_text",
           "session_message", "storage_order"]


class _Store:
    """The scope of store-wide work (no tenant): see :data:`STORE`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "STORE"


#: The scope of the work over the whole store that takes no tenant (maintenance, the outbox, id ownership).
STORE = _Store()
Scope = Tenant | _Store


class Dialect:
    """SQLite's SQL, as the shared statements are written (the identity), and how values travel."""

    name = "sqlite"
    #: Appended to an ``ORDER BY`` of text that must sort by code point, as SQLite's default does.
    binary = ""

    def sql(self, text: str) -> str:
        """A shared statement in this database's SQL."""
        return text

    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """``column`` is one of ``values``: the condition, and its parameters."""
        return f"{column} IN ({','.join('?' * len(values))})", list(values)

    def none_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """``column`` is none of ``values``: the condition, and its parameters."""
        return f"{column} NOT IN ({','.join('?' * len(values))})", list(values)

    def quoting(self, column: str, values: Sequence[str]) -> tuple[str, list[Any]]:
        """The JSON list of text in ``column`` holds one of ``values`` (a quick test: check the matches exactly)."""
        return "(" + " OR ".join([f"instr({column}, ?) > 0"] * len(values)) + ")", [json.dumps(v) for v in values]

    def among(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """``column`` is one of ``values``, however many: one parameter (a JSON list here)."""
        return f"{column} IN (SELECT value FROM json_each(?))", [json.dumps(list(values))]

    def vector(self, value: np.ndarray) -> Any:
        """A vector as it is written."""
        return blob(value)

    def vector_of(self, value: Any) -> np.ndarray:
        """A stored vector as a float32 array."""
        return np.frombuffer(value, dtype=np.float32)

    def vector_bytes(self, value: Any) -> bytes:
        """A stored vector as float32 bytes."""
        return value

    def flag(self, condition: str) -> str:
        """A condition read as 0 or 1."""
        return condition

    def differs(self, a: str, b: str) -> str:
        """``a`` and ``b`` differ, NULL being a value like any other."""
        return f"{a} IS NOT {b}"

    def contains(self, text: str, part: str) -> str:
        """``part`` is found in ``text``."""
        return f"instr({text}, {part}) > 0"


class PostgresDialect(Dialect):
    """PostgreSQL's: ``%s`` placeholders, arrays for lists, pgvector's vectors, no index hints."""

    name = "postgres"
    binary = ' COLLATE "C"'

    def sql(self, text: str) -> str:
        """SQLite's text with ``%s`` for ``?``, ``= ANY(%s)`` for ``IN ({ids})``, and no hints."""
        return _postgres_sql(text)

    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """``column = ANY(?)`` with the values as one array."""
        return f"{column} = ANY(?)", [list(values)]

    def none_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """``NOT column = ANY(?)``."""
        return f"NOT {column} = ANY(?)", [list(values)]

    def quoting(self, column: str, values: Sequence[str]) -> tuple[str, list[Any]]:
        """``column`` read as JSON holds one of ``values`` (jsonb's ``?|``)."""
        return f"jsonb_exists_any({column}::jsonb, ?)", [list(values)]

    def among(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """``column = ANY(?)``, as :meth:`any_of`."""
        return self.any_of(column, values)

    def vector(self, value: np.ndarray) -> Any:
        """A float32 array (pgvector writes it as a ``vector``)."""
        return np.asarray(value, dtype=np.float32)

    def vector_of(self, value: Any) -> np.ndarray:
        """A stored vector (pgvector's :class:`~pgvector.Vector`, or an array) as a float32 array."""
        return np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value, dtype=np.float32)

    def vector_bytes(self, value: Any) -> bytes:
        """A stored vector as float32 bytes."""
        return self.vector_of(value).tobytes()

    def flag(self, condition: str) -> str:
        """A condition cast to an integer."""
        return f"({condition})::int"

    def differs(self, a: str, b: str) -> str:
        """``IS DISTINCT FROM``."""
        return f"{a} IS DISTINCT FROM {b}"

    def contains(self, text: str, part: str) -> str:
        """``strpos``."""
        return f"strpos({text}, {part}) > 0"


_HINT = re.compile(r"\s+INDEXED BY \w+")
_UNARY_PLUS = re.compile(r"(?<=[\s(])\+(?=[a-z_])")
_IDS = re.compile(r"\bIN \(\{ids\}\)")


@functools.lru_cache(maxsize=1024)
def _postgres_sql(text: str) -> str:
    text = _UNARY_PLUS.sub("", _HINT.sub("", text))
    return _IDS.sub("= ANY(?)", text).replace("%", "%%").replace("?", "%s")


SQLITE = Dialect()
POSTGRES = PostgresDialect()


class SqlBase:
    """The primitives a SQL store's connection gives the shared jobs: statements in SQLite's SQL, under a scope."""

    dialect: Dialect = SQLITE

    def _select(self, scope: Scope, sql: str, params: Sequence[Any] | dict = ()) -> list[tuple]:
        """The rows of one statement."""
        raise NotImplementedError

    def _change(self, scope: Scope, sql: str, params: Sequence[Any] | dict = ()) -> int:
        """Run one statement; how many rows it changed."""
        raise NotImplementedError

    def _change_many(self, scope: Scope, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run one statement per row of parameters."""
        raise NotImplementedError

    def _select_in(self, scope: Scope, sql: str, ids: Sequence[Any], before: Sequence[Any] = ()) -> list[tuple]:
        """The rows of ``sql`` for every chunk of ``ids`` (its ``IN ({ids})``, after the ``before`` parameters)."""
        raise NotImplementedError


    def get_meta(self, key: str) -> str | None:
        """Read one metadata value (schema version, embedder identity…)."""
        rows = self._select(STORE, "SELECT value FROM meta WHERE key = ?", [key])
        return rows[0][0] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        """Write one metadata value."""
        self._change(STORE, "INSERT INTO meta(key, value) VALUES (?, ?) "
                            "ON CONFLICT (key) DO UPDATE SET value = excluded.value", [key, value])

    def table_counts(self) -> dict[str, int]:
        """Row counts of the main tables."""
        return {t: int(self._select(STORE, f"SELECT count(*) FROM {t}")[0][0])
                for t in ("episodes", "messages", "facts", "entities", "outbox", "session_messages")}


def by_user(rows: Iterable[Any], user_of: Any) -> dict[Tenant, list[Any]]:
    """Records (or rows) that carry their own user id, grouped by that user as a checked tenant.

    The users come sorted, the order a write takes their locks in on PostgreSQL.
    """
    out: dict[Tenant, list[Any]] = {}
    for item in rows:
        out.setdefault(Tenant.of(user_of(item)), []).append(item)
    return dict(sorted(out.items(), key=lambda kv: key(kv[0])))


def storage_order(row: Sequence[Any]) -> tuple[str, int]:
    """A fact row (``FACT_COLUMNS`` then ``rowid``) ordered by subject id, then as stored."""
    return fact_row(row).subject_id, row[-1]


def extra_text(message: Message) -> str | None:
    """A chat turn's ``extra`` as stored: JSON text, or NULL."""
    return None if message.extra is None else json.dumps(message.extra, ensure_ascii=False)


def session_message(row: Sequence[Any]) -> Message:
    """``(role, name, content, message_id, timestamp, extra)`` of a session row as a Message."""
    role, name, content, message_id, timestamp, extra = row
    return Message(content=content, role=role, name=name, id=message_id, timestamp=parse_time(timestamp),
                   extra=None if extra is None else json.loads(extra))


def chunks(ids: Sequence[Any], size: int) -> Iterator[list[Any]]:
    """``ids`` without repeats, ``size`` at a time."""
    unique = list(dict.fromkeys(ids))
    for i in range(0, len(unique), size):
        yield unique[i:i + size]
