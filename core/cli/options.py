"""What the common options mean: the Memory to open, the user, the output format.

``--data``, ``--database-url``, ``--config`` and ``--chroma-url`` name the Memory, ``--user`` the user and
``--json`` the output. Every command opens its memory with :func:`open_memory` and
prints with :func:`emit`, so the options mean the same thing everywhere.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from .. import ConfigError, Memory, MemoryConfig, NotFoundError
from ..stores.backends import backend_for

if TYPE_CHECKING:
    from ..server.keys import KeyRing

__all__ = ["api_keys", "config_from", "emit", "load_config", "open_memory", "user_of"]


def config_from(args: argparse.Namespace) -> MemoryConfig:
    """The MemoryConfig that ``--config``, ``--data`` and ``--chroma-url`` describe (data folder: ./data by default).

    Raises:
        ConfigError: ``--config`` cannot be loaded.

    """
    config = load_config(args.config) if args.config else MemoryConfig()
    changes: dict[str, Any] = {}
    if args.data is not None:
        changes["data_dir"] = args.data
    elif not args.config:
        changes["data_dir"] = "./data"
    if args.chroma_url is not None:
        changes["chroma_url"] = args.chroma_url
    database_url = getattr(args, "database_url", None) or os.environ.get("ZEP_DATABASE_URL")
    if database_url:  # an environment variable keeps a password out of the process list
        changes["database_url"] = database_url
    return config.with_(**changes) if changes else config


def api_keys(args: argparse.Namespace) -> KeyRing | None:
    """A listening command's API keys: ``--keys FILE``, else ``ZEP_MEMORY_API_KEYS`` or ``ZEP_MEMORY_KEYS_FILE``.

    Raises:
        ConfigError: the file or the variable does not hold a valid key list, or both variables are set.

    """
    from ..server.keys import KeyRing

    return KeyRing.from_file(args.keys) if args.keys else KeyRing.from_env()


def load_config(ref: str) -> MemoryConfig:
    """Import ``MODULE:NAME``: a MemoryConfig, or a function returning one.

    Raises:
        ConfigError: ``ref`` is malformed, cannot be imported, or gives something else.

    """
    module_name, _, attr = ref.partition(":")
    if not module_name or not attr:
        raise ConfigError(f"--config {ref!r} must look like MODULE:NAME, e.g. myapp.memory:config")
    try:
        obj = importlib.import_module(module_name)
        for part in attr.split("."):  # dotted names reach class methods: zep_core:MemoryConfig.from_env
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"--config {ref!r} cannot be loaded: {exc}") from exc
    config = obj() if callable(obj) and not isinstance(obj, MemoryConfig) else obj
    if not isinstance(config, MemoryConfig):
        raise ConfigError(f"--config {ref!r} gave a {type(config).__name__}, not a MemoryConfig")
    return config


@contextlib.contextmanager
def open_memory(args: argparse.Namespace, *, create: bool = False, **changes: Any) -> Iterator[Memory]:
    """Open the Memory the options name, with ``changes`` to its config; close it on the way out.

    Only the commands that write new memory (``create``: ingest, import, serve, mcp) may
    start a new data folder; the others refuse a folder that holds none, and create nothing,
    so a mistyped ``--data`` is an error instead of an empty memory that knows no one. A
    new memory that a command could not use is removed again, if nothing was stored in it.
    What holds a memory, and what a first open made, the backend says
    (:func:`~zep_core.stores.backends.backend_for`).
    Chat sessions left waiting are ended only where a command asks for it
    (``end_left_sessions=True``: maintain, serve, mcp): looking at a memory learns nothing.

    Raises:
        NotFoundError: not ``create`` and the folder holds no memory.

    """
    config = config_from(args).with_(**{"end_left_sessions": False, **changes})
    backend = backend_for(config)
    why = None if create else backend.missing(config)
    if why:
        raise NotFoundError(f"{why}; pass --data with the folder your memory is in, or create one with "
                            "`zep-memory ingest FILE --data DIR` (or `zep-memory demo --data DIR`)")
    undo = backend.remove_if_unused(config) if create else None
    try:
        with Memory(config) as memory:
            try:
                yield memory
            except NotFoundError as exc:
                raise _with_known_users(exc, memory) from None
    except BaseException:
        if undo is not None:  # a new memory the command could not use (a port in use, a failed ingest): not left
            undo()
        raise


def _with_known_users(exc: NotFoundError, memory: Memory) -> NotFoundError:
    """An unknown-user error that also names the users this folder holds."""
    text = str(exc)
    if not text.startswith("unknown user") or "known users" in text:
        return exc
    users = memory.users()
    shown = ", ".join(repr(u) for u in users[:20]) + (f" and {len(users) - 20} more" if len(users) > 20 else "")
    return NotFoundError(f"{text}; known users: {shown} (pass one with --user)" if users else
                         f"{text}; this folder holds no users yet")


def user_of(args: argparse.Namespace) -> str:
    """The ``--user`` to read or write (default: ``'default'``)."""
    return args.user or "default"


def emit(args: argparse.Namespace, payload: Any, text: Callable[[], str] | str) -> None:
    """Print ``payload`` as JSON with ``--json``, else the human-readable ``text`` (nothing when it is empty)."""
    if args.json:
        print(json.dumps(payload, indent=2, ensure_ascii=False, default=str))
    else:
        out = text() if callable(text) else text
        if out:
            print(out)
