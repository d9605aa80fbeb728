"""Layered layout: geometric invariants on hand-made, NN-shaped and real-model graphs."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest

from app.core.layout.layered import (
    GraphLayout,
    LayoutCancelled,
    count_crossings,
    layered_layout,
    overlapping_pairs,
)
from app.core.layout.metrics import grouped_inversions

NODE_SEP = 24.0
EPS = 1e-6


def _models_dir() -> Path:
    env = os.environ.get("TRTLAB_MODELS")
    if env:
        return Path(env).expanduser()
    return Path(__file__).resolve().parents[3].parent / "shared" / "models"


def _sizes(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Variable box sizes, like op boxes with names of different length."""
    rng = np.random.default_rng(seed)
    return rng.uniform(60.0, 200.0, n).round(), rng.choice([30.0, 40.0, 52.0], n)


def _layout(
    n: int, edges: list[tuple[int, int]] | np.ndarray, seed: int = 0
) -> tuple[GraphLayout, np.ndarray, np.ndarray]:
    w, h = _sizes(n, seed)
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    return layered_layout(n, e, w, h, node_sep=NODE_SEP), w, h


def _segment_hits_box(p: np.ndarray, q: np.ndarray, box: tuple[float, float, float, float]) -> bool:
    """True when segment p-q passes through the interior of box (x0, y0, x1, y1) (Liang–Barsky)."""
    x0, y0, x1, y1 = box[0] + 0.5, box[1] + 0.5, box[2] - 0.5, box[3] - 0.5
    d = q - p
    t0, t1 = 0.0, 1.0
    for pk, qk in ((-d[0], p[0] - x0), (d[0], x1 - p[0]), (-d[1], p[1] - y0), (d[1], y1 - p[1])):
        if pk == 0:
            if qk < 0:
                return False
        else:
            t = qk / pk
            if pk < 0:
                t0 = max(t0, t)
            else:
                t1 = min(t1, t)
    return t0 < t1


def check_invariants(
    lay: GraphLayout,
    n: int,
    edges: np.ndarray,
    w: np.ndarray,
    h: np.ndarray,
    *,
    dag: bool = True,
    routing: bool = False,
) -> None:
    """Everything a correct drawing must satisfy; `routing` adds the O(E*N) edge-through-node check."""
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    assert lay.x.shape == (n,) and lay.y.shape == (n,) and lay.rank.shape == (n,)
    assert lay.x.dtype == np.float64 and lay.rank.dtype == np.int32
    assert lay.edge_offsets.shape == (len(e) + 1,) and lay.edge_offsets.dtype == np.int64
    assert lay.points.ndim == 2 and lay.points.shape[1] == 2 and lay.edge_offsets[-1] == len(lay.points)
    # Bounding box starts at (0, 0) and contains every box and edge point.
    lo_x = min((lay.x - w / 2).min(), lay.points[:, 0].min() if len(lay.points) else np.inf)
    lo_y = min((lay.y - h / 2).min(), lay.points[:, 1].min() if len(lay.points) else np.inf)
    assert abs(lo_x) < EPS and abs(lo_y) < EPS
    assert (lay.x + w / 2).max() <= lay.width + EPS and (lay.y + h / 2).max() <= lay.height + EPS
    assert overlapping_pairs(lay.x, lay.y, w, h) == 0
    # One y per rank, ranks top to bottom, and node_sep between neighbouring boxes of a rank.
    for r in np.unique(lay.rank):
        idx = np.flatnonzero(lay.rank == r)
        assert np.ptp(lay.y[idx]) < EPS
        o = idx[np.argsort(lay.x[idx])]
        gaps = (lay.x[o[1:]] - w[o[1:]] / 2) - (lay.x[o[:-1]] + w[o[:-1]] / 2)
        assert (gaps >= NODE_SEP - EPS).all(), (r, gaps.min())
    order = np.argsort(lay.rank)
    assert (np.diff(lay.y[order]) >= -EPS).all()
    for i, (s, t) in enumerate(e):
        path = lay.edge_path(i)
        assert len(path) >= 2
        if s == t:
            continue
        # Starts on the source box and ends on the target box.
        assert abs(path[0, 0] - lay.x[s]) <= w[s] / 2 + EPS and abs(path[0, 1] - lay.y[s]) <= h[s] / 2 + EPS
        assert abs(path[-1, 0] - lay.x[t]) <= w[t] / 2 + EPS and abs(path[-1, 1] - lay.y[t]) <= h[t] / 2 + EPS
        if dag:
            assert lay.rank[t] > lay.rank[s]
            assert (np.diff(path[:, 1]) >= -EPS).all() and path[-1, 1] > path[0, 1]
    if routing:
        boxes = np.stack([lay.x - w / 2, lay.y - h / 2, lay.x + w / 2, lay.y + h / 2], axis=1)
        for i, (s, t) in enumerate(e):
            path = lay.edge_path(i)
            for j in range(n):
                if j in (s, t):
                    continue
                for a, b in zip(path[:-1], path[1:], strict=True):
                    assert not _segment_hits_box(a, b, tuple(boxes[j])), f"edge {i} ({s}->{t}) crosses node {j}"


