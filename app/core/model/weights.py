"""Weight statistics for the properties panel, reading external data only for the tensor asked for."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

from app.core import errors
from app.core.model.loader import resolve_external
from app.core.model.onnx_walk import constant_tensor, dtype_name

FP16_MAX = 65504.0
FP16_MIN_NORMAL = 6.103515625e-05   # below this a value is subnormal in FP16
FP16_MIN_SUBNORMAL = 5.960464477539063e-08  # below half of this a value flushes to zero


@dataclass
class WeightStats:
    name: str
    dtype: str
    shape: tuple[int, ...]
    count: int
    min: float | None = None
    max: float | None = None
    mean: float | None = None
    std: float | None = None
    zeros: int = 0
    nan: int = 0
    inf: int = 0
    fp16_overflow: int = 0     # |x| > 65504: becomes inf in FP16
    fp16_subnormal: int = 0    # 0 < |x| < 6.1e-5: loses precision in FP16
    fp16_underflow: int = 0    # 0 < |x| < 2.98e-8: becomes 0 in FP16
    note: str = ""


def find_tensor(graph: onnx.GraphProto, name: str) -> onnx.TensorProto | None:
    """An initializer or a Constant node's value by tensor name."""
    for t in graph.initializer:
        if t.name == name:
            return t
    for node in graph.node:
        if node.op_type == "Constant" and node.output and node.output[0] == name:
            return constant_tensor(node)
    return None


def tensor_to_array(t: onnx.TensorProto, model_path: Path | None) -> np.ndarray:
    """Decode a tensor; external data is read from the validated file (never outside the folder)."""
    if t.data_location == onnx.TensorProto.EXTERNAL:
        if model_path is None:
            raise errors.ExternalDataMissingError(f"Tensor '{t.name}' is stored externally.")
        info = {e.key: e.value for e in t.external_data}
        target = resolve_external(model_path, info.get("location", ""))
        offset = int(info.get("offset", 0) or 0)
        with target.open("rb") as fh:
            fh.seek(offset)
            raw = fh.read(int(info["length"])) if info.get("length") else fh.read()
        copy = onnx.TensorProto()
        copy.CopyFrom(t)
        del copy.external_data[:]
        copy.data_location = onnx.TensorProto.DEFAULT
        copy.raw_data = raw
        t = copy
    return onnx.numpy_helper.to_array(t)


def weight_stats(t: onnx.TensorProto, model_path: Path | None = None,
                 max_elements: int = 64_000_000) -> WeightStats:
    shape = tuple(int(d) for d in t.dims)
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    stats = WeightStats(name=t.name, dtype=dtype_name(t.data_type), shape=shape, count=count)
    if count > max_elements:
        stats.note = f"{count:,} elements: statistics skipped (over {max_elements:,})."
        return stats
    try:
        arr = tensor_to_array(t, model_path)
    except errors.TrtlabError as exc:
        stats.note = exc.message
        return stats
    except (ValueError, TypeError, OSError) as exc:
        stats.note = f"Cannot decode values: {exc}"
        return stats
    if arr.dtype.kind not in "fiub" and arr.dtype.name != "bfloat16":
        stats.note = "Statistics are for numeric tensors."
        return stats
    a = arr.astype(np.float64, copy=False).ravel()
    if a.size == 0:
        return stats
    finite = np.isfinite(a)
    stats.nan = int(np.isnan(a).sum())
    stats.inf = int(np.isinf(a).sum())
    stats.zeros = int((a == 0).sum())
    f = a[finite]
    if f.size:
        stats.min, stats.max = float(f.min()), float(f.max())
        stats.mean, stats.std = float(f.mean()), float(f.std())
    if arr.dtype.kind == "f" or arr.dtype.name == "bfloat16":
        mag = np.abs(f)
        stats.fp16_overflow = int((mag > FP16_MAX).sum())
        nz = mag[mag > 0]
        stats.fp16_subnormal = int((nz < FP16_MIN_NORMAL).sum())
        stats.fp16_underflow = int((nz < FP16_MIN_SUBNORMAL / 2).sum())
    return stats
