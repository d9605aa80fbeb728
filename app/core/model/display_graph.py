"""The drawable graph: one box per op (plus graph inputs/outputs), one edge per tensor use.

Constant nodes that only feed ops are folded into those ops as weights, as initializers are:
PaddleOCR exports keep every weight in a Constant node, and drawing them doubles the graph.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import onnx

from app.core.model.onnx_walk import node_subgraphs
from app.core.model.ops import INPUT, OUTPUT, op_category
from app.core.model.shapes import ShapeResult
from app.core.model.tensors import graph_inputs

KIND_OP, KIND_INPUT, KIND_OUTPUT = 0, 1, 2
NODE_HEIGHT = 40.0
_CHAR_W_TITLE, _CHAR_W_NAME = 7.6, 6.0
_MIN_W, _MAX_W = 64.0, 240.0
_NAME_CHARS = 32  # longer names are elided in the box, shown whole in the properties panel


@dataclass
class DisplayGraph:
    """Arrays for layout and drawing plus the maps back to the ONNX graph."""

    graph: onnx.GraphProto
    node_count: int
    kinds: np.ndarray           # int8 (N,): KIND_OP / KIND_INPUT / KIND_OUTPUT
    onnx_index: np.ndarray      # int32 (N,): index in graph.node, -1 for inputs/outputs
    titles: list[str]           # op type, or "input"/"output"
    names: list[str]            # node name (or tensor name for inputs/outputs)
    categories: list[str]
    widths: np.ndarray          # float64 (N,)
    heights: np.ndarray         # float64 (N,)
    edges: np.ndarray           # int32 (E,2) (src, dst)
    edge_tensors: list[str]     # tensor carried by each edge
    weights: Mapping[int, list[str]] = field(default_factory=dict)   # display node -> weight tensors
    folded_constants: dict[str, int] = field(default_factory=dict)  # tensor -> graph.node index
    producer: Mapping[str, int] = field(default_factory=dict)        # tensor -> display node
    consumers: Mapping[str, list[int]] = field(default_factory=dict)  # tensor -> display nodes
    edge_labels: list[str] = field(default_factory=list)
    subgraphs: Mapping[int, list[tuple[str, onnx.GraphProto]]] = field(default_factory=dict)
    # Drawn by groups (app.core.model.grouping): a group box's ONNX nodes, its group id, each flat display node's
    # visible stand-in, each ONNX node's, and each expanded group drawn as a box: (name, depth, enclosing group).
    members: dict[int, np.ndarray] = field(default_factory=dict)
    group_of: dict[int, int] = field(default_factory=dict)
    shown_as: np.ndarray | None = None
    flat_of: np.ndarray | None = None       # each drawn node's flat display node (-1 for a group box)
    # drawn node -> (shape-arithmetic nodes that feed it, whether they are shown): its badge folds or unfolds them
    fold_badges: dict[int, tuple[int, bool]] = field(default_factory=dict)
    onnx_shown: np.ndarray | None = None
    frame_meta: dict[int, tuple[str, int, int]] = field(default_factory=dict)  # group -> (name, depth, parent group)

    def node_of_onnx(self, index: int) -> int | None:
        """The drawn node of ONNX node `index`: its own box, or the group box it is folded into."""
        if self.onnx_shown is not None:
            v = int(self.onnx_shown[index]) if 0 <= index < len(self.onnx_shown) else -1
            return v if v >= 0 else None
        hits = np.nonzero(self.onnx_index == index)[0]
        return int(hits[0]) if len(hits) else None

    def onnx_nodes(self, node: int) -> list[int]:
        """The ONNX nodes a drawn node stands for: its own, or a group box's members ([] for inputs/outputs)."""
        idx = int(self.onnx_index[node])
        if idx >= 0:
            return [idx]
        inside = self.members.get(node)
        return inside.tolist() if inside is not None else []

    def label_edges(self, shapes: ShapeResult | None) -> None:
        """Edge labels from inferred shapes ('1×3×224×224'); blank where unknown."""
        labels = []
        for t in self.edge_tensors:
            info = shapes.get(t) if shapes is not None else None
            labels.append(info.shape_text() if info is not None and info.shape is not None else "")
        self.edge_labels = labels


def _box_width(title: str, name: str) -> float:
    w = max(len(title) * _CHAR_W_TITLE, min(len(name), _NAME_CHARS) * _CHAR_W_NAME) + 20.0
    return float(min(max(w, _MIN_W), _MAX_W))


def _box_widths(titles: list[str], names: list[str]) -> np.ndarray:
    """:func:`_box_width` of every box at once."""
    t = np.fromiter(map(len, titles), dtype=np.float64, count=len(titles)) * _CHAR_W_TITLE
    n = np.minimum(np.fromiter(map(len, names), dtype=np.float64, count=len(names)), _NAME_CHARS) * _CHAR_W_NAME
    return np.clip(np.maximum(t, n) + 20.0, _MIN_W, _MAX_W)


