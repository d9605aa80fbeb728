"""Which nodes planned INT8 get Q/DQ, and why the others do not: the INT8 transform's selection rules.

Q/DQ goes where TensorRT has INT8 kernels: Conv, ConvTranspose, MatMul and Gemm (weights per channel,
activations per tensor), residual Adds and Max/Average pooling. TensorRT's Q/DQ placement guidance
quantizes an Add only where it joins two activation paths of one source (a residual connection, which
it fuses into the INT8 convolution before it); an Add of a bias, of two independent paths (embedding
sums, positional encodings) or with broadcasting is elementwise float work that INT8 only makes worse.

Attention masks are never quantized. A mask is written as ``(1 - mask) * -10000``, as ``Where(cond, 0,
-inf)``, or as a constant with -inf/-3.4e38 entries; its huge values give a calibrated scale that is
infinite (or so large that every real value rounds to zero), so a node reading a mask path stays float.

:class:`Int8Graph` holds the facts about the whole graph these rules need (constant-derived tensors,
mask paths, the sources each activation depends on), found in one pass; :func:`int8_skip_reason` reads
it. The precision table asks the same function, so the table and the variant agree.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
from onnx import numpy_helper

from app.core.model import POOL_OPS, QUANTIZABLE_OPS, WEIGHTED_OPS, ShapeResult, constant_tensor  # noqa: F401 - part of this module's vocabulary
from app.core.precision.transforms.qdq_rules import QOPERATOR_OPS, QUANT_OPS

_FUSED_OPS = frozenset({"Relu", "Clip", "LeakyRelu", "PRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Elu",
                        "Selu", "Softplus", "Mish", "Gelu", "BatchNormalization", "InstanceNormalization"})
_REDUCE_OPS = frozenset({"GlobalAveragePool", "GlobalMaxPool", "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin",
                         "ReduceProd", "ReduceL2", "LayerNormalization", "Softmax", "LogSoftmax"})
_FLOAT = frozenset({"float32", "float16"})
_ANY_FLOAT = frozenset({"float32", "float16", "bfloat16", "float64"})
# A mask constant: its values are at least this large in magnitude, or not finite. Real activations and
# weights stay far below; masks use -1e4, -1e9, -3.4e38 or -inf so that Softmax gives their positions 0.
MASK_MAGNITUDE = 1e4
# Ops through which a mask's huge values reach their output unchanged (layout and arithmetic); any other
# op (Softmax, Exp, Sigmoid, a reduction) ends the mask path.
_MASK_CARRIERS = frozenset({"Add", "Sub", "Mul", "Div", "Neg", "Max", "Min", "Sum", "Where", "Cast", "CastLike",
                            "Reshape", "Expand", "Unsqueeze", "Squeeze", "Transpose", "Slice", "Concat", "Gather",
                            "GatherElements", "GatherND", "Tile", "Identity", "Flatten", "Pad", "Split", "Trilu",
                            "ScatterND", "ScatterElements"})
_MASK_SEEDS = frozenset({"Where", "Add", "Sub", "Mul", "Div", "Max", "Min", "ConstantOfShape"})
# Ops of ONNX Runtime's quantized formats (ai.onnx and com.microsoft): a model with any is already quantized.
_QUANTIZED_OPS = QUANT_OPS | QOPERATOR_OPS | {"QAttention", "QEmbedLayerNormalization", "DynamicQuantizeMatMul",
                                              "MatMulIntegerToFloat", "DynamicQuantizeLSTM", "QOrderedMatMul",
                                              "MatMulNBits", "MatMulBnb4", "GatherBlockQuantized"}


def quantization_ops(graph: onnx.GraphProto) -> Counter[str]:
    """Quantization ops (Q/DQ, QOperator, dynamic and weight-packed forms) in the top-level graph, by op type."""
    return Counter(n.op_type for n in graph.node
                   if n.op_type in _QUANTIZED_OPS or (n.op_type.startswith("QLinear")))


def _huge(t: onnx.TensorProto) -> float | None:
    """The largest-magnitude value of a float constant when it looks like a mask value, else None."""
    if t.data_type not in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE,
                           onnx.TensorProto.BFLOAT16):
        return None
    try:
        a = numpy_helper.to_array(t).astype(np.float64)
    except Exception:  # noqa: BLE001 - external data not loaded, odd encodings: not a mask we can see
        return None
    if a.size == 0 or a.size > 1 << 22:
        return None
    bad = a[~np.isfinite(a) | (np.abs(a) >= MASK_MAGNITUDE)]
    bad = bad[~np.isnan(bad)]
    if bad.size == 0:
        return None
    return float(bad[np.argmax(np.abs(bad))])


class Int8Graph:
    """Facts about a top-level graph that the INT8 selection rules need, found once (linear in its size)."""

    def __init__(self, graph: onnx.GraphProto, shapes: ShapeResult | None = None) -> None:
        self.shapes = shapes or ShapeResult()
        consts: dict[str, onnx.TensorProto] = {t.name: t for t in graph.initializer}
        for n in graph.node:
            t = constant_tensor(n) if n.op_type == "Constant" and len(n.output) == 1 else None
            if t is not None:
                consts[n.output[0]] = t
        self.consts = set(consts)
        self.const_derived: set[str] = set(consts)     # computed from constants alone (e.g. int8 weight * scale)
        self.mask: dict[str, str] = {}                 # tensor on a mask path -> where the mask values come from
        self.huge: dict[str, float] = {}               # constant -> its mask-like value
        self._roots: dict[str, int] = {}               # activation -> bit set of the sources it depends on
        self._producer: dict[str, onnx.NodeProto] = {o: n for n in graph.node for o in n.output if o}
        for name, t in consts.items():
            v = _huge(t)
            if v is not None:
                self.huge[name] = v
        float_inputs = [i.name for i in graph.input if i.name not in consts]
        bit = 0
        for name in float_inputs:
            if self._is_float(name):
                self._roots[name] = 1 << bit
                bit += 1
        for n in graph.node:
            outs = [o for o in n.output if o]
            if n.op_type == "Constant" or not outs:
                continue
            ins = [i for i in n.input if i]
            if ins and all(i in self.const_derived for i in ins) and not any(
                    a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in n.attribute):
                self.const_derived.update(outs)
                if n.op_type in _MASK_SEEDS and any(i in self.huge for i in ins):
                    for o in outs:  # a mask built from constants alone (a causal mask): still a mask
                        self.mask[o] = self._seed_text(n, ins)
                continue
            origin = self._mask_origin(n, ins)
            if origin:
                for o in outs:
                    self.mask[o] = origin
            acts = [i for i in ins if i in self._roots]
            roots = 0
            for i in acts:
                roots |= self._roots[i]
            if not acts:
                roots, bit = 1 << bit, bit + 1  # a new source: an embedding lookup, a Cast of integer ids
            for o in outs:
                if self._is_float(o):
                    self._roots[o] = roots

    def _is_float(self, name: str) -> bool:
        info = self.shapes.get(name)
        return info is None or info.dtype in _ANY_FLOAT  # unknown: assume float (the old, permissive answer)

    def _seed_text(self, node: onnx.NodeProto, ins: list[str]) -> str:
        value = next(self.huge[i] for i in ins if i in self.huge)
        return f"{node.op_type} '{node.name or node.output[0]}' with the constant {value:g}"

    def _mask_origin(self, node: onnx.NodeProto, ins: list[str]) -> str | None:
        op = node.op_type
        if op in _MASK_SEEDS:
            data = ins[1:] if op == "Where" else ins
            if any(i in self.huge for i in data):
                return self._seed_text(node, data)
            if op == "ConstantOfShape":
                t = next((a.t for a in node.attribute if a.name == "value"), None)
                v = _huge(t) if t is not None else None
                if v is not None:
                    return f"ConstantOfShape '{node.name or node.output[0]}' filled with {v:g}"
        if op in _MASK_CARRIERS:
            data = ins[1:] if op == "Where" else ins
            return next((self.mask[i] for i in data if i in self.mask), None)
        return None

    def mask_input(self, node: onnx.NodeProto) -> tuple[str, str] | None:
        """(input, origin) when the node reads a mask path or a mask constant."""
        for j, i in enumerate(node.input):
            if i in self.mask:
                return i, self.mask[i]
            if i in self.huge and not (node.op_type in WEIGHTED_OPS and j > 0):  # large weights are no mask
                return i, f"a constant holding {self.huge[i]:g}"
        return None

    def from_conv(self, name: str) -> bool:
        """True when a convolution computes `name`, through nothing but ops TensorRT fuses into it."""
        for _ in range(8):
            node = self._producer.get(name)
            if node is None:
                return False
            if node.op_type in ("Conv", "ConvTranspose"):
                return True
            if node.op_type not in _FUSED_OPS and node.op_type != "Identity" or not node.input:
                return False
            name = node.input[0]
        return False

    def independent(self, a: str, b: str) -> bool:
        """True when two activations share no source (neither depends on what the other depends on)."""
        ra, rb = self._roots.get(a), self._roots.get(b)
        return ra is not None and rb is not None and not ra & rb


def int8_skip_reason(node: onnx.NodeProto, consts: set[str], shapes: ShapeResult,
                     context: Int8Graph | None = None) -> str | None:
    """Why a node planned INT8 gets no Q/DQ, or None when it does (`consts`: names of the initializers).

    `context` (the graph's :class:`Int8Graph`) adds the rules that need the whole graph: mask paths,
    constant-derived operands and residual joins. Without it only the node itself is judged.
    """
    op = node.op_type
    if node.domain not in ("", "ai.onnx"):
        return f"custom-domain op ({node.domain}): no INT8 Q/DQ placement"
    if op not in QUANTIZABLE_OPS:
        if op in _FUSED_OPS:
            return (f"{op} has no INT8 form of its own: TensorRT fuses it into the layer before it, which sets "
                    "its precision")
        if op in _REDUCE_OPS:
            return f"{op} is a reduction or normalisation: it stays in float (INT8 there costs accuracy)"
        return (f"{op} is not quantizable here: Q/DQ goes on the inputs of Conv, ConvTranspose, MatMul, Gemm, "
                "residual Add and Max/Average pooling, where TensorRT has INT8 kernels")
    data = [i for i in node.input[:2] if i]
    for name in data[:1] if op != "Add" else data:
        info = shapes.get(name)
        if info is not None and info.dtype not in _FLOAT:
            return f"its input '{name}' is {info.dtype}, not float"
    if context is not None:
        masked = context.mask_input(node)
        if masked is not None:
            name, origin = masked
            return (f"reads the attention mask '{name}' (from {origin}): mask arithmetic stays in float, since "
                    "INT8 turns its huge values into an infinite scale or rounds the real values to zero")
    if op != "Add":
        return None
    known = context.const_derived if context is not None else consts
    if len(data) != 2 or any(i in consts or i in known for i in data):
        return ("Add with a constant operand (a bias): TensorRT fuses it into the layer before; only residual "
                "Adds (two computed inputs) get Q/DQ")
    a, b = data
    sa, sb = shapes.get(a), shapes.get(b)
    if sa is not None and sb is not None and _broadcasts(sa.shape, sb.shape):
        return (f"Add broadcasts {sa.shape_text()} with {sb.shape_text()}: not a residual join of two activation "
                "paths, the only Add TensorRT runs in INT8")
    if context is not None and context.independent(a, b):
        return ("Add of two independent paths (such as an embedding sum): not a residual join of two activation "
                "paths of one source, the only Add TensorRT runs in INT8")
    if context is not None and not (context.from_conv(a) or context.from_conv(b)):
        return ("residual Add that no convolution computes: TensorRT fuses an INT8 residual Add into the "
                "convolution before it; elsewhere (a transformer's residual stream, with its outlier values) "
                "INT8 there only costs accuracy")
    return None


def _broadcasts(x: tuple | None, y: tuple | None) -> bool:
    """True when two known shapes certainly differ (rank, or a fixed dim): the Add broadcasts one of them."""
    if x is None or y is None:
        return False
    if len(x) != len(y):
        return True
    return any(isinstance(p, int) and isinstance(q, int) and p != q for p, q in zip(x, y, strict=True))
