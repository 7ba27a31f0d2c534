"""What the common options mean: the Memory to open, the user, the output format.

``--data``, ``--config`` and ``--chroma-url`` name the Memory, ``--user`` the user and
``--json`` the output. Every command opens its memory with :func:`open_memory` and
prints with :func:`emit`, so the options mean the same thing everywhere.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
from collections.abc import Callable, Iterator
from typing import Any

from .. import ConfigError, Memory, MemoryConfig

__all__ = ["config_from", "emit", "load_config", "open_memory", "user_of"]


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
    return config.with_(**changes) if changes else config


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
def open_memory(args: argparse.Namespace, **changes: Any) -> Iterator[Memory]:
    """Open the Memory the options name, with ``changes`` to its config; close it on the way out."""
    config = config_from(args)
    if changes:
        config = config.with_(**changes)
    with Memory(config) as memory:
        yield memory


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
