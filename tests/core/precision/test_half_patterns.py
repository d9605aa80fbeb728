"""FP16/BF16 variants of the graph patterns real models broke them on: each variant passes every validity gate
(ONNX's full check, ONNX Runtime's load with all optimisations, TensorRT for RTX's parser) and gives the FP32
outputs within a tolerance. Every real model: tests/core/precision/test_half_models.py."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from app.core.model.onnx_walk import constant_tensor
from app.core.model.shapes import infer_shapes
from app.core.precision.plan import PrecisionPlan, model_opsets
from app.core.precision.transforms.half import to_half
from app.core.precision.transforms.half_rules import (
    CAST_REASON,
    ORT_TRANSPOSE_MATMUL_REASON,
    ORT_TRANSPOSE_REASON,
    SHAPE_REASON,
)
from tests.support.half import (
    F16,
    F32,
    assert_close,
    assert_initializers_hold_their_data,
    half_variant,
    model_of,
    run_variant,
    vi,
    weight,
)


# ----------------------------------------------------------------------------------------------- patterns
@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_a_tensor_of_unknown_type_read_by_a_half_node_is_cast(tmp_path, precision):
    """A custom-domain op's output has no type ONNX inference knows (the exporter declared the Add's, not its);
    the half Add reading it still gets a Cast (before, only tensors inference called float32 did, and the Add
    mixed float with float16)."""
    nodes = [helper.make_node("Gelu", ["x"], ["g"], domain="com.microsoft", name="gelu"),
             helper.make_node("Add", ["g", "x"], ["s"], name="add"),
             helper.make_node("Mul", ["s", "w"], ["y"], name="mul")]
    m = model_of(nodes, [vi("x", F32, [2, 8])], [vi("y", F32, [2, 8])], [weight("w", [2, 8])])
    m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    m.graph.value_info.append(vi("s", F32, [2, 8]))
    variant, report, path = half_variant(m, precision, tmp_path)
    assert report.half_nodes == ["add", "mul"]
    assert_close(m, path, {"x": np.random.default_rng(1).standard_normal((2, 8)).astype(np.float32)}, precision)


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_constant_of_shape_feeding_a_half_add(tmp_path, precision):
    """A YOLO head: a float ConstantOfShape (kept FP32: its type is its attribute's) added to a half tensor."""
    fill = numpy_helper.from_array(np.array([0.75], np.float32), "value")
    nodes = [helper.make_node("Shape", ["x"], ["shape"], name="shape"),
             helper.make_node("ConstantOfShape", ["shape"], ["c"], value=fill, name="fill"),
             helper.make_node("Mul", ["x", "w"], ["xw"], name="mul"),
             helper.make_node("Add", ["xw", "c"], ["y"], name="add")]
    m = model_of(nodes, [vi("x", F32, [1, 4, 6])], [vi("y", F32, [1, 4, 6])], [weight("w", [1, 4, 6])])
    variant, report, path = half_variant(m, precision, tmp_path)
    assert set(report.half_nodes) == {"mul", "add"} and "fill" in report.kept_fp32
    add = next(n for n in variant.graph.node if n.name == "add")
    assert add.input[1] != "c"  # reads a Cast of the FP32 fill
    assert_close(m, path, {"x": np.random.default_rng(2).standard_normal((1, 4, 6)).astype(np.float32)}, precision)


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_an_lstm_state_that_is_a_graph_output_and_read_inside(tmp_path, precision):
    """A CRNN recogniser: the LSTM's last state is a graph output and also feeds a Gemm. The graph output keeps
    float32; the Gemm reads the half state (fp16) or a Cast of it (bf16: LSTM has no bf16 kernel)."""
    hidden, feat = 6, 4
    nodes = [helper.make_node("LSTM", ["x", "W", "R", "B"], ["seq", "h_last"], hidden_size=hidden, name="lstm"),
             helper.make_node("Squeeze", ["h_last", "axes0"], ["h2"], name="squeeze"),
             helper.make_node("Gemm", ["h2", "G", "gb"], ["y"], name="gemm")]
    inits = [weight("W", [1, 4 * hidden, feat], 1), weight("R", [1, 4 * hidden, hidden], 2),
             weight("B", [1, 8 * hidden], 3), numpy_helper.from_array(np.array([0], np.int64), "axes0"),
             weight("G", [hidden, 3], 4), weight("gb", [3], 5)]
    m = model_of(nodes, [vi("x", F32, [5, 1, feat])],
                 [vi("h_last", F32, [1, 1, hidden]), vi("y", F32, [1, 3]), vi("seq", F32, [5, 1, 1, hidden])],
                 inits)
    variant, report, path = half_variant(m, precision, tmp_path)
    assert "gemm" in report.half_nodes
    assert [o.type.tensor_type.elem_type for o in variant.graph.output] == [F32, F32, F32]
    assert_close(m, path, {"x": np.random.default_rng(3).standard_normal((5, 1, feat)).astype(np.float32)},
                 precision)


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_the_model_s_own_cast_keeps_its_type_before_a_bicubic_resize(tmp_path, precision):
    """A ViT's position embedding: Cast(to=FLOAT) before a bicubic Resize. The Cast keeps `to`=FLOAT (it
    became FLOAT16 before, and ONNX Runtime's optimiser then failed in the Resize)."""
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    nodes = [helper.make_node("Mul", ["x", "w"], ["xw"], name="mul"),
             helper.make_node("Cast", ["xw"], ["xf"], to=F32, name="cast"),
             helper.make_node("Resize", ["xf", "", "scales"], ["r"], mode="cubic", name="resize"),
             helper.make_node("Add", ["r", "r"], ["y"], name="add")]
    m = model_of(nodes, [vi("x", F32, [1, 2, 4, 4])], [vi("y", F32, [1, 2, 8, 8])],
                 [weight("w", [1, 2, 4, 4]), scales])
    variant, report, path = half_variant(m, precision, tmp_path)
    cast = next(n for n in variant.graph.node if n.name == "cast")
    assert [a.i for a in cast.attribute if a.name == "to"] == [F32]
    assert report.kept_fp32["cast"] == CAST_REASON and "resize" in report.kept_fp32
    assert set(report.half_nodes) == {"mul", "add"}
    assert_close(m, path, {"x": np.random.default_rng(4).standard_normal((1, 2, 4, 4)).astype(np.float32)},
                 precision)


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_a_constant_node_that_is_a_graph_output_and_a_weight(tmp_path, precision):
    """A Constant node's value is a graph output (it stays a node, FP32) and a half Mul's weight."""
    value = numpy_helper.from_array(np.linspace(-2, 2, 8, dtype=np.float32).reshape(1, 8), "cv")
    nodes = [helper.make_node("Constant", [], ["k"], value=value, name="const"),
             helper.make_node("Mul", ["x", "k"], ["y"], name="mul")]
    m = model_of(nodes, [vi("x", F32, [1, 8])], [vi("y", F32, [1, 8]), vi("k", F32, [1, 8])])
    variant, report, path = half_variant(m, precision, tmp_path)
    assert report.half_nodes == ["mul"]
    assert_close(m, path, {"x": np.random.default_rng(5).standard_normal((1, 8)).astype(np.float32)}, precision)


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_float_math_that_computes_a_resize_size_stays_fp32(tmp_path, precision):
    """Resize's size computed in float: floor(8 * 2.9999) = 23 in FP32, but 2.9999 is 3.0 in FP16 and BF16 (24).
    The Mul and Floor stay FP32 ("computes a shape") and the output keeps its shape; the plan table agrees."""
    k = numpy_helper.from_array(np.array([2.9999], np.float32), "k")
    starts, ends = (numpy_helper.from_array(np.array([v], np.int64), n) for n, v in (("starts", 2), ("ends", 4)))
    head = numpy_helper.from_array(np.array([1, 2], np.int64), "head")
    nodes = [helper.make_node("Shape", ["x"], ["shape"], name="shape"),
             helper.make_node("Slice", ["shape", "starts", "ends"], ["hw"], name="slice"),
             helper.make_node("Cast", ["hw"], ["hwf"], to=F32, name="to_float"),
             helper.make_node("Mul", ["hwf", "k"], ["scaled"], name="scale"),
             helper.make_node("Floor", ["scaled"], ["floored"], name="floor"),
             helper.make_node("Cast", ["floored"], ["hwi"], to=TensorProto.INT64, name="to_int"),
             helper.make_node("Concat", ["head", "hwi"], ["sizes"], axis=0, name="sizes"),
             helper.make_node("Relu", ["x"], ["xr"], name="relu"),
             helper.make_node("Resize", ["xr", "", "", "sizes"], ["y"], mode="nearest", name="resize")]
    m = model_of(nodes, [vi("x", F32, [1, 2, 8, 8])], [vi("y", F32, [1, 2, None, None])], [k, starts, ends, head])
    variant, report, path = half_variant(m, precision, tmp_path)
    assert report.kept_fp32["scale"] == SHAPE_REASON and report.kept_fp32["floor"] == SHAPE_REASON
    assert report.half_nodes == ["relu", "resize"]  # a nearest Resize converts; its sizes stay exact integers
    rows = {r.key: r for r in PrecisionPlan(default=precision).resolve(m.graph, infer_shapes(m), model_opsets(m))}
    assert rows["scale"].kept and rows["scale"].reason == SHAPE_REASON and rows["relu"].precision == precision
    x = np.random.default_rng(6).standard_normal((1, 2, 8, 8)).astype(np.float32)
    (y,) = run_variant(path, {"x": x})
    assert y.shape == (1, 2, 23, 23)
    assert_close(m, path, {"x": x}, precision)


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_an_if_body_reading_half_tensors_and_shared_weights(tmp_path, precision):
    """A VAD's If: its branches read a tensor the outer graph computes in half and a weight the outer graph
    also uses. The bodies stay FP32 and read FP32 copies; the report names the If and counts its nodes."""
    then_g = helper.make_graph([helper.make_node("Add", ["h", "w"], ["t_out"], name="then_add")], "then", [],
                               [vi("t_out", F32, [2, 4])])
    else_g = helper.make_graph([helper.make_node("Mul", ["h", "w"], ["e_out"], name="else_mul")], "else", [],
                               [vi("e_out", F32, [2, 4])])
    nodes = [helper.make_node("MatMul", ["x", "M"], ["h"], name="matmul"),
             helper.make_node("Add", ["h", "w"], ["hw"], name="outer_add"),
             helper.make_node("If", ["cond"], ["branch"], then_branch=then_g, else_branch=else_g, name="if"),
             helper.make_node("Add", ["branch", "hw"], ["y"], name="join")]
    m = model_of(nodes, [vi("x", F32, [2, 3]), vi("cond", TensorProto.BOOL, [])], [vi("y", F32, [2, 4])],
                 [weight("M", [3, 4]), weight("w", [2, 4], 1)])
    variant, report, path = half_variant(m, precision, tmp_path)
    assert {"matmul", "outer_add", "join"} <= set(report.half_nodes)
    assert report.control_flow == {"if": 2} and report.subgraph_nodes_untouched == 2
    assert "body" in report.kept_fp32["if"] and report.to_json()["subgraph_nodes_untouched"] == 2
    w = next(t for t in variant.graph.initializer if t.name == "w")
    assert w.data_type == F32  # a body reads it: it keeps its type
    x = np.random.default_rng(7).standard_normal((2, 3)).astype(np.float32)
    for cond in (True, False):
        assert_close(m, path, {"x": x, "cond": np.array(cond)}, precision)


def test_a_transpose_before_matmul_that_crashes_onnx_runtime_stays_fp32(tmp_path):
    """A BiGRU tagger's time-major output: an FP16 Transpose(perm=[1, 0, 2]) read by a MatMul makes ONNX
    Runtime's optimiser crash (segmentation fault) at ORT_ENABLE_ALL. It stays FP32, and so does the MatMul: with
    an FP16 MatMul after it the CUDA provider refused the session (H200, onnxruntime-gpu 1.31.1)."""
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Transpose", ["r"], ["t"], perm=[1, 0, 2], name="transpose"),
             helper.make_node("MatMul", ["t", "w"], ["y"], name="matmul")]
    m = model_of(nodes, [vi("x", F32, ["T", 1, 8])], [vi("y", F32, [1, "T", 5])], [weight("w", [8, 5])], opset=13)
    variant, report, path = half_variant(m, "fp16", tmp_path)
    assert report.kept_fp32 == {"transpose": ORT_TRANSPOSE_REASON, "matmul": ORT_TRANSPOSE_MATMUL_REASON}
    assert report.half_nodes == ["relu"]
    assert_close(m, path, {"x": np.random.default_rng(8).standard_normal((6, 1, 8)).astype(np.float32)}, "fp16")


