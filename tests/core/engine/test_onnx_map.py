"""Engine layers mapped onto the ONNX graph: exact and loose names, Myelin ranges, local functions, precisions."""

from __future__ import annotations

from onnx import TensorProto, helper

from app.core.engine.engine_layers import EngineLayer
from app.core.engine.inspector_json import parse_engine_info, parse_layer
from app.core.engine.onnx_map import map_to_onnx
from app.core.engine.plan_check import plan_mismatches
from app.core.precision.plan import node_keys
from tests.core.engine.inspector_fixtures import (
    CONV1,
    CONV2,
    GAP,
    MYELIN,
    QUANT,
    REFORMAT_GAP,
    REFORMAT_IN,
    SHUFFLE,
    STEM,
    fixture_graph,
    fixture_plan,
    load,
)


def test_map_10x_fixture_onto_the_graph():
    graph = fixture_graph()
    keys = node_keys(graph)
    assert keys[12] == "Transpose:tr_out"
    m = map_to_onnx(parse_engine_info(load("engine_10x_detailed.json")), graph)
    assert m.layers["/stem/conv/Conv"] == [STEM] and m.layers["/stem/act/Relu"] == [STEM]
    assert m.layers["/blk/conv1/input_quantizer/QuantizeLinear"] == [QUANT]
    assert m.layers["/blk/conv2/input_quantizer/QuantizeLinear"] == [CONV1]
    assert m.layers["Transpose:tr_out"] == [SHUFFLE]
    assert m.nodes[CONV2] == ["/blk/conv2/input_quantizer/DequantizeLinear",
                              "/blk/conv2/weight_quantizer/DequantizeLinear", "/blk/conv2/Conv", "/blk/Add"]
    assert m.nodes[MYELIN] == ["/head/Flatten", "/head/fc/MatMul", "/head/fc/Add", "/head/Softmax"]
    assert m.unmapped == [REFORMAT_IN, REFORMAT_GAP]
    assert m.missing == ["/head/Identity"]
    assert m.unknown == {} and m.approximate == {}
    assert m.precision == {
        "/stem/conv/Conv": "fp16", "/stem/act/Relu": "fp16",
        "/blk/conv1/input_quantizer/QuantizeLinear": "fp16",
        "/blk/conv1/input_quantizer/DequantizeLinear": "int8", "/blk/conv1/weight_quantizer/DequantizeLinear": "int8",
        "/blk/conv1/Conv": "int8", "/blk/act1/Relu": "int8", "/blk/conv2/input_quantizer/QuantizeLinear": "int8",
        "/blk/conv2/input_quantizer/DequantizeLinear": "int8", "/blk/conv2/weight_quantizer/DequantizeLinear": "int8",
        "/blk/conv2/Conv": "int8", "/blk/Add": "int8", "Transpose:tr_out": "fp16", "/head/GlobalAveragePool": "fp32",
        "/head/Flatten": "fp32", "/head/fc/MatMul": "fp32", "/head/fc/Add": "fp32", "/head/Softmax": "fp32"}
    assert list(m.layers) == [k for k in keys if k != "/head/Identity"]   # graph order


def test_map_11x_fixture_expands_the_myelin_range():
    graph = fixture_graph()
    info = parse_engine_info(load("engine_11x_detailed.json"))
    m = map_to_onnx(info, graph)
    ref = map_to_onnx(parse_engine_info(load("engine_10x_detailed.json")), graph)
    assert m.precision == ref.precision and m.layers == ref.layers and m.missing == ["/head/Identity"]
    # The ends are named; the two nodes between them are inferred from graph order.
    assert m.approximate == {MYELIN: ["/head/fc/MatMul", "/head/fc/Add"]}
    # The second optimization profile maps on its own.
    p1 = map_to_onnx(info, graph, profile=1)
    assert p1.layers == {"/stem/conv/Conv": [STEM + " [profile 1]"], "/stem/act/Relu": [STEM + " [profile 1]"],
                         "/head/GlobalAveragePool": [GAP + " [profile 1]"]}


def test_map_from_names_only_and_from_keys():
    graph = fixture_graph()
    names_only = parse_engine_info(load("engine_10x_layer_names.json"))
    m = map_to_onnx(names_only, graph)
    assert set(m.precision.values()) == {"unknown"}
    assert m.layers["/head/fc/Add"] == [MYELIN] and m.layers["Transpose:tr_out"] == [SHUFFLE]
    # Without metadata, the Dequantize/Quantize nodes the name does not list are not recovered.
    assert "/blk/conv1/input_quantizer/DequantizeLinear" in m.missing
    assert plan_mismatches(m.precision, {r.key: r.precision for r in fixture_plan().resolve(graph)}) == []
    # Node keys alone are enough for names, keys and node_of_<output>.
    by_keys = map_to_onnx(parse_engine_info(load("engine_10x_detailed.json")), node_keys(graph))
    assert by_keys.layers == map_to_onnx(parse_engine_info(load("engine_10x_detailed.json")), graph).layers


