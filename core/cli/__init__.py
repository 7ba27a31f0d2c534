"""The ``zep-memory`` command: a thin shell over :class:`zep_core.Memory`.

Every command takes ``--data DIR`` (the data folder, default ``./data``), ``--user ID``
and, where it prints results, ``--json``. Library errors become one line,
``error: ...``, and exit code 2; ``maintain`` exits 1 while episodes stay pending and
``doctor`` exits 1 when the stores disagree, so both fit cron jobs and CI.

Run ``zep-memory --help`` or ``zep-memory COMMAND --help`` for the details; docs/cli.md
has a walk-through. Inside: :mod:`.table` declares the commands and builds the parser,
:mod:`.commands` runs them through :mod:`.options` (the Memory, user and output the
common options name), and :mod:`.app` is the edge where errors become exit codes.
"""

from .app import main
from .table import build_parser

__all__ = ["build_parser", "main"]
