"""ZepRetriever: the memory's GetContext as a LangChain retriever."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import Field, field_validator, model_validator
from zep_core import Fact, ValidationError, aio
from zep_core.models import to_utc
from zep_core.sessions import afacts_for, facts_for
from zep_core.validation import check_limit

from ._convert import fact_to_document
from ._memory import MemoryLike

__all__ = ["SEARCH_KWARGS", "ZepRetriever"]

#: What ``search_kwargs`` (and ``invoke(query, **kwargs)``) may set.
SEARCH_KWARGS = ("k", "as_of", "threshold")

_HINTS = {
    "top_k": "use k= (LangChain's name for it)",
    "filter": "facts are already scoped by user_id; there is no metadata filter",
    "score_threshold": "use threshold= (the cosine a semantic match needs)",
    "search_type": "GetContext is the only search",
}


def _unknown(names: list[str], where: str, allowed: tuple[str, ...]) -> ValidationError:
    hints = "; ".join(f"{n}: {_HINTS[n]}" for n in names if n in _HINTS)
    return ValidationError(f"ZepRetriever does not take {', '.join(map(repr, names))} {where}; it takes "
                           f"{', '.join(allowed)}" + (f" ({hints})" if hints else ""))


def _search_options(given: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Check and normalise ``k``/``as_of``/``threshold`` as ``search_kwargs`` or ``invoke`` give them."""
    unknown = sorted(set(given) - set(SEARCH_KWARGS))
    if unknown:
        raise _unknown(unknown, where, SEARCH_KWARGS)
    out: dict[str, Any] = {}
    if given.get("k") is not None:
        out["k"] = check_limit(given["k"], "k")
    if given.get("as_of") is not None:
        out["as_of"] = to_utc(given["as_of"], "as_of")
    if given.get("threshold") is not None:
        value = given["threshold"]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not -1.0 <= value <= 1.0:
            raise ValidationError(f"threshold must be a cosine between -1 and 1, got {value!r}")
        out["threshold"] = float(value)
    return out


class _WithThreshold:
    """A memory whose GetContext uses another semantic threshold (what ``threshold=`` asks for).

    :func:`zep_core.sessions.facts_for` keeps the adapters' rules (unknown user, "the
    user", the speaker) in one place; this passes the threshold through it.
    """

    def __init__(self, memory: Any, threshold: float) -> None:
        self._memory, self._threshold = memory, threshold

    def __getattr__(self, name: str) -> Any:
        return getattr(self._memory, name)

    def get_context(self, input: str, **options: Any) -> list[Fact]:
        return self._memory.get_context(input, threshold=self._threshold, **options)

    async def aget_context(self, input: str, **options: Any) -> list[Fact]:
        return await aio.call(self._memory, "get_context", input, threshold=self._threshold, **options)


class ZepRetriever(BaseRetriever):
    """The user's current facts most relevant to a query, as ``Document``s.

    Each document's text is the fact; its metadata carries ``subject``,
    ``predicate``, ``object``, ``valid_from``/``valid_until`` (ISO strings),
    ``confidence``, ``score``, ``semantic_score``, ``lexical_score``, ``graph_score``,
    ``source_message_ids``, ``episode_id`` and ``fact_id``. An unknown user has no
    facts: the result is empty, not an error.

    Like LangChain's vector-store retrievers it takes ``search_kwargs``
    (``{"k": 3, "as_of": "2024-02-01", "threshold": 0.5}``); the same names work as
    fields and per call (``invoke(query, k=3)``): ``search_kwargs`` override the
    fields, and a per-call value overrides both. Anything
    else (``top_k``, ``filter``, a misspelt field) is refused with an error that says
    what to use, never ignored.

    Args:
        memory: the :class:`zep_core.Memory` (or a ``RemoteMemory``).
        user_id: the tenant whose facts are searched (required).
        k: how many documents at most.
        user_name: the user's name (default: the memory's ``default_speaker``): a query
            that says "I/me/my" or "the user" is read as about them.
        as_of: return what was true at that time instead of now.
        threshold: the cosine a semantic match needs (default: the memory's
            ``semantic_threshold``).
        search_kwargs: ``k``, ``as_of`` and ``threshold`` in one mapping.

    Example:
        >>> retriever = ZepRetriever(memory=memory, user_id="alice", search_kwargs={"k": 3})  # doctest: +SKIP
        >>> [d.page_content for d in retriever.invoke("Where does Alice live?")]
        ['Alice lives in Berlin.', ...]

    """

    memory: MemoryLike = Field(exclude=True)
    user_id: str = Field(min_length=1)
    k: int = Field(default=10, ge=1)
    user_name: str | None = None
    as_of: datetime | None = None
    threshold: float | None = Field(default=None, ge=-1.0, le=1.0)
    search_kwargs: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _known_fields(cls, data: Any) -> Any:
        """Refuse unknown arguments by name, with what to use instead."""
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(cls.model_fields))
            if unknown:
                base = tuple(BaseRetriever.model_fields)
                own = tuple(n for n in cls.model_fields if n not in base)
                raise _unknown(unknown, "as an argument", own + base)
        return data

    @field_validator("search_kwargs")
    @classmethod
    def _check_search_kwargs(cls, value: dict[str, Any]) -> dict[str, Any]:
        return _search_options(value, "in search_kwargs")

    def _options(self, given: Mapping[str, Any]) -> dict[str, Any]:
        fields = {"k": self.k, "as_of": self.as_of, "threshold": self.threshold}
        return {**fields, **self.search_kwargs, **_search_options(given, "as an invoke() argument")}

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                **kwargs: Any) -> list[Document]:
        kwargs.pop("verbose", None)  # BaseRetriever.invoke passes it through
        options = self._options(kwargs)
        memory = self.memory if options["threshold"] is None else _WithThreshold(self.memory, options["threshold"])
        facts = facts_for(memory, query, user_id=self.user_id, user_name=self.user_name, limit=options["k"],
                          as_of=options["as_of"])
        return [fact_to_document(f) for f in facts]

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
                                       **kwargs: Any) -> list[Document]:
        kwargs.pop("verbose", None)
        options = self._options(kwargs)
        memory = self.memory if options["threshold"] is None else _WithThreshold(self.memory, options["threshold"])
        facts = await afacts_for(memory, query, user_id=self.user_id, user_name=self.user_name, limit=options["k"],
                                 as_of=options["as_of"])
        return [fact_to_document(f) for f in facts]
