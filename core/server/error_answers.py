"""What leaves when a request fails: the table's status, the error's public class, its message scrubbed.

Every failure is ``{"error": {"type": "<ZepMemoryError subclass>", "message": "..."}}``
(:func:`error_response`), never a traceback: the status comes from the one table
(:mod:`.statuses`), and :class:`Scrub` replaces the server's paths (the data folder
first) in the message. Anything that is not a :class:`~zep_core.ZepMemoryError` is
logged here and answered ``internal error``.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError as ShapeError

from ..errors import ValidationError, ZepMemoryError
from .statuses import Unauthenticated, public_class, status_of

__all__ = ["MAX_MESSAGE_CHARS", "Scrub", "error_json", "error_response", "malformed", "refusal"]

log = logging.getLogger("zep_core.server")

#: An error message longer than this is cut.
MAX_MESSAGE_CHARS = 2000


class Scrub:
    """Replaces the server's paths (the data folder first) in text that leaves over the network.

    Args:
        data_dir: the memory's data folder, shown as ``<data>``.

    """

    #: an absolute path of three or more parts (``/home/u/x``; not ``/v1/get_context``), or a Windows one
    _ANY_PATH = re.compile(r"(?<![\w:/.~-])/(?:[^\s/'\"]+/){2,}[^\s'\",;)]*|\b[A-Za-z]:\\[^\s'\"]+")

    def __init__(self, data_dir: Path) -> None:
        roots = {str(data_dir): "<data>", str(data_dir.absolute()): "<data>", str(data_dir.resolve()): "<data>",
                 str(Path(__file__).resolve().parents[1]): "<zep_core>", sys.prefix: "<python>"}
        self.roots = sorted(((r, n) for r, n in roots.items() if len(r) > 1), key=lambda rn: -len(rn[0]))

    def __call__(self, text: str) -> str:
        """``text`` with the paths replaced, and cut to :data:`MAX_MESSAGE_CHARS`."""
        for root, name in self.roots:
            text = text.replace(root, name)
        text = self._ANY_PATH.sub("<path>", text)
        return text if len(text) <= MAX_MESSAGE_CHARS else text[:MAX_MESSAGE_CHARS - 3] + "..."


def error_json(status: int, kind: str, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """The body every error answer has, ``{"error": {"type": kind, "message": message}}``, with ``status``."""
    return JSONResponse({"error": {"type": kind, "message": message}}, status_code=status, headers=headers)


def refusal(cls: type[ZepMemoryError], message: str) -> JSONResponse:
    """The answer for an error of class ``cls``: the status of the table (:mod:`.statuses`), ``message`` as it is."""
    headers = {"WWW-Authenticate": "Bearer"} if issubclass(cls, Unauthenticated) else None
    return error_json(status_of(cls), public_class(cls).__name__, message, headers)


def error_response(exc: BaseException, scrub: Callable[[str], str]) -> JSONResponse:
    """The answer to an exception: its status from the table (:mod:`.statuses`), its message scrubbed, no traceback."""
    if not isinstance(exc, ZepMemoryError):
        log.error("internal error answering a request", exc_info=exc)
        return refusal(ZepMemoryError, "internal error")
    return refusal(type(exc), scrub(" ".join(str(exc).split()) or type(exc).__name__))


def malformed(exc: RequestValidationError | ShapeError, scrub: Callable[[str], str]) -> JSONResponse:
    """The answer to a request whose body or query does not fit its model: a ``ValidationError`` saying where."""
    return refusal(ValidationError, scrub(_shape_message(exc)))


def _shape_message(exc: RequestValidationError | ShapeError) -> str:
    """A malformed request in one line: where each problem is and what it is (the input itself is not echoed)."""
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err.get("loc", ()) if p not in ("body", "query"))
        parts.append(f"{where or 'the body'}: {err.get('msg', 'invalid')}")
    more = len(exc.errors()) - len(parts)
    return "malformed request: " + "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")