def test_a_scatter_that_accumulates_stays_fp32(tmp_path):
    """ScatterElements(reduction='add') sums: it stays FP32 (ONNX Runtime's CPU provider has no FP16 kernel for
    it and failed at run time on a molecular model's variant)."""
    idx = numpy_helper.from_array(np.array([[0, 1, 0, 1]], np.int64), "idx")
    nodes = [helper.make_node("Mul", ["x", "x"], ["sq"], name="square"),
             helper.make_node("ScatterElements", ["base", "idx", "sq"], ["y"], axis=1, reduction="add",
                              name="scatter")]
    m = model_of(nodes, [vi("x", F32, [1, 4])], [vi("y", F32, [1, 2])],
                 [idx, numpy_helper.from_array(np.zeros((1, 2), np.float32), "base")])
    variant, report, path = half_variant(m, "fp16", tmp_path)
    assert "accumulates" in report.kept_fp32["scatter"] and report.half_nodes == ["square"]
    assert_close(m, path, {"x": np.array([[1.0, 2.0, 3.0, 4.0]], np.float32)}, "fp16")


def test_empty_constants_are_not_written_as_initializers(model_paths):
    """u2netp's Resizes read empty roi/scales Constants; as initializers TensorRT's parser warned 76 times."""
    model = onnx.load(model_paths["u2netp"])
    empty = {n.output[0] for n in model.graph.node
             if (t := constant_tensor(n)) is not None and 0 in t.dims}
    assert empty
    for precision in ("fp16", "bf16"):
        variant, _ = to_half(model, PrecisionPlan(default=precision), precision)
        assert not any(0 in t.dims for t in variant.graph.initializer)
        assert_initializers_hold_their_data(variant, model)
        assert empty <= {n.output[0] for n in variant.graph.node if n.op_type == "Constant"}