# --- small NN-shaped generators (edge lists only) -------------------------------------------------


def resnet_edges(blocks: int) -> tuple[int, list[tuple[int, int]]]:
    """conv-bn-relu x2 + conv-bn, shortcut (projection every 3rd block), Add, Relu."""
    edges: list[tuple[int, int]] = []
    n = 1
    x = 0
    for b in range(blocks):
        prev = x
        for _ in range(8):
            edges.append((prev, n))
            prev, n = n, n + 1
        sc = x
        if b % 3 == 0:
            edges.append((x, n))
            edges.append((n, n + 1))
            sc, n = n + 1, n + 2
        add = n
        edges += [(prev, add), (sc, add), (add, add + 1)]
        x, n = add + 1, n + 2
    return n, edges


def transformer_edges(layers: int) -> tuple[int, list[tuple[int, int]]]:
    """Q/K/V branches, attention, residuals, MLP; one mask node feeding every layer."""
    edges: list[tuple[int, int]] = []
    h, mask, n = 0, 1, 2
    for _ in range(layers):
        heads = []
        for _ in range(3):
            edges += [(h, n), (n, n + 1), (n + 1, n + 2)]
            heads.append(n + 2)
            n += 3
        qk, add_mask, soft, av, proj, res = range(n, n + 6)
        n += 6
        edges += [(heads[0], qk), (heads[1], qk), (qk, add_mask), (mask, add_mask), (add_mask, soft)]
        edges += [(soft, av), (heads[2], av), (av, proj), (proj, res), (h, res)]
        f1, f2, f3, res2 = range(n, n + 4)
        n += 4
        edges += [(res, f1), (f1, f2), (f2, f3), (f1, f3), (f3, res2), (res, res2)]
        h = res2
    return n, edges


def unet_edges(levels: int, units: int = 2) -> tuple[int, list[tuple[int, int]]]:
    """Encoder/decoder with a skip from block i to block N-i (Concat in the decoder)."""
    edges: list[tuple[int, int]] = []
    n = 1
    x = 0
    skips = []

    def chain(start: int, length: int) -> int:
        nonlocal n
        prev = start
        for _ in range(length):
            edges.append((prev, n))
            prev, n = n, n + 1
        return prev

    for _ in range(levels):
        x = chain(x, 3 * units)
        skips.append(x)
        x = chain(x, 1)
    x = chain(x, 3 * units)
    for skip in reversed(skips):
        x = chain(x, 1)
        cat = n
        n += 1
        edges += [(x, cat), (skip, cat)]
        x = chain(cat, 3 * units)
    return n, edges


# --- tests ----------------------------------------------------------------------------------------


def test_chain_is_one_straight_vertical_line() -> None:
    n = 12
    lay, w, h = _layout(n, [(i, i + 1) for i in range(n - 1)])
    check_invariants(lay, n, np.array([(i, i + 1) for i in range(n - 1)]), w, h, routing=True)
    assert np.ptp(lay.x) < EPS
    assert list(lay.rank) == list(range(n))
    for i in range(n - 1):
        assert np.ptp(lay.edge_path(i)[:, 0]) < EPS  # every edge is vertical


