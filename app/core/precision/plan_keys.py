"""How a precision plan names nodes and which nodes no plan can change: node keys, the precisions, the reasons a
node is fixed. The transforms and the plan both read these; the plan (:mod:`app.core.precision.plan`) also asks the
transforms what they would do, so this lower module is what keeps the two from importing each other."""

from __future__ import annotations

import onnx

from app.core.errors import TrtlabError
from app.core.model import ShapeResult, node_key, node_keys  # noqa: F401 - the plan names nodes by these keys
from app.core.targets import PRECISIONS  # noqa: F401 - the precisions a plan names, one definition for all

SCHEMA_VERSION = 1
FLOAT_TYPES = frozenset({"float32", "float16", "bfloat16", "float64"})
QDQ_OPS = frozenset({"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearConv",
                     "QLinearMatMul", "ConvInteger", "MatMulInteger"})
HALF_PRECISIONS = ("fp16", "bf16")
_NATIVE = {"float16": "fp16", "bfloat16": "bf16"}
# to_half's own words for a node whose outputs are not float32 (it converts only float32 tensors).
NOT_FLOAT32 = "outputs are not all float32"


class PlanError(TrtlabError):
    title = "Invalid precision plan"


def fixed_reason(node: onnx.NodeProto, shapes: ShapeResult | None) -> str | None:
    """Why a node's precision cannot change, or None when it can."""
    if node.op_type in QDQ_OPS:
        return "existing quantization node (its precision is set by its own scales)"
    if node.domain not in ("", "ai.onnx"):
        return f"custom-domain op ({node.domain}): its kernels decide its types"
    if node.op_type == "Constant":
        return "constant: its values are stored in the precision of the nodes that read them"
    if node.op_type in ("Shape", "Size", "NonZero", "ArgMax", "ArgMin"):
        return "produces integers (shape or index path)"
    if shapes is None:
        return None
    dtypes = [info.dtype for o in node.output if o and (info := shapes.get(o)) is not None]
    if dtypes and not any(d in FLOAT_TYPES for d in dtypes):
        kind = "bool" if all(d == "bool" for d in dtypes) else "integer"
        return f"{kind} outputs only ({', '.join(sorted(set(dtypes)))}): nothing to compute in another precision"
    return None


def model_opsets(model: onnx.ModelProto) -> dict[str, int]:
    """Opset version per domain, as the transforms read them ("" for the default domain)."""
    return {(o.domain or ""): int(o.version) for o in model.opset_import}
