"""Quality measures of a drawn graph: edge crossings between rank levels and overlapping node boxes.

Both work on plain coordinates, so the same functions judge this package's layout and any other
layout engine's output (the benchmark feeds dagre's result through them).
"""

from __future__ import annotations

from typing import Literal, overload

import numpy as np

__all__ = ["count_crossings", "overlapping_pairs", "grouped_inversions"]


def _perm_inversion_counts(p: np.ndarray) -> np.ndarray:
    """For a permutation p of 0..n-1: per element, how many earlier elements are greater.

    Bottom-up merging: each pass merges sorted runs of width w pairwise, and for every element of a
    right run the number of greater left-run elements is read off with one vectorised searchsorted.
    O(n log n) per pass, log n passes.
    """
    n = int(p.size)
    out = np.zeros(n, dtype=np.int64)
    if n < 2:
        return out
    a = p.astype(np.int64, copy=True)
    ident = np.arange(n, dtype=np.int64)  # original index of the element now at each slot
    idx = np.arange(n, dtype=np.int64)
    w = 1
    while w < n:
        blk = idx // (2 * w)
        right = (idx - blk * 2 * w) >= w
        keys = blk * n + a
        left_keys = keys[~right]  # sorted: runs are sorted and blocks ascend
        less = np.searchsorted(left_keys, keys[right]) - blk[right] * w
        out[ident[right]] += w - less
        o = np.argsort(keys, kind="stable")
        a = keys[o] - blk * n
        ident = ident[o]
        w *= 2
    return out


_SMALL_GROUP = 32