def test_conv_bn_relu_spine_stays_straight_beside_a_skip() -> None:
    n, edges = resnet_edges(4)
    lay, w, h = _layout(n, edges)
    check_invariants(lay, n, np.array(edges), w, h, routing=True)
    e = np.array(edges)
    # The main path (0 -> ... -> last) never bends: every node with a single real input sits under it.
    main = [0]
    succ = {}
    for s, t in edges:
        succ.setdefault(s, []).append(t)
    while main[-1] in succ:
        main.append(min(succ[main[-1]]))
    assert np.ptp(lay.x[main]) < EPS
    assert count_crossings(lay.y, lay.points, lay.edge_offsets) == 0
    assert len(e) == lay.edge_offsets.size - 1


@pytest.mark.parametrize(
    "edges",
    [
        [(0, 1), (0, 2), (1, 3), (2, 3)],  # diamond
        [(0, 1), (1, 2), (2, 3), (0, 3), (3, 4)],  # skip over two nodes
        [(0, 1), (0, 2), (0, 3), (1, 4), (2, 4), (3, 4), (0, 4)],  # fan-out/fan-in with a skip
    ],
)
def test_diamond_and_skip_graphs_have_no_crossings(edges: list[tuple[int, int]]) -> None:
    n = max(max(e) for e in edges) + 1
    lay, w, h = _layout(n, edges)
    check_invariants(lay, n, np.array(edges), w, h, routing=True)
    assert count_crossings(lay.y, lay.points, lay.edge_offsets) == 0


def test_duplicate_edges_and_self_loop_do_not_crash() -> None:
    edges = [(0, 1), (0, 1), (1, 2), (1, 2), (2, 2)]  # Mul(x, x) twice, and a self loop
    lay, w, h = _layout(3, edges)
    check_invariants(lay, 3, np.array(edges), w, h)
    assert np.array_equal(lay.edge_path(0), lay.edge_path(1))
    loop = lay.edge_path(4)
    assert len(loop) >= 2 and (np.abs(loop[:, 1] - lay.y[2]) <= h[2] / 2 + EPS).all()


def test_cycle_is_broken_and_edges_still_join_their_nodes() -> None:
    edges = [(0, 1), (1, 2), (2, 3), (3, 1), (2, 0), (3, 4)]
    lay, w, h = _layout(5, edges)
    check_invariants(lay, 5, np.array(edges), w, h, dag=False)
    # Edges kept forward still point down.
    assert lay.rank[1] > lay.rank[0] and lay.rank[4] > lay.rank[3]


def test_deep_chain_with_cycle_is_iterative() -> None:
    n = 30_000  # far deeper than Python's recursion limit
    e = np.stack([np.arange(n - 1), np.arange(1, n)], axis=1)
    e = np.vstack([e, [[n - 1, 0]]])
    lay = layered_layout(n, e, np.full(n, 80.0), np.full(n, 30.0))
    assert lay.rank.max() == n - 1
    assert np.ptp(lay.x) < EPS


def test_sources_sit_just_above_their_first_consumer() -> None:
    # 0 -> 1 -> ... -> 9, and a constant-like source 10 feeding node 7 only.
    edges = [(i, i + 1) for i in range(9)] + [(10, 7)]
    lay, w, h = _layout(11, edges)
    check_invariants(lay, 11, np.array(edges), w, h, routing=True)
    assert lay.rank[10] == lay.rank[7] - 1


def test_disconnected_components_side_by_side() -> None:
    edges = [(0, 1), (1, 2), (3, 4), (5, 6), (6, 7), (5, 7)]
    lay, w, h = _layout(9, edges)  # node 8 is isolated
    check_invariants(lay, 9, np.array(edges), w, h, routing=True)
    comps = [[0, 1, 2], [3, 4], [5, 6, 7], [8]]
    spans = sorted(((lay.x[c] - w[c] / 2).min(), (lay.x[c] + w[c] / 2).max()) for c in comps)
    for (_, right), (left, _) in zip(spans[:-1], spans[1:], strict=True):
        assert left >= right + NODE_SEP - EPS
    assert all(lay.rank[c].min() == 0 for c in comps)


