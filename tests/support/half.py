"""What the FP16/BF16 transform's tests share: small pattern models, a variant made and passed through every
validity gate, its outputs on ONNX Runtime's CPU provider, and the checks on both (tests/core/precision/
test_half_patterns.py, test_half_models.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from app.core.precision.plan import PrecisionPlan
from app.core.precision.transforms.emulate import cpu_runnable
from app.core.precision.transforms.half import HalfReport, to_half
from app.core.precision.transforms.validate import require_valid

F32, F16, BF16 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16
HALF_DTYPE = {"fp16": "float16", "bf16": "bfloat16"}
# Relative error of one rounding: FP16 keeps 11 significant bits, BF16 8. A few chained ops stay within ~4x.
TOL = {"fp16": 4e-3, "bf16": 3e-2}


def model_of(nodes, inputs, outputs, inits=(), opset: int = 17) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "pattern", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10
    return m


def vi(name: str, dtype: int, shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, dtype, shape)


def weight(name: str, shape, seed: int = 0) -> TensorProto:
    return numpy_helper.from_array(np.random.default_rng(seed).standard_normal(shape).astype(np.float32), name)


def session(source) -> ort.InferenceSession:
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    return ort.InferenceSession(source, opts, providers=["CPUExecutionProvider"])


def half_variant(model: onnx.ModelProto, precision: str, tmp_path: Path, plan: PrecisionPlan | None = None
                 ) -> tuple[onnx.ModelProto, HalfReport, Path]:
    variant, report = to_half(model, plan or PrecisionPlan(default=precision), precision)
    path, source = tmp_path / f"{model.graph.name}.{precision}.onnx", tmp_path / f"{model.graph.name}.onnx"
    onnx.save(variant, str(path))
    onnx.save(model, str(source))
    # Raises InvalidVariant naming the gate and node; a gate the model itself fails (TensorRT's parser has no
    # ScatterElements reduction) does not count against the variant.
    require_valid(path, precision, source=source)
    return variant, report, path


def run_variant(path: Path, feeds: dict) -> list[np.ndarray]:
    source, _ = cpu_runnable(str(path))  # a BF16 variant runs widened between rounding Casts on the CPU
    return session(source).run(None, feeds)


def assert_close(model: onnx.ModelProto, path: Path, feeds: dict, precision: str) -> None:
    ref = session(model.SerializeToString()).run(None, feeds)
    got = run_variant(path, feeds)
    for r, g in zip(ref, got, strict=True):
        assert g.dtype == r.dtype and g.shape == r.shape, (g.dtype, g.shape, r.dtype, r.shape)
        np.testing.assert_allclose(g, r, rtol=TOL[precision], atol=TOL[precision] * float(np.abs(r).max() + 1e-6))


def assert_initializers_hold_their_data(variant: onnx.ModelProto, model: onnx.ModelProto | None = None) -> None:
    """Every initializer holds as many values as its dims say; none is empty unless the model had it so."""
    had_empty = {t.name for t in model.graph.initializer if 0 in t.dims} if model is not None else set()
    for t in variant.graph.initializer:
        n = int(np.prod(t.dims, dtype=np.int64)) if t.dims else 1
        assert numpy_helper.to_array(t).size == n, t.name  # never raw_data=b"" for a non-empty tensor
        assert n > 0 or t.name in had_empty, t.name