def _sorted_inversion_counts(gid: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elements sorted by (group, top, bottom): per element, earlier same-group elements with larger b.

    Small groups (the common case: a rank holds a handful of vertices) are compared pairwise with
    shifted vector compares, whose total work is the number of same-group pairs; large groups go
    through the merge-based counter.
    """
    n = int(gid.size)
    out = np.zeros(n, dtype=np.int64)
    if n < 2:
        return out
    starts = np.r_[0, np.flatnonzero(gid[1:] != gid[:-1]) + 1]
    sizes = np.diff(np.r_[starts, n])
    grp = np.repeat(np.arange(starts.size), sizes)
    small = sizes[grp] <= _SMALL_GROUP
    pos_in = np.arange(n) - starts[grp]
    act = np.flatnonzero(small & (pos_in >= 1))
    d = 1
    while act.size:
        out[act] += b[act - d] > b[act]
        d += 1
        act = act[pos_in[act] >= d]
    big = np.flatnonzero(~small)
    if big.size:
        bg, bb = grp[big], b[big]
        by_key = np.lexsort((np.arange(big.size), bb, bg))
        perm = np.empty(big.size, dtype=np.int64)
        perm[by_key] = np.arange(big.size, dtype=np.int64)
        out[big] = _perm_inversion_counts(perm)
    return out


@overload
def grouped_inversions(group: np.ndarray, top: np.ndarray, bottom: np.ndarray, *,
                       per_group: Literal[False] = False) -> int: ...


@overload
def grouped_inversions(group: np.ndarray, top: np.ndarray, bottom: np.ndarray, *,
                       per_group: Literal[True]) -> tuple[int, np.ndarray, np.ndarray]: ...


def grouped_inversions(
    group: np.ndarray, top: np.ndarray, bottom: np.ndarray, *, per_group: bool = False
) -> int | tuple[int, np.ndarray, np.ndarray]:
    """Pairs (i, j) in the same group with top_i < top_j and bottom_i > bottom_j (both strict).

    This is the crossing count of straight segments between two levels when group is the level pair:
    segments tied at either end (sharing an endpoint) are not counted. With per_group, also returns
    (groups, counts) for the groups that have any.
    """
    m = int(group.size)
    if m < 2:
        return (0, np.zeros(0, np.int64), np.zeros(0, np.int64)) if per_group else 0
    order = np.lexsort((bottom, top, group))
    g = group[order]
    counts = _sorted_inversion_counts(g, bottom[order])
    total = int(counts.sum())
    if not per_group:
        return total
    hit = counts > 0
    ug, inv = np.unique(g[hit], return_inverse=True)
    return total, ug, np.bincount(inv, weights=counts[hit]).astype(np.int64)


def _prefix_count_between(
    keys: np.ndarray, vals: np.ndarray, q_key: np.ndarray, q_lo: np.ndarray, q_hi: np.ndarray
) -> np.ndarray:
    """For each query, how many points with key <= q_key have q_lo < val < q_hi.

    Offline dominance counting with a merge-sort tree: the prefix of points (sorted by key) is split
    into aligned power-of-two blocks, and each block is searched with one vectorised searchsorted.
    """
    n = int(keys.size)
    out = np.zeros(q_key.size, dtype=np.int64)
    if n == 0 or q_key.size == 0:
        return out
    order = np.argsort(keys, kind="stable")
    skeys = keys[order]
    svals = vals[order]
    # Replace values by their ranks so that block-offset keys stay exact integers.
    vsorted = np.sort(svals)
    vrank = np.searchsorted(vsorted, svals)
    lo_r = np.searchsorted(vsorted, q_lo, side="right")  # ranks strictly above q_lo start here
    hi_r = np.searchsorted(vsorted, q_hi, side="left")  # ranks strictly below q_hi end here
    plen = np.searchsorted(skeys, q_key, side="right").astype(np.int64)
    idx = np.arange(n, dtype=np.int64)
    k = 0
    while (1 << k) <= n:
        blk = idx >> k
        level = np.sort(blk * (n + 1) + vrank)
        has = (plen >> k) & 1 == 1
        if has.any():
            start_blk = (plen[has] >> (k + 1)) << 1  # the aligned block of this size in the prefix
            base = start_blk * (n + 1)
            a = np.searchsorted(level, base + lo_r[has])
            b = np.searchsorted(level, base + hi_r[has])
            out[has] += np.maximum(b - a, 0)
        k += 1
    return out


def _sample_polylines(
    levels: np.ndarray, points: np.ndarray, offsets: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sample every polyline at the levels where its x can change; returns (edge, level, x) sorted.

    Between two consecutive samples that are more than one level apart the polyline is vertical, so
    those level pairs are represented once as a run instead of one sample per level.
    """
    counts = np.diff(offsets)
    keep_edge = counts >= 2
    eid_of_pt = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
    pts = points.astype(np.float64, copy=True)
    # Orient every polyline top-down; direction does not matter for crossings.
    first_y = pts[offsets[:-1].clip(max=max(len(pts) - 1, 0)), 1] if len(pts) else np.zeros(0)
    last_y = pts[(offsets[1:] - 1).clip(min=0), 1] if len(pts) else np.zeros(0)
    flip = keep_edge & (first_y > last_y)
    if flip.any():
        pos_in = np.arange(len(pts), dtype=np.int64) - offsets[:-1][eid_of_pt]
        src = np.where(flip[eid_of_pt], offsets[1:][eid_of_pt] - 1 - pos_in, np.arange(len(pts)))
        pts = pts[src]
    # Force y non-decreasing inside each polyline (defensive against odd input).
    ys = pts[:, 1].copy()
    if len(ys):
        shift = float(np.abs(ys).max() + 1.0) * 4.0
        ys = np.maximum.accumulate(ys + eid_of_pt * shift) - eid_of_pt * shift
    xs = pts[:, 0]
    nl = levels.size

    def nearest_level(y: np.ndarray) -> np.ndarray:
        i = np.searchsorted(levels, y).clip(1, max(nl - 1, 1))
        lower = levels[i - 1]
        upper = levels[np.minimum(i, nl - 1)]
        return np.where(np.abs(y - lower) <= np.abs(upper - y), i - 1, np.minimum(i, nl - 1))

    # Per edge: the first and last level it spans, plus the levels around each non-vertical segment.
    e_first = np.flatnonzero(keep_edge)
    l0 = nearest_level(ys[offsets[:-1][e_first]])
    l1 = nearest_level(ys[offsets[1:][e_first] - 1])
    seg_a = np.arange(len(pts) - 1, dtype=np.int64)
    same = eid_of_pt[seg_a] == eid_of_pt[seg_a + 1] if len(pts) > 1 else np.zeros(0, bool)
    seg_a = seg_a[same & (xs[seg_a] != xs[seg_a + 1]) & keep_edge[eid_of_pt[seg_a]]]
    s_e = eid_of_pt[seg_a]
    s_lo = np.searchsorted(levels, ys[seg_a], side="right") - 1
    s_hi = np.searchsorted(levels, ys[seg_a + 1], side="left")
    el0 = np.full(counts.size, 0, dtype=np.int64)
    el1 = np.full(counts.size, -1, dtype=np.int64)
    el0[e_first] = l0
    el1[e_first] = l1
    s_lo = np.maximum(s_lo, el0[s_e])
    s_hi = np.minimum(s_hi, el1[s_e])
    n_s = np.maximum(s_hi - s_lo + 1, 0)
    rep_e = np.repeat(s_e, n_s)
    rep_l = np.repeat(s_lo, n_s) + (np.arange(int(n_s.sum())) - np.repeat(np.cumsum(n_s) - n_s, n_s))
    e_all = np.concatenate([e_first, e_first, rep_e])
    l_all = np.concatenate([l0, l1, rep_l])
    # Unique (edge, level) samples, ordered by edge then level.
    key = e_all * (nl + 1) + l_all
    key = np.unique(key)
    e_s = key // (nl + 1)
    l_s = key % (nl + 1)
    # Interpolate x at each sample inside its own polyline (clamped at the ends).
    span = float(max(np.abs(ys).max() if len(ys) else 0.0, np.abs(levels).max() if nl else 0.0)) + 1.0
    gkey_pts = eid_of_pt * (4.0 * span) + ys
    gkey_q = e_s * (4.0 * span) + levels[l_s]
    j = np.searchsorted(gkey_pts, gkey_q, side="right")
    start = offsets[:-1][e_s]
    end = offsets[1:][e_s]
    j = np.clip(j, start + 1, end - 1)
    y0, y1 = ys[j - 1], ys[j]
    x0, x1 = xs[j - 1], xs[j]
    t = np.where(y1 > y0, (levels[l_s] - y0) / np.where(y1 > y0, y1 - y0, 1.0), 0.0)
    t = t.clip(0.0, 1.0)
    x = x0 + t * (x1 - x0)
    return e_s, l_s, x


def count_crossings(node_y: np.ndarray, points: np.ndarray, edge_offsets: np.ndarray) -> int:
    """Crossings between adjacent rank levels of a drawn layered graph.

    The distinct node y values are the levels. Each edge polyline is sampled at every level it spans
    (linear interpolation; its first and last points belong to the nearest level), and for each pair
    of adjacent levels the straight pieces between them that cross are counted (strict inversions,
    so pieces sharing an endpoint node do not count). Identical pieces, such as the shared trunk of a
    fan-out drawn once, are counted once. Vertical stretches are handled as runs, so the cost is
    O(S log S) in the size S of the drawing's description rather than in the sum of edge spans.
    """
    levels = np.unique(np.asarray(node_y, dtype=np.float64))
    points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    offsets = np.asarray(edge_offsets, dtype=np.int64)
    if levels.size < 2 or offsets.size < 3:
        return 0
    e, lv, x = _sample_polylines(levels, points, offsets)
    if e.size < 2:
        return 0
    nxt = np.flatnonzero(e[:-1] == e[1:])
    la, lb = lv[nxt], lv[nxt + 1]
    xa, xb = x[nxt], x[nxt + 1]
    step = (lb == la + 1) & (xa != xb)
    # Non-vertical pieces between adjacent levels, each distinct piece once.
    nv = np.unique(np.stack([la[step], xa[step], xb[step]], axis=1), axis=0) if step.any() else np.zeros((0, 3))
    total = grouped_inversions(nv[:, 0].astype(np.int64), nv[:, 1], nv[:, 2]) if len(nv) else 0
    # Vertical runs: x constant from level la to lb; merge runs that overlap at the same x.
    vert = ~step & (xa == xb)
    if len(nv) and vert.any():
        rx, ra, rb = xa[vert], la[vert], lb[vert]
        o = np.lexsort((ra, rx))
        rx, ra, rb = rx[o], ra[o], rb[o]
        new_x = np.r_[True, rx[1:] != rx[:-1]]
        grp = np.cumsum(new_x) - 1
        # Running max of run ends inside each x group decides whether the next run starts a new piece.
        off = grp.astype(np.float64) * (float(levels.size) * 4.0 + 8.0)
        run_end = np.maximum.accumulate(rb + off) - off
        prev_end = np.r_[-1, run_end[:-1]]
        starts = new_x | (ra > prev_end)
        sid = np.cumsum(starts) - 1
        m_x = rx[starts]
        m_a = ra[starts]
        m_b = np.zeros(int(sid[-1]) + 1, dtype=np.int64)
        np.maximum.at(m_b, sid, rb)
        q_l = nv[:, 0].astype(np.int64)
        q_lo = np.minimum(nv[:, 1], nv[:, 2])
        q_hi = np.maximum(nv[:, 1], nv[:, 2])
        # Runs covering level pair l: started at or before l, minus those ended at or before l.
        started = _prefix_count_between(m_a, m_x, q_l, q_lo, q_hi)
        ended = _prefix_count_between(m_b, m_x, q_l, q_lo, q_hi)
        total += int((started - ended).sum())
    return int(total)


def overlapping_pairs(x: np.ndarray, y: np.ndarray, widths: np.ndarray, heights: np.ndarray) -> int:
    """Number of pairs of node boxes (centre x/y, width, height) whose interiors overlap.

    Sweeps along whichever axis gives fewer candidate pairs (in a layered drawing that is usually y:
    only nodes of one rank share a band), so the cost is O(N log N + candidates), not O(N^2).
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    hw = np.asarray(widths, dtype=np.float64) / 2.0
    hh = np.asarray(heights, dtype=np.float64) / 2.0
    n = x.size
    if n < 2:
        return 0
    eps = 1e-9

    def candidates(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        order = np.argsort(lo, kind="stable")
        slo = lo[order]
        # Boxes after i in sorted order that start before i ends overlap i on this axis.
        end = np.searchsorted(slo, hi[order] - eps, side="left")
        cnt = np.maximum(end - np.arange(n) - 1, 0)
        return order, cnt

    ox, cx = candidates(x - hw, x + hw)
    oy, cy = candidates(y - hh, y + hh)
    order, cnt = (ox, cx) if cx.sum() <= cy.sum() else (oy, cy)
    total = 0
    chunk = 2_000_000
    i0 = 0
    csum = np.cumsum(cnt)
    while i0 < n:
        # Bound the memory of the candidate list by processing rows in chunks.
        base = csum[i0 - 1] if i0 else 0
        i1 = int(np.searchsorted(csum, base + chunk, side="right"))
        i1 = max(i1, i0 + 1)
        c = cnt[i0:i1]
        if c.sum():
            a_sorted = np.repeat(np.arange(i0, i1), c)
            b_sorted = a_sorted + 1 + (np.arange(int(c.sum())) - np.repeat(np.cumsum(c) - c, c))
            a = order[a_sorted]
            b = order[b_sorted]
            ov = (np.abs(x[a] - x[b]) < hw[a] + hw[b] - eps) & (np.abs(y[a] - y[b]) < hh[a] + hh[b] - eps)
            total += int(ov.sum())
        i0 = i1
    return total
