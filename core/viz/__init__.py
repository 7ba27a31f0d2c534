"""Pictures of a memory: an interactive HTML entity graph and a PNG fact timeline.

:func:`graph_html` draws a user's entities and the facts linking them as one
self-contained HTML page that opens offline (:mod:`.graph`, with the page itself in
``graph.html``); :func:`timeline_png` draws one entity's facts as bars over time and
needs matplotlib, the ``viz`` extra (:mod:`.timeline`).

Example:
    >>> html = graph_html(memory, "alice")                          # doctest: +SKIP
    >>> timeline_png(memory.entity_history("Alice", user_id="alice"), "alice.png", entity="Alice")

"""

from .graph import graph_data, graph_html, render_graph_html
from .timeline import timeline_png

__all__ = ["graph_data", "graph_html", "render_graph_html", "timeline_png"]
