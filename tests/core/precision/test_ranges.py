"""FP16 keeps the nodes whose activations leave its range on the calibration data (app.core.precision.ranges):
weights that fit FP16 can still make values FP16 cannot hold, and then the answer is lost without a NaN to warn."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from app.core.precision import PrecisionPlan, build_variant


def _loud_model(path) -> str:
    """x → MatMul (weights 300: each fits FP16) → 'loud' reaches ~1e5 → Mul 1e-3 → Mul 1e-3 → y."""
    w = np.full((64, 8), 300.0, np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["loud"], name="loud_matmul"),
         helper.make_node("Mul", ["loud", "s"], ["quiet"], name="scale"),
         helper.make_node("Mul", ["quiet", "s"], ["y"], name="scale_again")],
        "loud", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array(1e-3, np.float32), "s")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return str(path)


def _samples(n: int = 4) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    return [{"x": rng.uniform(4.0, 6.0, (1, 64)).astype(np.float32)} for _ in range(n)]


def _run(path: str, feeds: dict) -> np.ndarray:
    return ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)[0]


def test_a_node_whose_activations_overflow_fp16_stays_fp32(tmp_path):
    model = _loud_model(tmp_path / "loud.onnx")
    v = build_variant(model, PrecisionPlan(default="fp16"), calib=lambda: (_samples(), False), cache_dir=tmp_path / "c")
    kept = v.report["half"]["kept_fp32"]
    assert "loud_matmul" in kept and "beyond 512" in kept["loud_matmul"]
    # Its reader too: the Cast to FP16 in front of it would make the value Inf, whoever computed it.
    assert "scale" in kept and "reads 'loud'" in kept["scale"]
    assert any("2 node(s) kept FP32 for their ranges (activations beyond 512)" in n for n in v.notes)
    assert v.report["half"]["half_nodes"] == ["scale_again"]
    feeds = _samples(1)[0]
    ref, got = _run(model, feeds), _run(v.path, feeds)
    assert np.isfinite(got).all() and np.allclose(ref, got, rtol=2e-3)


def test_without_data_it_says_the_ranges_are_unknown(tmp_path):
    model = _loud_model(tmp_path / "loud.onnx")
    v = build_variant(model, PrecisionPlan(default="fp16"), cache_dir=tmp_path / "c")
    assert any("activation ranges are unknown" in n for n in v.notes)
    assert "loud_matmul" in v.report["half"]["half_nodes"]
    # Its ~1e5 is then an FP16 tensor: Inf on a GPU. (ONNX Runtime's CPU provider computes FP32 between Casts and
    # removes the Cast pair, so it would not show the overflow here.)
    from app.core.model import infer_shapes

    assert infer_shapes(onnx.load(v.path)).get("loud").dtype == "float16"


def test_the_peaks_are_measured_once_per_model_and_data(tmp_path, monkeypatch):
    from app.core.precision import ranges

    model = onnx.load(_loud_model(tmp_path / "loud.onnx"))
    calls = []
    real = ranges.expose_all
    monkeypatch.setattr(ranges, "expose_all", lambda m: calls.append(1) or real(m))
    first = ranges.activation_peaks(model, _samples(), cache_key=("m", "d"))
    again = ranges.activation_peaks(model, _samples(), cache_key=("m", "d"))
    assert first is again and len(calls) == 1
    assert 9e4 < first["loud_matmul"] < 1.2e5 and first["scale"] < 200 and first["scale_again"] < 1


def _mean_model(path) -> str:
    """Two ReduceMeans over a 64×64 map: 'loud_mean' reads x × 4 (mean ~12, its sum ~5e4 nears FP16's 65504),
    'quiet_mean' reads x / 4 (mean ~0.75, sum ~3e3). Neither mean passes 512."""
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "four"], ["x4"], name="times_four"),
         helper.make_node("ReduceMean", ["x4"], ["m4"], axes=[2, 3], keepdims=0, name="loud_mean"),
         helper.make_node("Div", ["x", "four"], ["xq"], name="quarter"),
         helper.make_node("ReduceMean", ["xq"], ["mq"], axes=[2, 3], keepdims=0, name="quiet_mean"),
         helper.make_node("Add", ["m4", "mq"], ["y"], name="add")],
        "means", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 64, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])],
        [numpy_helper.from_array(np.array(4.0, np.float32), "four")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return str(path)


def test_a_reduce_mean_whose_sum_overflows_fp16_stays_fp32(tmp_path):
    """ONNX Runtime's CUDA provider sums a FP16 ReduceMean in FP16: tesseranet's gave Inf on an H200 though every
    mean was small. The rule reads the sum (mean × values reduced) and keeps that node FP32, not the quiet one."""
    model = _mean_model(tmp_path / "means.onnx")
    rng = np.random.default_rng(1)
    samples = [{"x": rng.uniform(2.0, 4.0, (1, 2, 64, 64)).astype(np.float32)} for _ in range(2)]
    from app.core.precision import ranges

    peaks = ranges.activation_peaks(onnx.load(model), samples)
    assert 4.8e4 < peaks["loud_mean" + ranges._SUM] < 5e4 and peaks["loud_mean"] < 13
    assert 3e3 < peaks["quiet_mean" + ranges._SUM] < 3.2e3
    v = build_variant(model, PrecisionPlan(default="fp16"), calib=lambda: (samples, False), cache_dir=tmp_path / "c")
    kept = v.report["half"]["kept_fp32"]
    assert kept["loud_mean"].startswith("the sum inside this ReduceMean reaches 4.9") and "quiet_mean" not in kept
    assert "quiet_mean" in v.report["half"]["half_nodes"]
    assert any("or sums beyond 8192" in n for n in v.notes)


def test_a_variance_square_is_held_to_fp16s_range_not_the_activation_limit(models_dir):
    """g2p's BERT writes LayerNorm out: (x - mean)² squared by a Mul, averaged by GlobalAveragePool. Its squares reach
    thousands while its variances stay small: the squares stay FP16 (only a mean reads them); a square that anything
    else reads, or one near FP16's largest value, is kept FP32 as any activation past the limit."""
    from app.core.precision.ranges import FP16_MAX, keep_fp32_for_range

    model = onnx.load(str(models_dir / "g2p_bert_mlm.onnx"))
    keys = [n.name for n in model.graph.node]
    squares = [n.name for n in model.graph.node if n.op_type == "Mul" and n.input[0] == n.input[1]
               and "moments" in n.name]
    assert len(squares) == 4
    plan = PrecisionPlan(default="fp16")
    peaks = dict.fromkeys(keys, 1.0) | dict.fromkeys(squares, 6.7e3)
    assert keep_fp32_for_range(model, plan, peaks) == {}
    near_max = peaks | {squares[0]: FP16_MAX / 2}
    kept = keep_fp32_for_range(model, plan, near_max)
    assert squares[0] in kept and "beyond 512" in kept[squares[0]]
    square = next(n for n in model.graph.node if n.name == squares[1])
    model.graph.node.append(helper.make_node("Relu", [square.output[0]], ["also_read"], name="another_reader"))
    kept = keep_fp32_for_range(model, plan, peaks | {"another_reader": 1.0})
    assert squares[1] in kept and "another_reader" in kept and squares[0] not in kept
