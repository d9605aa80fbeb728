"""Layered (Sugiyama-style) top-to-bottom layout specialised for neural-network graphs.

Pure numpy, no Qt. The phases live in helper modules:

- ``layout_rank``: duplicate edges merged, cycles broken (back edges of an iterative DFS are
  reversed), components found, longest-path ranks with producers pulled down to just above their
  first consumer (graph inputs and constants sit next to where they are used).
- ``layout_order``: long edges become one shared dummy chain per source node (a "bus") so a tensor
  feeding consumers far below (an attention mask, a U-Net skip) costs its longest span, not the sum
  of spans; barycenter sweeps keep the ordering with the fewest crossings.
- ``layout_place``: aligned vertical blocks (straight chains), averaged left/right compaction and a
  few constrained refinement rounds; variable node widths and node_sep gaps are respected exactly.
- ``layout_route``: edge polylines in input-edge order.
- ``layout_metrics``: crossing and overlap measures used by tests and benchmarks.

The cost is near-linear in nodes + edges + dummy vertices; see docs/benchmarks.md for timings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from app.core.errors import TrtlabError
from app.core.layout.metrics import count_crossings, overlapping_pairs
from app.core.layout.order import build_layout_graph, order_vertices
from app.core.layout.place import place
from app.core.layout.rank import rank_graph
from app.core.layout.route import route_edges

__all__ = [
    "GraphLayout",
    "LayoutCancelled",
    "LayoutStats",
    "count_crossings",
    "layered_layout",
    "overlapping_pairs",
]


class LayoutCancelled(TrtlabError):
    """The layout was stopped because its cancel callback returned True."""

    title = "Cancelled"

    def __init__(self) -> None:
        super().__init__("Graph layout was cancelled.")


@dataclass
class LayoutStats:
    """Sizes of the internal layered graph, for benchmarks and diagnostics."""

    ranks: int = 0
    dummies: int = 0
    components: int = 0


@dataclass
class GraphLayout:
    """Result of :func:`layered_layout`.

    Coordinates are in scene units with the drawing's bounding box starting at (0, 0); y grows
    downward and rank 0 is at the top. Node boxes are centred on (x[i], y[i]).
    """

    x: np.ndarray
    y: np.ndarray
    rank: np.ndarray
    points: np.ndarray
    edge_offsets: np.ndarray
    width: float
    height: float
    stats: LayoutStats | None = None
    frames: list = field(default_factory=list)  # compound layouts: (container, x0, y0, x1, y1), outermost first

    @classmethod
    def empty(cls, num_edges: int = 0) -> GraphLayout:
        """A layout of nothing (a picture's placeholder until it is laid out)."""
        return _empty(num_edges)

    def edge_path(self, i: int) -> np.ndarray:
        """Polyline of input edge i as a (k, 2) array, from the source node to the target node."""
        return self.points[self.edge_offsets[i] : self.edge_offsets[i + 1]]


def _empty(num_edges: int) -> GraphLayout:
    return GraphLayout(
        x=np.zeros(0),
        y=np.zeros(0),
        rank=np.zeros(0, dtype=np.int32),
        points=np.zeros((0, 2)),
        edge_offsets=np.zeros(num_edges + 1, dtype=np.int64),
        width=0.0,
        height=0.0,
        stats=LayoutStats(),
    )


def layered_layout(
    num_nodes: int,
    edges: np.ndarray,
    widths: np.ndarray,
    heights: np.ndarray,
    *,
    node_sep: float = 24.0,
    rank_sep: float = 48.0,
    cancel: Callable[[], bool] | None = None,
) -> GraphLayout:
    """Lay out a directed graph top to bottom.

    Args:
        num_nodes: number of nodes N.
        edges: int array (E, 2) of (source, target) node indices; duplicates, self loops and cycles
            are allowed. Polylines come back in the same order.
        widths, heights: node box sizes (N,).
        node_sep: horizontal gap between node boxes of one rank (half of it next to an edge line).
        rank_sep: vertical gap between ranks.
        cancel: polled between phases and sweeps; returning True raises :class:`LayoutCancelled`.
    """

    def check() -> None:
        if cancel is not None and cancel():
            raise LayoutCancelled()

    n = int(num_nodes)
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    w = np.asarray(widths, dtype=np.float64).reshape(-1)
    h = np.asarray(heights, dtype=np.float64).reshape(-1)
    if w.size != n or h.size != n:
        raise ValueError(f"widths and heights must have {n} entries, got {w.size} and {h.size}")
    if e.size and (e.min() < 0 or e.max() >= n):
        raise ValueError("edge endpoints must be node indices in [0, num_nodes)")
    check()
    if n == 0:
        return _empty(e.shape[0])
    rg = rank_graph(n, e)
    check()
    g = build_layout_graph(n, rg.src, rg.dst, rg.rank, rg.comp)
    check()
    pos = order_vertices(g, check)
    check()
    pl = place(g, pos, w, h, float(node_sep), float(rank_sep))
    check()
    points, offsets = route_edges(rg, g, pl, w, h, float(node_sep), e[:, 0])
    x = pl.x[:n]
    y = pl.rank_y[rg.rank]
    # Shift so the bounding box of nodes and edge lines starts at (0, 0).
    min_x = float((x - w / 2).min())
    min_y = float((y - h / 2).min())
    max_x = float((x + w / 2).max())
    max_y = float((y + h / 2).max())
    if points.size:
        min_x = min(min_x, float(points[:, 0].min()))
        max_x = max(max_x, float(points[:, 0].max()))
        min_y = min(min_y, float(points[:, 1].min()))
        max_y = max(max_y, float(points[:, 1].max()))
    x = x - min_x
    y = y - min_y
    points = points - np.array([min_x, min_y])
    stats = LayoutStats(
        ranks=int(pl.rank_y.size),
        dummies=int(g.size - n),
        components=int(np.unique(rg.comp).size),
    )
    return GraphLayout(
        x=x,
        y=y,
        rank=rg.rank.astype(np.int32),
        points=points,
        edge_offsets=offsets,
        width=max_x - min_x,
        height=max_y - min_y,
        stats=stats,
    )
