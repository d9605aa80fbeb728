"""A computed diff of two ONNX models: which nodes are the same, changed, added or removed, and how.

Nodes are matched by their key (the node's name, or `Op:first-output` for unnamed nodes), then — for what is left,
in graph order — by structure: the same op reading the outputs of nodes already matched, with weights of the same
shapes (an exporter that renamed every node still lines up), and last the same op reading the same matched
producers whatever its weights (an optimizer's Conv with a BatchNormalization folded in). A matched pair is
`changed` when its op type, attributes, inputs (by what produces them) or weights differ: dtype, shape, or values
(max |Δ|, computed in float64). Inputs, outputs and opsets are compared too. A model against trtlab's FP16 variant
of it shows the Casts added and the converted weights, nothing else; two exports of one network show where they
start to differ.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import numpy_helper

from app.core.model.onnx_walk import dtype_name, graph_constants, node_keys
from app.core.results import ChangedNode, DiffCounts, DiffNode, DiffResult

MAX_VALUES = 50_000_000  # weights larger than this are compared by dtype and shape only
_INSERTED = frozenset({"Cast", "QuantizeLinear", "DequantizeLinear"})  # what precision transforms put in between


@dataclass
class NodeDiff:
    status: str                      # same | changed | added | removed | folded (a Constant node now an initializer)
    a: str | None                    # node key in A
    b: str | None                    # node key in B
    op: str
    changes: list[str] = field(default_factory=list)
    matched_by: str = ""             # name | structure

    def result(self) -> DiffNode:
        return DiffNode(status=self.status, a=self.a, b=self.b, op=self.op, changes=tuple(self.changes),
                        matched_by=self.matched_by)


@dataclass
class ModelDiff:
    nodes: list[NodeDiff]
    inputs: list[str]
    outputs: list[str]
    opsets: list[str]

    def counts(self) -> DiffCounts:
        return DiffCounts.from_json(Counter(n.status for n in self.nodes))

    @property
    def identical(self) -> bool:
        return not (self.inputs or self.outputs or self.opsets) and all(n.status == "same" for n in self.nodes)

    def result(self, *, all_nodes: bool = False) -> DiffResult:
        """The diff as `trtlab diff` writes it (without the files, which the caller names): the nodes that are the
        same, and the folded Constants, only with `all_nodes`."""
        counts = self.counts()
        return DiffResult(
            summary=counts, identical=self.identical, inputs=tuple(self.inputs), outputs=tuple(self.outputs),
            opsets=tuple(self.opsets), matched=counts.same + counts.changed + counts.folded, same=counts.same,
            changed=tuple(ChangedNode(a=n.a, b=n.b, what=tuple(n.changes)) for n in self.nodes
                          if n.status == "changed"),
            added=tuple(n.b for n in self.nodes if n.status == "added" and n.b is not None),
            removed=tuple(n.a for n in self.nodes if n.status == "removed" and n.a is not None),
            nodes=tuple(n.result() for n in self.nodes if all_nodes or n.status not in ("same", "folded")))


def _io(kind: str, a: Iterable[onnx.ValueInfoProto], b: Iterable[onnx.ValueInfoProto]) -> list[str]:
    def desc(v: onnx.ValueInfoProto) -> str:
        t = v.type.tensor_type
        dims = [d.dim_param or (str(d.dim_value) if d.HasField("dim_value") else "?") for d in t.shape.dim]
        return f"{dtype_name(t.elem_type)}[{','.join(dims)}]"
    da, db = {v.name: desc(v) for v in a}, {v.name: desc(v) for v in b}
    out = [f"{kind} '{n}' removed ({da[n]})" for n in da if n not in db]
    out += [f"{kind} '{n}' added ({db[n]})" for n in db if n not in da]
    out += [f"{kind} '{n}': {da[n]} → {db[n]}" for n in da if n in db and da[n] != db[n]]
    return out


def _weight_change(name: str, ta: onnx.TensorProto, tb: onnx.TensorProto, base_dir_a: str | None,
                   base_dir_b: str | None) -> str | None:
    sa, sb = f"{dtype_name(ta.data_type)}{list(ta.dims)}", f"{dtype_name(tb.data_type)}{list(tb.dims)}"
    if list(ta.dims) != list(tb.dims):
        return f"weight '{name}': {sa} → {sb}"
    if int(np.prod(ta.dims, dtype=np.int64)) > MAX_VALUES:
        return None if ta.data_type == tb.data_type else f"weight '{name}': {sa} → {sb}"
    try:
        va = numpy_helper.to_array(ta, base_dir_a or "").astype(np.float64)
        vb = numpy_helper.to_array(tb, base_dir_b or "").astype(np.float64)
    except (ValueError, TypeError, OSError):
        return None if ta.data_type == tb.data_type else f"weight '{name}': {sa} → {sb}"
    with np.errstate(invalid="ignore"):
        delta = float(np.nanmax(np.abs(va - vb))) if va.size else 0.0
    if ta.data_type != tb.data_type:
        return f"weight '{name}': {sa} → {sb} (max |Δ| {delta:.3g})"
    return f"weight '{name}' values changed (max |Δ| {delta:.3g})" if delta > 0 else None


def _attrs(node: onnx.NodeProto) -> dict[str, str]:
    out = {}
    for a in node.attribute:
        if a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
            out[a.name] = f"<{len(a.g.node) if a.type == onnx.AttributeProto.GRAPH else len(a.graphs)} subgraph>"
        else:
            out[a.name] = repr(onnx.helper.get_attribute_value(a))[:120]
    return out


def diff_models(a: onnx.ModelProto, b: onnx.ModelProto, *, base_dir_a: str | None = None,
                base_dir_b: str | None = None) -> ModelDiff:
    """Compare the top-level graphs of two models (see the module's doc)."""
    ga, gb = a.graph, b.graph
    ka, kb = node_keys(ga), node_keys(gb)
    na, nb = dict(zip(ka, ga.node, strict=True)), dict(zip(kb, gb.node, strict=True))
    pa = {o: k for k, n in na.items() for o in n.output if o}
    pb = {o: k for k, n in nb.items() for o in n.output if o}
    wa, wb = graph_constants(ga), graph_constants(gb)
    pairs: dict[str, str] = {}   # B key -> A key
    how: dict[str, str] = {}
    for k in kb:
        if k in na and na[k].op_type == nb[k].op_type:
            pairs[k], how[k] = k, "name"
    used = set(pairs.values())

    def shape_of(name: str, w: dict[str, onnx.TensorProto]) -> tuple[int, ...] | None:
        return tuple(w[name].dims) if name in w else None

    # Structure: the same op, reading the outputs of already matched producers (or the same graph inputs), with
    # weights of the same shapes. One pass in graph order; each A node is used once.
    free_a: dict[str, list[str]] = {}
    for k, n in na.items():
        if k not in used:
            free_a.setdefault(n.op_type, []).append(k)
    for k in kb:
        if k in pairs:
            continue
        node = nb[k]
        want = [("w", shape_of(x, wb)) if x in wb else ("p", pairs.get(pb[x], "?")) if x in pb else ("i", x)
                for x in node.input]
        for cand in free_a.get(node.op_type, []):
            c = na[cand]
            have = [("w", shape_of(x, wa)) if x in wa else ("p", pa[x]) if x in pa else ("i", x) for x in c.input]
            if have == want:
                pairs[k], how[k] = cand, "structure"
                free_a[node.op_type].remove(cand)
                break
    # Looser, for what is left: the same op reading the same matched producers (its data), whatever its weights — an
    # optimizer that folded a BatchNormalization into the Conv before it gives that Conv new weights and a bias.
    for k in kb:
        if k in pairs:
            continue
        node = nb[k]
        reads = [pairs.get(pb[x], "?") if x in pb else x for x in node.input if x and x not in wb]
        if not reads or "?" in reads:
            continue
        for cand in free_a.get(node.op_type, []):
            c = na[cand]
            if [pa[x] if x in pa else x for x in c.input if x and x not in wa] == reads:
                pairs[k], how[k] = cand, "structure"
                free_a[node.op_type].remove(cand)
                break
    matched_a = set(pairs.values())
    out: list[NodeDiff] = []
    for k in kb:
        if k not in pairs:
            out.append(NodeDiff("added", None, k, nb[k].op_type))
            continue
        x, y = na[pairs[k]], nb[k]
        changes = []
        if x.domain != y.domain:
            changes.append(f"domain '{x.domain}' → '{y.domain}'")
        ax, ay = _attrs(x), _attrs(y)
        changes += [f"attribute '{n}': {ax.get(n, '—')} → {ay.get(n, '—')}" for n in sorted(ax.keys() | ay.keys())
                    if ax.get(n) != ay.get(n)]
        if len(x.input) != len(y.input):
            changes.append(f"{len(x.input)} inputs → {len(y.input)}")
        for i, (ix, iy) in enumerate(zip(x.input, y.input, strict=False)):
            through = []  # Casts and Q/DQ only B has, between this node and what it reads
            while iy in pb and pb[iy] not in pairs and nb[pb[iy]].op_type in _INSERTED and nb[pb[iy]].input:
                through.append(nb[pb[iy]].op_type)
                iy = nb[pb[iy]].input[0]
            if through:
                changes.append(f"input {i} through added {' ← '.join(through)}")
            if ix in wa and iy in wb:
                change = _weight_change(iy or ix, wa[ix], wb[iy], base_dir_a, base_dir_b)
                if change:
                    changes.append(change)
            elif ix in pa and iy in pb:
                if pairs.get(pb[iy]) != pa[ix]:
                    changes.append(f"input {i} now comes from '{pb[iy]}' ({nb[pb[iy]].op_type}), was '{pa[ix]}'")
            elif ix in pa and iy in wb:
                changes.append(f"input {i} ('{iy}') is a constant now, was computed by '{pa[ix]}' "
                               f"({na[pa[ix]].op_type})")
            elif ix in wa and iy in pb:
                changes.append(f"input {i} ('{iy}') is computed by '{pb[iy]}' ({nb[pb[iy]].op_type}) now, "
                               "was a constant")
            elif (ix in pa) != (iy in pb) or (ix in wa) != (iy in wb) or (ix not in pa and ix not in wa and ix != iy):
                changes.append(f"input {i}: '{ix}' → '{iy}'")
        out.append(NodeDiff("changed" if changes else "same", pairs[k], k, y.op_type, changes, how[k]))
    for k in ka:
        if k in matched_a:
            continue
        node = na[k]
        if node.op_type == "Constant" and node.output and node.output[0] in wb and node.output[0] not in pb:
            # the same value, stored as an initializer in B (trtlab's transforms fold Constant nodes so)
            change = _weight_change(node.output[0], wa[node.output[0]], wb[node.output[0]], base_dir_a, base_dir_b) \
                if node.output[0] in wa else None
            out.append(NodeDiff("folded", k, None, "Constant", [change] if change else [], "initializer"))
        else:
            out.append(NodeDiff("removed", k, None, node.op_type))
    opsets_a = {o.domain or "ai.onnx": o.version for o in a.opset_import}
    opsets_b = {o.domain or "ai.onnx": o.version for o in b.opset_import}
    opsets = [f"opset {d}: {opsets_a.get(d, '—')} → {opsets_b.get(d, '—')}"
              for d in sorted(opsets_a.keys() | opsets_b.keys()) if opsets_a.get(d) != opsets_b.get(d)]
    inputs_a = [v for v in ga.input if v.name not in wa]
    inputs_b = [v for v in gb.input if v.name not in wb]
    return ModelDiff(out, _io("input", inputs_a, inputs_b), _io("output", ga.output, gb.output), opsets)
