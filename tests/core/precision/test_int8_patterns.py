"""INT8 on the graph patterns that broke it: attention masks, Adds that are no residual join, constant, all-zero
and infinite calibration values, already-quantized models, FP16 and weight-only INT8 weights, empty tensors;
then every shared and corpus model: a valid variant with no new Inf/NaN, or a refusal that names the reason."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from app.core.errors import TrtlabError
from app.core.precision.plan import PrecisionPlan
from app.core.precision.transforms.int8 import AlreadyQuantized, to_int8
from app.core.precision.transforms.validate import require_valid, validate_variant

RNG = np.random.default_rng(0)
D, S = 16, 8  # hidden size and sequence length of the small attention graphs


def _w(name: str, *shape: int, dtype=np.float32) -> TensorProto:
    return numpy_helper.from_array((RNG.standard_normal(shape) * 0.3).astype(dtype), name)


def _c(name: str, value, dtype=np.float32) -> TensorProto:
    return numpy_helper.from_array(np.asarray(value, dtype=dtype), name)


def _model(nodes, inputs, outputs, inits, opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model


def _run(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"]).run(None, feeds)


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30))


def _check_variant(model, variant, feeds, tmp_path, min_cos: float = 0.98) -> None:
    """Valid by every gate (ONNX full check, ONNX Runtime, TensorRT's parser), runs, no new Inf/NaN, close."""
    path = tmp_path / "variant.onnx"
    onnx.save(variant, str(path))
    require_valid(path, "int8")
    for ref, got in zip(_run(model, feeds), _run(variant, feeds), strict=True):
        assert np.isfinite(got).sum() == np.isfinite(ref).sum(), "new Inf/NaN values"
        assert _cos(ref, got) > min_cos


# --------------------------------------------------------------------------------------------- attention masks

def _attention(mask_kind: str) -> onnx.ModelProto:
    """x -> Q, K, V projections -> scores (+ a mask built the given way) -> Softmax -> context; x + context."""
    nodes = [helper.make_node("MatMul", ["x", "wq"], ["q"], name="q_proj"),
             helper.make_node("MatMul", ["x", "wk"], ["k"], name="k_proj"),
             helper.make_node("MatMul", ["x", "wv"], ["v"], name="v_proj"),
             helper.make_node("Transpose", ["k"], ["kt"], name="kt", perm=[0, 2, 1]),
             helper.make_node("MatMul", ["q", "kt"], ["scores"], name="qk")]
    inits = [_w("wq", D, D), _w("wk", D, D), _w("wv", D, D), _c("axes", [1], np.int64)]
    if mask_kind == "mul_1e4":  # BERT's (1 - mask) * -10000
        nodes += [helper.make_node("Cast", ["mask"], ["maskf"], name="cast", to=TensorProto.FLOAT),
                  helper.make_node("Sub", ["one", "maskf"], ["inv"], name="inv"),
                  helper.make_node("Mul", ["inv", "big"], ["neg"], name="neg"),
                  helper.make_node("Unsqueeze", ["neg", "axes"], ["bias"], name="unsq")]
        inits += [_c("one", 1.0), _c("big", -10000.0)]
    else:  # Where(mask == 0, -inf or float32's lowest, 0)
        low = -np.inf if mask_kind == "where_inf" else np.finfo(np.float32).min
        nodes += [helper.make_node("Equal", ["mask", "zero_i"], ["pad"], name="pad"),
                  helper.make_node("Where", ["pad", "low", "zero_f"], ["neg"], name="where"),
                  helper.make_node("Unsqueeze", ["neg", "axes"], ["bias"], name="unsq")]
        inits += [_c("zero_i", 0, np.int64), _c("low", low), _c("zero_f", 0.0)]
    nodes += [helper.make_node("Add", ["scores", "bias"], ["masked"], name="mask_add"),
              helper.make_node("Softmax", ["masked"], ["p"], name="softmax", axis=-1),
              helper.make_node("MatMul", ["p", "v"], ["ctx"], name="pv"),
              helper.make_node("Add", ["x", "ctx"], ["y"], name="residual")]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, S, D]),
                          helper.make_tensor_value_info("mask", TensorProto.INT64, [1, S])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, S, D])], inits)


