"""Shape arithmetic, folded: the Shape → Gather → Unsqueeze → Concat chains that only compute a Reshape's target (or
a Slice's bounds, an Expand's shape…) are drawn as a badge on the node they feed, not as boxes of their own.

A 3-layer MiniLM export has 144 such nodes among 354; they fan out from the inputs to every Reshape and bury the
network's data flow. A node is *shape arithmetic* when its op only does such work (:data:`FOLDABLE_OPS`), its results
are integers (or small floats on their way to an integer Cast or a Resize's scales), and every reader takes them as a
shape argument (:data:`SHAPE_ARGS`) or is shape arithmetic itself. Each folded node is attached to the first node
(in graph order) that its result reaches as a shape argument: that node carries the badge.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx

from app.core.model.display_graph import KIND_OP, DisplayGraph
from app.core.model.shapes import ShapeResult

# Inputs that take a shape, sizes, bounds, axes or a count: what shape arithmetic ends in.
SHAPE_ARGS: dict[str, frozenset[int]] = {
    "Reshape": frozenset({1}), "Resize": frozenset({1, 2, 3}), "Upsample": frozenset({1}), "Expand": frozenset({1}),
    "Tile": frozenset({1}), "Slice": frozenset({1, 2, 3, 4}), "ConstantOfShape": frozenset({0}),
    "Range": frozenset({0, 1, 2}), "TopK": frozenset({1}), "Pad": frozenset({1, 3}), "Squeeze": frozenset({1}),
    "Unsqueeze": frozenset({1}), "Split": frozenset({1}), "Trilu": frozenset({1}), "CenterCropPad": frozenset({1}),
    "OneHot": frozenset({1}), "ReduceSum": frozenset({1}), "ReduceMean": frozenset({1}), "ReduceMax": frozenset({1}),
    "ReduceMin": frozenset({1}), "ReduceProd": frozenset({1}), "ReduceL2": frozenset({1}),
}
FOLDABLE_OPS = frozenset({
    "Shape", "Size", "Gather", "Unsqueeze", "Squeeze", "Concat", "Cast", "Slice", "Reshape", "Mul", "Add", "Sub",
    "Div", "Floor", "Ceil", "Mod", "Neg", "Abs", "Min", "Max", "Equal", "Less", "Greater", "LessOrEqual",
    "GreaterOrEqual", "Not", "And", "Or", "Where", "Range", "ReduceProd", "ReduceMax", "ReduceMin", "ReduceSum",
    "Constant", "Identity", "ConstantOfShape", "Expand", "Transpose", "Sqrt", "Flatten", "NonZero", "Tile",
})
_INTEGER = frozenset({"int64", "int32", "int16", "int8", "uint8", "uint16", "uint32", "uint64", "bool"})
_SMALL = 64  # a float result this small (elements) may be shape arithmetic (a scale on its way to a Cast)


@dataclass
class ShapeFolds:
    """Which drawn nodes fold into which: `into[i]` is the flat display node that carries display node i's badge
    (-1: i is drawn), `count[c]` how many nodes fold into c."""

    into: np.ndarray
    count: dict[int, int]

    @property
    def folded(self) -> int:
        return int((self.into >= 0).sum())


def _foldable_result(node: onnx.NodeProto, shapes: ShapeResult | None) -> bool:
    """Its results are integers, or small floats (a scale), as far as the shapes tell."""
    if node.op_type in ("Shape", "Size"):
        return True
    for o in node.output:
        if not o:
            continue
        info = shapes.get(o) if shapes is not None else None
        if info is None or info.dtype is None:
            return False
        if info.dtype in _INTEGER:
            continue
        if info.shape is None:
            return False
        dims = [d for d in info.shape if isinstance(d, int)]
        if len(dims) != len(info.shape) or int(np.prod(dims, dtype=np.int64)) > _SMALL:
            return False
    return True


def shape_folds(dg: DisplayGraph, shapes: ShapeResult | None) -> ShapeFolds | None:
    """The shape arithmetic of a (flat) display graph and the node each folds into; None when there is none."""
    graph = dg.graph
    nodes = graph.node
    display_of = np.full(len(nodes), -1, dtype=np.int64)
    ops = np.nonzero(dg.kinds == KIND_OP)[0]
    display_of[dg.onnx_index[ops]] = ops
    outputs = {o.name for o in graph.output}
    # Candidates first (op and result type), then the readers of their results only: one pass over every input.
    candidates = [i for i, node in enumerate(nodes)
                  if node.op_type in FOLDABLE_OPS and node.domain in ("", "ai.onnx") and display_of[i] >= 0
                  and _foldable_result(node, shapes) and not any(o in outputs for o in node.output)]
    if not candidates:
        return None
    wanted = {o for i in candidates for o in nodes[i].output if o}
    readers: dict[str, list[tuple[int, int]]] = {}
    for i, node in enumerate(nodes):
        for j, name in enumerate(node.input):
            if name in wanted:
                readers.setdefault(name, []).append((i, j))
    folded: dict[int, int] = {}  # ONNX node -> the ONNX node whose badge shows it
    for i in reversed(candidates):  # readers come after their producers in a valid graph
        node = nodes[i]
        uses = [u for o in node.output if o for u in readers.get(o, [])]
        if not uses:
            continue
        target = None
        for r, j in uses:
            if r in folded:
                t = folded[r]
            elif j in SHAPE_ARGS.get(nodes[r].op_type, ()):
                t = r
            else:
                target = None
                break
            target = t if target is None else min(target, t)
        if target is not None:
            folded[i] = target
    if not folded:
        return None
    into = np.full(dg.node_count, -1, dtype=np.int64)
    count: dict[int, int] = {}
    for i, t in folded.items():
        d, c = int(display_of[i]), int(display_of[t])
        if d >= 0 and c >= 0:
            into[d] = c
            count[c] = count.get(c, 0) + 1
    return ShapeFolds(into, count)
