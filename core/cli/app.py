"""The edge of the command line: parse, run the command, turn library errors into ``error: ...`` and exit 2."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from .. import ZepMemoryError
from .table import build_parser

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code (0 ok, 1 work left or problems found, 2 error).

    Example:
        >>> main(["stats", "--data", "./data", "--json"])                 # doctest: +SKIP
        0

    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = int(args.handler(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler below, not at exit
        return code
    except BrokenPipeError:  # `zep-memory export | head`: the reader has what it wanted
        _silence_stdout()
        return 0
    except ZepMemoryError as exc:
        return _fail(exc)
    except OSError as exc:  # files named on the command line: unreadable, unwritable…
        return _fail(exc)
    except KeyboardInterrupt:
        print(f"interrupted: {_AFTER_INTERRUPT.get(getattr(args, 'command', ''), _KEPT)}", file=sys.stderr)
        return 130


#: What an interrupted command kept, and what to do next (the memory was closed on the way out).
_KEPT = "every write that finished is kept, none is left half-done; run the command again"
_AFTER_INTERRUPT = {
    "ingest": "the conversations stored before it are kept (the memory was closed cleanly); run the same "
              "command again to resume: what is already stored is skipped",
    "import": "an import writes in one transaction: nothing of this one was kept, the memory is as it was; "
              "run the same command again",
    "maintain": "the episodes extracted before it are kept; run `zep-memory maintain` again for the rest",
    "rebuild": "the records are untouched; run `zep-memory rebuild` again to finish the indexes",
    "serve": "the server stopped; every acknowledged write is stored",
    "mcp": "the MCP server stopped; every stored conversation is kept",
}


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush does not raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real file descriptor (captured in tests)
        pass


def _fail(exc: BaseException) -> int:
    message = " ".join(str(exc).split()) or type(exc).__name__
    print(f"error: {message}", file=sys.stderr)
    return 2
