"""Engine-inspector JSON (10.x and 11.x), ONNX origins, per-layer times and plan checks, on hand-written fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from onnx import TensorProto, helper

from app.core.engine.inspect import (
    EngineLayer,
    InspectError,
    Mismatch,
    TensorDesc,
    TimingRecorder,
    map_to_onnx,
    normalize_dtype,
    onnx_node_times,
    onnx_nodes_of,
    parse_engine_info,
    parse_layer,
    parse_metadata,
    per_layer_times,
    plan_mismatches,
    ran_precision,
)
from app.core.errors import TrtlabError
from app.core.precision import PrecisionPlan, node_keys

FIXTURES = Path(__file__).parent / "fixtures"

STEM = "/stem/conv/Conv + /stem/act/Relu"
QUANT = "/blk/conv1/input_quantizer/QuantizeLinear"
CONV1 = "/blk/conv1/weight_quantizer/DequantizeLinear + /blk/conv1/Conv + /blk/act1/Relu"
CONV2 = "/blk/conv2/weight_quantizer/DequantizeLinear + /blk/conv2/Conv + /blk/Add"
SHUFFLE = "node_of_tr_out"
GAP = "/head/GlobalAveragePool"
MYELIN = "{ForeignNode[/head/Flatten.../head/Softmax]}"
REFORMAT_IN = "Reformatting CopyNode for Input Tensor 0 to /stem/conv/Conv + /stem/act/Relu"
REFORMAT_GAP = "Reformatting CopyNode for Input Tensor 0 to /head/GlobalAveragePool"
LAYER_ORDER = [REFORMAT_IN, STEM, QUANT, CONV1, CONV2, SHUFFLE, REFORMAT_GAP, GAP, MYELIN]
PRECISIONS = ["fp32", "fp16", "fp16", "int8", "int8", "fp16", "fp16", "fp32", "fp32"]


def load(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def fixture_graph():
    """The ONNX graph the fixtures were written for (see fixtures/README.md); node 12 is unnamed."""
    n = helper.make_node
    nodes = [
        n("Conv", ["images", "stem.w", "stem.b"], ["/stem/conv/Conv_output_0"], name="/stem/conv/Conv"),
        n("Relu", ["/stem/conv/Conv_output_0"], ["/stem/act/Relu_output_0"], name="/stem/act/Relu"),
        n("QuantizeLinear", ["/stem/act/Relu_output_0", "s1", "z1"], ["q1"],
          name="/blk/conv1/input_quantizer/QuantizeLinear"),
        n("DequantizeLinear", ["q1", "s1", "z1"], ["dq1"], name="/blk/conv1/input_quantizer/DequantizeLinear"),
        n("DequantizeLinear", ["w1.q", "w1.s", "w1.z"], ["w1"], name="/blk/conv1/weight_quantizer/DequantizeLinear"),
        n("Conv", ["dq1", "w1", "b1"], ["/blk/conv1/Conv_output_0"], name="/blk/conv1/Conv"),
        n("Relu", ["/blk/conv1/Conv_output_0"], ["/blk/act1/Relu_output_0"], name="/blk/act1/Relu"),
        n("QuantizeLinear", ["/blk/act1/Relu_output_0", "s2", "z2"], ["q2"],
          name="/blk/conv2/input_quantizer/QuantizeLinear"),
        n("DequantizeLinear", ["q2", "s2", "z2"], ["dq2"], name="/blk/conv2/input_quantizer/DequantizeLinear"),
        n("DequantizeLinear", ["w2.q", "w2.s", "w2.z"], ["w2"], name="/blk/conv2/weight_quantizer/DequantizeLinear"),
        n("Conv", ["dq2", "w2", "b2"], ["/blk/conv2/Conv_output_0"], name="/blk/conv2/Conv"),
        n("Add", ["/blk/conv2/Conv_output_0", "/stem/act/Relu_output_0"], ["/blk/Add_output_0"], name="/blk/Add"),
        n("Transpose", ["/blk/Add_output_0"], ["tr_out"], perm=[0, 1, 3, 2]),
        n("GlobalAveragePool", ["tr_out"], ["/head/GlobalAveragePool_output_0"], name="/head/GlobalAveragePool"),
        n("Flatten", ["/head/GlobalAveragePool_output_0"], ["/head/Flatten_output_0"], name="/head/Flatten"),
        n("MatMul", ["/head/Flatten_output_0", "fc.w"], ["/head/fc/MatMul_output_0"], name="/head/fc/MatMul"),
        n("Add", ["/head/fc/MatMul_output_0", "fc.b"], ["/head/fc/Add_output_0"], name="/head/fc/Add"),
        n("Softmax", ["/head/fc/Add_output_0"], ["/head/Softmax_output_0"], name="/head/Softmax"),
        n("Identity", ["/head/Softmax_output_0"], ["probs"], name="/head/Identity"),
    ]
    return helper.make_graph(nodes, "fixture", [helper.make_tensor_value_info("images", TensorProto.FLOAT,
                                                                              [1, 3, 32, 32])],
                             [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 10])])


def fixture_plan() -> PrecisionPlan:
    return PrecisionPlan(default="fp16", overrides={"/blk/conv1/Conv": "int8", "/blk/conv2/Conv": "int8",
                                                    "/head/Softmax": "fp32"})


# ============================================================================================== parsing

def test_10x_detailed_layers_tensors_and_precisions():
    info = parse_engine_info(load("engine_10x_detailed.json"))
    assert (info.schema, info.verbosity, info.notes) == ("10.x", "detailed", [])
    assert [t.name for t in info.io] == ["images", "probs"] and all(t.mode == "" for t in info.io)
    assert [layer.name for layer in info.layers] == LAYER_ORDER
    assert [layer.precision for layer in info.layers] == PRECISIONS
    assert [layer.kind for layer in info.layers] == ["reformat", "compute", "compute", "compute", "compute",
                                                     "compute", "reformat", "compute", "compute"]
    stem = info.layers[1]
    assert stem.type == "CaskConvolution" and stem.parameter_type == "Convolution"
    assert stem.tactic.startswith("sm80_xmma_fprop_implicit_gemm_f16f16")
    assert stem.inputs == (TensorDesc("Reformatted Input Tensor 0 to /stem/conv/Conv + /stem/act/Relu", "fp16",
                                      "Channel major FP16 format where channel % 8 == 0", (1, 3, 32, 32), "Device"),)
    assert stem.outputs[0].dims == (1, 16, 32, 32)
    assert stem.metadata == "[ONNX Layer: /stem/conv/Conv]\x1e[ONNX Layer: /stem/act/Relu]"
    assert stem.onnx_nodes == ("/stem/conv/Conv", "/stem/act/Relu")
    assert stem.raw["OutMaps"] == 16
    conv2 = info.layers[4]
    assert [t.dtype for t in conv2.inputs] == ["int8", "fp16"] and conv2.outputs[0].dtype == "fp16"
    assert conv2.onnx_nodes == ("/blk/conv2/input_quantizer/DequantizeLinear",
                                "/blk/conv2/weight_quantizer/DequantizeLinear", "/blk/conv2/Conv", "/blk/Add")
    myelin = info.layers[-1]
    assert myelin.type == "Myelin" and myelin.tactic == "__myl_MoveFcAddSoftmax"
    assert myelin.onnx_nodes == ("/head/Flatten", "/head/fc/MatMul", "/head/fc/Add", "/head/Softmax")
    assert myelin.ranges == ()   # the metadata lists the members: no range to guess
    assert info.layers[0].onnx_nodes == () and not info.layers[0].maps_to_onnx


def test_11x_schema_gives_the_same_layers_and_io_details():
    old = parse_engine_info(load("engine_10x_detailed.json"))
    new = parse_engine_info(json.loads(load("engine_11x_detailed.json")))   # a dict works as well as a string
    assert (new.schema, new.verbosity) == ("11.x", "detailed")
    assert new.profiles == [0, 1]
    layers = new.profile_layers(0)
    assert [x.name for x in layers] == LAYER_ORDER
    assert [x.precision for x in layers] == PRECISIONS
    for a, b in zip(old.layers, layers, strict=True):
        assert [t.dtype for t in a.inputs + a.outputs] == [t.dtype for t in b.inputs + b.outputs]
        assert [t.dims for t in a.inputs + a.outputs] == [t.dims for t in b.inputs + b.outputs]
    assert layers[1].inputs[0].format == "Channel major FP16 format where channel % 8 == 0 (kHWC8)"
    # The 11.x Myelin layer carries no metadata: its nodes come from the name, as a range.
    assert layers[-1].metadata == "" and layers[-1].ranges == (("/head/Flatten", "/head/Softmax"),)
    assert layers[-1].onnx_nodes == ("/head/Flatten", "/head/Softmax")
    second = new.profile_layers(1)
    assert [x.base_name for x in second] == [STEM, GAP] and [x.precision for x in second] == ["fp16", "fp32"]
    assert second[0].onnx_nodes == ("/stem/conv/Conv", "/stem/act/Relu")
    images, probs = new.io
    assert (images.name, images.mode, images.dtype, images.dims, images.location) == (
        "images", "input", "fp32", (-1, 3, 32, 32), "device")
    assert [(p.min, p.opt, p.max) for p in images.profiles] == [
        ((1, 3, 32, 32), (1, 3, 32, 32), (1, 3, 32, 32)), ((2, 3, 32, 32), (4, 3, 32, 32), (8, 3, 32, 32))]
    assert images.profiles[0].format == "Row major linear FP32 format (kLINEAR)" and not images.shape_io
    assert new.inputs == [images] and new.outputs == [probs]


def test_layer_names_only_and_none():
    info = parse_engine_info(load("engine_10x_layer_names.json"))
    assert (info.schema, info.verbosity) == ("10.x", "layer_names_only")
    assert [x.precision for x in info.layers] == ["unknown"] * 9
    assert "ProfilingVerbosity.DETAILED" in info.notes[0]
    by_name = {x.name: x for x in info.layers}
    assert by_name[STEM].onnx_nodes == ("/stem/conv/Conv", "/stem/act/Relu")
    assert by_name[CONV1].onnx_nodes == ("/blk/conv1/weight_quantizer/DequantizeLinear", "/blk/conv1/Conv",
                                         "/blk/act1/Relu")
    assert by_name[MYELIN].ranges == (("/head/Flatten", "/head/Softmax"),)
    assert by_name[REFORMAT_IN].kind == "reformat" and by_name[REFORMAT_IN].onnx_nodes == ()
    assert by_name[SHUFFLE].onnx_nodes == ("node_of_tr_out",)

    none = parse_engine_info('{"Layers": [], "Bindings": ["images", "probs"]}')
    assert (none.schema, none.verbosity, none.layers) == ("10.x", "none", [])
    assert parse_engine_info({"Layers": [{"Name": "a + b"}]}).verbosity == "layer_names_only"


def test_single_layer_json_raw_separator_and_bad_input():
    # get_layer_information() returns one layer; a raw 0x1E byte inside a JSON string is accepted too.
    text = ('{"Name": "c + r", "LayerType": "CaskConvolution", "Inputs": [{"Name": "x", "Dimensions": [1, 8], '
            '"Format/Datatype": "Half"}], "Outputs": [{"Name": "y", "Dimensions": [1, 8], '
            '"Format/Datatype": "Half"}], "Metadata": "[ONNX Layer: c]\x1e[ONNX Layer: r]"}')
    info = parse_engine_info(text)
    assert info.schema == "10.x" and len(info.layers) == 1
    assert info.layers[0].onnx_nodes == ("c", "r") and info.layers[0].precision == "fp16"
    assert parse_engine_info(text.encode()).layers[0].name == "c + r"
    with pytest.raises(InspectError) as err:
        parse_engine_info("c + r: CaskConvolution, Tactic: 0x1")
    assert isinstance(err.value, TrtlabError) and "LayerInformationFormat.JSON" in err.value.fix
    with pytest.raises(InspectError):
        parse_engine_info("42")


def test_dynamic_shapes_without_context_are_unknown_with_a_note():
    doc = {"Layers": [{"Name": "(Unnamed Layer* 0) [Shuffle]", "LayerType": "NoOp",
                       "Inputs": [{"Name": "foo0", "Dimensions": [-1, 25088],
                                   "Format/Datatype": "N/A due to dynamic shapes"}],
                       "Outputs": [{"Name": "o", "Dimensions": [-1, 128, 14, 14],
                                    "Format/Datatype": "N/A due to dynamic shapes"}]}], "Bindings": ["foo0"]}
    info = parse_engine_info(doc)
    layer = info.layers[0]
    assert (layer.precision, layer.kind, layer.onnx_nodes) == ("unknown", "noop", ())
    assert any("execution_context" in n for n in info.notes)


# ============================================================================================== precision rules

@pytest.mark.parametrize("text, dtype", [
    ("Row major linear FP32", "fp32"), ("Float", "fp32"), ("Row major linear FP32 format (kLINEAR)", "fp32"),
    ("Half", "fp16"), ("Channel major FP16 format where channel % 8 == 0", "fp16"),
    ("Thirty-two wide channel vectorized row major Int8 format.", "int8"), ("Int8", "int8"),
    ("Row major linear BFloat16 format", "bf16"), ("BFloat16", "bf16"), ("Row major linear FP8 format", "fp8"),
    ("Row major linear Int32", "int32"), ("Row major linear Int64 format", "int64"),
    ("Row major linear BOOL", "bool"), ("Row major linear UInt8 format", "uint8"), ("kHALF", "fp16"),
    ("N/A due to dynamic shapes", "unknown"), ("Unknown format", "unknown"), ("None", "unknown"), ("", "unknown"),
    (None, "unknown"),
])
def test_normalize_dtype(text, dtype):
    assert normalize_dtype(text) == dtype


def _t(*dtypes: str) -> tuple[TensorDesc, ...]:
    return tuple(TensorDesc(f"t{i}", d) for i, d in enumerate(dtypes))


@pytest.mark.parametrize("ins, outs, precision", [
    (("fp16",), ("fp16",), "fp16"),
    (("bf16",), ("bf16",), "bf16"),
    (("int8",), ("fp16",), "int8"),             # INT8 kernel, dequantize fused at the output
    (("int8", "fp16"), ("fp16",), "int8"),      # INT8 conv + FP16 residual
    (("fp8",), ("fp16",), "fp8"),
    (("int8", "fp8"), ("fp16",), "mixed"),
    (("fp16",), ("int8",), "fp16"),             # a quantize step computes in its input's type
    (("fp16",), ("fp32",), "fp16"),
    (("fp16", "fp32"), ("fp32",), "mixed"),
    (("fp32", "int32"), ("fp32",), "fp32"),     # Gather: indices do not count
    (("bool", "fp16"), ("fp16",), "fp16"),      # masked softmax
    ((), ("fp16",), "fp16"),                    # constant
    (("int64",), ("int64",), "int64"),          # shape arithmetic
    (("int32",), ("int64",), "mixed"),
    (("unknown",), ("unknown",), "unknown"),
])
def test_ran_precision_rules(ins, outs, precision):
    assert ran_precision(_t(*ins), _t(*outs)) == precision


# ============================================================================================== ONNX origins

def test_parse_metadata_forms():
    assert [o.node for o in parse_metadata("[ONNX Layer: a]\x1e[ONNX Layer: b]\x1f[ONNX Layer: c]")] == ["a", "b", "c"]
    assert [o.node for o in parse_metadata("[ONNX Layer: a][ONNX Layer: b]")] == ["a", "b"]
    (o,) = parse_metadata("[ONNX Layer: /enc/Mul | Local Function: Gelu]")
    assert (o.node, o.functions, o.callers, o.truncated) == ("/enc/Mul", ("Gelu",), (), False)
    (o,) = parse_metadata("[ONNX Layer: inner_mul | /enc/gelu (Gelu) | /enc (Block)]")
    assert (o.node, o.callers, o.functions) == ("inner_mul", ("/enc/gelu", "/enc"), ("Gelu", "Block"))
    (o,) = parse_metadata("[ONNX Layer: (Unnamed Layer* 3) [Shuffle]]")
    assert o.node == "(Unnamed Layer* 3) [Shuffle]"
    # TensorRT cuts metadata longer than 4000 characters in the middle with " ... ".
    cut = "[ONNX Layer: a]\x1e[ONNX Layer: /very/long/na ... ame]\x1e[ONNX Layer: z]"
    assert [(o.node, o.truncated) for o in parse_metadata(cut)] == [("a", False), ("/very/long/na", True),
                                                                    ("z", False)]
    tail = parse_metadata("[ONNX Layer: a]\x1e[ONNX Layer: /b/c ... ")
    assert [(o.node, o.truncated) for o in tail] == [("a", False), ("/b/c", True)]
    refs = onnx_nodes_of({"Name": "x", "Metadata": "[ONNX Layer: a]\x1e[ONNX Layer: /b/c ... "})
    assert refs.source == "metadata" and refs.partial and refs.nodes == ("a", "/b/c")
    assert parse_metadata("") == [] and parse_metadata("some docstring") == []


def test_names_from_layer_names():
    refs = onnx_nodes_of("PWN(PWN(/m/act/Sigmoid), /m/act/Mul) + /m/conv/Conv [profile 2]")
    assert (refs.nodes, refs.source, refs.ranges) == (("/m/act/Sigmoid", "/m/act/Mul", "/m/conv/Conv"), "name", ())
    refs = onnx_nodes_of("{ForeignNode[/a/Split_16.../a/Add]}")
    assert refs.ranges == (("/a/Split_16", "/a/Add"),) and refs.partial and refs.nodes == ("/a/Split_16", "/a/Add")
    assert onnx_nodes_of("{ForeignNode[/a/Only]}").nodes == ("/a/Only",)
    refs = onnx_nodes_of("/model_10/m/m_0/attn/MatMul_myl109_2")
    assert refs.nodes == ("/model_10/m/m_0/attn/MatMul",) and refs.loose
    for synthetic in ("__myl_MulMaxSubExpSum_myl109_3", "ONNXTRT_ShapeTensorFromDims", "(Unnamed Layer* 0) [Shuffle]",
                      "Reformatting CopyNode for Output Tensor 0 to {ForeignNode[/a...b]}"):
        assert onnx_nodes_of(synthetic).nodes == (), synthetic
    # Names inside brackets keep their " + ".
    assert onnx_nodes_of("{ForeignNode[a + b]} + c").nodes == ("a", "b", "c")
    # A reformat layer with metadata (e.g. an ONNX Cast run as a reformat) maps through the metadata.
    cast = parse_layer({"Name": "Reformatting CopyNode for Output Tensor 0 to /x/Cast", "LayerType": "Reformat",
                        "Metadata": "[ONNX Layer: /x/Cast]"})
    assert cast.kind == "reformat" and cast.onnx_nodes == ("/x/Cast",)


# ============================================================================================== mapping

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


# ============================================================================================== timing

def test_per_layer_times_and_onnx_attribution():
    graph = fixture_graph()
    m = map_to_onnx(parse_engine_info(load("engine_10x_detailed.json")), graph)
    runs = [
        {REFORMAT_IN: 0.010, STEM: 0.100, CONV1: 0.060, MYELIN: 0.040},
        {REFORMAT_IN: 0.012, STEM: 0.120, CONV1: 0.050, MYELIN: 0.040},
        {REFORMAT_IN: 0.008, STEM: 0.110, CONV1: 0.070, MYELIN: 0.100},
    ]
    recorder = TimingRecorder()
    for run in runs:
        for name, ms in run.items():
            recorder.report_layer_time(name, ms)
    times = recorder.times()
    assert times == per_layer_times(recorder.records)
    assert list(times) == [REFORMAT_IN, STEM, CONV1, MYELIN]
    stem = times[STEM]
    assert (stem.count, stem.mean_ms, stem.median_ms, stem.min_ms, stem.max_ms) == pytest.approx(
        (3, 0.110, 0.110, 0.100, 0.120))
    assert times[MYELIN].median_ms == pytest.approx(0.040) and times[MYELIN].mean_ms == pytest.approx(0.060)
    total = 0.030 + 0.330 + 0.180 + 0.180
    assert stem.share == pytest.approx(0.330 / total)
    assert sum(t.share for t in times.values()) == pytest.approx(1.0)

    nt = onnx_node_times(times, m)
    assert nt.total_ms == pytest.approx(total / 3)
    assert nt.unattributed == {REFORMAT_IN: pytest.approx(0.010)}
    conv = nt.nodes["/stem/conv/Conv"]
    assert conv.ms == pytest.approx(0.055) and conv.fused and conv.layer_ms == pytest.approx(0.110)
    assert conv.layers == (STEM,) and conv.share == pytest.approx(0.055 / nt.total_ms)
    assert nt.nodes["/blk/conv1/Conv"].ms == pytest.approx(0.060 / 5)          # five ONNX nodes in that layer
    assert nt.nodes["/head/Softmax"].ms == pytest.approx(0.060 / 4)
    assert sum(x.ms for x in nt.nodes.values()) + sum(nt.unattributed.values()) == pytest.approx(nt.total_ms)

    # The profiler may report a layer the inspector does not list: its name still finds the node.
    solo = onnx_node_times(per_layer_times([("/head/GlobalAveragePool", 0.02), ("/head/fc/MatMul_myl7_0", 0.01)]), m)
    assert solo.nodes["/head/GlobalAveragePool"].fused is False
    assert solo.nodes["/head/fc/MatMul"].ms == pytest.approx(0.01) and solo.unattributed == {}
    assert per_layer_times([]) == {}


# ============================================================================================== plan check

def test_plan_mismatches_on_the_fixture_engine():
    graph = fixture_graph()
    plan = fixture_plan()
    rows = plan.resolve(graph)
    planned = {r.key: r.precision for r in rows}
    assert planned["/blk/conv1/input_quantizer/QuantizeLinear"] == "fixed"
    op_types = {r.key: r.op_type for r in rows}
    m = map_to_onnx(parse_engine_info(load("engine_11x_detailed.json")), graph)
    found = plan_mismatches(m.precision, planned, mapping=m, op_types=op_types)
    warnings = [x for x in found if x.severity == "warning"]
    infos = [x for x in found if x.severity == "info"]
    assert [(x.key, x.planned, x.ran) for x in warnings] == [
        ("/head/GlobalAveragePool", "fp16", "fp32"), ("/head/Flatten", "fp16", "fp32"),
        ("/head/fc/MatMul", "fp16", "fp32"), ("/head/fc/Add", "fp16", "fp32")]
    assert warnings[0].layers == (GAP,)
    assert warnings[0].message == ("/head/GlobalAveragePool: planned FP16 but ran FP32: a wider type than planned, "
                                   "correct but slower (engine layer: /head/GlobalAveragePool).")
    assert [(x.key, x.ran) for x in infos] == [("/blk/act1/Relu", "int8"), ("/blk/Add", "int8")]
    assert "fused into the quantized kernel of /blk/conv1/Conv" in infos[0].message
    missing = plan_mismatches(m.precision, planned, mapping=m, include_missing=True)
    assert [x for x in missing if x.ran == ""] == [
        Mismatch("/head/Identity", "fp16", "", "info",
                 "/head/Identity: planned FP16, but no engine layer ran it (folded at build time, eliminated, "
                 "or inside a Myelin region whose members are not listed).")]


def test_plan_mismatch_rules():
    ran = {"conv": "fp16", "relu": "fp16", "mm": "fp16", "gemm": "int8", "a": "fp16", "b": "bf16",
           "c": "mixed", "shape": "int64", "q": "int8", "lone": "int8", "dark": "unknown", "same": "fp32"}
    planned = {"conv": "int8", "relu": "int8", "mm": "fp32", "gemm": "fp8", "a": "bf16", "b": "fp16",
               "c": "fp16", "shape": "fp16", "q": "fixed", "lone": "fp16", "dark": "fp16", "same": "fp32",
               "nowhere": "fp16"}
    ops = {"conv": "Conv", "relu": "Relu", "mm": "MatMul"}
    found = {x.key: x for x in plan_mismatches(ran, planned, op_types=ops)}
    assert set(found) == {"conv", "relu", "mm", "a", "b", "c", "lone"}
    assert found["conv"].severity == "warning" and "check the Q/DQ" in found["conv"].message
    assert found["relu"].severity == "info" and "Relu has no INT8 kernel" in found["relu"].message
    assert found["mm"].severity == "warning" and "accuracy may suffer" in found["mm"].message
    assert "another 16-bit type" in found["a"].message and "another 16-bit type" in found["b"].message
    assert found["c"].severity == "info"
    assert found["lone"].severity == "warning" and "no INT8-planned node in its layer" in found["lone"].message
    # gemm is planned with a precision the plan does not know (fp8): skipped.
    assert "gemm" not in found
    # Without op types an INT8-planned activation that ran float is a warning.
    assert plan_mismatches({"relu": "fp16"}, {"relu": "int8"})[0].severity == "warning"
    # Warnings come first.
    order = [x.severity for x in plan_mismatches(ran, planned, op_types=ops)]
    assert order == sorted(order, key=lambda s: s != "warning")
