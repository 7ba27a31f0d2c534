"""``python -m zep_core``: the ``zep-memory`` command."""

from .cli import main

raise SystemExit(main())
