"""The upkeep of the lexical index, written once for both SQL stores: taking facts out, new validity, rebuild, checks.

The tables and their meaning are :mod:`zep_core.stores.fts`'s. How a fact's terms are made
and ranked is each store's own: ``_index_lexical(tenant, ids)`` adds a tenant's facts (None:
all of them), ``_ranked_docs`` ranks them (:mod:`.search`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...tenant import Tenant, key
from .dialect import STORE, SqlBase

_TABLES = ("lexical_postings", "lexical_docs", "lexical_stats")


class SqlLexicalRows(SqlBase):
    """The lexical index's rows: a fact's out when it is replaced, its validity when it changes; rebuild and checks."""

    def _lexical_changed(self, tenant: Tenant | None) -> None:
        """A tenant's lexical rows changed (None: everyone's): what a store counted of them is stale."""

    def _legacy_lexical_tables(self) -> set[str]:
        """Tables of an older layout of the index, dropped by a rebuild."""
        return set()

    def _lexical_docs(self, tenant: Tenant, rowids: Sequence[int]) -> dict[int, tuple[int, str | None, str | None,
                                                                                   list[str], int]]:
        """The lexical rows of a tenant's facts: ``{doc: (live, valid_from, valid_until, terms, length)}``."""
        rows = self._select_in(tenant, "SELECT doc, live, valid_from, valid_until, terms, length FROM lexical_docs "
                                       "WHERE user_id = ? AND doc IN ({ids})", list(rowids), [key(tenant)])
        return {r[0]: (r[1], r[2], r[3], r[4].split(" ") if r[4] else [], r[5]) for r in rows}

    def _unindex(self, tenant: Tenant, ids: Sequence[str]) -> None:
        """Take stored facts of a tenant out of their lexical index (before they are replaced).

        Each posting goes by its key ``(user_id, term, live, doc)``.
        """
        user_id = key(tenant)
        rowids = [r[0] for r in self._select_in(tenant, "SELECT rowid FROM facts INDEXED BY facts_key "
                                                        "WHERE user_id = ? AND id IN ({ids})", ids, [user_id])]
        docs = self._lexical_docs(tenant, rowids) if rowids else {}
        if docs:
            self._lexical_changed(tenant)
            postings = [(user_id, term, live, doc) for doc, (live, _, _, terms, _) in docs.items() for term in terms]
            self._change_many(tenant, "DELETE FROM lexical_postings WHERE user_id = ? AND term = ? AND live = ? "
                                      "AND doc = ?", postings)
            self._change_many(tenant, "DELETE FROM lexical_docs WHERE user_id = ? AND doc = ?",
                              [(user_id, doc) for doc in docs])
            self._change(tenant, "UPDATE lexical_stats SET docs = docs - ?, tokens = tokens - ? WHERE user_id = ?",
                         [len(docs), sum(d[4] for d in docs.values()), user_id])

    def _revalidate(self, tenant: Tenant, wanted: dict[int, tuple[int, str | None, str | None]]) -> None:
        """Give lexical rows their fact's new validity ``{doc: (live, valid_from, valid_until)}`` (where it changed).

        A reinforced fact's validity did not change: only the rows whose did are written.
        """
        user_id = key(tenant)
        changed = {doc: (old, wanted[doc]) for doc, old in self._lexical_docs(tenant, list(wanted)).items()
                   if old[:3] != wanted[doc]}
        self._change_many(tenant, "UPDATE lexical_docs SET live = ?, valid_from = ?, valid_until = ? "
                                  "WHERE user_id = ? AND doc = ?",
                          [(*new, user_id, doc) for doc, (_, new) in changed.items()])
        self._change_many(tenant, "UPDATE lexical_postings SET live = ? WHERE user_id = ? AND term = ? AND live = ? "
                                  "AND doc = ?", [(new[0], user_id, term, old[0], doc)
                                                  for doc, (old, new) in changed.items() if old[0] != new[0]
                                                  for term in old[3]])

    def _fact_users(self) -> list[Tenant]:
        return [Tenant.stored(r[0]) for r in self._select(STORE, "SELECT DISTINCT user_id FROM facts ORDER BY 1")]

    def rebuild_lexical(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Rebuild the lexical index from the facts (call inside :meth:`transaction`); returns its rows.

        Tables of an older layout go (SQLite folders from before schema version 6 lose their
        per-user FTS5 tables). ``progress(users done, users)`` is called as it goes.
        """
        for table in self._legacy_lexical_tables():
            self._change(STORE, f"DROP TABLE {table}")
        users = self._fact_users()
        for table in _TABLES:
            self._change(STORE, f"DELETE FROM {table}")
        self._lexical_changed(None)
        for n, user in enumerate(users, 1):
            self._index_lexical(user, None)
            if progress is not None:
                progress(n, len(users))
        return int(self._select(STORE, "SELECT count(*) FROM lexical_docs")[0][0])

    def lexical_problems(self, tenant: Tenant | None = None) -> dict[str, list[str]]:
        """What is wrong with the lexical index.

        Facts missing from it, rows whose validity differs from their fact's, rows with no
        fact, postings that disagree with their row, totals that differ from the rows', and
        rows of no user.
        """
        users = [key(tenant)] if tenant is not None else self._fact_users()
        dialect = self.dialect
        live = dialect.flag("f.valid_until IS NULL AND f.superseded_by IS NULL")
        differs = " OR ".join(dialect.differs(a, b) for a, b in (("ld.live", live), ("ld.valid_from", "f.valid_from"),
                                                                 ("ld.valid_until", "f.valid_until")))
        has_term = dialect.contains("' ' || ld.terms || ' '", "' ' || lp.term || ' '")  # a whole word of terms
        found: dict[str, list[str]] = {"lexical_missing": [], "lexical_validity_differs": [], "lexical_orphans": [],
                                       "lexical_postings_differ": [], "lexical_totals_differ": []}
        for user in users:
            found["lexical_missing"] += [r[0] for r in self._select(user,
                "SELECT id FROM facts f WHERE user_id = ? AND NOT EXISTS "
                "(SELECT 1 FROM lexical_docs ld WHERE ld.user_id = f.user_id AND ld.doc = f.rowid)", [user])]
            found["lexical_validity_differs"] += [r[0] for r in self._select(user,
                "SELECT f.id FROM facts f JOIN lexical_docs ld ON ld.user_id = f.user_id AND ld.doc = f.rowid "
                f"WHERE f.user_id = ? AND ({differs})", [user])]
            found["lexical_orphans"] += [f"{user}: rowid {r[0]}" for r in self._select(user,
                "SELECT ld.doc FROM lexical_docs ld WHERE ld.user_id = ? AND NOT EXISTS "
                "(SELECT 1 FROM facts f WHERE f.rowid = ld.doc AND f.user_id = ld.user_id)", [user])]
            found["lexical_postings_differ"] += [f"{user}: rowid {r[0]}" for r in self._select(user,
                "SELECT DISTINCT lp.doc FROM lexical_postings lp WHERE lp.user_id = ? AND NOT EXISTS "
                "(SELECT 1 FROM lexical_docs ld WHERE ld.user_id = lp.user_id AND ld.doc = lp.doc "
                "AND ld.live = lp.live AND ld.length = lp.length "
                f"AND {has_term})", [user])]
            totals = self._select(user, "SELECT (SELECT count(*) FROM lexical_docs WHERE user_id = ?), "
                                        "(SELECT coalesce(sum(length), 0) FROM lexical_docs WHERE user_id = ?), "
                                        "(SELECT docs FROM lexical_stats WHERE user_id = ?), "
                                        "(SELECT tokens FROM lexical_stats WHERE user_id = ?)", [user] * 4)[0]
            if totals[0] and (totals[0], totals[1]) != (totals[2], totals[3]):
                found["lexical_totals_differ"].append(f"{user}: {totals[0]} rows of {totals[1]} tokens, totals say "
                                                      f"{totals[2]} of {totals[3]}")
        if tenant is None:
            found["lexical_index_of_no_user"] = sorted(
                {r[0] for r in self._select(STORE, "SELECT DISTINCT user_id FROM lexical_docs")} - set(users)
                | {f"table {t}" for t in self._legacy_lexical_tables()})
        return {k: v for k, v in found.items() if v}
