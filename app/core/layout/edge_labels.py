"""Where the shape labels of edges go: decided once for the whole graph, so what is drawn never depends on
which part of the canvas happens to be repainted.

Each tensor gets at most one label (a tensor read by many nodes shares one label, at its source), placed at
the first free spot among: just above the arrowhead, just below the source box, beside the middle of the
edge's longest vertical run; right of the line first, then left. A spot is free when the label covers no
node box and no label placed before it; a spot that no other edge's line crosses is preferred. A label with
no free spot is left out: the tensor is still one click away in the Properties panel.

Pure numpy and Python (text widths come from a callable), so it is cheap to test and runs once per graph.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

_CELL = 128.0    # grid cell of the collision index, in scene units
_GAP = 4.0       # from the line to the label
_PAD = 1.5       # labels keep this far from boxes and from each other
_ARROW = 8.0     # arrowhead length: a label above the target stays clear of it


@dataclass
class EdgeLabels:
    """Placed labels: rectangles (scene units), the edge each belongs to, and its text."""

    x0: np.ndarray
    y0: np.ndarray
    x1: np.ndarray
    y1: np.ndarray
    edge: np.ndarray
    texts: list[str]
    candidates: int = 0      # labelled tensors that wanted a label
    crossing: int = 0        # placed labels that another edge's line crosses (no better spot)

    def __len__(self) -> int:
        return len(self.texts)

    def in_rect(self, left: float, top: float, right: float, bottom: float) -> np.ndarray:
        return np.nonzero((self.x1 >= left) & (self.x0 <= right) & (self.y1 >= top) & (self.y0 <= bottom))[0]


def _empty() -> EdgeLabels:
    z = np.zeros(0)
    return EdgeLabels(z, z, z, z, np.zeros(0, dtype=np.int64), [])


class _Grid:
    """Rectangles bucketed by grid cell: 'does anything here overlap this rectangle?' without a full scan.

    Built from arrays in one go (numpy: a long edge covers thousands of cells), then grown one rectangle
    at a time as labels are placed. `rows` (sorted cell rows) limits the index to where labels may go:
    a graph with a handful of known shapes does not pay for indexing all of itself."""

    def __init__(self, x0: np.ndarray, y0: np.ndarray, x1: np.ndarray, y1: np.ndarray,
                 rows: np.ndarray | None = None) -> None:
        self.rects: list[tuple[float, float, float, float]] = list(zip(x0.tolist(), y0.tolist(), x1.tolist(),
                                                                         y1.tolist(), strict=True))
        self.cells: dict[tuple[int, int], list[int]] = {}
        n = len(self.rects)
        if n == 0:
            return
        cx0, cx1 = (x0 // _CELL).astype(np.int64), (x1 // _CELL).astype(np.int64)
        cy0, cy1 = (y0 // _CELL).astype(np.int64), (y1 // _CELL).astype(np.int64)
        if rows is None:
            rows = np.arange(int(cy0.min()), int(cy1.max()) + 1)
        first = np.searchsorted(rows, cy0, "left")
        ny = np.searchsorted(rows, cy1, "right") - first  # rows of interest each rectangle spans
        count = (cx1 - cx0 + 1) * ny
        ids = np.repeat(np.arange(n), count)
        k = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
        cx = cx0[ids] + k // ny[ids]
        cy = rows[first[ids] + k % ny[ids]]
        order = np.lexsort((ids, cy, cx))
        cx, cy, ids = cx[order], cy[order], ids[order]
        if len(ids) == 0:
            return
        starts = np.flatnonzero(np.r_[True, (cx[1:] != cx[:-1]) | (cy[1:] != cy[:-1])])
        bounds = np.r_[starts, len(ids)].tolist()
        id_list = ids.tolist()
        keys = zip(cx[starts].tolist(), cy[starts].tolist(), strict=True)
        self.cells = {key: id_list[a:b] for key, a, b in zip(keys, bounds[:-1], bounds[1:], strict=True)}

    @staticmethod
    def _keys(x0: float, y0: float, x1: float, y1: float) -> Iterator[tuple[int, int]]:
        for cx in range(int(x0 // _CELL), int(x1 // _CELL) + 1):
            for cy in range(int(y0 // _CELL), int(y1 // _CELL) + 1):
                yield cx, cy

    def add(self, x0: float, y0: float, x1: float, y1: float) -> int:
        k = len(self.rects)
        self.rects.append((x0, y0, x1, y1))
        for key in self._keys(x0, y0, x1, y1):
            self.cells.setdefault(key, []).append(k)
        return k

    def near(self, x0: float, y0: float, x1: float, y1: float) -> set[int]:
        out: set[int] = set()
        for key in self._keys(x0, y0, x1, y1):
            ids = self.cells.get(key)
            if ids:
                out.update(ids)
        return out

    def hits(self, x0: float, y0: float, x1: float, y1: float) -> bool:
        rects = self.rects
        for k in self.near(x0, y0, x1, y1):
            a0, b0, a1, b1 = rects[k]
            if a0 < x1 and x0 < a1 and b0 < y1 and y0 < b1:
                return True
        return False


def _segments(points: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every drawn segment once (edges of one bus share theirs): (S, 4) x0 y0 x1 y1, and for each
    (segment, edge) pair that draws it, the segment's index and the edge."""
    counts = np.diff(offsets)
    eid = np.repeat(np.arange(len(counts)), counts)
    first = np.flatnonzero(eid[:-1] == eid[1:]) if len(eid) > 1 else np.zeros(0, dtype=np.int64)
    raw = np.concatenate([points[first], points[first + 1]], axis=1)
    if len(raw) == 0:
        return np.zeros((0, 4)), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    segs, inverse = np.unique(raw, axis=0, return_inverse=True)
    return segs, inverse.reshape(-1), eid[first]


