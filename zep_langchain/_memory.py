"""What the adapters accept as a memory: anything with the :class:`zep_core.Memory` API.

An embedded :class:`zep_core.Memory` and the ``RemoteMemory`` client of ``zep-memory
serve`` have the same methods, so every adapter takes either. The check is the
core's :func:`zep_core.sessions.check_memory` (it looks at the class only and
imports nothing from the server extra); this module makes it a pydantic field type.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator
from zep_core import ValidationError
from zep_core.sessions import check_memory

__all__ = ["MemoryLike", "check_memory", "check_store_memory", "is_memory"]

#: What :class:`~zep_langchain.store.ZepStore` calls beyond what every adapter does.
STORE_METHODS = ("users", "conversation_end")


def is_memory(obj: Any) -> bool:
    """Whether ``obj`` offers the memory API the adapters use (a ``Memory`` or a ``RemoteMemory``)."""
    try:
        check_memory(obj)
    except ValidationError:
        return False
    return True


def check_store_memory(obj: Any) -> Any:
    """:func:`check_memory`, plus the methods a store needs (``users``, ``conversation_end``).

    Raises:
        zep_core.ValidationError: naming what is missing.

    """
    check_memory(obj)
    missing = [name for name in STORE_METHODS if not callable(getattr(type(obj), name, None))]
    if missing:
        raise ValidationError(f"memory must be a zep_core.Memory or a RemoteMemory; {type(obj).__name__} has no "
                              f"{', '.join(missing)}")
    return obj


#: A pydantic field type for a memory: any object :func:`check_memory` accepts.
MemoryLike = Annotated[Any, AfterValidator(check_memory)]