def test_fan_out_bus_keeps_dummies_linear() -> None:
    # One mask node feeding every layer of a deep chain: sum of spans is quadratic, the bus is not.
    layers = 200
    n, edges = transformer_edges(layers)
    lay, w, h = _layout(n, edges)
    check_invariants(lay, n, np.array(edges), w, h)
    assert lay.stats is not None and lay.stats.dummies < 4 * n
    assert count_crossings(lay.y, lay.points, lay.edge_offsets) == 0
    # Edge polylines stay short: straight runs of the bus are two points, not one per rank.
    assert len(lay.points) < 8 * len(edges)


@pytest.mark.parametrize("make", [lambda: resnet_edges(12), lambda: transformer_edges(6), lambda: unet_edges(4)])
def test_nn_shaped_graphs(make: object) -> None:
    n, edges = make()  # type: ignore[operator]
    lay, w, h = _layout(n, edges, seed=3)
    check_invariants(lay, n, np.array(edges), w, h, routing=True)
    assert count_crossings(lay.y, lay.points, lay.edge_offsets) == 0
    # Width stays near the widest rank, not drifting with depth.
    assert lay.width < 8 * w.max() + 8 * NODE_SEP


def test_cancel_raises_typed_exception() -> None:
    n, edges = transformer_edges(10)
    calls = []

    def cancel() -> bool:
        calls.append(1)
        return len(calls) > 2

    with pytest.raises(LayoutCancelled):
        layered_layout(n, np.array(edges), np.full(n, 80.0), np.full(n, 30.0), cancel=cancel)


def test_empty_and_edgeless_graphs() -> None:
    lay = layered_layout(0, np.zeros((0, 2), np.int64), np.zeros(0), np.zeros(0))
    assert lay.x.size == 0 and lay.edge_offsets.tolist() == [0]
    lay, w, h = _layout(4, np.zeros((0, 2)))
    check_invariants(lay, 4, np.zeros((0, 2)), w, h)


def test_bad_input_is_rejected() -> None:
    with pytest.raises(ValueError):
        layered_layout(2, np.array([[0, 2]]), np.ones(2), np.ones(2))
    with pytest.raises(ValueError):
        layered_layout(2, np.array([[0, 1]]), np.ones(3), np.ones(2))


def test_count_crossings_known_answers() -> None:
    node_y = np.array([0.0, 0.0, 100.0, 100.0])
    # An X between two levels: one crossing.
    pts = np.array([[0, 0], [100, 100], [100, 0], [0, 100]], dtype=float)
    assert count_crossings(node_y, pts, np.array([0, 2, 4])) == 1
    # Parallel edges and edges sharing an endpoint do not cross.
    pts = np.array([[0, 0], [0, 100], [100, 0], [100, 100], [0, 0], [100, 100]], dtype=float)
    assert count_crossings(node_y, pts, np.array([0, 2, 4, 6])) == 0
    # A long vertical edge crossed by a diagonal two levels below its start.
    node_y = np.array([0.0, 100.0, 200.0, 0.0, 200.0])
    pts = np.array([[50, 0], [50, 200], [0, 100], [100, 200]], dtype=float)
    assert count_crossings(node_y, pts, np.array([0, 2, 4])) == 1
    # The same crossing drawn with explicit bends is still one crossing.
    pts = np.array([[50, 0], [50, 50], [50, 150], [50, 200], [0, 100], [100, 200]], dtype=float)
    assert count_crossings(node_y, pts, np.array([0, 4, 6])) == 1


