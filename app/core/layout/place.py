"""Layout phase 3: horizontal placement, in the spirit of Brandes–Köpf but vectorised.

1. Alignment: a vertex is put in one vertical block with its median upper neighbour when that
   neighbour also picks it as its median lower neighbour. Real nodes prefer real neighbours and dummy
   vertices prefer dummies, so a Conv -> BN -> Relu -> Add spine is one block (a straight vertical
   line) and a skip or bus chain is another one running beside it. Alignments that would cross are
   dropped, dummy-dummy first kept (long edges stay straight), then real-real, then mixed.
2. Compaction: consecutive vertices of a rank give "block B is at least s right of block A"
   constraints (widths / 2 + node_sep, half node_sep next to an edge). The leftmost and the
   rightmost solutions are both feasible, so their average is too: that centres everything.
3. Refinement: a few Jacobi rounds pull each block toward the mean x of its neighbours, each move
   limited to half the free space on that side so simultaneous moves can never collide.
All steps are numpy passes over vertices and constraints; the longest-path solves iterate as many
times as the longest left-to-right chain of blocks, with a plain topological pass as fallback.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.core.layout.order import LayoutGraph


@dataclass
class Placement:
    """x of every layout vertex and the y / height of every rank."""

    x: np.ndarray
    rank_y: np.ndarray
    rank_h: np.ndarray


def _median_edge(
    group: np.ndarray, prefer: np.ndarray, pos_other: np.ndarray, v: int, score: np.ndarray | None = None
) -> np.ndarray:
    """Per vertex: the edge to its chosen neighbour.

    Among preferred neighbours when there are any; the lowest score wins, ties go to the neighbour
    nearest the median position.
    """
    out = np.full(v, -1, dtype=np.int64)
    if group.size == 0:
        return out
    order = np.lexsort((pos_other, ~prefer, group))
    g = group[order]
    starts = np.r_[0, np.flatnonzero(g[1:] != g[:-1]) + 1]
    sizes = np.diff(np.r_[starts, g.size])
    n_pref = np.add.reduceat(prefer[order].astype(np.int64), starts)
    m = np.where(n_pref > 0, n_pref, sizes)
    if score is None:
        out[g[starts]] = order[starts + (m - 1) // 2]
        return out
    # Distance of each candidate from the (lower) median; non-candidates are pushed to the end.
    gid = np.repeat(np.arange(starts.size), sizes)
    idx_in = np.arange(g.size) - starts[gid]
    dist = np.abs(idx_in - (m[gid] - 1) // 2).astype(np.float64)
    dist[idx_in >= m[gid]] = np.inf
    order2 = np.lexsort((dist, np.where(np.isfinite(dist), score[order], np.inf), gid))
    first = order[order2[starts]]
    out[g[starts]] = first
    return out


def _align(g: LayoutGraph, pos: np.ndarray, rounds: int = 3) -> np.ndarray:
    """Block root of every vertex (the top vertex of its aligned vertical chain).

    The first round aligns with median neighbours. Later rounds prefer, at merges, the upper
    neighbour whose block starts highest, and at splits the lower neighbour whose block ends lowest:
    the long spine of the network stays one straight block instead of stepping sideways at every
    layer (which would make the drawing drift wider and wider).
    """
    v = g.size
    root = np.arange(v, dtype=np.int64)
    bottom = np.arange(v, dtype=np.int64)
    for r in range(rounds):
        up_score = g.rank[root[g.ea]].astype(np.float64) if r else None
        down_score = -g.rank[bottom[g.eb]].astype(np.float64) if r else None
        root, bottom = _align_once(g, pos, up_score, down_score)
    return root


def _align_once(
    g: LayoutGraph, pos: np.ndarray, up_score: np.ndarray | None, down_score: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """One alignment: (root, bottom) vertex of every vertex's block."""
    v = g.size
    ea, eb = g.ea, g.eb
    dummy = np.arange(v) >= g.n_real
    same = dummy[ea] == dummy[eb]
    up = _median_edge(eb, same, pos[ea], v, up_score)
    down = _median_edge(ea, same, pos[eb], v, down_score)
    eidx = np.arange(ea.size, dtype=np.int64)
    mutual = (up[eb] == eidx) & (down[ea] == eidx)
    cand = np.flatnonzero(mutual)
    tier = np.where(dummy[ea[cand]] & dummy[eb[cand]], 0, np.where(~dummy[ea[cand]] & ~dummy[eb[cand]], 1, 2))
    big = int(pos.max()) + 2 if v else 2
    grp = g.rank[ea[cand]]
    ka_all = grp * big + pos[ea[cand]].astype(np.int64)
    kb_all = grp * big + pos[eb[cand]].astype(np.int64)
    kept_a = np.zeros(0, dtype=np.int64)
    kept_b = np.zeros(0, dtype=np.int64)
    kept_e: list[np.ndarray] = []
    for t in (0, 1, 2):
        sel = np.flatnonzero(tier == t)
        ka, kb = ka_all[sel], kb_all[sel]
        if kept_a.size and sel.size:
            # Keep only pairs that fit between the already kept (non-crossing) pairs.
            i = np.searchsorted(kept_a, ka)
            lo_ok = (i == 0) | (kept_b[np.maximum(i - 1, 0)] < kb)
            hi_ok = (i == kept_a.size) | (kept_b[np.minimum(i, kept_a.size - 1)] > kb)
            ok = lo_ok & hi_ok
            sel, ka, kb = sel[ok], ka[ok], kb[ok]
        o = np.argsort(ka, kind="stable")
        sel, ka, kb = sel[o], ka[o], kb[o]
        if sel.size:
            run = np.maximum.accumulate(kb)
            ok = np.r_[True, kb[1:] > run[:-1]]
            sel, ka, kb = sel[ok], ka[ok], kb[ok]
        kept_e.append(cand[sel])
        ka2 = np.concatenate([kept_a, ka])
        kb2 = np.concatenate([kept_b, kb])
        o2 = np.argsort(ka2, kind="stable")
        kept_a, kept_b = ka2[o2], kb2[o2]
    kept = np.concatenate(kept_e)
    return _follow(v, eb[kept], ea[kept]), _follow(v, ea[kept], eb[kept])