def _attention_feeds(seed: int) -> dict[str, np.ndarray]:
    r = np.random.default_rng(seed)
    mask = np.ones((1, S), np.int64)
    mask[0, S - 3:] = 0  # the last three positions are padding
    return {"x": r.standard_normal((1, S, D)).astype(np.float32), "mask": mask}


@pytest.mark.parametrize("mask_kind", ["mul_1e4", "where_inf", "where_lowest"])
def test_attention_mask_arithmetic_is_never_quantized(mask_kind, tmp_path):
    model = _attention(mask_kind)
    variant, report = to_int8(model, PrecisionPlan(default="int8"), [_attention_feeds(i) for i in range(4)])
    assert sorted(report.quantized_nodes) == ["k_proj", "pv", "q_proj", "qk", "v_proj"]
    assert "attention mask" in report.skipped["mask_add"]
    # The residual join x + context has no convolution to fuse into: float, with the reason.
    assert "no convolution" in report.skipped["residual"]
    _check_variant(model, variant, _attention_feeds(9), tmp_path)


def test_a_matmul_reading_masked_scores_stays_float(tmp_path):
    """Where(cond, scores, -1e9) read by a MatMul: the mask path reaches it, so it keeps float inputs."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["s"], name="proj"),
             helper.make_node("Greater", ["x", "zero"], ["keep"], name="keep"),
             helper.make_node("Where", ["keep", "s", "low"], ["masked"], name="where"),
             helper.make_node("Softmax", ["masked"], ["p"], name="softmax", axis=-1),
             helper.make_node("MatMul", ["masked", "w2"], ["raw"], name="reads_mask"),
             helper.make_node("MatMul", ["p", "w2"], ["y"], name="reads_softmax")]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [S, D])],
                   [helper.make_tensor_value_info(n, TensorProto.FLOAT, [S, D]) for n in ("raw", "y")],
                   [_w("w", D, D), _w("w2", D, D), _c("zero", 0.0), _c("low", -1e9)])
    feeds = [{"x": np.random.default_rng(i).standard_normal((S, D)).astype(np.float32)} for i in range(3)]
    variant, report = to_int8(model, PrecisionPlan(default="int8"), feeds)
    assert sorted(report.quantized_nodes) == ["proj", "reads_softmax"]
    assert "'masked'" in report.skipped["reads_mask"] and "-1e+09" in report.skipped["reads_mask"]
    path = tmp_path / "v.onnx"
    onnx.save(variant, str(path))
    require_valid(path, "int8")
    ref, got = _run(model, feeds[0]), _run(variant, feeds[0])
    np.testing.assert_array_equal(ref[0], got[0])  # the masked branch computes exactly as before


@pytest.mark.parametrize("method", ["entropy", "percentile"])
def test_histogram_calibration_never_measures_a_mask(method, tmp_path):
    """A residual Add puts Add among the quantized op types; the mask's Add (-inf) is of that type too, but
    is never calibrated: a histogram over -inf used to fail with 'Too many bins'."""
    c = 4
    nodes = [helper.make_node("Conv", ["x", "wc"], ["conv"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["conv"], ["act"], name="relu"),
             helper.make_node("Add", ["act", "x"], ["y"], name="residual"),
             helper.make_node("Equal", ["mask", "zero_i"], ["pad"], name="pad"),
             helper.make_node("Where", ["pad", "low", "zero_f"], ["neg"], name="where"),
             helper.make_node("Add", ["s", "neg"], ["masked"], name="mask_add"),
             helper.make_node("Softmax", ["masked"], ["p"], name="softmax", axis=-1)]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 6, 6]),
                           helper.make_tensor_value_info("s", TensorProto.FLOAT, [1, S]),
                           helper.make_tensor_value_info("mask", TensorProto.INT64, [1, S])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, 6, 6]),
                    helper.make_tensor_value_info("p", TensorProto.FLOAT, [1, S])],
                   [_w("wc", c, c, 3, 3), _c("zero_i", 0, np.int64), _c("low", -np.inf), _c("zero_f", 0.0)])

    def feeds(seed):
        r = np.random.default_rng(seed)
        return {"x": r.standard_normal((1, c, 6, 6)).astype(np.float32),
                "s": r.standard_normal((1, S)).astype(np.float32), "mask": _attention_feeds(seed)["mask"]}

    variant, report = to_int8(model, PrecisionPlan(default="int8"), [feeds(i) for i in range(3)], method)
    assert sorted(report.quantized_nodes) == ["conv", "residual"] and "attention mask" in report.skipped["mask_add"]
    _check_variant(model, variant, feeds(5), tmp_path, min_cos=0.95)


# --------------------------------------------------------------------------------------------- which Adds

def test_only_residual_joins_after_a_convolution_get_qdq(tmp_path):
    """Conv -> Relu (+ x): quantized. Embedding sum, broadcast Add, bias Add: float, each with its reason."""
    c = 4
    nodes = [helper.make_node("Conv", ["x", "wc"], ["conv"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["conv"], ["act"], name="relu"),
             helper.make_node("Add", ["act", "x"], ["res"], name="residual"),
             helper.make_node("ReduceMean", ["res"], ["pooled"], name="pool", axes=[2, 3], keepdims=1),
             helper.make_node("Add", ["res", "pooled"], ["bc"], name="broadcast"),
             helper.make_node("Add", ["bc", "b"], ["y"], name="bias"),
             helper.make_node("Gather", ["table1", "ids"], ["e1"], name="emb1"),
             helper.make_node("Gather", ["table2", "ids2"], ["e2"], name="emb2"),
             helper.make_node("Add", ["e1", "e2"], ["emb"], name="embedding_sum")]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 6, 6]),
                           helper.make_tensor_value_info("ids", TensorProto.INT64, [1, S]),
                           helper.make_tensor_value_info("ids2", TensorProto.INT64, [1, S])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, 6, 6]),
                    helper.make_tensor_value_info("emb", TensorProto.FLOAT, [1, S, D])],
                   [_w("wc", c, c, 3, 3), _w("b", c, 1, 1), _w("table1", 30, D),
                    _w("table2", 2, D)])

    def feeds(seed):
        r = np.random.default_rng(seed)
        return {"x": r.standard_normal((1, c, 6, 6)).astype(np.float32),
                "ids": r.integers(0, 30, (1, S)), "ids2": r.integers(0, 2, (1, S))}

    variant, report = to_int8(model, PrecisionPlan(default="int8"), [feeds(i) for i in range(3)])
    assert sorted(report.quantized_nodes) == ["conv", "residual"]
    assert "broadcasts" in report.skipped["broadcast"]
    assert "constant operand" in report.skipped["bias"]
    assert "independent paths" in report.skipped["embedding_sum"]
    rows = {r.key: r for r in PrecisionPlan(default="int8").resolve(model.graph, _shapes(model))}
    assert {k for k, r in rows.items() if r.precision == "int8"} == set(report.quantized_nodes)
    assert rows["embedding_sum"].reason == report.skipped["embedding_sum"]  # the plan table says the same
    _check_variant(model, variant, feeds(7), tmp_path)


def _shapes(model):
    from app.core.model.shapes import infer_shapes

    return infer_shapes(model)


# --------------------------------------------------------------------------------------------- calibration values

def _two_convs() -> onnx.ModelProto:
    nodes = [helper.make_node("Conv", ["x", "w1"], ["h"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["h"], ["a"], name="relu"),
             helper.make_node("Conv", ["a", "w2"], ["y"], name="conv2", pads=[1, 1, 1, 1])]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
                  [_w("w1", 4, 3, 3, 3), _w("w2", 4, 4, 3, 3)])


@pytest.mark.parametrize("value", [0.0, 2.5])
def test_constant_and_all_zero_calibration_give_finite_scales(value, tmp_path):
    model = _two_convs()
    samples = [{"x": np.full((1, 3, 8, 8), value, np.float32)} for _ in range(2)]
    variant, report = to_int8(model, PrecisionPlan(default="int8"), samples)
    assert sorted(report.quantized_nodes) == ["conv1", "conv2"]
    inits = {t.name: numpy_helper.to_array(t) for t in variant.graph.initializer}
    scales = [inits[n.input[1]] for n in variant.graph.node if n.op_type == "QuantizeLinear"]
    assert scales and all(np.isfinite(s).all() and (s > 0).all() for s in scales)
    x = {"x": np.random.default_rng(3).random((1, 3, 8, 8), dtype=np.float32)}
    path = tmp_path / "v.onnx"
    onnx.save(variant, str(path))
    require_valid(path, "int8")
    assert np.isfinite(_run(variant, x)[0]).all()


def test_infinite_calibration_values_keep_that_node_float(tmp_path):
    """An Inf in a calibration sample: no finite scale exists for it, so its reader stays float, with a note."""
    nodes = [helper.make_node("Conv", ["x", "w1"], ["y1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["z", "w2"], ["y2"], name="conv2", pads=[1, 1, 1, 1])]
    model = _model(nodes, [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 3, 8, 8]) for n in ("x", "z")],
                   [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4, 8, 8]) for n in ("y1", "y2")],
                   [_w("w1", 4, 3, 3, 3), _w("w2", 4, 3, 3, 3)])
    samples = [{n: np.random.default_rng(i).random((1, 3, 8, 8), dtype=np.float32) for n in ("x", "z")}
               for i in range(3)]
    samples[1]["x"][0, 0, 0, 0] = np.inf
    variant, report = to_int8(model, PrecisionPlan(default="int8"), samples)
    assert report.quantized_nodes == ["conv2"]
    assert "Inf or NaN" in report.skipped["conv1"] and any("Inf or NaN" in n for n in report.notes)
    conv1 = next(n for n in variant.graph.node if n.name == "conv1")
    assert list(conv1.input) == ["x", "w1"]  # float input and float weight
    _check_variant(model, variant, samples[0], tmp_path)


# --------------------------------------------------------------------------------------------- already quantized

def _dynamic_quantized() -> onnx.ModelProto:
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"], name="dql"),
             helper.make_node("ConvInteger", ["xq", "wq", "xz"], ["acc"], name="convint"),
             helper.make_node("Cast", ["acc"], ["accf"], name="cast", to=TensorProto.FLOAT),
             helper.make_node("Mul", ["accf", "xs"], ["y"], name="rescale")]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])],
                  [numpy_helper.from_array(RNG.integers(0, 255, (4, 3, 3, 3)).astype(np.uint8), "wq")])


def _static_qdq() -> onnx.ModelProto:
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q"),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq"),
             helper.make_node("Conv", ["xd", "w"], ["y"], name="conv")]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])],
                  [_c("s", 0.02), _c("z", 128, np.uint8), _w("w", 4, 3, 3, 3)])


@pytest.mark.parametrize("build, ops", [(_dynamic_quantized, ["1 ConvInteger", "1 DynamicQuantizeLinear"]),
                                        (_static_qdq, ["1 DequantizeLinear", "1 QuantizeLinear"])])
def test_an_already_quantized_model_is_refused_with_the_reason(build, ops):
    model = build()
    _run(model, {"x": np.ones((1, 3, 8, 8), np.float32)})  # a model that runs as it is
    with pytest.raises(AlreadyQuantized) as exc:
        to_int8(model, PrecisionPlan(default="int8"), [{"x": np.ones((1, 3, 8, 8), np.float32)}])
    assert isinstance(exc.value, TrtlabError)
    assert "already quantized" in exc.value.message and all(op in exc.value.message for op in ops)
    assert "FP32" in exc.value.fix and "float model" in exc.value.fix
    assert "DAG" not in str(exc.value) and "calibration" not in str(exc.value)


# --------------------------------------------------------------------------------------------- weight types

def test_fp16_weights_get_float16_scales(tmp_path):
    nodes = [helper.make_node("Conv", ["x", "w1"], ["h"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["h"], ["a"], name="relu"),
             helper.make_node("Conv", ["a", "w2"], ["y"], name="conv2", pads=[1, 1, 1, 1])]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, 3, 8, 8])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, 4, 8, 8])],
                   [_w("w1", 4, 3, 3, 3, dtype=np.float16), _w("w2", 4, 4, 3, 3, dtype=np.float16)])
    samples = [{"x": np.random.default_rng(i).random((1, 3, 8, 8)).astype(np.float16)} for i in range(3)]
    variant, report = to_int8(model, PrecisionPlan(default="int8"), samples)
    assert sorted(report.quantized_nodes) == ["conv1", "conv2"]
    assert report.opset_converted == (17, 19)  # float16 scales need opset 19
    inits = {t.name: t for t in variant.graph.initializer}
    qdq = [n for n in variant.graph.node if n.op_type in ("QuantizeLinear", "DequantizeLinear")]
    assert len(qdq) == 6 and all(inits[n.input[1]].data_type == TensorProto.FLOAT16 for n in qdq)
    _check_variant(model, variant, samples[0], tmp_path)


def test_weight_only_int8_weights_are_folded_and_quantized_per_channel(tmp_path):
    """int8 initializer -> Cast -> Mul(scale) -> MatMul (a hand-made weight-only export): the weight is made
    float once, then quantized per channel like any weight; a Gather's table stays in its compact form."""
    w = RNG.standard_normal((D, D)).astype(np.float32)
    scale = (np.abs(w).max(axis=0, keepdims=True) / 127).astype(np.float32)
    wq = np.round(w / scale).astype(np.int8)
    nodes = [helper.make_node("Cast", ["wq"], ["wf"], name="w_cast", to=TensorProto.FLOAT),
             helper.make_node("Mul", ["wf", "ws"], ["w"], name="w_mul"),
             helper.make_node("Cast", ["tq"], ["tf"], name="t_cast", to=TensorProto.FLOAT),
             helper.make_node("Gather", ["tf", "ids"], ["e"], name="emb"),
             helper.make_node("MatMul", ["e", "w"], ["h"], name="proj"),
             helper.make_node("Relu", ["h"], ["y"], name="relu")]
    model = _model(nodes, [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, S])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, S, D])],
                   [numpy_helper.from_array(wq, "wq"), numpy_helper.from_array(scale, "ws"),
                    numpy_helper.from_array(RNG.integers(-127, 127, (30, D)).astype(np.int8), "tq")])
    samples = [{"ids": np.random.default_rng(i).integers(0, 30, (1, S))} for i in range(3)]
    variant, report = to_int8(model, PrecisionPlan(default="int8"), samples)
    assert report.quantized_nodes == ["proj"] and report.weights_folded == 1
    assert set(report.folded_nodes) == {"w_cast", "w_mul"}
    names = {n.name for n in variant.graph.node}
    assert not names & {"w_cast", "w_mul"} and {"t_cast", "emb"} <= names
    proj = next(n for n in variant.graph.node if n.name == "proj")
    weight_dq = next(n for n in variant.graph.node if n.output[0] == proj.input[1])
    inits = {t.name: t for t in variant.graph.initializer}
    assert weight_dq.op_type == "DequantizeLinear" and list(inits[weight_dq.input[1]].dims) == [D]  # per channel
    _check_variant(model, variant, samples[0], tmp_path, min_cos=0.99)


