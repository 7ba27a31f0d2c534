"""Read the ``config { … }`` block of a ``.mnm`` spec file into MemoryConfig settings.

The user's spec (``zep.mnm``) starts with::

    config {
      storage: sqlite("./data/zep.db")
      vector: auto
      graph: auto
      embedding: openai("text-embedding-3-small")
      extractor: openai("gpt-4o-mini")
    }

Each entry maps to :class:`~zep_core.MemoryConfig` fields:

============  ===============================================  ======================================
key           accepted values                                  fields
============  ===============================================  ======================================
storage       ``sqlite("<folder>/zep.db")``                    ``data_dir`` (relative to the file)
vector        ``auto``, ``chroma``, ``chroma("http://…")``     ``chroma_url`` for a Chroma server
graph         ``auto``, ``kuzu``                               (Kùzu, embedded)
embedding     ``openai("<model>"[, dimensions: N])``,          ``embedding_provider``,
              ``local``, ``auto``                              ``embedding_model``, ``embedding_dimensions``
extractor     ``openai("<model>")``, ``local``, ``rules``,     ``extractor_provider``,
              ``auto``                                         ``extractor_model``
============  ===============================================  ======================================

Anything else in the block — an unknown key, a value of the wrong form, a missing
brace — is a :class:`~zep_core.ConfigError` that names the file and line. The rest of
the file (records, handlers, queries) is the spec the library implements; it is not
read here.

Example:
    >>> MemoryConfig.from_mnm("spec/zep.mnm")                                   # doctest: +SKIP
    MemoryConfig(data_dir=PosixPath('spec/data'), ..., embedding_provider='openai', ...)

"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .errors import ConfigError

__all__ = ["parse_config_block", "read_config_block"]

_OPEN = re.compile(r"^config\s*\{$")
_ENTRY = re.compile(r"^([A-Za-z_]\w*)\s*:\s*(.+)$")
_CALL = re.compile(r"^([A-Za-z_]\w*)\s*(?:\((.*)\))?$")
_STRING = re.compile(r"^(\"[^\"]*\"|'[^']*')$")
_NAMED = re.compile(r"^([A-Za-z_]\w*)\s*:\s*(.+)$")


def read_config_block(path: str | Path) -> dict[str, Any]:
    """The MemoryConfig settings of a ``.mnm`` file's config block.

    Raises:
        ConfigError: the file is unreadable, or the block is missing or malformed.

    """
    path = Path(path).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the spec file {path}: {exc}") from None
    return parse_config_block(text, base_dir=path.resolve().parent, source=str(path))


def parse_config_block(text: str, *, base_dir: str | Path = ".", source: str = "<mnm>") -> dict[str, Any]:
    """Parse the ``config { … }`` block of spec text.

    Args:
        text: the whole ``.mnm`` file.
        base_dir: relative storage paths are read from here (the spec file's folder).
        source: the file's name, for error messages.

    Raises:
        ConfigError: the block is missing, unclosed, or has an unknown or malformed entry.

    """
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if _OPEN.match(_strip(line))), None)
    if start is None:
        raise ConfigError(f"{source}: no `config {{ … }}` block found")
    settings: dict[str, Any] = {}
    seen: dict[str, int] = {}
    for number in range(start + 2, len(lines) + 1):
        line = _strip(lines[number - 1])
        if not line:
            continue
        if line == "}":
            return settings
        where = f"{source}, line {number}"
        entry = _ENTRY.match(line)
        if entry is None:
            raise ConfigError(f"{where}: expected `key: value` inside the config block, got {line!r}")
        key, value = entry[1], entry[2].strip()
        if key in seen:
            raise ConfigError(f"{where}: {key} is already set on line {seen[key]}")
        if key not in _READERS:
            raise ConfigError(f"{where}: unknown config key {key!r}; known keys: {', '.join(_READERS)}")
        seen[key] = number
        name, args, named = _call(value, where)
        settings.update(_READERS[key](name, args, named, where, Path(base_dir)))
    raise ConfigError(f"{source}, line {start + 1}: the config block opened here is never closed with `}}`")


def _strip(line: str) -> str:
    """The line without its comment (a ``#`` outside quotes) and surrounding spaces."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char == "#":
            return line[:i].strip()
    return line.strip()


def _call(value: str, where: str) -> tuple[str, list[str], dict[str, str]]:
    """``name``, ``name()`` or ``name("a", key: 1)`` → the name, string args, named args."""
    match = _CALL.match(value)
    if match is None:
        raise ConfigError(f"{where}: cannot read {value!r}; write e.g. auto or openai(\"gpt-4o-mini\")")
    args: list[str] = []
    named: dict[str, str] = {}
    for part in _split(match[2] or "", where):
        if _STRING.match(part):
            if named:
                raise ConfigError(f"{where}: positional argument {part} after a named one")
            args.append(part[1:-1])
            continue
        pair = _NAMED.match(part)
        if pair is None:
            raise ConfigError(f"{where}: argument {part!r} is neither a quoted string nor `name: value`")
        value_text = pair[2].strip()
        named[pair[1]] = value_text[1:-1] if _STRING.match(value_text) else value_text
    return match[1], args, named


def _split(text: str, where: str) -> list[str]:
    parts, current, quote = [], "", None
    for char in text:
        if quote:
            quote = None if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char == ",":
            parts.append(current.strip())
            current = ""
            continue
        current += char
    if quote:
        raise ConfigError(f"{where}: unclosed quote in {text!r}")
    parts.append(current.strip())
    if parts == [""]:
        return []
    if "" in parts:
        raise ConfigError(f"{where}: empty argument in ({text})")
    return parts


def _expect(name: str, args: list[str], named: dict[str, str], where: str, *, max_args: int,
            allowed: tuple[str, ...] = ()) -> None:
    if len(args) > max_args:
        raise ConfigError(f"{where}: {name}(…) takes at most {max_args} string argument(s), got {len(args)}")
    unknown = sorted(set(named) - set(allowed))
    if unknown:
        raise ConfigError(f"{where}: {name}(…) has no option {', '.join(unknown)}")


def _storage(name: str, args: list[str], named: dict[str, str], where: str, base: Path) -> dict[str, Any]:
    if name != "sqlite" or len(args) != 1:
        raise ConfigError(f"{where}: storage must be sqlite(\"<folder>/zep.db\"), got {name}")
    _expect(name, args, named, where, max_args=1)
    file = Path(args[0]).expanduser()
    if file.name != "zep.db":
        raise ConfigError(f"{where}: the SQLite file is always zep.db inside the data folder (chroma/ and graph/ "
                          f"sit beside it); write sqlite(\"{(file.parent / 'zep.db').as_posix()}\")")
    return {"data_dir": file.parent if file.is_absolute() else base / file.parent}


def _vector(name: str, args: list[str], named: dict[str, str], where: str, base: Path) -> dict[str, Any]:
    if name not in ("auto", "chroma"):
        raise ConfigError(f"{where}: vector store {name!r} is not supported; use auto or chroma (Chroma)")
    _expect(name, args, named, where, max_args=1 if name == "chroma" else 0)
    if args and not args[0].startswith(("http://", "https://")):
        raise ConfigError(f"{where}: chroma(…) takes the URL of a Chroma server, got {args[0]!r}")
    return {"chroma_url": args[0]} if args else {}


def _graph(name: str, args: list[str], named: dict[str, str], where: str, base: Path) -> dict[str, Any]:
    if name not in ("auto", "kuzu"):
        raise ConfigError(f"{where}: graph store {name!r} is not supported; use auto or kuzu (Kùzu, embedded)")
    _expect(name, args, named, where, max_args=0)
    return {}


def _embedding(name: str, args: list[str], named: dict[str, str], where: str, base: Path) -> dict[str, Any]:
    if name in ("auto", "local"):
        _expect(name, args, named, where, max_args=0)
        return {"embedding_provider": name}
    if name != "openai":
        raise ConfigError(f"{where}: embedding {name!r} is not supported; use openai(\"<model>\"), local or auto")
    _expect(name, args, named, where, max_args=1, allowed=("dimensions",))
    out: dict[str, Any] = {"embedding_provider": "openai"}
    if args:
        out["embedding_model"] = args[0]
    if "dimensions" in named:
        if not named["dimensions"].isdigit() or int(named["dimensions"]) < 1:
            raise ConfigError(f"{where}: dimensions must be a positive integer, got {named['dimensions']!r}")
        out["embedding_dimensions"] = int(named["dimensions"])
    return out


def _extractor(name: str, args: list[str], named: dict[str, str], where: str, base: Path) -> dict[str, Any]:
    if name in ("auto", "local", "rules"):
        _expect(name, args, named, where, max_args=0)
        return {"extractor_provider": "auto" if name == "auto" else "local"}
    if name != "openai":
        raise ConfigError(f"{where}: extractor {name!r} is not supported; use openai(\"<model>\"), rules or auto")
    _expect(name, args, named, where, max_args=1)
    return {"extractor_provider": "openai", **({"extractor_model": args[0]} if args else {})}


_READERS = {"storage": _storage, "vector": _vector, "graph": _graph, "embedding": _embedding,
            "extractor": _extractor}
