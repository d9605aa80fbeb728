"""FP16 / BF16 variants: the planned nodes compute in half precision, with Casts at the boundaries.

Which inputs and outputs of a node change type is read from the op's own schema: those sharing the first
output's type variable, when that variable admits the half type (Resize's float `scales`, for instance, stay
FP32). The rules that keep a planned node FP32 are in :mod:`app.core.precision.transforms.half_rules`, shared with the
plan table. Every float input of a half node that is not already half gets a Cast, whatever shape inference
knew of it; every half tensor read by an FP32 node, a graph output or a subgraph body is cast back. The
model's own Casts keep their target type, but a Cast to FP32 that only half nodes read casts to half instead.
If/Loop/Scan bodies are not converted: the report counts their nodes. Graph inputs and outputs keep their dtypes.
Float initializers used only by half nodes are converted in
place; overflow (> 65504) and flush-to-zero counts are reported per initializer.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from app.core.model import infer_shapes, iter_graphs, node_subgraphs
from app.core.precision.plan_keys import fixed_reason, node_keys
from app.core.precision.transforms.fold import fold_constants
from app.core.precision.transforms.half_rules import (
    BF16_OPSET,
    FOLLOW_DATA,
    HALF,
    KEEP_FP32_OPS,
    casts_to_half,
    graph_reasons,
    op_skip_reason,
    outer_names,
    tensor_readers,
    type_positions,
)

if TYPE_CHECKING:  # the plan is read through its methods; importing it would close a cycle
    from app.core.precision.plan import PrecisionPlan

__all__ = ["HALF", "KEEP_FP32_OPS", "HalfReport", "half_inputs", "half_skip_reason", "to_half"]


@dataclass
class HalfReport:
    precision: str
    half_nodes: list[str] = field(default_factory=list)
    kept_fp32: dict[str, str] = field(default_factory=dict)        # node key -> why (planned half, kept FP32)
    fixed: int = 0                                                  # planned half but integer/shape/Q-DQ: unchanged
    qdq_half: int = 0                                               # the model's Q/DQ nodes given FP16 data/scales
    casts_added: int = 0
    casts_retargeted: int = 0                                       # the model's Casts to FP32 now cast to half
    folded_constants: int = 0
    overflow: dict[str, int] = field(default_factory=dict)         # initializer -> values beyond the half range
    flushed: dict[str, int] = field(default_factory=dict)          # initializer -> non-zero values that became 0
    # If/Loop/Scan nodes (key -> nodes in their bodies, nested included) whose bodies stay FP32 as they are.
    control_flow: dict[str, int] = field(default_factory=dict)
    # Planned nodes kept FP32 only because the model's opset gives their op no kernel of this type (BF16 below
    # opset 22): app.core.precision.transforms.opset.raise_opset first would let them convert.
    opset_blocked: int = 0
    opset: int = 0                                                  # the model's (default-domain) opset

    @property
    def unchanged(self) -> str:
        """Why the variant computes nothing in half precision ("" when some node does)."""
        if self.half_nodes:
            return ""
        if not self.kept_fp32:
            return f"no node is planned {self.precision.upper()} (or every planned node is integer/shape work)"
        counts: dict[str, int] = {}
        for why in self.kept_fp32.values():
            counts[why] = counts.get(why, 0) + 1
        top = sorted(counts.items(), key=lambda kv: -kv[1])[:3]
        text = "; ".join(f"{why} ({n} node{'s' if n != 1 else ''})" for why, n in top)
        more = (f"; at opset {BF16_OPSET} {self.opset_blocked} of them would convert (raise the opset first)"
                if self.opset_blocked else "")
        return f"nothing is converted to {self.precision.upper()}: {text}{more}"

    @property
    def subgraph_nodes_untouched(self) -> int:
        return sum(self.control_flow.values())

    def to_json(self) -> dict:
        return {"precision": self.precision, "half_nodes": list(self.half_nodes), "kept_fp32": self.kept_fp32,
                "fixed": self.fixed, "qdq_half": self.qdq_half, "casts_added": self.casts_added,
                "casts_retargeted": self.casts_retargeted,
                "folded_constants": self.folded_constants,
                "overflow": self.overflow, "flushed": self.flushed, "control_flow": self.control_flow,
                "subgraph_nodes_untouched": self.subgraph_nodes_untouched, "opset": self.opset,
                "opset_blocked": self.opset_blocked, "unchanged": self.unchanged}


def _opset(model: onnx.ModelProto, domain: str) -> int:
    def canon(d: str) -> str:
        return "" if d in ("", "ai.onnx") else d

    for o in model.opset_import:
        if canon(o.domain or "") == canon(domain or ""):
            return int(o.version)
    return onnx.defs.onnx_opset_version()


def half_skip_reason(node: onnx.NodeProto, opset: int, precision: str) -> str | None:
    """Why :func:`to_half` keeps a node planned FP16/BF16 in FP32 by its op alone, or None when it converts it.

    (Nodes with no float output are fixed before this question arises: :func:`~app.core.precision.plan.fixed_reason`;
    nodes kept for their neighbours are found on the whole graph:
    :func:`~app.core.precision.transforms.half_rules.graph_reasons`.)
    """
    return op_skip_reason(node, opset, precision)


def half_inputs(node: onnx.NodeProto, opset: int, precision: str) -> list[int] | None:
    """Positions of the inputs :func:`to_half` gives the half type (weights there are stored in half precision);
    None when the op cannot run in half precision at this opset."""
    pos = type_positions(node.op_type, node.domain or "", len(node.input), len(node.output), opset, HALF[precision])
    return None if pos is None else list(pos[0])


def to_half(model: onnx.ModelProto, plan: PrecisionPlan, precision: str = "fp16", *, qdq_half: bool = True
            ) -> tuple[onnx.ModelProto, HalfReport]:
    """Apply the plan's FP16 (or BF16) nodes to a copy of the model; other precisions stay FP32. With `qdq_half`
    the model's own Q/DQ nodes follow their data into FP16 where the opset allows (not the Q/DQ of trtlab's INT8)."""
    half = HALF[precision]
    work, folded = fold_constants(model)
    report = HalfReport(precision, folded_constants=folded, opset=_opset(work, ""))
    shapes = infer_shapes(work)
    g = work.graph
    keys = node_keys(g)
    opset = {n.domain: _opset(work, n.domain) for n in g.node}

    def dtype(name: str) -> str | None:
        info = shapes.get(name)
        return info.dtype if info is not None else None

    by_graph = graph_reasons(g, dtype)
    inits = {t.name: t for t in g.initializer}
    graph_outputs = {o.name for o in g.output}
    graph_inputs = {i.name for i in g.input}

    # Which nodes go half, and which of their inputs and outputs change type.
    half_in: dict[int, list[int]] = {}
    half_tensors: set[str] = set()
    qdq_nodes: set[int] = set()
    for i, (key, node) in enumerate(zip(keys, g.node, strict=True)):
        body = sum(len(sub.node) for _, top in node_subgraphs(node) for sub in iter_graphs(top))
        if body:
            report.control_flow[key] = body
        if plan.planned(key, node.op_type) != precision:
            continue
        qdq = _qdq_half_positions(node, opset[node.domain], precision, dtype) if qdq_half else None
        if qdq is not None:  # Q/DQ follow their data into FP16 where the opset lets their scales be FP16
            half_in[i] = [j for j in qdq[0] if j < len(node.input) and node.input[j]]
            half_tensors |= {node.output[k] for k in qdq[1]}
            qdq_nodes.add(i)
            report.qdq_half += 1
            continue
        if fixed_reason(node, shapes) is not None:
            report.fixed += 1
            continue
        why = by_graph.get(i) or half_skip_reason(node, opset[node.domain], precision) or _params_overflow(
            node, inits, precision)
        outs = [o for o in node.output if o]
        if why is None and not all(dtype(o) == "float32" for o in outs):
            why = "outputs are not all float32"
        if why:
            report.kept_fp32[key] = why
            if why.startswith(f"{node.op_type} has no ") and opset[node.domain] < BF16_OPSET and (
                    node.domain or "") == "" and op_skip_reason(node, BF16_OPSET, precision) is None and all(
                    dtype(o) == "float32" for o in outs):
                report.opset_blocked += 1
            continue
        pos = type_positions(node.op_type, node.domain or "", len(node.input), len(node.output),
                             opset[node.domain], half)
        assert pos is not None, "op_skip_reason keeps an op with no half kernel"
        ins, out_pos = pos
        # The schema ties these inputs' type to the float32 output: each is float32 in the model as it is.
        half_in[i] = [j for j in ins if node.input[j]]
        half_tensors |= {node.output[k] for k in out_pos if node.output[k]}
        report.half_nodes.append(key)

    # Initializers read only by half nodes (in half positions) are converted in place; one a subgraph reads,
    # or a graph input can override, keeps its type.
    uses = tensor_readers(g)
    converted_inits: set[str] = set()
    for name, t in inits.items():
        if t.data_type != TensorProto.FLOAT or name in graph_outputs:
            continue
        if name in graph_inputs and work.ir_version >= 4:
            continue
        u = uses.get(name, [])
        if u and all(i in half_in and j in half_in[i] for i, j in u):
            _convert_initializer(t, half, report)
            converted_inits.add(name)
            if name in graph_inputs:  # before IR 4 every initializer is declared as an input too
                next(v for v in g.input if v.name == name).type.tensor_type.elem_type = half
    is_half = half_tensors | converted_inits
    if half != TensorProto.BFLOAT16 or opset.get("", report.opset) >= 13:  # Cast to bfloat16 exists from opset 13
        for i in casts_to_half(g, uses, lambda k, j: k in half_in and k not in qdq_nodes and j in half_in[k]):
            next(a for a in g.node[i].attribute if a.name == "to").i = half
            is_half.add(g.node[i].output[0])
            report.casts_retargeted += 1
            report.kept_fp32.pop(keys[i], None)
            report.half_nodes.append(keys[i])

    new_nodes: list[onnx.NodeProto] = []
    cast_cache: dict[tuple[str, int], str] = {}

    def cast(name: str, to: int) -> str:
        key = (name, to)
        if key not in cast_cache:
            out = _unique(f"{name}__to_{'fp32' if to == TensorProto.FLOAT else precision}", taken)
            new_nodes.append(helper.make_node("Cast", [name], [out], to=to, name=f"{out}__cast"))
            cast_cache[key] = out
            report.casts_added += 1
        return cast_cache[key]

    taken = {o for n in g.node for o in n.output} | graph_inputs | set(inits)
    # A half graph output is computed under another name; the original name is its FP32 copy, which every
    # FP32 reader (and the graph's output) keeps reading.
    inner: dict[str, str] = {}
    for name in half_tensors & graph_outputs:
        inner[name] = _unique(f"{name}__{precision}", taken)
    for i, node in enumerate(g.node):
        if i in half_in:
            for j, name in enumerate(node.input):
                if j not in half_in[i]:  # another type variable (Pow's exponent): it reads what it read before
                    if name in is_half and name not in inner:
                        node.input[j] = cast(name, TensorProto.FLOAT)
                elif name in inner:
                    node.input[j] = inner[name]
                elif name not in is_half:
                    node.input[j] = cast(name, half)
            new_nodes.append(node)
            for k, o in enumerate(node.output):
                if o in inner:
                    node.output[k] = inner[o]
                    new_nodes.append(helper.make_node("Cast", [inner[o]], [o], to=TensorProto.FLOAT,
                                                      name=f"{o}__cast_out"))
                    report.casts_added += 1
            continue
        for j, name in enumerate(node.input):
            if name in is_half and name not in inner and not _reads_any_type(node, j):
                node.input[j] = cast(name, TensorProto.FLOAT)
        # A body reading a half tensor of this scope reads its FP32 copy instead.
        renames = {name: cast(name, TensorProto.FLOAT)
                   for name in sorted(outer_names(node)) if name in is_half and name not in inner}
        if renames:
            for _, sub in node_subgraphs(node):
                _rename_free(sub, renames)
        new_nodes.append(node)
    del g.node[:]
    g.node.extend(new_nodes)
    known = _known_shapes(g)
    del g.value_info[:]  # stale types; inference recomputes them
    work = onnx.shape_inference.infer_shapes(work, strict_mode=False)
    _restore_shapes(work.graph, known, {n.output[0]: n.input[0] for n in new_nodes if n.op_type == "Cast"}, inner)
    return work, report


def _known_shapes(g: onnx.GraphProto) -> dict[str, onnx.TensorShapeProto]:
    """The shapes the model declares for its tensors (value_info, inputs, outputs), named dimensions and all."""
    return {v.name: v.type.tensor_type.shape for v in [*g.value_info, *g.input, *g.output]
            if v.type.HasField("tensor_type") and v.type.tensor_type.HasField("shape")}


def _restore_shapes(g: onnx.GraphProto, known: dict[str, onnx.TensorShapeProto], cast_source: dict[str, str],
                    inner: dict[str, str]) -> None:
    """Give the re-inferred value_info the shapes the model declared (a Cast's output its input's; a half output
    computed under another name the output's). ONNX's inference invents a new `unk__N` for each dimension it cannot
    name, so two tensors of one shape look different: ONNX Runtime then cannot prove an Add's inputs equal and skips
    its fusions (minilm-int8 lost 6 of 12 SkipLayerNormalization fusions that way, 2-4 % of its time on an H200)."""
    renamed = {v: k for k, v in inner.items()}
    for v in g.value_info:
        name = v.name
        while name not in known and (name in cast_source or name in renamed):
            name = cast_source.get(name) or renamed[name]
        shape = known.get(name)
        tt = v.type.tensor_type
        if shape is None or not tt.HasField("shape") or len(tt.shape.dim) != len(shape.dim):
            continue
        for mine, declared in zip(tt.shape.dim, shape.dim, strict=True):
            # A name of the model's own ('batch'); not one an earlier inference invented (unk__N): this inference
            # numbers its own unk__N afresh, and one name for two sizes makes ONNX Runtime fail at run time.
            if declared.dim_param and not _INVENTED.match(declared.dim_param) and not mine.HasField("dim_value"):
                mine.dim_param = declared.dim_param
            elif declared.HasField("dim_value") and not mine.HasField("dim_value"):
                mine.dim_value = declared.dim_value


_INVENTED = re.compile(r"^unk__\d+$")


QDQ_HALF_OPSET = 19  # QuantizeLinear/DequantizeLinear take FP16 data and scales from here


def _qdq_half_positions(node: onnx.NodeProto, opset: int, precision: str, dtype: Callable[[str], str | None]
                        ) -> tuple[list[int], list[int]] | None:
    """(inputs, outputs) of a QuantizeLinear/DequantizeLinear that turn FP16 in an FP16 variant, or None: from opset
    19 the scale (and Q's data, DQ's output) may be FP16, which spares a Cast on each side of every Q/DQ pair (as
    ModelOpt AutoCast does). BF16 is left as it is: TensorRT takes BF16 scales only for some quantization types."""
    if node.op_type not in ("QuantizeLinear", "DequantizeLinear") or (node.domain or "") not in ("", "ai.onnx"):
        return None
    if precision != "fp16" or opset < QDQ_HALF_OPSET:
        return None
    if node.op_type == "DequantizeLinear":
        return ([1], [0]) if node.output and dtype(node.output[0]) == "float32" else None
    return ([0, 1], []) if node.input and dtype(node.input[0]) == "float32" else None


def _reads_any_type(node: onnx.NodeProto, j: int) -> bool:
    """Whether input `j` of `node` takes a tensor of any type and reads only its shape (Shape, Size): a half tensor
    goes in as it is. A Cast back to FP32 there would copy the whole activation for nothing: on g2p's BERT, 16 such
    Casts before Shape nodes made its FP16 variant no faster than FP32 on an H200 (the peers' were 1.8× faster)."""
    return (node.domain or "") == "" and node.op_type in ("Shape", "Size") and j == 0


def _unique(name: str, taken: set[str]) -> str:
    out, k = name, 1
    while out in taken:
        k += 1
        out = f"{name}_{k}"
    taken.add(out)
    return out


def _rename_free(graph: onnx.GraphProto, renames: dict[str, str]) -> None:
    """Point a body's reads of outer-scope tensors at new names, where the body does not define them itself."""
    local = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    for node in graph.node:
        for j, name in enumerate(node.input):
            if name in renames and name not in local:
                node.input[j] = renames[name]
        for _, sub in node_subgraphs(node):
            _rename_free(sub, {k: v for k, v in renames.items() if k not in local})
        local |= {o for o in node.output if o}
    for o in graph.output:  # body outputs are matched by position: renaming one changes nothing outside
        if o.name in renames and o.name not in local:
            o.name = renames[o.name]


def _params_overflow(node: onnx.NodeProto, inits: dict[str, TensorProto], precision: str) -> str | None:
    """Why a node whose float parameters follow its data (BatchNormalization) stays FP32 as a whole: a parameter
    beyond FP16's range (a variance of 1e8 in PaddleOCR's detector) would become infinite."""
    if precision != "fp16":
        return None
    for j in FOLLOW_DATA.get(node.op_type, ()):
        t = inits.get(node.input[j]) if j < len(node.input) else None
        if t is None or t.data_type != TensorProto.FLOAT:
            continue
        arr = numpy_helper.to_array(t)
        big = float(np.abs(arr[np.isfinite(arr)]).max(initial=0.0))
        if big > 65504.0:
            return (f"{node.op_type}'s parameter {node.input[j]!r} reaches {big:.3g}, beyond FP16's range: the node "
                    "stays FP32 as a whole")
    return None


def _convert_initializer(t: TensorProto, half: int, report: HalfReport) -> None:
    arr = numpy_helper.to_array(t).astype(np.float32)
    finite = np.isfinite(arr)
    if half == TensorProto.FLOAT16:
        over = int((np.abs(arr[finite]) > 65504.0).sum())
        new = np.clip(arr, -65504.0, 65504.0).astype(np.float16)
        flushed = int(((arr != 0) & (new == 0) & finite).sum())
        out = numpy_helper.from_array(new, t.name)
    else:
        import ml_dtypes

        new = arr.astype(ml_dtypes.bfloat16)
        over = int((~np.isfinite(new.astype(np.float32)) & finite).sum())
        flushed = int(((arr != 0) & (new.astype(np.float32) == 0) & finite).sum())
        out = numpy_helper.from_array(new, t.name)
    if over:
        report.overflow[t.name] = over
    if flushed:
        report.flushed[t.name] = flushed
    t.CopyFrom(out)