def test_empty_tensors_are_not_written_as_empty_initializers(tmp_path):
    """Opset-11 Resize with empty roi/scales Constants: no empty initializer in the variant (TensorRT warns on
    each), and the variant still runs."""
    empty = numpy_helper.from_array(np.zeros((0,), np.float32))
    nodes = [helper.make_node("Constant", [], ["roi"], name="roi_const", value=empty),
             helper.make_node("Constant", [], ["scales"], name="scales_const", value=empty),
             helper.make_node("Conv", ["x", "w"], ["h"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Resize", ["h", "roi", "scales", "sizes"], ["y"], name="resize", mode="linear")]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 16, 16])],
                   [_w("w", 4, 3, 3, 3), _c("sizes", [1, 4, 16, 16], np.int64)], opset=11)
    samples = [{"x": np.random.default_rng(i).random((1, 3, 8, 8), dtype=np.float32)} for i in range(2)]
    variant, report = to_int8(model, PrecisionPlan(default="int8"), samples)
    assert report.quantized_nodes == ["conv"]
    assert [t.name for t in variant.graph.initializer if 0 in t.dims] == []
    warnings = _parser_warnings(variant, tmp_path)
    if warnings is not None:
        assert not [w for w in warnings if "Empty initializer" in w], warnings
    _check_variant(model, variant, samples[0], tmp_path)


def _parser_warnings(model: onnx.ModelProto, tmp_path) -> list[str] | None:
    """TensorRT for RTX's parser warnings on the model (None when it is not installed)."""
    from app.backends.base import BackendUnavailable
    from app.backends.trt_build import parse_only
    from app.backends.trt_flavour import RTX

    try:
        trt = RTX.import_module()
    except BackendUnavailable:
        return None

    class Recorder(trt.ILogger):
        def __init__(self) -> None:
            trt.ILogger.__init__(self)
            self.warnings: list[str] = []

        def log(self, severity, msg: str) -> None:
            if severity <= trt.ILogger.Severity.WARNING:
                self.warnings.append(msg)

    path = tmp_path / "parse.onnx"
    onnx.save(model, str(path))
    logger = Recorder()
    assert parse_only(str(path), trt=trt, logger=logger) == []
    return logger.warnings


# --------------------------------------------------------------------------------------------- real models

def _survey_one(path, shapes: dict, tmp_path, samples: int = 2) -> str:
    """The INT8 variant of a real model: valid and no new non-finite values ("ok"), or a TrtlabError with a
    reason and a fix ("refused")."""
    from app.core.measure.inputs import InputSource, make_samples, resolve_input_shapes
    from app.core.model.tensors import graph_inputs, value_info_to_tensor_info

    model = onnx.load(str(path))
    infos = [value_info_to_tensor_info(v) for v in graph_inputs(model.graph)]
    resolved = resolve_input_shapes(infos, {k: tuple(v) for k, v in shapes.items()})
    feeds = make_samples(model, infos, resolved, InputSource(seed=0), 1)[0]
    calib = make_samples(model, infos, resolved, InputSource(seed=1), samples)
    try:
        variant, report = to_int8(model, PrecisionPlan(default="int8"), calib, random_calibration=True)
    except TrtlabError as exc:
        assert exc.message and exc.fix, exc  # a refusal says what and what to do
        assert "DAG" not in exc.message
        return "refused"
    out = tmp_path / f"{path.stem}.int8.onnx"
    onnx.save(variant, str(out))
    # A model TensorRT's parser refuses as it is (an op it lacks) is judged by the other gates.
    parser = all(g.passed for g in validate_variant(path))
    require_valid(out, "int8", parser=parser)
    for ref, got in zip(_run(model, feeds), _run(variant, feeds), strict=True):
        ref, got = np.asarray(ref), np.asarray(got)
        if ref.dtype.kind == "f":
            assert np.count_nonzero(~np.isfinite(got)) <= np.count_nonzero(~np.isfinite(ref)), path.name
    return "ok"


# Smaller inputs than the benchmarks' where calibration time is the cost (the graph is the same).
SMALL = {"slanet_table": {"x": (1, 3, 64, 64)},
         "plcmos_v2": {"degraded_audio": (1, 1, 50, 257), "rater_embed": (1, 64)},
         "deepfilternet3_enc": {"feat_erb": (1, 1, 10, 32), "feat_spec": (1, 2, 10, 96)}}


def _shared() -> list[str]:
    from tests.support.shared import shared_models

    return [p.stem for p in shared_models()] or ["u2netp"]


@pytest.mark.parametrize("name", _shared())
def test_every_shared_model_int8_is_valid_or_refused(models_dir, name, tmp_path):
    from tests.support.shared import SHARED_SHAPES

    path = models_dir / f"{name}.onnx"
    if not path.is_file():
        pytest.skip(f"{path.name} is not in {models_dir}")
    assert _survey_one(path, SMALL.get(name) or SHARED_SHAPES.get(name, {}), tmp_path,
                       samples=1 if name == "u2netp" else 2) == "ok"


def _corpus() -> list:
    from tests.support.shared import corpus_shapes

    try:
        return sorted(corpus_shapes().items())
    except Exception:  # noqa: BLE001 - no corpus here: the test below says so
        return []


@pytest.mark.parametrize("path, shapes", _corpus() or [pytest.param(None, None, marks=pytest.mark.skip(
    reason="the extended corpus is not fetched (~/.cache/trtlab/corpus or $TRTLAB_CORPUS)"))],
    ids=lambda v: getattr(v, "parent", None) and v.parent.name)
def test_every_corpus_model_int8_is_valid_or_refused(path, shapes, tmp_path):
    # smart-turn ships static Q/DQ (uint8 activations): already quantized, refused with that reason.
    assert _survey_one(path, shapes, tmp_path) == ("refused" if path.parent.name == "smart-turn" else "ok")


def test_smart_turn_is_refused_as_already_quantized(tmp_path):
    path = next((p for p, _ in _corpus() if p.parent.name == "smart-turn"), None)
    if path is None:
        pytest.skip("the corpus model smart-turn is not fetched")
    with pytest.raises(AlreadyQuantized, match="already quantized .*QuantizeLinear"):
        to_int8(onnx.load(str(path)), PrecisionPlan(default="int8"), [{}])