def _qdq_model(opset: int) -> onnx.ModelProto:
    """x → Relu → Q → DQ → MatMul(DQ(int8 weights)) → y: a quantized layer as exporters write it."""
    wq = numpy_helper.from_array(np.random.default_rng(3).integers(-100, 100, (8, 5)).astype(np.int8), "wq")
    inits = [wq, numpy_helper.from_array(np.array(0.01, np.float32), "ws"),
             numpy_helper.from_array(np.array(0.02, np.float32), "xs"),
             numpy_helper.from_array(np.array(0, np.int8), "zp")]
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("QuantizeLinear", ["r", "xs", "zp"], ["rq"], name="q"),
             helper.make_node("DequantizeLinear", ["rq", "xs", "zp"], ["rd"], name="dq"),
             helper.make_node("DequantizeLinear", ["wq", "ws"], ["w"], name="dq_w"),
             helper.make_node("MatMul", ["rd", "w"], ["y"], name="matmul")]
    return model_of(nodes, [vi("x", F32, [2, 8])], [vi("y", F32, [2, 5])], inits, opset=opset)


def test_qdq_nodes_follow_their_data_into_fp16_from_opset_19(tmp_path):
    """From opset 19 Q/DQ take FP16 data and scales: no Cast on either side of each pair (smart-turn had 192)."""
    model = _qdq_model(19)
    variant, report, path = half_variant(model, "fp16", tmp_path)
    assert {"relu", "matmul"} <= set(report.half_nodes) and report.qdq_half == 3  # Q/DQ are no plan rows
    assert report.casts_added == 2  # the input and the output only
    scales = {t.name: t.data_type for t in variant.graph.initializer}
    assert scales["xs"] == F16 and scales["ws"] == F16 and scales["wq"] == TensorProto.INT8
    x = np.random.default_rng(4).uniform(0, 2, (2, 8)).astype(np.float32)
    assert_close(model, path, {"x": x}, "fp16")
    # Below 19 they keep FP32 scales, with Casts around them.
    (tmp_path / "17").mkdir()
    _, old, _ = half_variant(_qdq_model(17), "fp16", tmp_path / "17")
    assert old.qdq_half == 0 and old.casts_added > 2


def test_a_qdq_model_is_raised_to_opset_19_for_fp16(tmp_path):
    from app.core.precision import PrecisionPlan, build_variant

    src = tmp_path / "qdq17.onnx"
    onnx.save(_qdq_model(17), str(src))
    rng = np.random.default_rng(5)
    samples = [{"x": rng.uniform(0, 2, (2, 8)).astype(np.float32)} for _ in range(2)]
    v = build_variant(src, PrecisionPlan(default="fp16"), calib=lambda: (samples, False), cache_dir=tmp_path / "c")
    assert any("opset raised from 17 to 19" in n and "QuantizeLinear/DequantizeLinear" in n for n in v.notes)
    assert v.report["half"]["casts_added"] == 2