def _follow(v: int, frm: np.ndarray, to: np.ndarray) -> np.ndarray:
    """End of each vertex's chain of links frm -> to, by pointer jumping."""
    end = np.arange(v, dtype=np.int64)
    end[frm] = to
    while True:
        nxt = end[end]
        if np.array_equal(nxt, end):
            return end
        end = nxt


def _longest(n_blocks: int, left: np.ndarray, right: np.ndarray, sep: np.ndarray) -> np.ndarray:
    """Smallest x >= 0 with x[right] - x[left] >= sep for all constraints (a DAG)."""
    x = np.zeros(n_blocks, dtype=np.float64)
    if left.size == 0:
        return x
    o = np.argsort(right, kind="stable")
    lft, rgt, sp = left[o], right[o], sep[o]
    starts = np.r_[0, np.flatnonzero(rgt[1:] != rgt[:-1]) + 1]
    targets = rgt[starts]
    for _ in range(64):
        best = np.maximum.reduceat(x[lft] + sp, starts)
        new = np.maximum(x[targets], best)
        if np.array_equal(new, x[targets]):
            return x
        x[targets] = new
    return _longest_topo(n_blocks, left, right, sep)


def _longest_topo(n_blocks: int, left: np.ndarray, right: np.ndarray, sep: np.ndarray) -> np.ndarray:
    """Same as _longest by one topological pass (for long left-to-right chains of blocks)."""
    order = np.argsort(left, kind="stable")
    start = np.zeros(n_blocks + 1, dtype=np.int64)
    np.cumsum(np.bincount(left, minlength=n_blocks), out=start[1:])
    st = start.tolist()
    rg = right[order].tolist()
    sp = sep[order].tolist()
    indeg = np.bincount(right, minlength=n_blocks).tolist()
    x = [0.0] * n_blocks
    queue = [b for b in range(n_blocks) if indeg[b] == 0]
    i = 0
    while i < len(queue):
        b = queue[i]
        i += 1
        xb = x[b]
        for j in range(st[b], st[b + 1]):
            c = rg[j]
            if xb + sp[j] > x[c]:
                x[c] = xb + sp[j]
            indeg[c] -= 1
            if indeg[c] == 0:
                queue.append(c)
    return np.asarray(x, dtype=np.float64)


