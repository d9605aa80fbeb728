"""Readiness rules of TensorRT for RTX (the ``"rtx"`` target), measured with tensorrt-rtx 1.7.1.116 (TENSORRT_RTX.md).

- ``rtx-fp8-target``: FP8 (float8 Q/DQ or tensors) builds only for compute capability 8.9 and later; the
  targets (or RTX's default set, which includes 8.0 and 8.6) name an older one.
- ``rtx-turing-bf16``: Turing (7.5) refuses BF16 ("the model contains HW-specific datatypes: b16").
- ``rtx-turing-fp32-gemm``: Turing refuses FP32 MatMul/Gemm ("FP32 GEMM is not supported"); an INT8 Q/DQ GEMM
  is refused too (its dequantized operands are FP32); FP16 GEMMs build.
- ``rtx-squeeze-no-axes``: a Squeeze without axes over a dynamic dim: RTX fixes the output rank at build time and
  refuses when that dim may be 1 ("ISqueezeLayer without an axes input requires dimension 0 to not be 1").
- ``rtx-nonzero-plugin``: the parser imports NonZero through a plugin RTX does not ship ("NonZero plugin creator
  version 1 was not found in plugin registry"), though ``supports_operator("NonZero")`` says True (a Piper TTS model,
  and a two-node graph in the tests).
- ``rtx-if-builder`` (warning): RTX 1.7's builder stopped with an internal error on Silero VAD, whose If branches
  hold the model's two sample-rate paths; a small If builds. Said so that a failure there is not a surprise.

Dynamic-quantization ops (``dynamic-quantization``) and dims that share a ``dim_param`` (``dim-param-conflict``)
are checked for every target elsewhere; RTX refuses both the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from app.core.engine import DEFAULT_LABEL, describe_targets, has_turing, lacks_fp8
from app.core.model import ShapeResult, dtype_name, infer_shapes
from app.core.precision import PrecisionPlan
from app.core.readiness.context import GraphIndex
from app.core.readiness.findings import Finding

_FP8 = ("float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz")
_GEMMS = ("MatMul", "Gemm")


def _targets_text(targets: tuple[str, ...]) -> str:
    return f"the targets {describe_targets(targets)}" if targets else DEFAULT_LABEL


def _fp8_nodes(index: GraphIndex) -> list[str]:
    """Top-level nodes that quantize to, dequantize from or hold FP8."""
    fp8_tensors = {t.name for t in index.tensors if dtype_name(t.tensor.data_type) in _FP8}
    owners: set[int] = set()
    for nested in index.nodes:
        node = nested.node
        if node.op_type == "QuantizeLinear":
            out_type = next((a.i for a in node.attribute if a.name == "output_dtype"), 0)
            if (out_type and dtype_name(out_type) in _FP8) or (len(node.input) > 2 and node.input[2] in fp8_tensors):
                owners.add(nested.owner)
        elif node.op_type == "DequantizeLinear" and node.input and node.input[0] in fp8_tensors:
            owners.add(nested.owner)
        elif node.op_type == "Cast":
            to = next((a.i for a in node.attribute if a.name == "to"), 0)
            if to and dtype_name(to) in _FP8:
                owners.add(nested.owner)
    return [index.keys[i] for i in sorted(owners)]


def _planned(index: GraphIndex, plan: PrecisionPlan | None) -> dict[str, str]:
    if plan is None:
        return {}
    return {r.key: r.precision for r in plan.resolve(index.graph)}


def _bf16_nodes(index: GraphIndex, plan: PrecisionPlan | None) -> list[str]:
    keys = {k for k, p in _planned(index, plan).items() if p == "bf16"}
    bf16_tensors = {t.name for t in index.tensors if dtype_name(t.tensor.data_type) == "bfloat16"}
    bf16_tensors |= {i.name for i in index.inputs if i.dtype == "bfloat16"}
    for i, node in enumerate(index.graph.node):
        to = next((a.i for a in node.attribute if a.name == "to"), 0) if node.op_type == "Cast" else 0
        if (to and dtype_name(to) == "bfloat16") or any(name in bf16_tensors for name in node.input):
            keys.add(index.keys[i])
    return [k for k in index.keys if k in keys]


def _fp32_gemms(index: GraphIndex, plan: PrecisionPlan | None, types: ShapeResult) -> list[str]:
    planned = _planned(index, plan)
    out = []
    for key, node in zip(index.keys, index.graph.node, strict=True):
        if node.op_type not in _GEMMS or (node.domain or "") not in ("", "ai.onnx"):
            continue
        if planned.get(key) == "fp16":
            continue
        first = types.get(node.input[0]) if node.input else None
        if first is not None and first.dtype == "float16" and planned.get(key) in (None, "fp32", "fixed"):
            continue  # already a half-precision GEMM in the model
        out.append(key)
    return out


def _squeeze_without_axes(index: GraphIndex, shapes: Mapping[str, Sequence[int]] | None) -> tuple[list[str], bool]:
    """Squeezes without axes over a dynamic dim, and whether the given shapes make that dim 1 (a sure failure)."""
    opset = index.opset("") or 13
    candidates = []
    for key, node in zip(index.keys, index.graph.node, strict=True):
        if node.op_type != "Squeeze" or (node.domain or "") not in ("", "ai.onnx"):
            continue
        no_axes = (len(node.input) < 2 or not node.input[1]) if opset >= 13 else \
            not any(a.name == "axes" for a in node.attribute)
        if no_axes and node.input:
            candidates.append((key, node.input[0]))
    if not candidates:
        return [], False
    network = infer_shapes(index.model)  # what TensorRT's network sees: the model's own dims
    given = infer_shapes(index.model, {k: tuple(int(d) for d in v) for k, v in (shapes or {}).items()}) \
        if shapes else None
    keys, sure = [], False
    for key, tensor in candidates:
        info = network.get(tensor)
        if info is None or info.shape is None:
            dynamic = [0]
        else:
            dynamic = [k for k, d in enumerate(info.shape) if not (isinstance(d, int) and d >= 0)]
        if not dynamic:
            continue
        keys.append(key)
        concrete = given.get(tensor) if given is not None else None
        if concrete is not None and concrete.shape is not None and len(concrete.shape) > max(dynamic) and \
                any(concrete.shape[k] == 1 for k in dynamic):
            sure = True
    return keys, sure


def check_rtx(index: GraphIndex, *, targets: tuple[str, ...], plan: PrecisionPlan | None,
              shapes: Mapping[str, Sequence[int]] | None) -> list[Finding]:
    out: list[Finding] = []
    old = lacks_fp8(targets)
    fp8 = _fp8_nodes(index)
    if fp8 and old:
        out.append(Finding("error", "rtx-fp8-target", fp8,
                           f"{len(fp8)} node(s) compute in FP8, which TensorRT for RTX builds only for compute "
                           f"capability 8.9 and later; {_targets_text(targets)} include {', '.join(old)}.",
                           "Build for 8.9 and later only (--target-cc 8.9,12.0,12.1), or quantize to INT8 instead."))
    if has_turing(targets):
        bf16 = _bf16_nodes(index, plan)
        if bf16:
            out.append(Finding("error", "rtx-turing-bf16", bf16,
                               f"{len(bf16)} node(s) compute in BF16, and Turing (compute capability 7.5) has no BF16: "
                               "TensorRT for RTX refuses the build for 7.5.",
                               "Leave 7.5 out of --target-cc, or plan those nodes in FP16 instead of BF16."))
        gemms = _fp32_gemms(index, plan, infer_shapes(index.model, {k: tuple(v) for k, v in (shapes or {}).items()}))
        if gemms:
            out.append(Finding("error", "rtx-turing-fp32-gemm", gemms,
                               f"{len(gemms)} MatMul/Gemm node(s) would run in FP32 (INT8 Q/DQ GEMMs too), which "
                               "TensorRT for RTX cannot compile for Turing (compute capability 7.5): 'FP32 GEMM is "
                               "not supported'.",
                               "Leave 7.5 out of --target-cc, or plan these MatMul/Gemm nodes in FP16."))
    nonzero = [index.keys[i] for i in sorted({n.owner for n in index.nodes if n.node.op_type == "NonZero"})]
    if nonzero:
        out.append(Finding("error", "rtx-nonzero-plugin", nonzero,
                           f"{len(nonzero)} NonZero node(s): TensorRT for RTX's ONNX parser imports NonZero through a "
                           "plugin that TensorRT for RTX does not ship ('NonZero plugin creator version 1 was not "
                           "found in plugin registry'), so the parse fails.",
                           "Export a fixed-size form instead of NonZero (a mask multiplied in, or TopK over a padded "
                           "score), run that part outside the engine, or build with TensorRT 10/11 (--backend trt)."))
    ifs = [index.keys[i] for i in sorted({n.owner for n in index.nodes if n.node.op_type == "If"})]
    if ifs:
        out.append(Finding("warning", "rtx-if-builder", ifs,
                           f"{len(ifs)} If node(s): TensorRT for RTX 1.7's builder has stopped with an internal error "
                           "on a model whose If branches hold alternative paths (Silero VAD); small If graphs build.",
                           "If the build fails inside an If, export one branch (fix the condition's input, e.g. the "
                           "sample rate) so that the If folds away, or build with TensorRT 10/11."))
    squeezes, sure = _squeeze_without_axes(index, shapes)
    if squeezes:
        out.append(Finding(
            "error" if sure else "warning", "rtx-squeeze-no-axes", squeezes,
            f"{len(squeezes)} Squeeze node(s) without axes read a tensor with a dynamic dim. TensorRT for RTX fixes "
            "the output rank when it builds, so it refuses when that dim may be 1 at run time"
            + (" — and the shapes given make it 1." if sure else " (with the shapes set later: batch 1 fails)."),
            "Export the model with Squeeze axes given (torch: x.squeeze(dim)), or build with that dim greater than 1."))
    return out