def test_count_crossings_matches_brute_force() -> None:
    rng = np.random.default_rng(7)
    for _ in range(30):
        levels = np.arange(5) * 100.0
        polys = []
        for _ in range(rng.integers(2, 12)):
            a, b = sorted(rng.choice(5, 2, replace=False))
            xs = rng.integers(0, 6, b - a + 1).astype(float)
            polys.append(np.stack([xs, levels[a : b + 1]], axis=1))
        pts = np.vstack(polys)
        offs = np.concatenate([[0], np.cumsum([len(p) for p in polys])])
        brute = 0
        pieces = set()
        for p in polys:
            for (x0, y0), (x1, _) in zip(p[:-1], p[1:], strict=True):
                pieces.add((y0, x0, x1))
        pieces_l = sorted(pieces)
        for i, (ya, a0, a1) in enumerate(pieces_l):
            for yb, b0, b1 in pieces_l[i + 1 :]:
                if ya == yb and (a0 - b0) * (a1 - b1) < 0:
                    brute += 1
        assert count_crossings(levels, pts, offs) == brute


def test_grouped_inversions_small_and_large_groups() -> None:
    rng = np.random.default_rng(1)
    for size in (3, 40, 200):
        g = rng.integers(0, 3, size)
        t = rng.integers(0, 50, size)
        b = rng.integers(0, 50, size)
        brute = sum(1 for i in range(size) for j in range(size) if g[i] == g[j] and t[i] < t[j] and b[i] > b[j])
        assert grouped_inversions(g, t, b) == brute


def test_overlapping_pairs_counts_boxes() -> None:
    x = np.array([0.0, 50.0, 200.0, 0.0])
    y = np.array([0.0, 10.0, 0.0, 500.0])
    w = np.full(4, 100.0)
    h = np.full(4, 40.0)
    assert overlapping_pairs(x, y, w, h) == 1
    assert overlapping_pairs(np.arange(1000.0) * 100, np.zeros(1000), np.full(1000, 100.0), np.ones(1000)) == 0


def _onnx_edges(path: Path) -> tuple[int, np.ndarray]:
    """node i -> node j when an output of i is an input of j (Constant nodes left out)."""
    graph = onnx.load(str(path)).graph
    nodes = [nd for nd in graph.node if nd.op_type != "Constant"]
    producer = {o: i for i, nd in enumerate(nodes) for o in nd.output if o}
    edges = [(producer[name], j) for j, nd in enumerate(nodes) for name in nd.input if name in producer]
    return len(nodes), np.asarray(edges, dtype=np.int64).reshape(-1, 2)


_MODELS = sorted(_models_dir().glob("*.onnx")) if _models_dir().is_dir() else []


@pytest.mark.skipif(not _MODELS, reason=f"real models folder {_models_dir()} not found")
@pytest.mark.parametrize("path", _MODELS, ids=[p.stem for p in _MODELS])
def test_real_models(path: Path) -> None:
    n, edges = _onnx_edges(path)
    w, h = _sizes(n, seed=5)
    lay = layered_layout(n, edges, w, h, node_sep=NODE_SEP)
    check_invariants(lay, n, edges, w, h, routing=n <= 300)


def test_skipping_forced_ranks_changes_nothing() -> None:
    """Ranks whose order is copied from a single neighbour each are not sorted: same result."""
    from app.core.layout import order as lo
    from app.core.layout.rank import rank_graph

    n, edges = unet_edges(4)
    n2, edges2 = transformer_edges(5)
    edges = edges + [(s + n, t + n) for s, t in edges2]
    n += n2
    rg = rank_graph(n, np.array(edges))
    g = lo.build_layout_graph(n, rg.src, rg.dst, rg.rank, rg.comp)
    rng = np.random.default_rng(3)
    start = lo._positions(g, rng.random(g.size))
    fast = (lo._plan(g, True), lo._plan(g, False))
    full = (lo._plan(g, True, skip_forced=False), lo._plan(g, False, skip_forced=False))
    assert len(fast[0].ranks) < len(full[0].ranks)
    a = b = start
    for i in range(4):
        a = lo._positions(g, lo._sweep(fast[i % 2], a, i % 4 >= 2))
        b = lo._positions(g, lo._sweep(full[i % 2], b, i % 4 >= 2))
        assert np.array_equal(a, b)
