"""ZepRetriever: GetContext as a LlamaIndex ``BaseRetriever``.

Each result is a fact: the node's text is the fact, its score the GetContext score,
and its metadata the triple, the validity, the score parts and the ids of the
messages the fact came from. Use it in ``RetrieverQueryEngine``,
``ContextChatEngine`` or ``CondensePlusContextChatEngine``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle
from zep_core import ValidationError
from zep_core.sessions import afacts_for, check_memory, facts_for

from .convert import fact_to_node

__all__ = ["ZepRetriever"]


class ZepRetriever(BaseRetriever):
    """Retrieve a user's current facts, ranked by GetContext.

    Args:
        memory: an open :class:`zep_core.Memory` (or a ``zep_core.server.RemoteMemory``).
        user_id: the tenant whose facts are searched (required).
        top_k: how many facts (default: the memory's ``context_limit``); LlamaIndex's
            ``similarity_top_k`` is accepted as the same setting.
        user_name: who "I" is in a query (default: the memory's ``default_speaker``).
        as_of: return what was true at that time instead of now.
        callback_manager: LlamaIndex callbacks.
        verbose: LlamaIndex verbosity.

    Example:
        >>> from llama_index.core.query_engine import RetrieverQueryEngine
        >>> retriever = ZepRetriever(memory=memory, user_id="ada", top_k=5)
        >>> [n.text for n in retriever.retrieve("Where does Ada live?")]             # doctest: +SKIP
        ['Ada lives in Berlin.']
        >>> engine = RetrieverQueryEngine.from_args(retriever, llm=llm)            # doctest: +SKIP

    """

    def __init__(self, memory: Any, user_id: str | None = None, *, top_k: int | None = None,
                 user_name: str | None = None, as_of: datetime | str | None = None,
                 callback_manager: CallbackManager | None = None, verbose: bool = False,
                 similarity_top_k: int | None = None, **kwargs: Any) -> None:
        check_memory(memory)
        if similarity_top_k is not None:  # LlamaIndex's own name for it (VectorIndexRetriever, as_retriever)
            if top_k is not None and top_k != similarity_top_k:
                raise ValidationError(f"top_k={top_k!r} and similarity_top_k={similarity_top_k!r} disagree: "
                                      "give one of them (they are the same setting)")
            top_k = similarity_top_k
        if user_id is None:
            raise ValidationError("ZepRetriever needs user_id=: the user whose facts it retrieves (there is no "
                                  "shared default user)")
        if not isinstance(user_id, str) or not user_id.strip():
            raise ValidationError(f"user_id must be a non-empty string, got {user_id!r}")
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
            raise ValidationError(f"top_k must be a positive integer, got {top_k!r}")
        self.memory = memory
        self.user_id = user_id
        self.top_k = top_k
        self.user_name = user_name
        self.as_of = as_of
        super().__init__(callback_manager=callback_manager, verbose=verbose, **kwargs)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        facts = facts_for(self.memory, query_bundle.query_str, user_id=self.user_id, user_name=self.user_name,
                          limit=self.top_k, as_of=self.as_of)
        return [fact_to_node(f) for f in facts]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        facts = await afacts_for(self.memory, query_bundle.query_str, user_id=self.user_id, user_name=self.user_name,
                                 limit=self.top_k, as_of=self.as_of)
        return [fact_to_node(f) for f in facts]
