"""How a ZepStore reads a LangGraph namespace: the zep user (tenant) its items are kept under.

**Namespaces are tenants, and two users never share one.** A namespace is read by
``layout``: fixed labels and ``{placeholders}``, by default ``("memories", "{user_id}")``
(the layout langmem and LangGraph's memory guides use). The zep user an item is kept
under (its *tenant*) is made of the namespace's placeholder labels and every label
deeper than the layout, so nothing a layout leaves out can merge two users:

- ``("memories", "alice")`` is zep user ``"alice"`` (the same user as Alice's chat
  history, so her stored items and her chats build one graph);
- ``("memories", "acme", "alice")`` under the default layout (langmem's
  ``("memories", "{org_id}", "{user_id}")``) is ``"acme/alice"``, and Bob of acme is
  ``"acme/bob"``: Bob's "I live in Oslo" never supersedes Alice's Paris;
  ``layout=("memories", "{org_id}", "{user_id}")`` names the same tenants;
- ``("memories", "alice", "prefs")`` is ``"alice/prefs"``: a sub-namespace is a tenant
  of its own, found by every search and listing under ``("memories", "alice")``;
- a namespace that does not fit the layout (``("app_config",)``, ``("memories",)``)
  is *shared data*: kept whole under a tenant of its own whose id starts with ``~``
  (``"~app_config"``), which no layout's tenant can be.

Each label is escaped (``%`` → ``%25``, ``/`` → ``%2F``, ``~`` → ``%7E``) and the
labels are joined by ``/``, so two different namespaces never make the same tenant;
a tenant is checked like every ``user_id`` (256 characters at most).
:func:`tenant_of` tells which zep user a namespace is kept under.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote

from langgraph.store.base import InvalidNamespaceError
from zep_core import ValidationError
from zep_core.validation import check_id

#: The label of the default layout that stands for the user id.
USER_LABEL = "{user_id}"
#: The default layout: ``("memories", user_id, ...)``.
DEFAULT_LAYOUT = ("memories", USER_LABEL)
#: The first character of a shared-data tenant (a namespace that does not fit the layout).
SHARED_PREFIX = "~"
PLACEHOLDER = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")
_ESCAPES = {"%": "%25", "/": "%2F", "~": "%7E"}


class NamespaceError(ValidationError, InvalidNamespaceError):
    """A namespace LangGraph refuses, or one too long for a zep user id (both a zep and a LangGraph error)."""


def check_layout(layout: Any) -> tuple[str, ...]:
    example = ("memories", "{org_id}", "{user_id}")
    if isinstance(layout, str) or not isinstance(layout, Sequence) or not layout:
        raise ValidationError(f"layout must be a non-empty tuple of labels such as {DEFAULT_LAYOUT!r} or "
                              f"{example!r}, got {layout!r}")
    layout = tuple(layout)
    for label in layout:
        if not isinstance(label, str) or not label or "." in label:
            raise ValidationError(f"layout labels must be non-empty strings without '.', got {label!r} in {layout!r}")
        if ("{" in label or "}" in label) and not PLACEHOLDER.fullmatch(label):
            raise ValidationError(f"a layout label is a fixed label or a whole placeholder such as '{{user_id}}', "
                                  f"got {label!r} in {layout!r}")
    holders = [label for label in layout if PLACEHOLDER.fullmatch(label)]
    if not holders:
        raise ValidationError(f"layout must hold at least one placeholder such as {USER_LABEL!r} (where the user "
                              f"id goes), got {layout!r}; e.g. {DEFAULT_LAYOUT!r} or {example!r}")
    if len(set(holders)) != len(holders):
        raise ValidationError(f"each placeholder may appear once in a layout, got {layout!r}")
    if layout[0] == "langgraph":
        raise ValidationError("a layout cannot start with 'langgraph' (LangGraph reserves it)")
    return layout


def _escape(label: str) -> str:
    return "".join(_ESCAPES.get(c, c) for c in label)


def _tenant(labels: Sequence[str], shared: bool) -> str:
    tenant = (SHARED_PREFIX if shared else "") + "/".join(_escape(label) for label in labels)
    try:
        return check_id(tenant, "the zep user of a namespace")
    except ValidationError as exc:
        raise NamespaceError(f"namespace {tuple(labels)!r}: {exc}; use shorter labels") from None


def labels_of(tenant: str) -> tuple[bool, tuple[str, ...]]:
    """``(shared, labels)`` of a tenant id made by :func:`_tenant`."""
    shared = tenant.startswith(SHARED_PREFIX)
    body = tenant[len(SHARED_PREFIX):] if shared else tenant
    return shared, tuple(unquote(label) for label in body.split("/"))


def tenant_of(namespace: Sequence[str], layout: Sequence[str] = DEFAULT_LAYOUT) -> str:
    """The zep user id a ZepStore with ``layout`` keeps ``namespace``'s items under.

    The namespace's placeholder labels and every label deeper than the layout, escaped
    and joined by ``/``; a namespace that does not fit the layout is shared data, its
    tenant ``~`` and all its labels. See the module docstring.

    Raises:
        NamespaceError: a label that LangGraph refuses, or a tenant over 256 characters.

    """
    return place(tuple(namespace), check_layout(layout))[0]


def fits_layout(namespace: tuple[str, ...], layout: tuple[str, ...]) -> bool:
    return len(namespace) >= len(layout) and all(
        label == want or PLACEHOLDER.fullmatch(want) for want, label in zip(layout, namespace))


def place(namespace: tuple[str, ...], layout: tuple[str, ...]) -> tuple[str, bool]:
    """``(tenant, shared)`` of a full namespace."""
    for label in namespace:
        if not isinstance(label, str) or not label or "." in label:
            raise NamespaceError(f"namespace labels must be non-empty strings without '.', got {label!r} "
                                 f"in {namespace!r}")
    if not namespace:
        raise NamespaceError("a namespace needs at least one label, e.g. ('memories', 'alice')")
    if not fits_layout(namespace, layout):
        return _tenant(namespace, shared=True), True
    labels = [label for want, label in zip(layout, namespace) if PLACEHOLDER.fullmatch(want)]
    return _tenant([*labels, *namespace[len(layout):]], shared=False), False
