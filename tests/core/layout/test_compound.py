"""The nested layout: containers hold their items, edges start and end at their nodes, and a container whose content
did not change is not laid out again."""

from __future__ import annotations

import numpy as np

from app.core.layout import compound_layout
from app.core.layout.compound import ROOT


def _two_blocks():
    # items 0..2 in container 10, 3..5 in container 11, 6 at the top; 10 and 11 inside 20
    widths, heights = np.full(7, 80.0), np.full(7, 40.0)
    edges = np.array([[6, 0], [0, 1], [1, 2], [2, 3], [3, 4], [4, 5], [0, 4]])
    container_of = np.array([10, 10, 10, 11, 11, 11, ROOT])
    parent = {10: 20, 11: 20, 20: ROOT}
    keys = [("n", i) for i in range(7)]
    return widths, heights, edges, container_of, parent, keys


def test_items_sit_inside_their_containers_and_edges_join_their_nodes():
    widths, heights, edges, container_of, parent, keys = _two_blocks()
    lay = compound_layout(widths, heights, edges, container_of, parent, keys)
    frames = {c: (x0, y0, x1, y1) for c, x0, y0, x1, y1 in lay.frames}
    assert [c for c, *_ in lay.frames][0] == 20 and set(frames) == {10, 11, 20}
    for i, c in enumerate(container_of.tolist()):
        chain = [c] + ([parent[c]] if c != ROOT else [])
        for k in chain:
            if k == ROOT:
                continue
            x0, y0, x1, y1 = frames[k]
            assert x0 <= lay.x[i] - 40 and lay.x[i] + 40 <= x1 and y0 <= lay.y[i] - 20 and lay.y[i] + 20 <= y1
    a, b = frames[10], frames[11]
    assert a[3] <= b[1] or b[3] <= a[1] or a[2] <= b[0] or b[2] <= a[0], "sibling containers do not overlap"
    for k, (u, v) in enumerate(edges.tolist()):
        path = lay.edge_path(k)
        assert np.allclose(path[0], [lay.x[u], lay.y[u] + 20]) and np.allclose(path[-1], [lay.x[v], lay.y[v] - 20])


def test_an_unchanged_container_keeps_its_layout():
    widths, heights, edges, container_of, parent, keys = _two_blocks()
    cache: dict = {}
    compound_layout(widths, heights, edges, container_of, parent, keys, cache)
    kept = {k: v[1] for k, v in cache.items()}
    # container 11 closes into one box (item 7); 10's content is the same and keeps its layout object
    widths2, heights2 = np.append(widths[:3], [80.0, 80.0]), np.append(heights[:3], [40.0, 56.0])
    edges2 = np.array([[3, 0], [0, 1], [1, 2], [2, 4], [0, 4]])
    lay = compound_layout(widths2, heights2, edges2, np.array([10, 10, 10, ROOT, 20]), {10: 20, 20: ROOT},
                          [("n", 0), ("n", 1), ("n", 2), ("n", 6), ("g", 11)], cache)
    assert cache[("c", 10)][1] is kept[("c", 10)]
    assert cache[("c", 20)][1] is not kept[("c", 20)]
    assert {c for c, *_ in lay.frames} == {10, 20}