def test_map_loose_names_unknown_names_and_local_functions():
    n = helper.make_node
    body = helper.make_graph([n("Relu", ["a"], ["b"], name="then_relu")], "then", [],
                             [helper.make_tensor_value_info("b", TensorProto.FLOAT, [1])])
    graph = helper.make_graph([
        n("MatMul", ["x", "w"], ["mm"], name="/model.10/attn/MatMul"),
        n("Gelu", ["mm"], ["g"], name="/enc/gelu", domain="local"),
        n("Gelu", ["g"], ["g2"], name="/enc/gelu_1", domain="local"),
        n("If", ["c"], ["b"], name="/cond/If", then_branch=body, else_branch=body),
        n("Softmax", ["b"], ["y"], name="/head/Softmax"),
    ], "g", [], [])
    layers = [
        parse_layer({"Name": "/model_10/attn/MatMul_myl3_1", "LayerType": "gemm",
                     "Inputs": [{"Name": "x", "Format/Datatype": "Half"}]}),
        parse_layer({"Name": "fused_gelu", "LayerType": "kgen", "Inputs": [{"Name": "mm", "Format/Datatype": "Half"}],
                     "Metadata": "[ONNX Layer: inner/Erf | /enc/gelu (Gelu)]"}),
        parse_layer({"Name": "relu_in_if", "Metadata": "[ONNX Layer: then_relu]",
                     "Inputs": [{"Name": "a", "Format/Datatype": "Float"}]}),
        parse_layer({"Name": "/head/Softmax_1", "Inputs": [{"Name": "b", "Format/Datatype": "Float"}]}),
        parse_layer({"Name": "model.0.conv.weight + /gone/Conv",
                     "Inputs": [{"Name": "b", "Format/Datatype": "Float"}]}),
        parse_layer({"Name": "gelu_by_function_name", "Metadata": "[ONNX Layer: inner/Tanh | Local Function: Gelu]"}),
        parse_layer("__myl_Move_myl2_22"),
    ]
    m = map_to_onnx(layers, graph)
    assert m.layers == {"/model.10/attn/MatMul": ["/model_10/attn/MatMul_myl3_1"], "/enc/gelu": ["fused_gelu"],
                        "/cond/If": ["relu_in_if"], "/head/Softmax": ["/head/Softmax_1"]}
    assert m.approximate == {"/model_10/attn/MatMul_myl3_1": ["/model.10/attn/MatMul"], "fused_gelu": ["/enc/gelu"],
                             "relu_in_if": ["/cond/If"], "/head/Softmax_1": ["/head/Softmax"]}
    # Two nodes call Gelu, so a bare function name cannot pick the call site.
    assert m.unknown == {"model.0.conv.weight + /gone/Conv": ["model.0.conv.weight", "/gone/Conv"],
                         "gelu_by_function_name": ["inner/Tanh"]}
    assert m.unmapped == ["model.0.conv.weight + /gone/Conv", "gelu_by_function_name", "__myl_Move_myl2_22"]
    assert m.precision == {"/model.10/attn/MatMul": "fp16", "/enc/gelu": "fp16", "/cond/If": "fp32",
                           "/head/Softmax": "fp32"}
    assert m.missing == ["/enc/gelu_1"]


def test_node_with_several_layers_combines_their_precisions():
    graph = helper.make_graph([helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], name="/ln")], "g", [], [])
    layers = [
        EngineLayer("/ln", metadata="[ONNX Layer: /ln]", precision="fp16"),
        EngineLayer("/ln_2", metadata="[ONNX Layer: /ln]", precision="int64"),   # a shape helper
        EngineLayer("/ln_3", metadata="[ONNX Layer: /ln]", precision="unknown"),
    ]
    assert map_to_onnx(layers, graph).precision == {"/ln": "fp16"}
    layers.append(EngineLayer("/ln_4", metadata="[ONNX Layer: /ln]", precision="fp32"))
    m = map_to_onnx(layers, graph)
    assert m.precision == {"/ln": "mixed"} and m.layers["/ln"] == ["/ln", "/ln_2", "/ln_3", "/ln_4"]
