"""Nested (compound) layout: each expanded group is laid out on its own, as a box inside the level that holds it.

The drawing by groups (`app.core.model.grouping`) shows some groups expanded. Laid out flat, an expanded group's nodes
would mix with their neighbours'; here every *container* (an expanded group, or the top level) is laid out by
:func:`layered_layout` with its own nodes and its child containers as boxes of their laid-out size, innermost first,
then placed inside its parent. An edge is routed at the innermost container holding both ends, between the items
there that hold them; an end inside a child container is joined to that route by a straight segment.

Each container's layout is kept in `cache`, keyed by what it holds: expanding a group lays out that group and the
containers around it again, nothing else.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from app.core.layout.layered import GraphLayout, LayoutStats, layered_layout

PAD = 14.0       # a container's margin around its content
PAD_TOP = 28.0   # and above it, where its name goes
ROOT = -1


@dataclass
class _Local:
    """One container laid out: positions of its items (by key), its size, and each local edge's polyline."""

    x: dict[Hashable, float]
    y: dict[Hashable, float]
    width: float
    height: float
    routes: dict[tuple[Hashable, Hashable], np.ndarray]


def compound_layout(
    widths: np.ndarray,
    heights: np.ndarray,
    edges: np.ndarray,
    container_of: np.ndarray,
    container_parent: dict[int, int],
    keys: Sequence[Hashable],
    cache: dict | None = None,
    *,
    node_sep: float = 24.0,
    rank_sep: float = 48.0,
) -> GraphLayout:
    """Lay out N items inside nested containers.

    Args:
        widths, heights: item box sizes (N,).
        edges: (E, 2) item index pairs; polylines come back in this order.
        container_of: (N,) the container each item sits in directly (ROOT for the top level).
        container_parent: every container but ROOT -> its parent container.
        keys: a stable key per item (the same thing keeps its key across expansions), for the cache.
        cache: kept between calls; a container whose content (items, child containers and sizes) is unchanged reuses
            its layout.

    The result's `frames` lists (container, x0, y0, x1, y1) of every non-root container, outermost first.
    """
    cache = {} if cache is None else cache
    n = len(widths)
    containers = sorted(set(container_parent) | {ROOT}, key=lambda c: _depth(c, container_parent))
    items_in: dict[int, list[int]] = {c: [] for c in containers}
    for i, c in enumerate(container_of.tolist()):
        items_in[c].append(i)
    children: dict[int, list[int]] = {c: [] for c in containers}
    for c, p in container_parent.items():
        children[p].append(c)

    # Each edge belongs to the innermost container that holds both ends; its ends there are the items (or child
    # containers) holding them.
    chain = {c: _chain(c, container_parent) for c in containers}
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    level = np.empty(len(e), dtype=np.int64)
    ends: list[tuple[Hashable, Hashable]] = []
    local_edges: dict[int, list[tuple[Hashable, Hashable]]] = {c: [] for c in containers}
    for k, (u, v) in enumerate(e.tolist()):
        cu, cv = chain[int(container_of[u])], chain[int(container_of[v])]
        common = ROOT
        for a, b in zip(cu, cv, strict=False):
            if a != b:
                break
            common = a
        level[k] = common
        a_end = _lift(u, cu, common, keys)
        b_end = _lift(v, cv, common, keys)
        ends.append((a_end, b_end))
        if a_end != b_end:
            local_edges[common].append((a_end, b_end))

    size: dict[int, tuple[float, float]] = {}
    local: dict[int, _Local] = {}
    for c in reversed(containers):  # innermost first: a container's size is known before its parent's layout
        ids: list[Hashable] = [keys[i] for i in items_in[c]] + [("container", h) for h in children[c]]
        w = [float(widths[i]) for i in items_in[c]] + [size[h][0] for h in children[c]]
        h_ = [float(heights[i]) for i in items_in[c]] + [size[h][1] for h in children[c]]
        sig = (tuple(ids), tuple(np.round(w, 1)), tuple(np.round(h_, 1)), tuple(local_edges[c]))
        hit = cache.get(("c", c))
        if hit is not None and hit[0] == sig:
            local[c] = hit[1]
        else:
            local[c] = _lay_out_local(ids, w, h_, local_edges[c], node_sep, rank_sep)
            cache[("c", c)] = (sig, local[c])
        lc = local[c]
        size[c] = (lc.width + 2 * PAD, lc.height + PAD_TOP + PAD) if c != ROOT else (lc.width, lc.height)

    # Absolute positions: the root at the origin, each container's content offset inside its box.
    origin: dict[int, tuple[float, float]] = {ROOT: (0.0, 0.0)}
    frames = []
    for c in containers:
        if c == ROOT:
            continue
        p = container_parent[c]
        ox, oy = origin[p]
        cx, cy = local[p].x[("container", c)] + ox, local[p].y[("container", c)] + oy
        fw, fh = size[c]
        x0, y0 = cx - fw / 2, cy - fh / 2
        origin[c] = (x0 + PAD, y0 + PAD_TOP)
        frames.append((c, x0, y0, x0 + fw, y0 + fh))
    x = np.empty(n)
    y = np.empty(n)
    for i in range(n):
        c = int(container_of[i])
        ox, oy = origin[c]
        x[i], y[i] = local[c].x[keys[i]] + ox, local[c].y[keys[i]] + oy

    pts: list[np.ndarray] = []
    offsets = np.zeros(len(e) + 1, dtype=np.int64)
    for k, (u, v) in enumerate(e.tolist()):
        c = int(level[k])
        ox, oy = origin[c]
        route = local[c].routes.get(ends[k])
        start = np.array([[x[u], y[u] + heights[u] / 2]])
        stop = np.array([[x[v], y[v] - heights[v] / 2]])
        if route is None or len(route) < 2:
            path = np.vstack([start, stop])
        else:
            path = route + np.array([ox, oy])
            if ends[k][0] != keys[u]:   # the tail sits inside a child container: join it to the route
                path = np.vstack([start, path])
            if ends[k][1] != keys[v]:
                path = np.vstack([path, stop])
        pts.append(path)
        offsets[k + 1] = offsets[k] + len(path)
    points = np.vstack(pts) if pts else np.zeros((0, 2))
    width, height = size[ROOT]
    return GraphLayout(x=x, y=y, rank=np.zeros(n, dtype=np.int32), points=points, edge_offsets=offsets,
                       width=max(width, 1.0), height=max(height, 1.0), stats=LayoutStats(),
                       frames=frames)


