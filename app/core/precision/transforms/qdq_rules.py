"""TensorRT's explicit-quantization rules for Q/DQ graphs (``TENSORRT.md`` §4), as structured issues.

TensorRT's ONNX parser takes QuantizeLinear/DequantizeLinear in the ONNX domain only (no QOperator ops),
with scales that are positive float build-time constants — a scalar (per tensor) or a 1-D vector with one
value per channel of the quantized axis (per channel, weights only) — zero points that are all 0 and of a
quantized type TensorRT has (signed INT8; also INT4/FP8/FP4), no DequantizeLinear of INT32 (a quantized
bias), and every QuantizeLinear read only by DequantizeLinear nodes. Per-channel Q/DQ (an ``axis``) needs
opset 13.

:func:`qdq_issues` returns each broken rule with a stable code and the node it concerns (the INT8
transform validates its output with :func:`check_trt_qdq`, the readiness check shows the issues on the
graph).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

__all__ = ["QDQ_OPSET", "QOPERATOR_OPS", "QUANT_OPS", "QdqIssue", "check_trt_qdq", "qdq_issues"]

QDQ_OPSET = 13  # DequantizeLinear's `axis` (per-channel weights) arrived in opset 13
QUANT_OPS = frozenset({"QuantizeLinear", "DequantizeLinear"})
QOPERATOR_OPS = frozenset({"QLinearConv", "QLinearMatMul", "ConvInteger", "MatMulInteger", "QLinearAdd",
                           "QLinearMul", "QGemm", "DynamicQuantizeLinear"})
_SCALE_TYPES = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16}
# Quantized types TensorRT's DequantizeLinear takes: INT8, and the INT4/FP8/FP4 forms of strongly typed builds.
_QUANTIZED = {TensorProto.INT8, *(getattr(TensorProto, n) for n in ("INT4", "FLOAT8E4M3FN", "FLOAT4E2M1")
                                  if hasattr(TensorProto, n))}


@dataclass(frozen=True)
class QdqIssue:
    """One broken rule: a stable code, the text for people, and the positions in ``graph.node`` it concerns."""

    code: str
    text: str
    nodes: tuple[int, ...] = ()


def _opset(model: onnx.ModelProto) -> int:
    return next((int(o.version) for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)


def _type_name(data_type: int) -> str:
    return onnx.helper.tensor_dtype_to_string(data_type).removeprefix("TensorProto.")


def check_trt_qdq(model: onnx.ModelProto) -> list[str]:
    """Where the model's Q/DQ nodes break TensorRT's explicit-quantization rules (empty: none)."""
    return [issue.text for issue in qdq_issues(model)]


def qdq_issues(model: onnx.ModelProto) -> list[QdqIssue]:
    """Every Q/DQ rule the top-level graph breaks, in node order (the opset rule last)."""
    g = model.graph
    if not any(n.op_type in QUANT_OPS or n.op_type in QOPERATOR_OPS for n in g.node):
        return []
    consts: dict[str, TensorProto] = {t.name: t for t in g.initializer}
    for n in g.node:
        if n.op_type == "Constant" and n.output:
            for a in n.attribute:
                if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
                    consts[n.output[0]] = a.t
    dims: dict[str, list[int | str]] = {}
    elem: dict[str, int] = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        tt = vi.type.tensor_type
        if vi.type.HasField("tensor_type"):
            elem[vi.name] = tt.elem_type
            if tt.HasField("shape"):
                dims[vi.name] = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in tt.shape.dim]
    for name, t in consts.items():
        elem[name], dims[name] = t.data_type, list(t.dims)
    readers: dict[str, list[onnx.NodeProto]] = {}
    for n in g.node:
        for i in n.input:
            readers.setdefault(i, []).append(n)
    producer = {o: n for n in g.node for o in n.output}
    graph_outputs = {o.name for o in g.output}

    issues: list[QdqIssue] = []
    for index, n in enumerate(g.node):
        def add(code: str, text: str, _at: tuple[int, ...] = (index,)) -> None:
            issues.append(QdqIssue(code, text, _at))

        where = f"{n.op_type} '{n.name or (n.output[0] if n.output else '?')}'"
        if n.op_type in QOPERATOR_OPS:
            add("qdq-qoperator",
                f"{where}: a QOperator-format op; TensorRT parses only QuantizeLinear/DequantizeLinear")
            continue
        if n.op_type not in QUANT_OPS:
            continue
        if n.domain not in ("", "ai.onnx"):
            add("qdq-domain", f"{where}: in domain '{n.domain}'; TensorRT parses only the ONNX-domain op")
            continue
        x = n.input[0] if n.input else ""
        scale = n.input[1] if len(n.input) > 1 else ""
        zp = n.input[2] if len(n.input) > 2 else ""
        axis = next((int(a.i) for a in n.attribute if a.name == "axis"), 1)
        blocked = any(a.name == "block_size" and a.i > 0 for a in n.attribute)
        # scale
        s = consts.get(scale)
        if s is None:
            add("qdq-scale-not-constant", f"{where}: scale '{scale}' is not a constant (TensorRT needs build-time "
                                          "scales)")
        elif s.data_type not in _SCALE_TYPES:
            add("qdq-scale-type", f"{where}: scale '{scale}' is {onnx.helper.tensor_dtype_to_string(s.data_type)}, "
                                  "not float")
        else:
            values = numpy_helper.to_array(s).astype(np.float64)
            if values.size and not (np.isfinite(values).all() and (values > 0).all()):
                add("qdq-scale-not-positive", f"{where}: scale '{scale}' has values that are zero, negative or not "
                                              "finite")
            if (values.size != 1 or len(s.dims) > 1) and not blocked:
                for code, text in _per_channel_problems(where, s, x, axis, dims, consts, producer):
                    add(code, text)
        # zero point and quantized type
        if zp:
            z = consts.get(zp)
            if z is None:
                add("qdq-zero-point-not-constant", f"{where}: zero point '{zp}' is not a constant")
            elif z.data_type == TensorProto.INT32 and n.op_type == "DequantizeLinear":
                pass  # a quantized bias: the INT32 rule below says it once
            elif z.data_type not in _QUANTIZED:
                add("qdq-zero-point-type", f"{where}: zero point '{zp}' is {_type_name(z.data_type)}; TensorRT needs "
                                           "INT8 (quantize with QInt8)")
            elif numpy_helper.to_array(z).astype(np.float64).any():
                add("qdq-zero-point-not-zero", f"{where}: zero point '{zp}' is not all 0 (TensorRT needs symmetric "
                                               "quantization)")
            elif s is not None and list(z.dims) != list(s.dims):
                add("qdq-zero-point-shape", f"{where}: zero point '{zp}' and scale '{scale}' have different shapes")
        elif n.op_type == "QuantizeLinear":
            out_type = next((int(a.i) for a in n.attribute if a.name == "output_dtype"), 0)
            if out_type not in _QUANTIZED:
                add("qdq-uint8-output", f"{where}: no INT8 zero point, so it quantizes to UINT8 (TensorRT needs INT8)")
        if n.op_type == "DequantizeLinear":
            xt = elem.get(x)
            src = producer.get(x)
            if xt is None and src is not None and src.op_type == "QuantizeLinear" and len(src.input) > 2:
                xt = elem.get(src.input[2])
            if xt == TensorProto.INT32:
                add("qdq-int32-bias", f"{where}: dequantizes INT32 '{x}' (a quantized bias); TensorRT's "
                                      "DequantizeLinear takes INT8 only: keep biases float (QuantizeBias off)")
            elif xt is not None and xt not in _QUANTIZED:
                add("qdq-input-type", f"{where}: dequantizes {_type_name(xt)} '{x}'; "
                                      "TensorRT needs INT8")
        elif n.output:
            bad = sorted({r.op_type for r in readers.get(n.output[0], []) if r.op_type != "DequantizeLinear"})
            if bad or n.output[0] in graph_outputs:
                what = ", ".join(bad) if bad else "the graph output"
                add("qdq-q-not-to-dq", f"{where}: its output is read by {what}; a QuantizeLinear must feed only "
                                       "DequantizeLinear")
    opset = _opset(model)
    with_axis = tuple(i for i, n in enumerate(g.node)
                      if n.op_type in QUANT_OPS and any(a.name == "axis" for a in n.attribute))
    if opset < QDQ_OPSET and with_axis:
        issues.append(QdqIssue("qdq-axis-opset", f"opset {opset}: per-channel Q/DQ (an axis) needs opset {QDQ_OPSET}",
                               with_axis))
    return issues


def _per_channel_problems(where: str, s: TensorProto, x: str, axis: int, dims: dict[str, list],
                          consts: dict[str, TensorProto], producer: dict[str, onnx.NodeProto]
                          ) -> list[tuple[str, str]]:
    if len(s.dims) != 1:
        return [("qdq-scale-shape",
                 f"{where}: scale has shape {list(s.dims)}; TensorRT takes a scalar or a 1-D per-channel scale")]
    src = producer.get(x)
    weight = x in consts or (src is not None and src.op_type == "QuantizeLinear" and src.input[0] in consts)
    if not weight:
        return [("qdq-per-axis-activation",
                 f"{where}: per-channel scale on an activation; TensorRT quantizes activations per tensor")]
    shape = dims.get(x) or (dims.get(src.input[0]) if src is not None else None)
    if shape is None:
        return []
    a = axis if axis >= 0 else axis + len(shape)
    if not 0 <= a < len(shape):
        return [("qdq-axis", f"{where}: axis {axis} is outside the weight's rank {len(shape)}")]
    if isinstance(shape[a], int) and shape[a] != s.dims[0]:
        return [("qdq-axis", f"{where}: {s.dims[0]} scales for {shape[a]} channels on axis {axis}")]
    return []
