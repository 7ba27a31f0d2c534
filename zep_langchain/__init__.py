"""LangChain adapters for zep-memory: chat memory, chat history, retriever, tools, agent middleware, store.

Thin on purpose: each class converts LangChain objects, calls the
:class:`zep_core.Memory` façade and converts back. The core stays synchronous;
async methods run it in a worker thread.

Example:
    >>> from zep_core import Memory                                         # doctest: +SKIP
    >>> from zep_langchain import ZepMemoryMiddleware, ZepRetriever, create_memory_tools
    >>> memory = Memory.open("./data")
    >>> retriever = ZepRetriever(memory=memory, user_id="alice", k=5)

"""

from zep_core.sessions import EndPolicy

from .chat_memory import ZepChatMemory
from .context import ZepContext
from .history import ZepChatMessageHistory
from .middleware import ZepMemoryMiddleware
from .retriever import ZepRetriever
from .store import ZepStore
from .tools import (
    ZepEntityHistoryTool,
    ZepRelatedEntitiesTool,
    ZepSearchMemoryTool,
    create_memory_tools,
)

__all__ = [
    "EndPolicy",
    "ZepChatMemory",
    "ZepChatMessageHistory",
    "ZepContext",
    "ZepEntityHistoryTool",
    "ZepMemoryMiddleware",
    "ZepRelatedEntitiesTool",
    "ZepRetriever",
    "ZepSearchMemoryTool",
    "ZepStore",
    "create_memory_tools",
]
