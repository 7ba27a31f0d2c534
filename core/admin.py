"""What a memory holds, and looking after it: the verbs :class:`zep_core.Memory` inherits from :class:`MemoryAdmin`.

:class:`zep_core.Memory` is the façade; its verbs come in two parts. The spec's
handler and queries, the lifecycle and the adapters' chat sessions are written in
:mod:`zep_core.memory`; the verbs that look after what the memory holds are written
here, once, and inherited: listing it (users, episodes, facts), export and import
(→ :mod:`~zep_core.transfer`), and its upkeep — refresh (spec ``every 6h``), maintain,
flush, forget, rebuild, checks and counts (→ :mod:`~zep_core.maintenance`). The CLI's
``stats``, ``maintain``, ``rebuild``, ``doctor``, ``forget``, ``export`` and ``import``
are these verbs. Like the rest of the façade, each checks what comes in and hands the
work to the module that owns it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any, TextIO

from . import transfer
from .config import MemoryConfig
from .errors import NotFoundError, ValidationError, ZepMemoryError
from .maintenance import Maintenance, MaintenanceReport
from .models import EPISODE_STATUSES, Episode, Fact
from .parts import Parts
from .providers.base import Embedder
from .sessions import SessionBuffer
from .stores import Stores
from .stores.backends import backend_for
from .sync import IndexSync
from .tenant import Tenant
from .validation import check_flag, check_id, check_limit

__all__ = ["MemoryAdmin"]


class MemoryAdmin:
    """The verbs of :class:`zep_core.Memory` that list, move and look after what it holds (see the module).

    Not used on its own: :class:`zep_core.Memory` inherits it, and its ``_build`` sets the
    attributes below (the parts of the data folder, :class:`~zep_core.parts.Parts`).
    """

    config: MemoryConfig
    data_dir: Path
    embedder: Embedder
    _parts: Parts
    _stores: Stores
    _sync: IndexSync
    _sessions: SessionBuffer
    _maintenance: Maintenance
    _closed: bool

    def _check_open(self) -> None:
        if self._closed or self._parts.closed:
            raise ZepMemoryError("this Memory is closed; open a new one")

    # -- what is stored ------------------------------------------------------------------

    def _require_user(self, user_id: str) -> Tenant:
        """The tenant of ``user_id``, once it is checked and known (else a ``ValidationError`` or ``NotFoundError``)."""
        tenant = Tenant.of(user_id)
        self._check_open()
        if not self._stores.records.has_user(tenant):
            raise NotFoundError(f"unknown user {user_id!r}: nothing was ever stored for it; "
                                "check the user_id or call conversation_end() first")
        return tenant

    def has_user(self, user_id: str) -> bool:
        """Whether anything was ever stored for ``user_id``."""
        return self._stores.records.has_user(Tenant.of(user_id))

    def users(self) -> list[str]:
        """Every known user id."""
        return self._stores.records.users()

    def get_episode(self, episode_id: str, *, user_id: str | None = None) -> Episode:
        """A stored episode with its messages: ``user_id``'s (a ``NotFoundError`` for another user's).

        Without ``user_id``, the episode of whichever user holds that id (episode ids are
        unique across users): for a caller that sees every user, as :meth:`users` does.
        """
        check_id(episode_id, "episode_id")
        tenant = Tenant.of(user_id) if user_id is not None else self._stores.records.episode_owner(episode_id)
        episode = None if tenant is None else self._stores.records.get_episode(tenant, episode_id)
        if episode is None:
            raise NotFoundError(f"no episode {episode_id!r}" + (f" of user {user_id!r}" if user_id is not None else ""))
        return episode

    def episode_ids(self, *, user_id: str | None = None, status: str | None = None) -> list[str]:
        """Ids of the stored episodes, oldest first; of one user, or one status (``pending``, ``done``, ``failed``)."""
        if user_id is not None:
            user_id = Tenant.of(user_id)
        if status is not None and status not in EPISODE_STATUSES:
            raise ValidationError(f"status must be one of {', '.join(EPISODE_STATUSES)} (or None for all), "
                                  f"got {status!r}")
        return self._stores.records.episode_ids(user_id, status=status)

    def facts(self, user_id: str) -> list[Fact]:
        """Every fact of a user, superseded ones too, oldest first.

        Raises:
            NotFoundError: the user is unknown.

        """
        user_id = self._require_user(user_id)
        records = self._stores.records
        found = [f for ids in records.iter_fact_ids(user_id) for f in records.get_facts(user_id, ids).values()]
        return sorted(found, key=lambda f: (f.valid_from, f.id))

    # -- export and import (zep_core.transfer) ---------------------------------------------------

    def export_records(self, user_id: str, *, embeddings: bool = False) -> Iterator[dict[str, Any]]:
        """Every record of a user as JSON-ready dicts, in the export format (:mod:`zep_core.transfer`).

        Raises:
            NotFoundError: the user is unknown.

        """
        self._check_open()
        check_flag(embeddings, "embeddings")
        user_id = Tenant.of(user_id)
        if not self.has_user(user_id):
            raise NotFoundError(f"unknown user {user_id!r}: nothing is stored for it in {self.data_dir}")
        return transfer.export_records(self._stores.records, self.embedder, user_id, embeddings=embeddings)

    def export_user(self, user_id: str, out: TextIO, *, embeddings: bool = False) -> transfer.ExportCounts:
        """Write a user's memory to ``out`` as JSONL; ``embeddings`` includes the stored vectors."""
        return transfer.write_export(self.export_records(user_id, embeddings=embeddings), out)

    def import_user(self, lines: Iterable[str], *, replace: bool = False,
                    user_id: str | None = None) -> transfer.ImportReport:
        """Write an export back as it was, without re-extraction (see :func:`zep_core.transfer.import_records`)."""
        self._check_open()
        check_flag(replace, "replace")
        if isinstance(lines, (str, bytes)) or not isinstance(lines, Iterable):
            raise ValidationError(f"lines must be an open file or an iterable of JSON lines, got "
                                  f"{type(lines).__name__}" + (" (split a whole export with .splitlines())"
                                                               if isinstance(lines, (str, bytes)) else ""))
        if user_id is not None:
            user_id = Tenant.of(user_id)
        return transfer.import_records(self._stores.records, self._sync, self.embedder, lines, replace=replace,
                                       user_id=user_id, data_dir=self.data_dir, config=self.config)

    # -- maintenance (zep_core.maintenance) -------------------------------------------------------

    def refresh_entities(self, *, user_id: str | None = None, max_age: timedelta | None = None,
                         batch_size: int = 50) -> int:
        """The spec's ``every 6h``: regenerate summary, fact_count and last_updated.

        Only entities changed since their last refresh, and last refreshed at least
        ``max_age`` ago (default ``config.entity_refresh_interval``), are touched.

        Returns:
            How many entities were refreshed.

        """
        self._check_open()
        if user_id is not None:
            user_id = Tenant.of(user_id)
        if max_age is not None and (not isinstance(max_age, timedelta) or max_age < timedelta(0)):
            raise ValidationError(f"max_age must be a timedelta >= 0 (or None for the config's "
                                  f"entity_refresh_interval), got {max_age!r}")
        return self._maintenance.refresh_entities(user_id=user_id, max_age=max_age,
                                                  batch_size=check_limit(batch_size, "batch_size", maximum=1_000_000))

    def maintain(self) -> MaintenanceReport:
        """Retry pending extractions, replay index writes, refresh stale entities, end sessions left idle.

        A chat session whose last waiting turn is ``session_idle_after`` old is ended
        (learned from) first, with ``end_left_sessions``.
        """
        self._check_open()
        ended = 0
        if self.config.end_left_sessions:
            ended = len(self._sessions.end_waiting(idle_for=self.config.session_idle_after))
        return replace(self._maintenance.maintain(), sessions_ended=ended)

    def flush(self) -> int:
        """Bring the indexes up to date with every committed write now; return how many were applied.

        Reads do this by themselves; call it before inspecting the indexes directly.
        """
        self._check_open()
        return self._sync.drain()

    def forget_user(self, user_id: str) -> None:
        """Remove every trace of a user: from the record store, and from the vector and graph indexes.

        Raises:
            NotFoundError: the user is unknown.

        """
        self._maintenance.forget_user(self._require_user(user_id))

    def rebuild(self, *, reembed: bool = False, batch_size: int = 1000) -> dict[str, int]:
        """Recreate the indexes (lexical, vectors, graph) from the record store, without re-embedding unless asked.

        Args:
            reembed: embed the stored texts again with the current embedder (after a
                model change), and record the new embedder identity.
            batch_size: rows read and indexed per batch.

        Returns:
            Counts of facts and entities indexed.

        """
        self._check_open()
        check_flag(reembed, "reembed")
        batch_size = check_limit(batch_size, "batch_size", maximum=1_000_000)
        return self._maintenance.rebuild(reembed=reembed, batch_size=batch_size)

    def check_consistency(self, user_id: str | None = None) -> dict[str, list[str]]:
        """Compare the indexes with the record store; an empty dict means they agree.

        Returns:
            Problem kinds mapped to the ids concerned (e.g. ``current_missing_in_chroma``).

        """
        self._check_open()
        if user_id is not None:
            user_id = Tenant.of(user_id)
        return self._maintenance.check_consistency([user_id] if user_id else self.users(), user_id)

    def stats(self, user_id: str | None = None) -> dict[str, Any]:
        """Counts per store (records, vectors per kind, graph), pending work and the embedder.

        With ``user_id``, that user's counts too (under ``"user"``). ``backend`` is the
        registry's name of the backend that opened the stores (``sqlite``: a data folder;
        ``postgres``; ``custom``: an opener of one's own, ``Memory(config, stores=...)``),
        ``database`` its database's URL (the password as ``***``), or None.
        ``vectors`` counts every current fact's vector; ``own_vector_index`` the users whose
        vectors have an index of their own (a Chroma collection past ``vector_exact_below``
        current facts, an HNSW index past ``postgres_exact_below``) and how many vectors those
        hold: every other user's are searched exactly, where the records are.
        """
        self._check_open()
        if user_id is not None:
            user_id = Tenant.of(user_id)
        opened = self._stores.backend  # what opened the stores, not what the config would choose
        return {**self._maintenance.stats(self.users(), user_id), "data_dir": str(self.data_dir),
                "chroma_url": self.config.chroma_url, "backend": opened or "custom",
                "database": backend_for(self.config).public_url(self.config) if opened else None}

