"""Layout phase 1: clean the edge list, break cycles, find components and assign ranks.

All loops here are single linear passes over nodes and edges; the graphs can be 50k nodes deep, so
nothing is recursive.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class RankedGraph:
    """The acyclic, duplicate-free graph the later phases work on, plus its ranks.

    Attributes:
        src, dst: unique DAG edges (rank[dst] > rank[src]).
        edge_of_input: for each input edge, the index of its DAG edge, or -1 for a self loop.
        flipped: for each input edge, True when it was reversed to break a cycle.
        rank: rank of each node (0 at the top of its component).
        comp: component label of each node (labels ascend with the smallest node index).
    """

    src: np.ndarray
    dst: np.ndarray
    edge_of_input: np.ndarray
    flipped: np.ndarray
    rank: np.ndarray
    comp: np.ndarray


def _csr(n: int, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Adjacency a -> b as (start offsets, neighbours), keeping input order per node."""
    order = np.argsort(a, kind="stable")
    start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(a, minlength=n), out=start[1:])
    return start, b[order]


def _topo_order(n: int, a: np.ndarray, b: np.ndarray) -> list[int]:
    """Kahn's algorithm; returns fewer than n nodes when the graph has a cycle."""
    start, succ = _csr(n, a, b)
    st = start.tolist()
    sc = succ.tolist()
    indeg = np.bincount(b, minlength=n).tolist()
    out = [v for v in range(n) if indeg[v] == 0]
    i = 0
    while i < len(out):
        v = out[i]
        i += 1
        for j in range(st[v], st[v + 1]):
            w = sc[j]
            indeg[w] -= 1
            if indeg[w] == 0:
                out.append(w)
    return out


def _back_edges(n: int, a: np.ndarray, b: np.ndarray, done: list[int]) -> np.ndarray:
    """Edges that close a cycle, found by an iterative DFS over the nodes Kahn could not order."""
    start, succ_sorted = _csr(n, a, b)
    edge_ids = np.argsort(a, kind="stable")
    st = start.tolist()
    sc = succ_sorted.tolist()
    eid = edge_ids.tolist()
    state = [0] * n  # 0 new, 1 on the DFS stack, 2 finished
    for v in done:
        state[v] = 2  # nodes Kahn ordered cannot lie on a cycle
    back = np.zeros(a.size, dtype=bool)
    for root in range(n):
        if state[root]:
            continue
        state[root] = 1
        stack = [(root, st[root])]
        while stack:
            v, j = stack[-1]
            if j == st[v + 1]:
                state[v] = 2
                stack.pop()
                continue
            stack[-1] = (v, j + 1)
            w = sc[j]
            if state[w] == 1:
                back[eid[j]] = True
            elif state[w] == 0:
                state[w] = 1
                stack.append((w, st[w]))
    return back


def components(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Weakly connected components by vectorised hooking and pointer jumping.

    Each round hooks every root to the smallest root it touches and then shortcuts all pointers, so
    the rounds are few even for 50k-deep chains (no per-node Python loop).
    """
    parent = np.arange(n, dtype=np.int64)
    if a.size == 0:
        return parent
    while True:
        pa = parent[a]
        pb = parent[b]
        diff = pa != pb
        if not diff.any():
            break
        lo = np.minimum(pa[diff], pb[diff])
        hi = np.maximum(pa[diff], pb[diff])
        np.minimum.at(parent, hi, lo)
        while True:
            nxt = parent[parent]
            if np.array_equal(nxt, parent):
                break
            parent = nxt
    return parent


def rank_graph(num_nodes: int, edges: np.ndarray) -> RankedGraph:
    """Clean the edges, break cycles and rank the nodes.

    Ranking is longest-path from the top (ASAP), then every node that has consumers is moved down
    to just above its first consumer (processed bottom-up), while sinks keep their ASAP rank. That
    puts graph inputs, constants and side computations (Shape -> Gather -> ...) right above where
    they are used instead of all at rank 0, and keeps auxiliary outputs near their producers.
    """
    n = num_nodes
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    s_in, d_in = e[:, 0], e[:, 1]
    loop = s_in == d_in
    flipped = np.zeros(e.shape[0], dtype=bool)
    key = s_in * n + d_in
    ukey, inv = np.unique(key[~loop], return_inverse=True)
    a = ukey // n
    b = ukey % n
    order = _topo_order(n, a, b)
    if len(order) < n:
        back = _back_edges(n, a, b, order)
        a, b = np.where(back, b, a), np.where(back, a, b)
        flipped_u = back
        # Reversing can create a duplicate of an existing edge: merge them again.
        key2 = a * n + b
        ukey2, inv2 = np.unique(key2, return_inverse=True)
        flipped[~loop] = flipped_u[inv]
        inv = inv2[inv]
        a = ukey2 // n
        b = ukey2 % n
        order = _topo_order(n, a, b)
    edge_of_input = np.full(e.shape[0], -1, dtype=np.int64)
    edge_of_input[~loop] = inv
    rank = _assign_ranks(n, a, b, order)
    comp = components(n, a, b)
    # Each component starts at rank 0.
    cmin = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(cmin, comp, rank)
    rank = (rank - cmin[comp]).astype(np.int64)
    return RankedGraph(a, b, edge_of_input, flipped, rank, comp)


def _assign_ranks(n: int, a: np.ndarray, b: np.ndarray, order: list[int]) -> np.ndarray:
    """ASAP longest-path ranks, then consumers-first pull-down of every non-sink node."""
    start, succ = _csr(n, a, b)
    pstart, pred = _csr(n, b, a)
    st, sc = start.tolist(), succ.tolist()
    pst, pr = pstart.tolist(), pred.tolist()
    rank = [0] * n
    for v in order:
        r = 0
        for j in range(pst[v], pst[v + 1]):
            q = rank[pr[j]] + 1
            if q > r:
                r = q
        rank[v] = r
    for v in reversed(order):
        s0, s1 = st[v], st[v + 1]
        if s0 == s1:
            continue
        r = min(rank[sc[j]] for j in range(s0, s1)) - 1
        if r > rank[v]:
            rank[v] = r
    return np.asarray(rank, dtype=np.int64)