def _depth(c: int, parent: dict[int, int]) -> int:
    d = 0
    while c != ROOT:
        c = parent[c]
        d += 1
    return d


def _chain(c: int, parent: dict[int, int]) -> list[int]:
    """ROOT, …, c: the containers from the top down to c."""
    out = [c]
    while c != ROOT:
        c = parent[c]
        out.append(c)
    return out[::-1]


def _lift(item: int, chain: list[int], level: int, keys: Sequence[Hashable]) -> Hashable:
    """What stands for `item` among `level`'s content: the item itself, or the child container holding it."""
    at = chain.index(level)
    return keys[item] if at == len(chain) - 1 else ("container", chain[at + 1])


def _lay_out_local(ids: list[Hashable], w: list[float], h: list[float], local_edges: list[tuple[Hashable, Hashable]],
                   node_sep: float, rank_sep: float) -> _Local:
    index = {k: i for i, k in enumerate(ids)}
    pairs = list(dict.fromkeys(local_edges))
    e = np.array([(index[a], index[b]) for a, b in pairs], dtype=np.int64).reshape(-1, 2)
    lay = layered_layout(len(ids), e, np.asarray(w), np.asarray(h), node_sep=node_sep, rank_sep=rank_sep)
    routes = {pair: lay.edge_path(k).copy() for k, pair in enumerate(pairs)}
    return _Local(dict(zip(ids, lay.x.tolist(), strict=True)), dict(zip(ids, lay.y.tolist(), strict=True)),
                  float(lay.width), float(lay.height), routes)
