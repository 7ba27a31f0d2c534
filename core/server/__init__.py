"""The memory as a service: ``zep-memory serve`` and :class:`RemoteMemory`, the same API over HTTP.

Kùzu lets one process open a data folder. The server is that process; any number of
others — several uvicorn workers, LangGraph runs, a chat bot and a nightly job — use
the memory through :class:`RemoteMemory`, which has the methods, signatures and return
types of :class:`zep_core.Memory`. Each API key is bound to the user ids it may use
(:class:`KeyRing`); the wire format is drawn in :mod:`zep_core.server.app`.

Needs the ``server`` extra (``pip install -e '.[server]'`` in a clone, docs/install.md: FastAPI, uvicorn,
httpx). Importing this package imports none of them: each name below loads its module
when it is first used, and says how to install the extra when it is missing.

Example:
    $ zep-memory serve --data ./data --keys keys.json          # one process owns ./data

    >>> from zep_core.server import RemoteMemory
    >>> with RemoteMemory("http://127.0.0.1:8765", api_key="...") as memory:    # doctest: +SKIP
    ...     memory.conversation_end("s1", [{"role": "user", "content": "I live in Paris"}], user_id="alice")
    ...     print(memory.context_block("Where do I live?", user_id="alice"))

"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, install_hint

if TYPE_CHECKING:
    from .app import create_app
    from .client import RemoteMemory
    from .keys import KeyRing

__all__ = ["KeyRing", "RemoteMemory", "create_app"]

_HOME = {"KeyRing": "keys", "RemoteMemory": "client", "create_app": "app"}
_EXTRA = ("fastapi", "uvicorn", "httpx", "starlette", "anyio", "h11")


def __getattr__(name: str) -> Any:
    """Load ``RemoteMemory``, ``create_app`` or ``KeyRing`` on first use (PEP 562).

    Raises:
        ConfigError: the ``server`` extra is not installed.

    """
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        module = importlib.import_module(f".{home}", __name__)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in _EXTRA:
            raise
        raise ConfigError(f"zep_core.server.{name} needs {exc.name}, which is not installed: "
                          f"{install_hint('server')}") from None
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