def place(
    g: LayoutGraph,
    pos: np.ndarray,
    widths: np.ndarray,
    heights: np.ndarray,
    node_sep: float,
    rank_sep: float,
    refine_rounds: int = 12,
) -> Placement:
    """Horizontal coordinates of all vertices and vertical coordinates of all ranks."""
    v = g.size
    n = g.n_real
    w = np.zeros(v, dtype=np.float64)
    w[:n] = widths
    real = np.arange(v) < n
    root = _align(g, pos)
    # Constraints between horizontally adjacent vertices of a rank (same component only).
    seq = np.lexsort((pos, g.rank))
    p, q = seq[:-1], seq[1:]
    adj = (g.rank[p] == g.rank[q]) & (g.comp[p] == g.comp[q])
    p, q = p[adj], q[adj]
    gap = np.where(real[p] & real[q], node_sep, node_sep / 2.0)
    sep = (w[p] + w[q]) / 2.0 + gap
    # Dense block ids.
    blocks, bid = np.unique(root, return_inverse=True)
    nb = blocks.size
    bl, br = bid[p], bid[q]
    key = bl * nb + br
    o = np.argsort(key, kind="stable")
    key, bl, br, sep = key[o], bl[o], br[o], sep[o]
    if key.size:
        st = np.r_[0, np.flatnonzero(key[1:] != key[:-1]) + 1]
        bl, br, sep = bl[st], br[st], np.maximum.reduceat(sep, st)
    xl = _longest(nb, bl, br, sep)
    xr = -_longest(nb, br, bl, sep)
    bcomp = g.comp[blocks]
    # Align the right-packed solution to the left-packed one per component, then average.
    vx_l, vx_r = xl[bid], xr[bid]
    ncomp = int(g.comp.max()) + 1 if v else 1
    left_l = np.full(ncomp, np.inf)
    left_r = np.full(ncomp, np.inf)
    np.minimum.at(left_l, g.comp, vx_l - w / 2)
    np.minimum.at(left_r, g.comp, vx_r - w / 2)
    shift_r = np.zeros(ncomp)
    present = np.isfinite(left_l) & np.isfinite(left_r)  # labels are node ids, so some are unused
    shift_r[present] = left_l[present] - left_r[present]
    xr = xr + shift_r[bcomp]
    xb = (xl + xr) / 2.0
    xb = _refine(g, bid, nb, bl, br, sep, xb, refine_rounds)
    x = xb[bid]
    # Components side by side, in label order, node_sep apart.
    lo = np.full(ncomp, np.inf)
    hi = np.full(ncomp, -np.inf)
    np.minimum.at(lo, g.comp, x - w / 2)
    np.maximum.at(hi, g.comp, x + w / 2)
    present = np.isfinite(lo)
    widths_c = np.where(present, hi - lo, 0.0)
    gaps = np.where(present, node_sep, 0.0)
    start = np.concatenate([[0.0], np.cumsum(widths_c + gaps)[:-1]])
    shift = np.where(present, start - lo, 0.0)
    x = x + shift[g.comp]
    # Ranks: height = tallest node of the rank; rank_sep between rank bands.
    n_ranks = int(g.rank.max()) + 1 if v else 0
    rank_h = np.zeros(n_ranks, dtype=np.float64)
    np.maximum.at(rank_h, g.rank[:n], np.asarray(heights, dtype=np.float64))
    tops = np.concatenate([[0.0], np.cumsum(rank_h + rank_sep)[:-1]]) if n_ranks else np.zeros(0)
    return Placement(x, tops + rank_h / 2.0, rank_h)


def _refine(
    g: LayoutGraph,
    bid: np.ndarray,
    nb: int,
    bl: np.ndarray,
    br: np.ndarray,
    sep: np.ndarray,
    xb: np.ndarray,
    rounds: int,
) -> np.ndarray:
    """Pull blocks toward their neighbours' mean x without ever breaking a separation constraint."""
    a, b = bid[g.ea], bid[g.eb]
    ext = a != b
    a, b = a[ext], b[ext]
    if a.size == 0 or rounds <= 0:
        return xb
    ends = np.concatenate([a, b])
    others = np.concatenate([b, a])
    cnt = np.bincount(ends, minlength=nb).astype(np.float64)
    has = cnt > 0
    ol = np.argsort(br, kind="stable")
    l_src, l_dst, l_sep = bl[ol], br[ol], sep[ol]
    ls = np.r_[0, np.flatnonzero(l_dst[1:] != l_dst[:-1]) + 1] if l_dst.size else np.zeros(0, np.int64)
    orr = np.argsort(bl, kind="stable")
    r_src, r_dst, r_sep = bl[orr], br[orr], sep[orr]
    rs = np.r_[0, np.flatnonzero(r_src[1:] != r_src[:-1]) + 1] if r_src.size else np.zeros(0, np.int64)
    x = xb.copy()
    for _ in range(rounds):
        target = np.bincount(ends, weights=x[others], minlength=nb)
        d = np.where(has, target / np.maximum(cnt, 1.0) - x, 0.0)
        room_l = np.full(nb, np.inf)
        room_r = np.full(nb, np.inf)
        if l_dst.size:
            room_l[l_dst[ls]] = np.minimum.reduceat(x[l_dst] - x[l_src] - l_sep, ls)
            room_r[r_src[rs]] = np.minimum.reduceat(x[r_dst] - x[r_src] - r_sep, rs)
        room_l = np.maximum(room_l, 0.0)
        room_r = np.maximum(room_r, 0.0)
        d = np.clip(d, -room_l / 2.0, room_r / 2.0)
        if not np.any(np.abs(d) > 0.25):
            break
        x += d
    return x
