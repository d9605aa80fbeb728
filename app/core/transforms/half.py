"""FP16 / BF16 variants: the planned nodes compute in half precision, with Casts at the boundaries.

Which inputs of a node change type is read from the op's own schema: an input is converted only when it
shares the output's type variable and that variable admits the half type (Resize's float `scales`, for
instance, stay FP32). A node whose schema does not admit the half type at the model's opset stays FP32.
Graph inputs and outputs keep their dtypes. Float initializers used only by half nodes are converted in
place; overflow (> 65504) and flush-to-zero counts are reported per initializer.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from app.core.precision import PrecisionPlan, fixed_reason, node_keys
from app.core.shapes import infer_shapes
from app.core.transforms.fold import fold_constants

HALF = {"fp16": TensorProto.FLOAT16, "bf16": TensorProto.BFLOAT16}
_HALF_NAME = {TensorProto.FLOAT16: "tensor(float16)", TensorProto.BFLOAT16: "tensor(bfloat16)"}
# Ops whose half-precision results are known to go wrong (accumulations, ranges, random generators).
KEEP_FP32_OPS = frozenset({"Range", "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                           "Multinomial", "CumSum", "NonMaxSuppression", "RoiAlign", "Resize", "Upsample"})


@dataclass
class HalfReport:
    precision: str
    half_nodes: list[str] = field(default_factory=list)
    kept_fp32: dict[str, str] = field(default_factory=dict)        # node key -> why (planned half, kept FP32)
    fixed: int = 0                                                  # planned half but integer/shape/Q-DQ: unchanged
    casts_added: int = 0
    folded_constants: int = 0
    overflow: dict[str, int] = field(default_factory=dict)         # initializer -> values beyond the half range
    flushed: dict[str, int] = field(default_factory=dict)          # initializer -> non-zero values that became 0

    def to_json(self) -> dict:
        return {"precision": self.precision, "half_nodes": list(self.half_nodes), "kept_fp32": self.kept_fp32,
                "fixed": self.fixed, "casts_added": self.casts_added, "folded_constants": self.folded_constants,
                "overflow": self.overflow, "flushed": self.flushed}


def _opset(model: onnx.ModelProto, domain: str) -> int:
    for o in model.opset_import:
        if (o.domain or "") == (domain or ""):
            return int(o.version)
    return onnx.defs.onnx_opset_version()


def _convertible_inputs(node: onnx.NodeProto, opset: int, half: int) -> list[int] | None:
    """Indices of inputs that take the half type with the outputs; None if the op cannot run in half."""
    idx = _convertible_positions(node.op_type, node.domain or "", len(node.input), opset, half)
    return None if idx is None else list(idx)


@functools.lru_cache(maxsize=4096)
def _convertible_positions(op_type: str, domain: str, n_inputs: int, opset: int, half: int) -> tuple[int, ...] | None:
    # A pure function of the op's schema: cached, since a model repeats a few op types many times.
    try:
        schema = onnx.defs.get_schema(op_type, opset, domain)
    except onnx.defs.SchemaError:
        return None
    if not schema.outputs:
        return None
    out_var = schema.outputs[0].type_str
    allowed = {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}
    if out_var not in allowed or _HALF_NAME[half] not in allowed[out_var]:
        return None
    idx = []
    formals = list(schema.inputs)
    for i in range(n_inputs):
        formal = formals[min(i, len(formals) - 1)] if formals else None
        if formal is not None and formal.type_str == out_var:
            idx.append(i)
    return tuple(idx)


def half_skip_reason(node: onnx.NodeProto, opset: int, precision: str) -> str | None:
    """Why :func:`to_half` keeps a node planned FP16/BF16 in FP32 by its op alone, or None when it converts it.

    (Nodes with no float output are fixed before this question arises: :func:`~app.core.precision.fixed_reason`.)
    """
    if node.op_type in KEEP_FP32_OPS:
        return f"{node.op_type} is kept in FP32 (known to lose accuracy or break in half precision)"
    idx = half_inputs(node, opset, precision)
    if idx is None:
        return f"{node.op_type} has no {precision} kernel at opset {opset}"
    if not idx and node.op_type != "Cast":
        # ConstantOfShape, EyeLike, If…: casting inputs cannot change the output's type; left FP32, its half
        # readers get a Cast.
        return f"{node.op_type} takes its output type from an attribute or a subgraph, not from its inputs"
    return None


def half_inputs(node: onnx.NodeProto, opset: int, precision: str) -> list[int] | None:
    """Positions of the inputs :func:`to_half` gives the half type (weights there are stored in half precision);
    None when the op cannot run in half precision at this opset."""
    return _convertible_inputs(node, opset, HALF[precision])


def to_half(model: onnx.ModelProto, plan: PrecisionPlan, precision: str = "fp16") -> tuple[onnx.ModelProto, HalfReport]:
    """Apply the plan's FP16 (or BF16) nodes to a copy of the model; other precisions stay FP32."""
    half = HALF[precision]
    work, folded = fold_constants(model)
    report = HalfReport(precision, folded_constants=folded)
    shapes = infer_shapes(work)
    g = work.graph
    keys = node_keys(g)
    opset = {n.domain: _opset(work, n.domain) for n in g.node}
    is_float32 = {name for name, info in shapes.tensors.items() if info.dtype == "float32"}
    inits = {t.name: t for t in g.initializer}
    graph_outputs = {o.name for o in g.output}

    # Which nodes go half, and which of their inputs change type.
    half_inputs: dict[int, list[int]] = {}
    for i, (key, node) in enumerate(zip(keys, g.node, strict=True)):
        if plan.planned(key, node.op_type) != precision:
            continue
        if fixed_reason(node, shapes) is not None:
            report.fixed += 1
            continue
        why = half_skip_reason(node, opset[node.domain], precision)
        idx = None if why else _convertible_inputs(node, opset[node.domain], half)
        outs = [o for o in node.output if o]
        if why is None and not all(o in is_float32 for o in outs):
            why = "outputs are not all float32"
        if why:
            report.kept_fp32[key] = why
            continue
        half_inputs[i] = [j for j in idx if node.input[j] and node.input[j] in is_float32]
        report.half_nodes.append(key)

    half_tensors = {o for i in half_inputs for o in g.node[i].output if o}
    # Initializers read only by half nodes (in half positions) are converted in place.
    uses: dict[str, list[tuple[int, int]]] = {}
    for i, node in enumerate(g.node):
        for j, name in enumerate(node.input):
            uses.setdefault(name, []).append((i, j))
    converted_inits: set[str] = set()
    for name, t in inits.items():
        if t.data_type != TensorProto.FLOAT or name in graph_outputs:
            continue
        u = uses.get(name, [])
        if u and all(i in half_inputs and j in half_inputs[i] for i, j in u):
            _convert_initializer(t, half, report)
            converted_inits.add(name)

    new_nodes: list[onnx.NodeProto] = []
    cast_cache: dict[tuple[str, int], str] = {}

    def cast(name: str, to: int) -> str:
        key = (name, to)
        if key not in cast_cache:
            out = f"{name}__to_{'fp32' if to == TensorProto.FLOAT else precision}"
            new_nodes.append(helper.make_node("Cast", [name], [out], to=to, name=f"{out}__cast"))
            cast_cache[key] = out
            report.casts_added += 1
        return cast_cache[key]

    renamed_outputs: dict[str, str] = {}
    for i, node in enumerate(g.node):
        if i in half_inputs:
            for j in half_inputs[i]:
                name = node.input[j]
                if name in renamed_outputs:  # a half graph output: its original name is the FP32 copy
                    node.input[j] = renamed_outputs[name]
                    continue
                if name in converted_inits or name in half_tensors:
                    continue
                node.input[j] = cast(name, half)
            if node.op_type == "Cast":
                for a in node.attribute:
                    if a.name == "to":
                        a.i = half
            new_nodes.append(node)
            for k, o in enumerate(node.output):
                if o in graph_outputs:  # graph outputs keep their dtype: compute half, cast back
                    inner = f"{o}__{precision}"
                    node.output[k] = inner
                    renamed_outputs[o] = inner
                    new_nodes.append(helper.make_node("Cast", [inner], [o], to=TensorProto.FLOAT,
                                                      name=f"{o}__cast_out"))
                    report.casts_added += 1
        else:
            for j, name in enumerate(node.input):
                if name in half_tensors and name not in renamed_outputs:
                    node.input[j] = cast(name, TensorProto.FLOAT)
            new_nodes.append(node)
    # Consumers of a renamed graph output read the FP32 copy, which keeps the original name: nothing to do.
    del g.node[:]
    g.node.extend(new_nodes)
    del g.value_info[:]  # stale types; inference recomputes them
    work = onnx.shape_inference.infer_shapes(work, strict_mode=False)
    return work, report


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
