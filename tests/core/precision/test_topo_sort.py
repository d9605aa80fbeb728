"""Variants come out in dependency order though the model's own order is not one (ONNX Runtime sorts for itself;
the ONNX checker does not): an SVTRv2 recognizer's and an openWakeWord model's INT8 variants failed the checker."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from app.core.precision import PrecisionPlan, build_variant
from app.core.precision.transforms.fold import topo_sort


def _unsorted() -> onnx.ModelProto:
    """Conv → Relu → Conv → If(Relu | Neg), written last node first."""
    then_g = helper.make_graph([helper.make_node("Relu", ["c2"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, [1, 4, 8, 8])])
    else_g = helper.make_graph([helper.make_node("Neg", ["c2"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, [1, 4, 8, 8])])
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
             helper.make_node("Relu", ["c1"], ["r"], name="relu"),
             helper.make_node("Conv", ["r", "w2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
             helper.make_node("If", ["flag"], ["y"], then_branch=then_g, else_branch=else_g, name="branch")]
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w1"),
             numpy_helper.from_array(rng.standard_normal((4, 4, 3, 3)).astype(np.float32), "w2")]
    g = helper.make_graph(list(reversed(nodes)), "unsorted",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8]),
                           helper.make_tensor_value_info("flag", TensorProto.BOOL, [])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_topo_sort_orders_the_nodes_and_keeps_a_sorted_graph_as_it_is():
    m = _unsorted()
    assert topo_sort(m.graph) is True
    assert [n.name for n in m.graph.node] == ["conv1", "relu", "conv2", "branch"]
    onnx.checker.check_model(m, full_check=True)
    assert topo_sort(m.graph) is False  # already in order: nothing moves


def test_an_int8_variant_of_an_unsorted_model_is_valid(tmp_path):
    src = tmp_path / "unsorted.onnx"
    onnx.save(_unsorted(), str(src))
    rng = np.random.default_rng(1)
    samples = [{"x": rng.standard_normal((1, 3, 8, 8)).astype(np.float32), "flag": np.array(True)}
               for _ in range(4)]
    v = build_variant(src, PrecisionPlan(default="int8"), calib=lambda: (samples, False), cache_dir=tmp_path / "c")
    onnx.checker.check_model(onnx.load(v.path), full_check=True)
    assert any("dependency order" in n for n in v.notes)
