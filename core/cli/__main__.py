"""``python -m zep_core.cli``: the ``zep-memory`` command."""

from .app import main

raise SystemExit(main())