def _x_at(p: np.ndarray, q: np.ndarray, y: float) -> float:
    """x of segment p→q at height y (clamped to the segment)."""
    if abs(q[1] - p[1]) < 1e-9:
        return float(q[0])
    t = min(1.0, max(0.0, (y - p[1]) / (q[1] - p[1])))
    return float(p[0] + (q[0] - p[0]) * t)


def _crosses(seg: tuple[float, float, float, float], x0: float, y0: float, x1: float, y1: float) -> bool:
    """Does the segment pass through the rectangle?"""
    sx0, sy0, sx1, sy1 = seg
    if max(sx0, sx1) <= x0 or min(sx0, sx1) >= x1 or max(sy0, sy1) <= y0 or min(sy0, sy1) >= y1:
        return False
    if sx0 == sx1 or sy0 == sy1:
        return True
    # The segment's y over the part of it that lies within the rectangle's x range.
    lo, hi = max(x0, min(sx0, sx1)), min(x1, max(sx0, sx1))
    ya = sy0 + (sy1 - sy0) * (lo - sx0) / (sx1 - sx0)
    yb = sy0 + (sy1 - sy0) * (hi - sx0) / (sx1 - sx0)
    return min(ya, yb) < y1 and max(ya, yb) > y0


def place_edge_labels(points: np.ndarray, offsets: np.ndarray, edges: np.ndarray, labels: list[str],
                      tensors: list[str], boxes: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
                      text_width: Callable[[str], float], line_height: float) -> EdgeLabels:
    """Place at most one label per tensor; see the module docstring for the rules."""
    e_count = len(offsets) - 1
    if e_count <= 0 or not labels or not any(labels):
        return _empty()
    bx0, by0, bx1, by1 = boxes
    h = float(line_height)
    groups: dict[tuple[int, str], list[int]] = {}
    counts = np.diff(offsets).tolist()
    for e, (s, t) in enumerate(edges.tolist()):
        if labels[e] and counts[e] >= 2 and s != t:
            groups.setdefault((s, tensors[e]), []).append(e)
    widths: dict[str, float] = {}
    todo = []
    for (_, tensor), group in groups.items():
        text = labels[group[0]]
        w = widths.get(text)
        if w is None:
            w = widths[text] = float(text_width(text))
        todo.append((tensor, text, w, list(_spots(points, offsets, edges, group, by0, by1, w, h))))
    ys = np.array([y for *_, spots in todo for _, y, _ in spots], dtype=np.float64)
    rows = np.union1d(((ys - _PAD) // _CELL).astype(np.int64), ((ys + h + _PAD) // _CELL).astype(np.int64))
    occupied = _Grid(bx0 - _PAD, by0 - _PAD, bx1 + _PAD, by1 + _PAD, rows)  # node boxes, then placed labels
    seg_xy, seg_idx, seg_edge = _segments(np.asarray(points, dtype=np.float64), np.asarray(offsets))
    segs = _Grid(np.minimum(seg_xy[:, 0], seg_xy[:, 2]), np.minimum(seg_xy[:, 1], seg_xy[:, 3]),
                 np.maximum(seg_xy[:, 0], seg_xy[:, 2]), np.maximum(seg_xy[:, 1], seg_xy[:, 3]), rows)
    segments = [tuple(r) for r in seg_xy.tolist()]
    # The tensors each segment carries: a label is not 'crossed' by the lines of its own tensor.
    seg_tensors: list[set[str]] = [set() for _ in segments]
    for j, e in zip(seg_idx.tolist(), seg_edge.tolist(), strict=True):
        seg_tensors[j].add(tensors[e])
    out_x0: list[float] = []
    out_y0: list[float] = []
    out_edge: list[int] = []
    out_text: list[str] = []
    out_w: list[float] = []
    crossing = 0
    for tensor, text, w, spots in todo:
        best: tuple[float, float, int] | None = None
        best_crossed = False
        for x, y, e in spots:
            if occupied.hits(x - _PAD, y - _PAD, x + w + _PAD, y + h + _PAD):
                continue
            crossed = any(tensor not in seg_tensors[j] and _crosses(segments[j], x, y, x + w, y + h)
                          for j in segs.near(x, y, x + w, y + h))
            if best is None or (best_crossed and not crossed):
                best, best_crossed = (x, y, e), crossed
            if not crossed:
                break
        if best is None:
            continue
        x, y, e = best
        crossing += best_crossed
        occupied.add(x, y, x + w, y + h)
        out_x0.append(x)
        out_y0.append(y)
        out_w.append(w)
        out_edge.append(e)
        out_text.append(text)
    x0 = np.asarray(out_x0, dtype=np.float64)
    y0 = np.asarray(out_y0, dtype=np.float64)
    return EdgeLabels(x0, y0, x0 + np.asarray(out_w, dtype=np.float64), y0 + h,
                      np.asarray(out_edge, dtype=np.int64), out_text, candidates=len(groups), crossing=crossing)


def _spots(points: np.ndarray, offsets: np.ndarray, edges: np.ndarray, group: list[int],
           by0: np.ndarray, by1: np.ndarray, w: float, h: float) -> Iterator[tuple[float, float, int]]:
    """Top-left corners to try for one tensor's label, best first, each with the edge it sits on."""
    one = len(group) == 1
    # A tensor read by several nodes is labelled once, below its source; its straightest edge first.
    order = group if one else sorted(group, key=lambda e: abs(points[offsets[e] + 1, 0] - points[offsets[e], 0]))
    ends: list[tuple[float, float, int]] = []
    for e in order:
        a, b = int(offsets[e]), int(offsets[e + 1])
        s, t = int(edges[e, 0]), int(edges[e, 1])
        start_y = max(float(points[a, 1]), float(by1[s]))
        cy = start_y + 2 * _PAD + 1.0
        source = (_x_at(points[a], points[a + 1], cy + h / 2), cy, e)
        tip_y = min(float(points[b - 1, 1]), float(by0[t]))
        cy = tip_y - _ARROW - 2.0 - h
        target = (_x_at(points[b - 2], points[b - 1], cy + h / 2), cy, e)
        ends += [target, source] if one else [source]
    for x, y, e in ends:
        yield x + _GAP, y, e
        yield x - _GAP - w, y, e
    if not one:
        return
    # Beside the middle of the longest vertical run (long edges pass ranks on their bus).
    e = group[0]
    a, b = int(offsets[e]), int(offsets[e + 1])
    pts = points[a:b]
    if len(pts) >= 4:
        dy = np.where(pts[1:, 0] == pts[:-1, 0], pts[1:, 1] - pts[:-1, 1], 0.0)
        k = int(np.argmax(np.abs(dy)))
        if abs(dy[k]) > 3 * h:
            x, y = float(pts[k, 0]), float((pts[k, 1] + pts[k + 1, 1]) / 2 - h / 2)
            yield x + _GAP, y, e
            yield x - _GAP - w, y, e
