"""ZepStore: a LangGraph ``BaseStore`` kept in zep memory, searched through zep's facts.

``create_agent(model, tools, store=ZepStore(memory))`` (or ``graph.compile(store=...)``)
gives every node and tool ``runtime.store``: the long-term memory LangGraph's own
patterns and langmem-style memory tools write to.

**Namespaces are tenants, and two users never share one.** A namespace is read by
``layout``, by default ``("memories", "{user_id}")``: ``("memories", "alice")`` is zep
user ``"alice"`` (the same user as Alice's chat history), ``("memories", "acme", "alice")``
is ``"acme/alice"``, and a namespace that does not fit the layout is shared data under a
``~`` tenant (the rules: ``docs/langchain.md``, "A LangGraph store"); :func:`tenant_of`
tells which zep user a namespace is kept under.

**How an item is kept.** Each ``put`` and ``delete`` is appended, as exact JSON, to
the user's ``"langgraph-store"`` session in the memory's record store (rows with the
``tool`` role, which the memory never learns from): ``get`` returns the ``value``
dict exactly as it was put, with the item's ``created_at``/``updated_at``, and the
store survives restarts, exports and imports with the rest of the user's memory.
So that items are *searchable through zep's facts*, the text of each put value
(every string in it, or the ``index`` paths given to ``put``; ``index=False`` for
none) also goes through ``conversation_end`` as one episode of the user: its facts
join the user's knowledge graph, and a newer value supersedes what an older one
said, as any conversation would.

**Search.** Without ``query``, ``search`` lists the items under a prefix in the
order they were first put (per user), filtered and paged as ``InMemoryStore`` does.
With ``query`` it ranks every item under the prefix as ``InMemoryStore`` does, by
cosine similarity: the best of the query against the item's indexed texts (embedded with
the memory's embedder) and against the facts zep's retrieval (``get_context``: semantic,
lexical and graph matches over the user's *current* facts) finds for it among those
learned from the item. So ``score`` is a similarity, a short value or one in any script
is found even when it gave no fact, and an item put with ``index=False`` comes last, with
no score. What is no longer true is not searched: an item all of whose facts were
superseded (it said "I live in Paris"; a later item, "I moved to Berlin") is left out.
On a ``RemoteMemory`` (the server holds the embedder) items are found through their
facts only.
:meth:`ZepStore.as_of` gives a read-only view of the store as it was at another
time: items as they were then, searched over the facts true then.

**Deleting** removes the item from ``get``, ``search`` and ``list_namespaces``; the
log keeps the old value for :meth:`ZepStore.as_of`, and facts already learned from
it stay in the user's memory (as with ``clear()`` on a chat history).
``Memory.forget_user`` erases everything of a user. TTLs are not supported.

The store reads each user's log whole per batch: it suits the thousands of items
per user a memory store holds, not millions.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import numpy as np
from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    get_text_at_path,
)
from zep_core import Fact, Message, ValidationError
from zep_core.aio import in_thread
from zep_core.models import to_utc
from zep_core.sessions import facts_for
from zep_core.validation import MAX_LIMIT

from ._memory import check_store_memory
from ._namespaces import (
    DEFAULT_LAYOUT,
    PLACEHOLDER,
    SHARED_PREFIX,
    USER_LABEL,
    NamespaceError,
    check_layout,
    labels_of,
    place,
    tenant_of,
)
from ._values import condition_holds, dims_of, embeddings_of, fits, json_of, matches, strings

try:  # langgraph >= 1.2 checks the labels of ops handed to batch() directly
    from langgraph.store.base import validate_op_namespace
except ImportError:  # pragma: no cover - older langgraph: the BaseStore methods check them
    def validate_op_namespace(op: Op) -> None:
        """Older langgraph has no check for ops given to ``batch`` directly; its methods check labels."""

__all__ = ["DEFAULT_LAYOUT", "LOG_SESSION", "NamespaceError", "SHARED_PREFIX", "USER_LABEL", "ZepStore",
           "tenant_of"]

#: The session of each user that holds the store's log.
LOG_SESSION = "langgraph-store"
_LOG_NAME = "zep-store"
_LOG_VERSION = 1


@dataclass
class _Entry:
    """One live item as the log says it is."""

    value: str  # the exact JSON of the value
    created_at: datetime
    updated_at: datetime
    episode: str | None
    index: Any = None  # the put's ``index``: None (the store's fields), False, or value paths


#: One user's items: namespace -> key -> entry, in the order they were first put.
_State = dict[tuple[str, ...], dict[str, _Entry]]


def _episodes_of(fact: Fact) -> set[str]:
    """The episodes a fact came from (a restated fact keeps the sources of every episode that said it)."""
    found = {fact.episode_id} if fact.episode_id else set()
    found.update(source.rsplit(":", 1)[0] for source in fact.source_message_ids)
    return found


#: Texts whose vectors a store keeps between searches (about 1.5 kB each with the default embedder).
_MAX_VECTORS = 50_000


class ZepStore(BaseStore):
    """A LangGraph store on zep memory: exact items per user, searched through the user's facts.

    See the module docstring for how namespaces map to users and how items are kept.

    Args:
        memory: the :class:`zep_core.Memory` (or a ``RemoteMemory``).
        layout: how a namespace names its user: fixed labels and at least one
            ``{placeholder}`` (default ``("memories", "{user_id}")``; langmem's
            ``("memories", "{org_id}", "{user_id}")`` works as it is). A namespace that
            does not fit is kept as shared data (see the module docstring).
        fields: the value paths whose text is learned from (LangGraph's path syntax,
            e.g. ``["content"]``; default: every string in the value). ``put(...,
            index=[...])`` overrides it per item, ``index=False`` learns nothing.
        user_names: each user's name (a mapping or a function of the zep user id, e.g.
            ``"alice"`` or ``"acme/alice"``): "I" in an item's text, and in a query,
            means that person (default: the memory's ``default_speaker``).
        index: LangGraph's index config, as ``InMemoryStore(index=...)`` takes it: its
            ``fields`` are ``fields`` here; its ``embed`` (LangChain embeddings, a function
            of texts, or ``"provider:model"``) embeds the items' texts and the query for
            search, as in ``InMemoryStore``, and ``dims`` is checked against it. Without
            ``embed`` the memory's own embedder does, and the facts learned from an item
            score it too (one model, one scale).

    Example:
        >>> store = ZepStore(memory)                                           # doctest: +SKIP
        >>> store.put(("memories", "alice"), "home", {"content": "I live in Berlin."})
        >>> store.get(("memories", "alice"), "home").value
        {'content': 'I live in Berlin.'}
        >>> [i.key for i in store.search(("memories", "alice"), query="Where do I live?")]
        ['home']

    """

    supports_ttl = False

    def __init__(self, memory: Any, *, layout: Sequence[str] = DEFAULT_LAYOUT, fields: Sequence[str] | None = None,
                 user_names: Mapping[str, str] | Callable[[str], str | None] | None = None,
                 index: Mapping[str, Any] | None = None, _as_of: datetime | None = None) -> None:
        self.memory = check_store_memory(memory)
        if index is not None:
            if not isinstance(index, Mapping):
                raise ValidationError(f"index must be LangGraph's index config (a dict with 'fields'), got {index!r}")
            if index.get("fields") is not None:
                if fields is not None and list(fields) != list(index["fields"]):
                    raise ValidationError("fields= and index['fields'] disagree: give one of them")
                fields = index["fields"]
        self.index_config: dict[str, Any] | None = None if index is None else dict(index)
        #: LangChain embeddings the items' texts are searched with (``index["embed"]``), else None: the memory's.
        self.embeddings: Any = None
        if index is not None and index.get("embed") is not None:
            self.embeddings = embeddings_of(index["embed"])
        self._dims = None if index is None or index.get("dims") is None else dims_of(index["dims"])
        self.layout = check_layout(layout)
        if fields is not None and (isinstance(fields, str) or not all(isinstance(f, str) and f for f in fields)):
            raise ValidationError(f"fields must be a list of value paths such as ['content'], got {fields!r}")
        self.fields = None if fields is None else list(fields)
        if user_names is not None and not (callable(user_names) or isinstance(user_names, Mapping)):
            raise ValidationError("user_names must be a mapping of user ids to names, or a function of the user id")
        self.user_names = user_names
        self.when = _as_of
        self._told: set[str] = set()
        self._vectors: dict[str, np.ndarray] = {}  # indexed texts embedded by search (cleared past _MAX_VECTORS)

    def __repr__(self) -> str:
        at = f", as_of={self.when.isoformat()!r}" if self.when else ""
        return f"ZepStore(layout={self.layout!r}{at})"

    def as_of(self, when: datetime | str) -> ZepStore:
        """A read-only view of the store as it was at ``when``: items then, searched over the facts true then.

        Raises:
            zep_core.ValidationError: ``when`` is not a datetime or ISO-8601 string.

        """
        view = ZepStore(self.memory, layout=self.layout, fields=self.fields, user_names=self.user_names,
                        _as_of=to_utc(when, "as_of"))
        view.index_config, view.embeddings, view._dims, view._vectors = (self.index_config, self.embeddings,
                                                                         self._dims, self._vectors)
        return view

    # -- namespaces and users ----------------------------------------------------------------

    def _user_of(self, namespace: tuple[str, ...]) -> str:
        """The tenant (zep user) a full namespace's items are kept under."""
        tenant, shared = place(tuple(namespace), self.layout)
        if shared and tenant not in self._told:
            self._told.add(tenant)
            logging.getLogger(__name__).info(
                "ZepStore: namespace %r does not fit the layout %r: kept as shared data under zep user %r",
                tuple(namespace), self.layout, tenant)
        return tenant

    def _namespace_of(self, tenant: str) -> tuple[str, ...] | None:
        """The one namespace a tenant's items have, or None if no namespace makes it."""
        shared, labels = labels_of(tenant)
        if shared:
            return labels
        holders = sum(1 for label in self.layout if PLACEHOLDER.fullmatch(label))
        if len(labels) < holders:
            return None
        values = iter(labels)
        filled = tuple(next(values) if PLACEHOLDER.fullmatch(want) else want for want in self.layout)
        return (*filled, *values)

    def _users_under(self, prefix: Sequence[str]) -> list[str]:
        """The tenants a prefix can reach (``*`` labels allowed), in the memory's user order."""
        prefix = tuple(prefix)
        found = []
        for tenant in self.memory.users():
            namespace = self._namespace_of(tenant)
            if namespace is not None and len(namespace) >= len(prefix) and fits(prefix, namespace):
                found.append(tenant)  # a tenant holds one namespace: the prefix reaches it or not
        return found

    def _name_of(self, user_id: str) -> str | None:
        names = self.user_names
        if names is None:
            return None
        return names.get(user_id) if isinstance(names, Mapping) else names(user_id)

    # -- the log ------------------------------------------------------------------------------------

    def _state(self, user_id: str) -> _State:
        """Replay a user's log (up to the view's time) into the live items."""
        state: _State = {}
        if not self.memory.has_user(user_id):
            return state
        for message in self.memory.get_messages(LOG_SESSION, user_id=user_id):
            if message.name != _LOG_NAME or (self.when is not None and message.timestamp
                                             and message.timestamp > self.when):
                continue
            entry = json.loads(message.content)
            items = state.setdefault(tuple(entry["ns"]), {})
            key = entry["key"]
            if entry["op"] == "del":
                items.pop(key, None)
                continue
            previous = items.get(key)
            when = message.timestamp
            items[key] = _Entry(value=json.dumps(entry["value"], ensure_ascii=False),
                                created_at=previous.created_at if previous else when, updated_at=when,
                                episode=entry.get("episode"), index=entry.get("index"))
        return state

    def _item(self, namespace: tuple[str, ...], key: str, entry: _Entry, score: float | None = None,
              search: bool = False) -> Item:
        fields = {"namespace": namespace, "key": key, "value": json.loads(entry.value),
                  "created_at": entry.created_at, "updated_at": entry.updated_at}
        return SearchItem(**fields, score=score) if search else Item(**fields)

    # -- the batch --------------------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run get, search, list and put operations; reads see the store as it was before the batch's puts.

        As in ``InMemoryStore``, the puts of a batch are applied after its reads, and
        the last put of a ``(namespace, key)`` wins.

        Raises:
            NamespaceError: a label LangGraph refuses, or a namespace too long to name a zep user.
            zep_core.ValidationError: a value that is not plain JSON, or a write on an ``as_of`` view.

        """
        ops = list(ops)
        for op in ops:
            validate_op_namespace(op)
        cache: dict[str, _State] = {}

        def state(user_id: str) -> _State:
            if user_id not in cache:
                cache[user_id] = self._state(user_id)
            return cache[user_id]

        results: list[Result] = []
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            if isinstance(op, GetOp):
                entry = state(self._user_of(op.namespace)).get(op.namespace, {}).get(op.key)
                results.append(None if entry is None else self._item(op.namespace, op.key, entry))
            elif isinstance(op, SearchOp):
                results.append(self._search(op, state))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list(op, state))
            elif isinstance(op, PutOp):
                if self.when is not None:
                    raise ValidationError(f"this ZepStore is a read-only view as of {self.when.isoformat()}; "
                                          "write through the store itself")
                self._user_of(op.namespace)
                if not isinstance(op.key, str):
                    raise ValidationError(f"a store key must be a string, got {type(op.key).__name__}")
                if op.value is not None:
                    json_of(op.value)
                puts[(op.namespace, op.key)] = op
                results.append(None)
            else:
                raise ValidationError(f"unknown store operation {type(op).__name__}; use GetOp, SearchOp, "
                                      "ListNamespacesOp or PutOp")
        if puts:
            self._write(list(puts.values()))
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async :meth:`batch` (the core is synchronous: it runs in a worker thread)."""
        return await in_thread(self.batch, list(ops))

    # -- writes -------------------------------------------------------------------------------------

    def _texts(self, op: PutOp) -> list[str]:
        return [] if op.value is None else self._texts_of(dict(op.value), op.index)

    def _texts_of(self, value: dict[str, Any], index: Any) -> list[str]:
        """The texts of ``value`` an item is searched by: ``index`` paths, else the store's fields, else all."""
        paths = self.fields if index is None else index
        if paths is False:
            return []
        if paths is None or "$" in paths:
            return strings(value)
        return [t for path in paths for t in get_text_at_path(value, path) if t.strip()]

    def _write(self, puts: list[PutOp]) -> None:
        """Append each put/delete to its user's log (one write per user), then learn from the new texts."""
        limit = self.memory.config.max_message_chars
        logs: dict[str, list[Message]] = {}
        episodes: list[tuple[str, str, list[str]]] = []
        for op in puts:
            user_id = self._user_of(op.namespace)
            entry: dict[str, Any] = {"v": _LOG_VERSION, "op": "del" if op.value is None else "put",
                                     "ns": list(op.namespace), "key": op.key}
            if op.value is not None:
                entry["value"] = dict(op.value)
                if op.index is not None:
                    entry["index"] = op.index if op.index is False else list(op.index)
                texts = self._texts(op)
                if texts:
                    entry["episode"] = "store-" + uuid.uuid4().hex
                    episodes.append((user_id, entry["episode"], texts))
            content = json.dumps(entry, ensure_ascii=False)
            longest = max(len(t) for t in [content, *(episodes[-1][2] if "episode" in entry else [])])
            if longest > limit:
                raise ValidationError(f"the item {op.key!r} is {longest} characters as stored, over the memory's "
                                      f"max_message_chars={limit}; store less in one item")
            logs.setdefault(user_id, []).append(Message(content, role="tool", name=_LOG_NAME))
        for user_id, messages in logs.items():
            self.memory.add_messages(LOG_SESSION, messages, user_id=user_id)
        for user_id, episode_id, texts in episodes:
            name = self._name_of(user_id)
            self.memory.conversation_end(LOG_SESSION, [Message(t, role="user", name=name) for t in texts],
                                         user_id=user_id, episode_id=episode_id)

    # -- reads -------------------------------------------------------------------------------------

    def _candidates(self, prefix: tuple[str, ...], wanted: Mapping[str, Any] | None,
                    state: Callable[[str], _State]) -> list[tuple[str, tuple[str, ...], str, _Entry]]:
        """The items under a prefix, namespace by namespace in the order each was first put (as InMemoryStore)."""
        found = []
        for user_id in self._by_first_put(self._users_under(prefix), state):
            for namespace, items in state(user_id).items():
                if namespace[:len(prefix)] != prefix:
                    continue
                for key, entry in items.items():
                    if wanted and not all(matches(json.loads(entry.value).get(k), v) for k, v in wanted.items()):
                        continue
                    found.append((user_id, namespace, key, entry))
        return found

    @staticmethod
    def _by_first_put(tenants: list[str], state: Callable[[str], _State]) -> list[str]:
        def first(tenant: str) -> datetime:
            times = [e.created_at for items in state(tenant).values() for e in items.values()]
            return min(times, default=datetime.max.replace(tzinfo=timezone.utc))
        return sorted(tenants, key=first)

    def _search(self, op: SearchOp, state: Callable[[str], _State]) -> list[SearchItem]:
        """``InMemoryStore``'s search: with a query, every item under the prefix by similarity, best first.

        An item's score is the best cosine similarity between the query and its indexed texts
        (embedded with the memory's embedder, as its facts are) or the facts learned from it
        that zep's retrieval finds for the query: a similarity, so a threshold on it means
        what it does on ``InMemoryStore``, and an item is found whether or not its text gave
        facts (a word or two, any script). Items with nothing to search by
        (``index=False``) come after, with no score, as in ``InMemoryStore``.
        """
        candidates = self._candidates(tuple(op.namespace_prefix), op.filter, state)
        window = slice(op.offset, op.offset + op.limit)
        if not op.query:
            return [self._item(ns, key, entry, search=True) for _, ns, key, entry in candidates[window]]
        scores = self._similarities(op.query, candidates)
        wanted = min(MAX_LIMIT, max(50, 5 * (op.offset + op.limit)))
        stale: set[tuple[str, tuple[str, ...], str]] = set()
        for user_id in dict.fromkeys(c[0] for c in candidates):
            by_episode = {e.episode: (ns, key) for u, ns, key, e in candidates if u == user_id and e.episode}
            if not by_episode:
                continue
            stale |= {(user_id, *by_episode[e]) for e in self._outdated(user_id, by_episode.keys())}
            for fact in facts_for(self.memory, op.query, user_id=user_id, user_name=self._name_of(user_id),
                                  limit=wanted, as_of=self.when):
                for episode in _episodes_of(fact) & by_episode.keys():
                    where = (user_id, *by_episode[episode])
                    if fact.semantic_score is not None and self.embeddings is None:  # same embedder's cosine
                        scores[where] = max(scores.get(where, -1.0), fact.semantic_score)
        order = {(u, ns, key): i for i, (u, ns, key, _) in enumerate(candidates) if (u, ns, key) not in stale}
        ranked = sorted((w for w in scores if w in order), key=lambda where: (-scores[where], order[where]))
        ranked += [where for where in order if where not in scores]  # nothing to search by: last, unscored
        entries = {(u, ns, key): e for u, ns, key, e in candidates}
        return [self._item(ns, key, entries[(u, ns, key)], score=scores.get((u, ns, key)), search=True)
                for u, ns, key in ranked[window]]

    def _outdated(self, user_id: str, episodes: Iterable[str]) -> set[str]:
        """The episodes (items) all of whose facts are no longer true (at the view's time): what they said is stale."""
        wanted = set(episodes)
        learned: dict[str, bool] = {}
        for fact in self.memory.facts(user_id):
            for episode in _episodes_of(fact) & wanted:
                holds = fact.valid_at(self.when) if self.when is not None else fact.is_current
                learned[episode] = learned.get(episode, False) or holds
        return {episode for episode, holds in learned.items() if not holds}

    def _similarities(self, query: str, candidates: list[tuple[str, tuple[str, ...], str, _Entry]]
                      ) -> dict[tuple[str, tuple[str, ...], str], float]:
        """The best cosine between ``query`` and each candidate's indexed texts (none for an item without any)."""
        own = self.embeddings
        embedder = getattr(self.memory, "embedder", None)
        if own is None and embedder is None:  # a RemoteMemory: the server embeds; items found through their facts
            return {}
        texts: dict[tuple[str, tuple[str, ...], str], list[str]] = {}
        for user_id, ns, key, entry in candidates:
            found = self._texts_of(json.loads(entry.value), entry.index)
            if found:
                texts[(user_id, ns, key)] = found
        if not texts:
            return {}
        missing = sorted({t for found in texts.values() for t in found} - self._vectors.keys())
        if len(self._vectors) + len(missing) > _MAX_VECTORS:
            self._vectors.clear()
            missing = sorted({t for found in texts.values() for t in found})
        if missing:
            vectors = own.embed_documents(missing) if own is not None else embedder.embed(missing)
            for text, vector in zip(missing, vectors):
                self._vectors[text] = self._unit(vector)
        asked = self._unit(own.embed_query(query) if own is not None else embedder.embed_query(query))
        return {where: max(float(self._vectors[t] @ asked) for t in found) for where, found in texts.items()}

    def _unit(self, vector: Any) -> np.ndarray:
        """``vector`` scaled to length 1 (so a dot product is the cosine), checked against ``index['dims']``."""
        array = np.asarray(vector, dtype=np.float32)
        if self.embeddings is not None and self._dims is not None and array.shape != (self._dims,):
            raise ValidationError(f"the embeddings returned vectors of length {array.size}, but index['dims'] is "
                                  f"{self._dims}: give the embeddings' own length")
        norm = float(np.linalg.norm(array))
        return array / norm if norm else array

    def _list(self, op: ListNamespacesOp, state: Callable[[str], _State]) -> list[tuple[str, ...]]:
        conditions = tuple(op.match_conditions or ())
        prefix = next((tuple(c.path) for c in conditions if c.match_type == "prefix"), ())
        namespaces = {ns for user_id in self._users_under(prefix) for ns, items in state(user_id).items() if items}
        namespaces = {ns for ns in namespaces if all(condition_holds(c, ns) for c in conditions)}
        if op.max_depth is not None:
            namespaces = {ns[:op.max_depth] for ns in namespaces}
        return sorted(namespaces)[op.offset:op.offset + op.limit]
