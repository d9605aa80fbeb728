"""Layout phase 4: edge polylines from the placed vertices.

An edge u -> t runs from the bottom centre of u, down u's bus (its shared dummy chain) to the rank
just above t, and into the top centre of t. Inside a rank band the line is vertical at the dummy's x;
it only moves sideways in the gaps between ranks, where there are no nodes. Straight runs of the bus
are emitted as two points, so a fan-out to hundreds of consumers costs a few points per edge, not
one per rank spanned.
"""

from __future__ import annotations

import numpy as np

from app.core.layout.order import LayoutGraph
from app.core.layout.place import Placement
from app.core.layout.rank import RankedGraph


def _segments_reverse(counts: np.ndarray, flip: np.ndarray) -> np.ndarray:
    """Index map that reverses the point order of the flagged polylines."""
    total = int(counts.sum())
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]) if counts.size else np.zeros(0, np.int64)
    eid = np.repeat(np.arange(counts.size), counts)
    idx = np.arange(total, dtype=np.int64)
    within = idx - starts[eid]
    return np.where(flip[eid], starts[eid] + counts[eid] - 1 - within, idx)


def route_edges(
    rg: RankedGraph,
    g: LayoutGraph,
    pl: Placement,
    widths: np.ndarray,
    heights: np.ndarray,
    node_sep: float,
    input_src: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Polylines of the input edges, in input order: (points (P, 2), offsets (E + 1,)).

    input_src is the source column of the input edge list (it names the node of a self loop).
    """
    n = g.n_real
    x = pl.x
    ry, rh = pl.rank_y, pl.rank_h
    rank = g.rank
    y_node = ry[rank[:n]]
    m = rg.edge_of_input.size
    loop = rg.edge_of_input < 0
    de = np.where(loop, 0, rg.edge_of_input)
    a = rg.src[de] if rg.src.size else np.zeros(m, np.int64)
    b = rg.dst[de] if rg.dst.size else np.zeros(m, np.int64)
    span = rank[b] - rank[a]
    long_ = (~loop) & (span >= 2)
    # Runs of the buses: consecutive dummies of one bus at the same x form one vertical run.
    nd = g.size - n
    d_ids = np.arange(n, g.size, dtype=np.int64)
    owner = np.repeat(np.arange(n, dtype=np.int64), g.bus_len)
    first_of_bus = d_ids == g.bus_base[owner] if nd else np.zeros(0, bool)
    run_start = first_of_bus | np.r_[True, x[d_ids[1:]] != x[d_ids[:-1]]] if nd else np.zeros(0, bool)
    run_id = np.cumsum(run_start) - 1 if nd else np.zeros(0, np.int64)
    run_first = d_ids[run_start] if nd else np.zeros(0, np.int64)
    run_last = np.r_[run_first[1:] - 1, g.size - 1] if nd else np.zeros(0, np.int64)
    # Per long edge, the runs used: from the bus's first run to the run of the last dummy used.
    d0 = g.bus_base[a]
    d_last = d0 + span - 2
    r0 = np.where(long_, run_id[np.where(long_, d0 - n, 0)] if nd else 0, 0)
    r1 = np.where(long_, run_id[np.where(long_, d_last - n, 0)] if nd else 0, -1)
    n_runs = np.where(long_, r1 - r0 + 1, 0)
    # Point counts: loops 4; others 2 at the source, 2 per run, 2 at the target.
    counts = np.where(loop, 4, 4 + 2 * n_runs).astype(np.int64)
    total = int(counts.sum())
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    px = np.empty(total, dtype=np.float64)
    py = np.empty(total, dtype=np.float64)
    nl = ~loop
    ha = heights[a] / 2.0
    hb = heights[b] / 2.0
    s = starts[nl]
    px[s] = x[a[nl]]
    py[s] = y_node[a[nl]] + ha[nl]
    px[s + 1] = x[a[nl]]
    py[s + 1] = ry[rank[a[nl]]] + rh[rank[a[nl]]] / 2.0
    end = starts[nl] + counts[nl]
    px[end - 2] = x[b[nl]]
    py[end - 2] = ry[rank[b[nl]]] - rh[rank[b[nl]]] / 2.0
    px[end - 1] = x[b[nl]]
    py[end - 1] = y_node[b[nl]] - hb[nl]
    # Bus runs: two points per run, top of its first rank and bottom of its last used rank.
    le = np.flatnonzero(long_)
    if le.size:
        k = n_runs[le]
        e_rep = np.repeat(le, k)
        j = np.arange(int(k.sum())) - np.repeat(np.cumsum(k) - k, k)
        run = r0[e_rep] + j
        top_v = run_first[run]
        bot_v = np.minimum(run_last[run], d_last[e_rep])
        base = starts[e_rep] + 2 + 2 * j
        px[base] = x[top_v]
        py[base] = ry[rank[top_v]] - rh[rank[top_v]] / 2.0
        px[base + 1] = x[bot_v]
        py[base + 1] = ry[rank[bot_v]] + rh[rank[bot_v]] / 2.0
    # Self loops: a small hook on the right side of the node.
    lp = np.flatnonzero(loop)
    if lp.size:
        u = input_src[lp]
        s = starts[lp]
        xr = x[u] + widths[u] / 2.0
        hook = node_sep / 3.0
        yu = y_node[u]
        q = heights[u] / 4.0
        px[s], py[s] = xr, yu - q
        px[s + 1], py[s + 1] = xr + hook, yu - q
        px[s + 2], py[s + 2] = xr + hook, yu + q
        px[s + 3], py[s + 3] = xr, yu + q
    pts = np.stack([px, py], axis=1)
    pts, counts = _simplify(pts, counts, loop)
    flip = rg.flipped & ~loop
    if flip.any():
        pts = pts[_segments_reverse(counts, flip)]
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return pts, offsets


def _simplify(pts: np.ndarray, counts: np.ndarray, keep_all: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop repeated points and middle points of vertical runs (same x as both neighbours)."""
    total = pts.shape[0]
    if total == 0:
        return pts, counts
    eid = np.repeat(np.arange(counts.size), counts)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    first = np.zeros(total, dtype=bool)
    first[starts[counts > 0]] = True
    last = np.zeros(total, dtype=bool)
    last[(starts + counts - 1)[counts > 0]] = True
    px, py = pts[:, 0], pts[:, 1]
    same_prev = np.r_[False, (px[1:] == px[:-1]) & (py[1:] == py[:-1])] & ~first
    drop = same_prev.copy()
    keep_idx = np.flatnonzero(~drop)
    # Collinear vertical middles, judged after removing duplicates.
    kx = px[keep_idx]
    ke = eid[keep_idx]
    mid = np.zeros(keep_idx.size, dtype=bool)
    if keep_idx.size > 2:
        mid[1:-1] = (ke[1:-1] == ke[:-2]) & (ke[1:-1] == ke[2:]) & (kx[1:-1] == kx[:-2]) & (kx[1:-1] == kx[2:])
    mid &= ~keep_all[ke]
    keep_idx = keep_idx[~mid]
    new_counts = np.bincount(eid[keep_idx], minlength=counts.size).astype(np.int64)
    return pts[keep_idx], new_counts
