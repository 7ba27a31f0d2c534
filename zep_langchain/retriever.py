"""ZepRetriever: the memory's GetContext as a LangChain retriever."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import Field
from zep_core import Memory
from zep_core.sessions import facts_for

from ._convert import fact_to_document

__all__ = ["ZepRetriever"]


class ZepRetriever(BaseRetriever):
    """The user's current facts most relevant to a query, as ``Document``s.

    Each document's text is the fact; its metadata carries ``subject``,
    ``predicate``, ``object``, ``valid_from``/``valid_until`` (ISO strings),
    ``confidence``, ``score``, ``semantic_score``, ``lexical_score``, ``graph_score``,
    ``source_message_ids``, ``episode_id`` and ``fact_id``. An unknown user has no
    facts: the result is empty, not an error.

    Args:
        memory: the :class:`zep_core.Memory`.
        user_id: the tenant whose facts are searched.
        k: how many documents at most (also an ``invoke`` keyword: ``invoke(q, k=3)``).
        user_name: the user's name (default: the memory's ``default_speaker``): a query
            that says "I/me/my" or "the user" is read as about them.
        as_of: return what was true at that time instead of now.

    Example:
        >>> retriever = ZepRetriever(memory=memory, user_id="alice", k=3)   # doctest: +SKIP
        >>> [d.page_content for d in retriever.invoke("Where does Alice live?")]
        ['Alice lives in Berlin.', ...]

    """

    memory: Memory = Field(exclude=True)
    user_id: str = Field(default="default", min_length=1)
    k: int = Field(default=10, ge=1)
    user_name: str | None = None
    as_of: datetime | None = None

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                k: int | None = None, **kwargs: Any) -> list[Document]:
        kwargs.pop("verbose", None)  # BaseRetriever.invoke passes it through
        if kwargs:
            raise TypeError(f"unexpected arguments for ZepRetriever: {', '.join(sorted(kwargs))}")
        limit = self.k if k is None else int(k)
        facts = facts_for(self.memory, query, user_id=self.user_id, user_name=self.user_name, limit=limit,
                          as_of=self.as_of)
        return [fact_to_document(f) for f in facts]

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
                                       k: int | None = None, **kwargs: Any) -> list[Document]:
        return await asyncio.to_thread(self._get_relevant_documents, query, run_manager=run_manager.get_sync(),
                                       k=k, **kwargs)
