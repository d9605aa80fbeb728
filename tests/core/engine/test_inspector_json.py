"""Engine-inspector JSON (10.x and 11.x schemas, any verbosity) read into engine layers, on hand-written fixtures."""

from __future__ import annotations

import json

import pytest

from app.core.engine.engine_layers import TensorDesc
from app.core.engine.inspector_json import InspectError, parse_engine_info
from app.core.errors import TrtlabError
from tests.core.engine.inspector_fixtures import (
    CONV1,
    GAP,
    LAYER_ORDER,
    MYELIN,
    PRECISIONS,
    REFORMAT_IN,
    SHUFFLE,
    STEM,
    load,
)


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