_GRAPH_ATTR_OPS = frozenset({"If", "Loop", "Scan", "SequenceMap"})  # the standard ops with subgraph attributes


def build_display_graph(graph: onnx.GraphProto, shapes: ShapeResult | None = None) -> DisplayGraph:
    """Turn one ONNX graph (top level or a subgraph) into drawable arrays."""
    nodes = graph.node
    # One pass over the protobuf (each field read there costs): the rest works on Python lists.
    table = [(n.op_type, n.domain, n.name, list(n.input), list(n.output)) for n in nodes]
    inits = {t.name for t in graph.initializer} | {s.values.name for s in graph.sparse_initializer}
    output_names = {o.name for o in graph.output}
    folded: dict[str, int] = {}
    if any(row[0] == "Constant" for row in table):
        use_count: dict[str, int] = {}
        for row in table:
            for name in row[3]:
                if name:
                    use_count[name] = use_count.get(name, 0) + 1
        for i, (op, domain, _, _, outs) in enumerate(table):
            if (op == "Constant" and domain in ("", "ai.onnx") and len(outs) == 1
                    and outs[0] not in output_names and use_count.get(outs[0], 0) > 0):
                folded[outs[0]] = i

    kinds: list[int] = []
    onnx_index: list[int] = []
    titles: list[str] = []
    names: list[str] = []
    cats: list[str] = []
    producer: dict[str, int] = {}

    def add(kind: int, idx: int, title: str, name: str, cat: str) -> int:
        kinds.append(kind)
        onnx_index.append(idx)
        titles.append(title)
        names.append(name)
        cats.append(cat)
        return len(kinds) - 1

    for vi in graph_inputs(graph):
        producer[vi.name] = add(KIND_INPUT, -1, "input", vi.name, INPUT)
    subgraphs: dict[int, list[tuple[str, onnx.GraphProto]]] = {}
    category: dict[tuple[str, str], str] = {}
    standard = ("", "ai.onnx")
    op_rows: list[int] = []  # the ONNX node of each op box, in order
    d = len(kinds)
    for i, (op, domain, name, _, outs) in enumerate(table):
        if op == "Constant" and outs and outs[0] in folded:
            continue
        cat = category.get((op, domain))
        if cat is None:
            cat = category[(op, domain)] = op_category(op, domain)
        op_rows.append(i)
        titles.append(op)
        names.append(name or (outs[0] if outs else ""))
        cats.append(cat)
        for o in outs:
            if o:
                producer[o] = d
        if op in _GRAPH_ATTR_OPS or domain not in standard:
            subs = list(node_subgraphs(nodes[i]))
            if subs:
                subgraphs[d] = subs
        d += 1
    first_op = len(kinds)
    kinds.extend([KIND_OP] * len(op_rows))
    onnx_index.extend(op_rows)

    src: list[int] = []
    dst: list[int] = []
    edge_tensors: list[str] = []
    consumers: dict[str, list[int]] = {}
    weights: dict[int, list[str]] = {}
    # Names that a subgraph reads from its enclosing scope get an input box of their own (at their first reader,
    # after every op box).
    for d, i in enumerate(op_rows, first_op):
        for name in table[i][3]:
            if not name:
                continue
            readers = consumers.get(name)
            if readers is None:
                consumers[name] = [d]
            else:
                readers.append(d)
            if name in inits or name in folded:
                weights.setdefault(d, []).append(name)
                continue
            p = producer.get(name)
            if p is None:
                p = producer[name] = add(KIND_INPUT, -1, "outer", name, INPUT)
            if p != d:
                src.append(p)
                dst.append(d)
                edge_tensors.append(name)
    for o in graph.output:
        d = add(KIND_OUTPUT, -1, "output", o.name, OUTPUT)
        p = producer.get(o.name)
        if p is not None:
            src.append(p)
            dst.append(d)
            edge_tensors.append(o.name)
            consumers.setdefault(o.name, []).append(d)

    widths = _box_widths(titles, names)
    dg = DisplayGraph(
        graph=graph, node_count=len(kinds), kinds=np.array(kinds, dtype=np.int8),
        onnx_index=np.array(onnx_index, dtype=np.int32), titles=titles, names=names, categories=cats,
        widths=widths, heights=np.full(len(kinds), NODE_HEIGHT),
        edges=np.array([src, dst], dtype=np.int32).T.reshape(-1, 2), edge_tensors=edge_tensors,
        weights=weights, folded_constants=folded, producer=producer, consumers=consumers,
        subgraphs=subgraphs)
    dg.label_edges(shapes)
    return dg
