"""Layout phase 2: long edges become dummy chains ("buses"), then vertices are ordered inside ranks.

Fan-out is what makes neural-network graphs expensive to lay out: one attention mask or one encoder
feature map can feed consumers hundreds of ranks apart. Giving every such edge its own dummy chain
costs the sum of their spans (quadratic); here each source node gets ONE chain, from just below it to
just above its deepest consumer, and every consumer branches off that chain at its own rank. Dummy
vertices are therefore bounded by the sum over nodes of their longest outgoing span.

Ordering is the usual barycenter layer sweep (down, up, ...) keeping the ordering with the fewest
crossings. Ranks whose order is forced by the rank before them (every vertex has exactly one neighbour
there and no two share it: a chain running beside other chains) are not visited at all; their
positions follow their "root" vertex in the last rank that was really sorted. Deep chain-like graphs
therefore cost time per branching rank, not per rank.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from app.core.layout.metrics import _sorted_inversion_counts


@dataclass
class LayoutGraph:
    """Proper layered graph: every edge joins adjacent ranks.

    Attributes:
        n_real: vertices 0..n_real-1 are the graph's nodes, the rest are dummies.
        rank, comp: per vertex.
        ea, eb: edges, rank[eb] == rank[ea] + 1.
        bus_base: for a real node u, the id of the first dummy of its bus (dummy k sits at rank
            rank[u] + 1 + k); bus_len[u] dummies in all.
    """

    n_real: int
    rank: np.ndarray
    comp: np.ndarray
    ea: np.ndarray
    eb: np.ndarray
    bus_base: np.ndarray
    bus_len: np.ndarray

    @property
    def size(self) -> int:
        return int(self.rank.size)


def build_layout_graph(n: int, src: np.ndarray, dst: np.ndarray, rank: np.ndarray, comp: np.ndarray) -> LayoutGraph:
    """Insert one shared dummy chain per source node that has an edge longer than one rank."""
    span = rank[dst] - rank[src]
    longest = np.zeros(n, dtype=np.int64)
    np.maximum.at(longest, src, span)
    bus_len = np.maximum(longest - 1, 0)
    bus_base = n + np.concatenate([[0], np.cumsum(bus_len)[:-1]]) if n else np.zeros(0, np.int64)
    n_dummy = int(bus_len.sum())
    owner = np.repeat(np.arange(n, dtype=np.int64), bus_len)
    k = np.arange(n_dummy, dtype=np.int64) - (bus_base[owner] - n)
    vrank = np.concatenate([rank, rank[owner] + 1 + k])
    vcomp = np.concatenate([comp, comp[owner]])
    # Bus chain edges: owner -> first dummy, dummy k -> dummy k+1.
    first = k == 0
    d_ids = np.arange(n, n + n_dummy, dtype=np.int64)
    chain_a = np.where(first, owner, d_ids - 1)
    chain_b = d_ids
    # Each DAG edge ends at its target from the owner (span 1) or from the bus dummy just above it.
    short = span == 1
    tail = np.where(short, src, bus_base[src] + span - 2)
    # Real targets first: the depth-first start order then follows the graph before its buses.
    ea = np.concatenate([tail, chain_a])
    eb = np.concatenate([dst, chain_b])
    return LayoutGraph(n, vrank, vcomp, ea, eb, bus_base, bus_len)


def initial_order(g: LayoutGraph, reverse: bool = False) -> np.ndarray:
    """Position of every vertex in its rank from a depth-first walk (keeps branches together).

    reverse walks each vertex's successors in the opposite order, which mirrors every branching.
    """
    v = g.size
    e_idx = np.arange(g.ea.size)
    order = np.lexsort((-e_idx if reverse else e_idx, g.ea))
    start = np.zeros(v + 1, dtype=np.int64)
    np.cumsum(np.bincount(g.ea, minlength=v), out=start[1:])
    st = start.tolist()
    sc = g.eb[order].tolist()
    visit = np.lexsort((g.rank, g.comp)).tolist()
    pre = [-1] * v
    ptr = st[:]
    counter = 0
    for root in visit:
        if pre[root] >= 0:
            continue
        pre[root] = counter
        counter += 1
        stack = [root]
        ptr[root] = st[root]
        while stack:
            u = stack[-1]
            j = ptr[u]
            if j == st[u + 1]:
                stack.pop()
                continue
            ptr[u] = j + 1
            w = sc[j]
            if pre[w] < 0:
                pre[w] = counter
                counter += 1
                stack.append(w)
                ptr[w] = st[w]
    return _positions(g, np.asarray(pre, dtype=np.float64))


def _positions(g: LayoutGraph, key: np.ndarray) -> np.ndarray:
    """Dense 0..k-1 positions inside each rank, sorted by (component, key)."""
    seq = np.lexsort((key, g.comp, g.rank))
    r = g.rank[seq]
    starts = np.r_[0, np.flatnonzero(r[1:] != r[:-1]) + 1]
    first = np.repeat(starts, np.diff(np.r_[starts, r.size]))
    pos = np.empty(g.size, dtype=np.float64)
    pos[seq] = np.arange(r.size) - first
    return pos


def crossings_of(
    g: LayoutGraph, pos: np.ndarray, edges: np.ndarray | None = None
) -> tuple[int, np.ndarray, np.ndarray]:
    """Crossings of the proper layered graph for the given positions: (total, ranks, counts).

    ranks/counts list the upper ranks of the rank pairs that have crossings. `edges` restricts the
    count to a subset of edge indices (the others are known to be crossing-free).
    """
    ea, eb = (g.ea, g.eb) if edges is None else (g.ea[edges], g.eb[edges])
    if ea.size < 2:
        return 0, np.zeros(0, np.int64), np.zeros(0, np.int64)
    r = g.rank[ea]
    # Positions are small integers: one int64 key sorts by (rank, top, bottom) much faster than lexsort.
    pa = pos[ea].astype(np.int64)
    pb = pos[eb].astype(np.int64)
    base = int(max(pa.max(), pb.max())) + 2
    o = np.argsort((r * base + pa) * base + pb, kind="stable")
    r, pb = r[o], pb[o]
    counts = _sorted_inversion_counts(r, pb)
    hit = counts > 0
    ranks, inv = np.unique(r[hit], return_inverse=True)
    return int(counts.sum()), ranks, np.bincount(inv, weights=counts[hit]).astype(np.int64)


@dataclass
class _SweepPlan:
    """Precomputed work of one sweep direction: only the ranks that must really be sorted."""

    ranks: list[list[tuple[int, int, object]]]  # per sorted rank: (vertex, comp, neighbour roots)
    root: np.ndarray  # vertex -> vertex whose position it copies (itself when sorted)
    sorted_ranks: np.ndarray  # the ranks listed in `ranks`
    forced: np.ndarray  # per rank: order copied from the fixed side


def _plan(g: LayoutGraph, down: bool, skip_forced: bool = True) -> _SweepPlan:
    """Find forced ranks for one direction and prepare Python lists for the others.

    skip_forced=False sorts every rank; the result is the same, only slower (tests compare both).
    """
    v = g.size
    near, far = (g.eb, g.ea) if down else (g.ea, g.eb)  # near: vertex being placed; far: fixed side
    n_near = np.bincount(near, minlength=v)
    n_far = np.bincount(far, minlength=v)
    max_rank = int(g.rank.max()) if v else 0
    bad = np.zeros(max_rank + 2, dtype=np.int64)
    # A rank is forced when each of its vertices has exactly one neighbour on the fixed side and no
    # fixed-side vertex has two neighbours in it.
    np.add.at(bad, g.rank, n_near != 1)
    shift = 1 if down else -1
    fixed_rank = g.rank + shift
    ok = (fixed_rank >= 0) & (fixed_rank <= max_rank)
    np.add.at(bad, fixed_rank[ok], (n_far[ok] > 1))
    first_rank = 0 if down else max_rank
    forced = (bad == 0) & skip_forced
    forced[first_rank] = False
    parent = np.arange(v, dtype=np.int64)
    fv = forced[g.rank[near]]
    parent[near[fv]] = far[fv]
    root = parent
    while True:
        nxt = root[root]
        if np.array_equal(nxt, root):
            break
        root = nxt
    # Lists of (vertex, comp, roots of fixed-side neighbours) for the ranks that are sorted.
    sort_ranks = np.flatnonzero(~forced[: max_rank + 1])
    sort_ranks = sort_ranks[sort_ranks != first_rank]
    if not down:
        sort_ranks = sort_ranks[::-1]
    e_order = np.argsort(near, kind="stable")
    nb_roots = root[far[e_order]].tolist()
    nstart = np.zeros(v + 1, dtype=np.int64)
    np.cumsum(n_near, out=nstart[1:])
    ns = nstart.tolist()
    verts_by_rank = np.argsort(g.rank, kind="stable")
    rstart = np.searchsorted(g.rank[verts_by_rank], np.arange(max_rank + 2))
    vb = verts_by_rank.tolist()
    rs = rstart.tolist()
    comp = g.comp.tolist()
    ranks: list[list[tuple[int, int, object]]] = []
    for r in sort_ranks.tolist():
        items: list[tuple[int, int, object]] = []
        for x in vb[rs[r] : rs[r + 1]]:
            a, b = ns[x], ns[x + 1]
            nb: object = nb_roots[a] if b - a == 1 else nb_roots[a:b]
            items.append((x, comp[x], nb))
        ranks.append(items)
    return _SweepPlan(ranks, root, sort_ranks, forced[: max_rank + 1])


def _sweep(plan: _SweepPlan, pos: np.ndarray, bias_right: bool) -> np.ndarray:
    """One barycenter sweep over the ranks that need sorting; returns the new positions.

    Equal barycenters keep their previous order, or reverse it when bias_right is set; alternating
    the two lets later sweeps try the other side for branches that are symmetric to their parent.
    """
    p = pos.tolist()
    tie = -1 if bias_right else 1
    for items in plan.ranks:
        keyed = []
        for x, c, nb in items:
            if nb.__class__ is int:
                bc = p[nb]
            elif nb:
                bc = sum([p[u] for u in nb]) / len(nb)  # type: ignore[attr-defined, arg-type]  # a list here
            else:
                bc = p[x]  # no neighbour on the fixed side: stay put
            keyed.append((c, bc, tie * p[x], x))
        keyed.sort()
        for i, t in enumerate(keyed):
            p[t[3]] = i
    out = np.asarray(p, dtype=np.float64)
    return out[plan.root]


def _transpose(g: LayoutGraph, pos: np.ndarray, ranks: np.ndarray, passes: int) -> np.ndarray:
    """Swap neighbouring vertices of a rank while that removes crossings (the "transpose" step).

    Barycenters cannot separate branches whose neighbours have the same mean position (a fan-out
    into three parallel chains, a bus that must pass to one side); exact local swaps can. Only the
    given ranks are visited (the caller passes the ranks next to remaining crossings).
    """
    v = g.size
    p = pos.tolist()
    up_start = np.zeros(v + 1, dtype=np.int64)
    np.cumsum(np.bincount(g.eb, minlength=v), out=up_start[1:])
    ups = g.ea[np.argsort(g.eb, kind="stable")].tolist()
    dn_start = np.zeros(v + 1, dtype=np.int64)
    np.cumsum(np.bincount(g.ea, minlength=v), out=dn_start[1:])
    dns = g.eb[np.argsort(g.ea, kind="stable")].tolist()
    us, ds = up_start.tolist(), dn_start.tolist()
    comp = g.comp.tolist()
    seq = np.lexsort((pos, g.rank))
    rstart = np.searchsorted(g.rank[seq], np.arange(int(g.rank.max()) + 2) if v else np.zeros(1, np.int64))
    sq, rs = seq.tolist(), rstart.tolist()
    rows = [sq[rs[r] : rs[r + 1]] for r in ranks.tolist() if rs[r + 1] - rs[r] > 1]

    def cross(a: list[int], b: list[int]) -> int:
        c = 0
        for x in a:
            px = p[x]
            for y in b:
                if px > p[y]:
                    c += 1
        return c

    for it in range(passes):
        improved = False
        for row in rows if it % 2 == 0 else reversed(rows):
            changed = True
            while changed:
                changed = False
                for i in range(len(row) - 1):
                    a, b = row[i], row[i + 1]
                    if comp[a] != comp[b]:
                        continue
                    ua, ub = ups[us[a] : us[a + 1]], ups[us[b] : us[b + 1]]
                    da, db = dns[ds[a] : ds[a + 1]], dns[ds[b] : ds[b + 1]]
                    now = cross(ua, ub) + cross(da, db)
                    if now and cross(ub, ua) + cross(db, da) < now:
                        row[i], row[i + 1] = b, a
                        p[a], p[b] = p[b], p[a]
                        changed = improved = True
        if not improved:
            break
    return np.asarray(p, dtype=np.float64)


def order_vertices(
    g: LayoutGraph, check: Callable[[], None], sweeps: int = 12, patience: int = 4, work: int = 150_000
) -> np.ndarray:
    """Crossing reduction: DFS start, then alternating barycenter sweeps, best ordering kept.

    Like dagre: down and up sweeps alternate, ties are biased left for two sweeps then right for
    two, and the loop stops after `patience` sweeps without improvement (at most `sweeps`). Then
    adjacent swaps ("transpose") are tried around the rank pairs that still have crossings.

    While crossings remain, more starts are tried and the best result kept: the mirrored
    depth-first order always (sweeps settle ties, such as which side of a spine a long skip runs
    on, the way they start), then seeded random orders while the vertex count times the number of
    starts stays under `work`, so small graphs get several restarts and large ones two.
    """
    extra = max(0, min(6, work // max(g.size, 1) - 2))
    starts: list[Callable[[], np.ndarray]] = [lambda: initial_order(g), lambda: initial_order(g, True)]
    rng = np.random.default_rng(12345)  # fixed seed: the same graph always gets the same drawing
    for _ in range(extra):
        starts.append(lambda: _positions(g, rng.random(g.size)))
    best, best_cross = None, -1
    plans: tuple[_SweepPlan, _SweepPlan] | None = None
    live = np.zeros(0, dtype=np.int64)
    for start in starts:
        pos = start()
        check()
        cross, cr_ranks, _ = crossings_of(g, pos)
        if cross and sweeps > 0:
            if plans is None:
                plans = (_plan(g, True), _plan(g, False))
                # A rank pair forced from both sides is a perfect matching whose order is copied
                # whichever way a sweep goes, so after any sweep it has no crossings.
                fd, fu = plans[0].forced, plans[1].forced
                both = np.zeros(fd.size, dtype=bool)
                both[:-1] = fu[:-1] & fd[1:]
                live = np.flatnonzero(~both[g.rank[g.ea]])
                check()
            pos, cross = _improve(g, pos, cross, cr_ranks, plans, live, check, sweeps, patience)
        if best is None or cross < best_cross:
            best, best_cross = pos, cross
        if best_cross == 0:
            break
    assert best is not None
    return best


def _improve(
    g: LayoutGraph,
    pos: np.ndarray,
    best_cross: int,
    cr_ranks: np.ndarray,
    plans: tuple[_SweepPlan, _SweepPlan],
    live: np.ndarray,
    check: Callable[[], None],
    sweeps: int,
    patience: int,
) -> tuple[np.ndarray, int]:
    """Sweeps then transposition from one start; returns the best positions and their crossings."""
    best = pos
    stale = 0
    for i in range(sweeps):
        pos = _sweep(plans[i % 2], pos, bias_right=i % 4 >= 2)
        pos = _positions(g, pos)
        c, ranks, _ = crossings_of(g, pos, live)
        check()
        stale += 1
        if c < best_cross:
            best, best_cross, cr_ranks, stale = pos, c, ranks, 0
            if c == 0:
                return best, 0
        if stale >= patience:
            break
    # Local swaps on both ranks of every pair that still has crossings.
    near = np.unique(np.concatenate([cr_ranks, cr_ranks + 1]))
    pos = _transpose(g, best, near[near <= int(g.rank.max())], passes=4)
    check()
    c, _, _ = crossings_of(g, pos)
    return (pos, c) if c < best_cross else (best, best_cross)
