"""Activation ranges for FP16: the planned-FP16 nodes whose values FP16 cannot hold, or computes badly, on real inputs.

A node whose output (or input) passes ``FP16_ACTIVATION_LIMIT`` on the calibration data (the sample photos for image
models, `--calib` or the Run panel's data otherwise) is kept in FP32, with the nodes that read such a tensor. 512 is
ModelOpt AutoCast's default, and measured: on an H200 (ONNX Runtime's CUDA provider) PaddleOCR's text detector keeps
a text-map IoU of 0.994 with 512 and 0.992 with 8192, the same as with 2048 or 1024. ONNX Runtime's CPU provider
cannot show that difference (it computes FP32 between Casts: both limits give 0.995 there), so the limit is not
tuned on the CPU. Above FP16's largest value, 65504, the Cast to FP16 before any reader turns a value into Inf
(seen on an H200: keeping only the producer FP32 gave Inf where plain FP16 did not, as ONNX Runtime fused that MatMul
with its Mul), so readers stay FP32 too.

A square that only a mean reads (a variance's (x - mean)²) is held to FP16's range instead: a mean of squares
loses only FP16's relative precision (see `_variance_squares`).

Sums are checked as well: a ReduceMean (or ReduceL2) whose sum over the reduced values passes ``FP16_SUM_LIMIT`` is
kept FP32 though its mean is small. ONNX Runtime's CUDA provider sums in FP16 there: tesseranet's FP16 variant gave
Inf at a ReduceMean over a 112×112 map on an H200 (107,168 non-finite outputs; none in FP32), with AutoCast's too.

Peaks are measured once per (model, calibration data) in a process: a fallback search that builds many variants
of one model reads them again from memory.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import onnx

from app.core.precision.diagnose import expose_all
from app.core.precision.plan import PrecisionPlan, node_keys

FP16_ACTIVATION_LIMIT = 512.0
FP16_SUM_LIMIT = 8192.0  # an eighth of 65504: headroom for inputs larger than the calibration data's
FP16_MAX = 65504.0
SUM_OPS = {"ReduceMean": 1, "ReduceL2": 2}  # op -> the power of its output that its internal sum reaches
_SUM = "\x00sum"  # peaks[key + _SUM]: the largest |sum| a ReduceMean/ReduceL2 node forms inside
RANGE_SAMPLES = 8   # calibration samples the FP32 model runs to find its peaks
_PEAKS: dict[tuple[str, str], dict[str, float]] = {}


def activation_peaks(model: onnx.ModelProto, samples: Sequence[dict[str, np.ndarray]], *, cache_key: tuple[str, str]
                     | None = None, cancelled: Callable[[], bool] | None = None) -> dict[str, float]:
    """{node key: the largest finite |value| any of its float outputs takes over the samples} of the FP32 model,
    one sample at a time (every tensor exposed costs memory, not time). For ReduceMean/ReduceL2 nodes also the
    largest sum they form (key + ``_SUM``): the mean times the count of values reduced into each output, or the
    square of the L2 norm."""
    if cache_key is not None and cache_key in _PEAKS:
        return _PEAKS[cache_key]
    import onnxruntime as ort

    exposed, names = expose_all(model)
    session = ort.InferenceSession(exposed.SerializeToString(), providers=["CPUExecutionProvider"])
    outputs = [o.name for o in session.get_outputs()]
    inputs = [i.name for i in session.get_inputs()]
    keyed = list(zip(node_keys(model.graph), model.graph.node, strict=True))
    producer = {o: key for key, node in keyed for o in node.output}
    sums = [(key, node.input[0], node.output[0], SUM_OPS[node.op_type]) for key, node in keyed
            if node.op_type in SUM_OPS and not node.domain and node.input and node.output]
    peaks: dict[str, float] = {}
    for feeds in list(samples)[:RANGE_SAMPLES]:
        if cancelled is not None and cancelled():
            break
        values = dict(zip(outputs, session.run(outputs, {n: feeds[n] for n in inputs}), strict=True))
        for name, value in values.items():
            key = producer.get(name)
            arr = np.asarray(value)
            if key is None or arr.dtype.kind != "f" or arr.size == 0:
                continue
            finite = np.abs(arr[np.isfinite(arr)])
            if finite.size:
                peaks[key] = max(peaks.get(key, 0.0), float(finite.max()))
        for key, src, dst, power in sums:
            x, y = values.get(src, feeds.get(src)), values.get(dst)
            if x is None or y is None or np.size(y) == 0 or np.asarray(y).dtype.kind != "f":
                continue
            finite = np.abs(np.asarray(y)[np.isfinite(y)])
            if finite.size:
                total = float(finite.max()) ** power * (np.size(x) // np.size(y) if power == 1 else 1)
                peaks[key + _SUM] = max(peaks.get(key + _SUM, 0.0), total)
    if cache_key is not None:
        _PEAKS[cache_key] = peaks
    return peaks


MEAN_OPS = frozenset({"ReduceMean", "GlobalAveragePool"})


def _variance_squares(graph: onnx.GraphProto, nodes: dict[str, onnx.NodeProto], readers: dict[str, list[str]],
                      peaks: dict[str, float]) -> set[str]:
    """Squares that only a mean reads — a variance's (x - mean)², as LayerNorm written out computes it — and whose
    values stay within FP16's range with 4× to spare. They are held to that range, not to the activation limit: a
    mean of squares has no cancellation, so FP16's relative precision (2^-11 at any size) is all it loses, and its
    result (the variance, then a scale) is checked on its own. g2p's BERT squares deviations up to 6.7e3 into
    variances under 410; keeping the squares FP32 cost it 9 % of its FP16 time on an H200 with the same answers."""
    consts = {t.name: t for t in graph.initializer}
    found = set()
    for key, node in nodes.items():
        if node.domain not in ("", "ai.onnx") or not node.output or peaks.get(key, 0.0) > FP16_MAX / 4:
            continue
        square = node.op_type == "Mul" and len(node.input) == 2 and node.input[0] == node.input[1]
        if node.op_type == "Pow" and len(node.input) == 2 and node.input[1] in consts:
            exponent = np.asarray(onnx.numpy_helper.to_array(consts[node.input[1]]))
            square = exponent.size == 1 and float(exponent.reshape(-1)[0]) == 2.0
        users = readers.get(node.output[0], [])
        if square and users and all(nodes[u].op_type in MEAN_OPS for u in users):
            found.add(key)
    return found


def keep_fp32_for_range(model: onnx.ModelProto, plan: PrecisionPlan, peaks: dict[str, float],
                        limit: float = FP16_ACTIVATION_LIMIT) -> dict[str, str]:
    """{node key: why} for the nodes the plan puts in FP16 whose activations exceed `limit`. A node the user set to
    FP16 by name (a plan override) stays FP16: the rule keeps only what the plan's default or op rules converted."""
    keys = node_keys(model.graph)
    nodes = dict(zip(keys, model.graph.node, strict=True))
    readers: dict[str, list[str]] = {}
    for key, node in nodes.items():
        for name in node.input:
            readers.setdefault(name, []).append(key)

    def free(key: str) -> bool:  # the plan's default or an op rule made it FP16 (not the user, by name)
        return plan.planned(key, nodes[key].op_type) == "fp16" and key not in plan.overrides

    out: dict[str, str] = {}
    squares = _variance_squares(model.graph, nodes, readers, peaks)
    for key, node in nodes.items():
        total = peaks.get(key + _SUM, 0.0)
        if total > FP16_SUM_LIMIT and free(key):
            out[key] = (f"the sum inside this {node.op_type} reaches {total:.3g} on the calibration data, beyond "
                        f"{FP16_SUM_LIMIT:g} of FP16's 65504 (ONNX Runtime's CUDA provider sums in FP16): kept FP32")
        peak = peaks.get(key, 0.0)
        if peak <= limit or key in squares:
            continue
        if free(key):
            out[key] = (f"its activations reach {peak:.3g} on the calibration data, beyond {limit:g}: kept FP32 "
                        "(FP16 has 65504 at most and is coarse there; GPU FP16 kernels lose the answer)")
        # A value FP16 cannot hold is lost in the Cast before any FP16 reader, whoever computed it: readers too.
        for name in node.output:
            for reader in readers.get(name, []):
                if reader not in out and free(reader):
                    out[reader] = (f"it reads '{name}', whose values reach {peak:.3g} on the calibration data, "
                                   f"beyond {limit:g}: kept FP32")
    return out
