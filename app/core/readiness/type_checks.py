"""Ops whose float inputs have different types (float32 next to float16): TensorRT's layers take one type.

The parser refuses such a node when it adds the layer ("ElementWiseOperation SUM must have same input types …
Float and Half"). Measured with TensorRT for RTX 1.7.1's parser, one float32 and one float16 input (a tensor or
an initializer) per op: every op in :data:`SAME_TYPE_INPUTS` was refused; Pow (its exponent may differ),
BatchNormalization and Clip were imported. ONNX Runtime refuses these graphs too, but a hand-edited or half-
converted model (a variant whose Casts went wrong) can hold one; the types come from ONNX type inference.
"""

from __future__ import annotations

from app.core.model import ShapeResult
from app.core.readiness.context import GraphIndex
from app.core.readiness.findings import Finding

_ALL = None   # every input
# op -> the input positions that must share one float type (None: all of them)
SAME_TYPE_INPUTS: dict[str, tuple[int, ...] | None] = {
    **{op: _ALL for op in ("Add", "Sub", "Mul", "Div", "Max", "Min", "Mean", "Sum", "Mod", "Equal", "Greater",
                           "Less", "GreaterOrEqual", "LessOrEqual", "PRelu", "Concat", "MatMul", "Einsum",
                           "Range")},
    "Gemm": (0, 1, 2),
    "Where": (1, 2),
    "Conv": (0, 1, 2),
    "ConvTranspose": (0, 1, 2),
    "LayerNormalization": (0, 1, 2),
    "GroupNormalization": (0, 1, 2),
    "InstanceNormalization": (0, 1, 2),
}
# TensorRT casts float64 weights to float32 when it imports them, so they count as float32 here.
_FLOAT = {"float32": "float32", "float64": "float32", "float16": "float16", "bfloat16": "bfloat16"}
_TRT_NAME = {"float32": "Float", "float16": "Half", "bfloat16": "BFloat16"}


def check_mixed_types(index: GraphIndex, types: ShapeResult) -> list[Finding]:
    """One error per node (nested nodes on their owner) whose float inputs TensorRT needs of one type differ."""
    out = []
    for nested in index.nodes:
        node = nested.node
        if (node.domain or "") not in ("", "ai.onnx") or node.op_type not in SAME_TYPE_INPUTS:
            continue
        positions = SAME_TYPE_INPUTS[node.op_type]
        seen: dict[str, list[str]] = {}   # float type -> inputs of that type
        for j, name in enumerate(node.input):
            if not name or (positions is not None and j not in positions):
                continue
            info = types.get(name)
            kind = _FLOAT.get(info.dtype) if info is not None else None
            if kind is not None:
                seen.setdefault(kind, []).append(name)
        if len(seen) < 2:
            continue
        key = index.keys[nested.owner]
        label = f"'{node.name}'" if node.name else f"'{key}'"
        got = "; ".join(f"{_TRT_NAME[k]} ({', '.join(repr(n) for n in names[:3])})" for k, names in seen.items())
        where = f" {nested.where}" if nested.where else ""
        out.append(Finding(
            "error", "mixed-input-types", [key],
            f"{node.op_type} {label}{where} mixes float types in inputs that TensorRT needs of one type: {got}. "
            f"The parser refuses it ('must have same input types').",
            "Give these inputs one type: Cast the odd one (e.g. Cast to float16 before the op), or rebuild the "
            "variant from the FP32 model so its Casts are consistent."))
    return out
