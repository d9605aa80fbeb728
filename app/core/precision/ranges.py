"""Activation ranges for FP16: which planned-FP16 nodes produce values FP16 cannot hold on real inputs.

FP16's largest value is 65504. A node whose output reaches a large fraction of it on the calibration data (the
sample photos for image models, `--calib` or the Run panel's data otherwise) is kept in FP32: the next op's sums,
or a slightly different input, would overflow to Inf, and with no NaN/Inf to warn the answer is simply wrong
(PaddleOCR's text detector loses its text map this way). ``FP16_ACTIVATION_LIMIT`` (8192, an eighth of the range)
leaves that headroom; ModelOpt's AutoCast uses a stricter 512 by default, at the cost of more FP32 nodes. The nodes
that read such a tensor stay FP32 too: the Cast to FP16 before them would turn the value into Inf (seen on an H200:
keeping only the producer FP32 gave Inf where plain FP16 did not, as ONNX Runtime fused that MatMul with its Mul).

Peaks are measured once per (model, calibration data) in a process: a fallback search that builds many variants
of one model reads them again from memory.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import onnx

from app.core.precision.diagnose import expose_all
from app.core.precision.plan import PrecisionPlan, node_keys

FP16_ACTIVATION_LIMIT = 8192.0
RANGE_SAMPLES = 8   # calibration samples the FP32 model runs to find its peaks
_PEAKS: dict[tuple[str, str], dict[str, float]] = {}


def activation_peaks(model: onnx.ModelProto, samples: Sequence[dict[str, np.ndarray]], *, cache_key: tuple[str, str]
                     | None = None, cancelled: Callable[[], bool] | None = None) -> dict[str, float]:
    """{node key: the largest finite |value| any of its float outputs takes over the samples} of the FP32 model,
    one sample at a time (every tensor exposed costs memory, not time)."""
    if cache_key is not None and cache_key in _PEAKS:
        return _PEAKS[cache_key]
    import onnxruntime as ort

    exposed, names = expose_all(model)
    session = ort.InferenceSession(exposed.SerializeToString(), providers=["CPUExecutionProvider"])
    outputs = [o.name for o in session.get_outputs()]
    inputs = [i.name for i in session.get_inputs()]
    producer = {o: key for key, node in zip(node_keys(model.graph), model.graph.node, strict=True) for o in node.output}
    peaks: dict[str, float] = {}
    for feeds in list(samples)[:RANGE_SAMPLES]:
        if cancelled is not None and cancelled():
            break
        for name, value in zip(outputs, session.run(outputs, {n: feeds[n] for n in inputs}), strict=True):
            key = producer.get(name)
            arr = np.asarray(value)
            if key is None or arr.dtype.kind != "f" or arr.size == 0:
                continue
            finite = np.abs(arr[np.isfinite(arr)])
            if finite.size:
                peaks[key] = max(peaks.get(key, 0.0), float(finite.max()))
    if cache_key is not None:
        _PEAKS[cache_key] = peaks
    return peaks


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
    for key, node in nodes.items():
        peak = peaks.get(key, 0.0)
        if peak <= limit:
            continue
        if free(key):
            out[key] = (f"its activations reach {peak:.3g} on the calibration data, beyond {limit:g} of FP16's "
                        "65504: kept FP32")
        # A value FP16 cannot hold is lost in the Cast before any FP16 reader, whoever computed it: readers too.
        for name in node.output:
            for reader in readers.get(name, []):
                if reader not in out and free(reader):
                    out[reader] = (f"it reads '{name}', whose values reach {peak:.3g} on the calibration data, "
                                   f"beyond {limit:g} of FP16's 65504: kept FP32")
    return out
