"""LlamaIndex adapters for zep-memory: chat memory, memory block, retriever and agent tools.

Thin adapters: they convert LlamaIndex records, call the :class:`zep_core.Memory`
façade and convert back. Install with ``pip install "zep-memory[llamaindex]"``.

Example:
    >>> from zep_core import Memory
    >>> from zep_llamaindex import ZepMemory
    >>> memory = Memory.open("./data")                                             # doctest: +SKIP
    >>> chat_memory = ZepMemory(memory=memory, session_id="s1", user_id="ada")     # doctest: +SKIP

"""

from .memory import ZepMemory
from .memory_block import ZepMemoryBlock
from .retriever import ZepRetriever
from .tools import create_memory_tools

__all__ = ["ZepMemory", "ZepMemoryBlock", "ZepRetriever", "create_memory_tools"]
