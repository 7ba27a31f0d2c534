"""The PNG fact timeline: one entity's facts as bars over time.

:func:`timeline_png` draws the facts as bars from ``valid_from`` to ``valid_until``
(or now), superseded ones hatched and marked. It needs matplotlib (the ``viz``
extra), imported only there, with the Agg renderer: no display, no pyplot state.

Example:
    >>> timeline_png(memory.entity_history("Alice", user_id="alice"), "alice.png", entity="Alice")  # doctest: +SKIP

"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

from ..errors import ConfigError, NotFoundError, install_hint
from ..models import Fact

__all__ = ["timeline_png"]


def timeline_png(facts: Sequence[Fact], path: str | Path, *, entity: str, now: datetime | None = None,
                 include_statements: bool = False, max_facts: int = 40) -> int:
    """Draw facts as bars over time (valid_from → valid_until or now) into a PNG.

    Current facts are solid bars running to ``now``; superseded ones are hatched grey
    with a mark where they ended. Free-text ``statement`` facts are left out unless
    ``include_statements`` (or nothing else is left); beyond ``max_facts`` the most
    recent are drawn.

    Args:
        facts: e.g. :meth:`zep_core.Memory.entity_history`.
        path: the PNG file to write.
        entity: the name in the title.
        now: the right edge for facts still true (default: the current time).
        include_statements: draw ``statement`` facts too.
        max_facts: at most this many bars.

    Returns:
        How many bars were drawn.

    Raises:
        ConfigError: matplotlib is not installed.
        NotFoundError: there are no facts to draw.

    """
    try:
        from matplotlib import dates as mdates
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch
    except ImportError:
        raise ConfigError("the timeline needs matplotlib: " + install_hint("viz")) from None
    chosen = [f for f in facts if include_statements or f.predicate != "statement"] or list(facts)
    if not chosen:
        raise NotFoundError(f"{entity} has no facts to draw")
    chosen = sorted(chosen, key=lambda f: (f.valid_from, f.id))
    hidden = max(len(chosen) - max_facts, 0)
    chosen = chosen[hidden:]
    now = now or datetime.now(timezone.utc)
    end_of_time = max([now] + [f.valid_until or f.valid_from for f in chosen])
    span = max(end_of_time - chosen[0].valid_from, timedelta(days=1))

    fig = Figure(figsize=(11, 1.6 + 0.42 * len(chosen)), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for row, f in enumerate(chosen):
        start = f.valid_from
        stop = f.valid_until or end_of_time
        width = max(stop - start, span / 200)
        if f.is_current:
            ax.barh(row, width, left=start, height=0.55, color="#3b5bdb")
        else:
            ax.barh(row, width, left=start, height=0.55, color="#dee2e6", edgecolor="#868e96", hatch="///")
            ax.plot([stop], [row], marker="X", color="#c92a2a", markersize=8, zorder=3)
        ax.text(start, row - 0.38, f"{start:%Y-%m-%d}" + (f" → {f.valid_until:%Y-%m-%d}" if f.valid_until else ""),
                fontsize=7, color="#495057", va="bottom")
    ax.axvline(now, color="#868e96", linewidth=1, linestyle=":")
    ax.set_yticks(range(len(chosen)), [_short(f.content) for f in chosen], fontsize=9)
    ax.set_ylim(len(chosen) - 0.5, -0.95)
    ax.set_xlim(chosen[0].valid_from - span * 0.03, end_of_time + span * 0.03)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(ax.xaxis.get_major_locator()))
    ax.grid(axis="x", color="#e9ecef")
    ax.set_axisbelow(True)
    title = f"{entity}: facts over time"
    if hidden:
        title += f" (the {len(chosen)} most recent; {hidden} earlier not shown)"
    ax.set_title(title, fontsize=12, loc="left")
    ax.legend(handles=[Patch(color="#3b5bdb", label="current"),
                       Patch(facecolor="#dee2e6", edgecolor="#868e96", hatch="///", label="superseded (× = ended)")],
              loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=2, fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(str(path), format="png")
    return len(chosen)


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"
