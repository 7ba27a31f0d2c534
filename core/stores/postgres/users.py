"""Users, their episodes and their chat sessions on PostgreSQL: the shared job (:mod:`..sql.users`), and its tables."""

from __future__ import annotations

import functools
from collections.abc import Callable

from ...tenant import Tenant
from ..sql.users import USER_TABLES, SqlUserRows
from .connection import PgConnection


class PgUserRows(SqlUserRows, PgConnection):
    """Users, their episodes and their chat sessions; a deleted user's HNSW copy and queued writes go with them."""

    user_tables = (*USER_TABLES, "vector_tiers", "ann_vectors", "outbox", "outbox_quarantine")
    #: Told the tenant whose rows :meth:`delete_user` deleted, once committed: their HNSW index is dropped.
    on_user_deleted: Callable[[Tenant], None] | None = None

    def _user_deleted(self, tenant: Tenant) -> None:
        if self.on_user_deleted is not None:
            self.after_commit(functools.partial(self.on_user_deleted, tenant))
