"""The builder's `Layers:` dump (TensorRT for RTX 1.7.1.116, ProfilingVerbosity.DETAILED), read into the engine
layers the Engine dock and `trtlab build --json` show, on real dumps kept as fixtures (fixtures/README.md)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import onnx
import pytest

from app.backends.tasks.build import engine_report
from app.core.engine.inspector_json import parse_engine_info
from app.core.engine.layer_dump import find_dump, parse_layer_dump, parse_record
from app.core.engine.onnx_map import map_to_onnx
from app.core.precision.plan import PrecisionPlan, node_keys

FIXTURES = Path(__file__).parent / "fixtures"


def dump(name: str) -> str:
    return (FIXTURES / f"rtx_layers_{name}.txt").read_text(encoding="utf-8")


def test_a_record_keeps_names_lists_objects_and_free_text_metadata():
    line = ("Name: PWN(a, b) [x]_myl0_3, LayerType: kgen, Inputs: [ { Name: t,0, Dimensions: [1,-1,4], Strides: "
            "[4,4,1], Datatype: Half, Format: (NHWC) Channel major format }, { Name: u, Dimensions: [], Datatype: "
            "Int8, Format: Row major linear format }], Constants: [], Outputs: [ { Name: v, Dimensions: [2], "
            "Datatype: Float, Format: x }], TacticName: __myelin_CASK_STUB, StreamId: 0, Metadata: [ONNX Layer: "
            "a, b: c]\x1f[ONNX Layer: d]")
    rec = parse_record(line)
    assert rec["Name"] == "PWN(a, b) [x]_myl0_3" and rec["LayerType"] == "kgen" and rec["Constants"] == []
    assert [t["Name"] for t in rec["Inputs"]] == ["t,0", "u"] and rec["Inputs"][0]["Dimensions"] == [1, -1, 4]
    assert rec["Inputs"][0]["Format"] == "(NHWC) Channel major format" and rec["Inputs"][1]["Datatype"] == "Int8"
    assert rec["Metadata"] == "[ONNX Layer: a, b: c]\x1f[ONNX Layer: d]" and rec["StreamId"] == "0"


def test_find_dump_takes_the_last_layers_message():
    assert find_dump(["Engine generation completed", "Layers:\nName: a", "x", "Layers:\nName: b"]) == "Layers:\nName: b"
    assert find_dump(["nothing here"]) is None


def test_fp32_dump_of_a_real_model_maps_every_compute_layer_to_its_nodes(model_paths):
    doc = parse_layer_dump(dump("magika_fp32"))
    info = parse_engine_info(doc)
    assert info.schema == "11.x" and info.verbosity == "detailed" and not info.notes
    assert len(info.layers) == 10 and {layer.precision for layer in info.layers} == {"fp32"}
    assert Counter(layer.type for layer in info.layers) == {"kgen": 8, "gemm": 1, "correlation": 1}
    (inp,) = info.inputs
    assert inp.name == "bytes" and inp.dtype == "int32" and inp.dims == (1, 2048) and not inp.shape_io
    assert inp.profiles[0].min == (1, 2048) and info.outputs[0].name == "target_label"
    graph = onnx.load(model_paths["magika_standard_v3_3"], load_external_data=False).graph
    mapping = map_to_onnx(info.layers, graph)
    keys = set(node_keys(graph))
    assert all(layer.onnx_nodes for layer in info.layers)  # every layer carries [ONNX Layer: ...] metadata
    assert set(mapping.precision) <= keys and len(mapping.precision) > 40
    conv = next(layer for layer in info.layers if layer.type == "correlation")
    assert conv.onnx_nodes == ("jax2tf_get_logits_/pjit_get_logits_/MagikaV2/Conv_0/Conv2D",)


def test_int8_dump_shows_int8_kernels():
    info = parse_engine_info(parse_layer_dump(dump("magika_int8")))
    ran = Counter(layer.precision for layer in info.layers)
    assert ran == {"int8": 4, "fp32": 6}
    gemm = [layer for layer in info.layers if layer.type == "gemm"]
    assert gemm and all(layer.precision == "int8" for layer in gemm)
    assert any(n.endswith("_DequantizeLinear") for layer in gemm for n in layer.onnx_nodes)  # fused Q/DQ


def test_fp16_model_dump():
    info = parse_engine_info(parse_layer_dump(dump("slovorez_fp16")))
    assert len(info.layers) == 14 and {layer.precision for layer in info.layers} == {"fp16"}
    assert info.outputs[0].dtype == "fp16" and info.inputs[0].dtype == "int32"


def test_two_profiles_are_split_as_the_inspector_splits_them():
    doc = parse_layer_dump(dump("magika_2profiles"))
    info = parse_engine_info(doc)
    assert info.profiles == [0, 1]
    first, second = info.profile_layers(0), info.profile_layers(1)
    assert len(first) == 14 and len(second) == 11
    assert all("_myl0_" in layer.name for layer in first) and all("_myl1_" in layer.name for layer in second)
    assert all(layer.name.endswith(" [profile 1]") for layer in second)
    assert [p.opt for p in info.inputs[0].profiles] == [(2, 2048), (8, 2048)]
    shape_call = first[0]
    assert shape_call.type == "shape_call" and shape_call.onnx_nodes == () and shape_call.precision == "unknown"


def test_engine_report_from_a_dump_is_what_the_engine_dock_shows(model_paths):
    graph = onnx.load(model_paths["magika_standard_v3_3"], load_external_data=False).graph
    doc = engine_report(parse_layer_dump(dump("magika_2profiles")), graph, PrecisionPlan(default="fp32"), graph)
    assert len(doc["layers"]) == 14  # the first profile only
    assert all({"name", "type", "precision", "tactic", "onnx_nodes", "kind", "inputs", "outputs"} <= set(r)
               for r in doc["layers"])
    assert not [m for m in doc["mismatches"] if m["severity"] == "warning"]  # FP32 plan, FP32 engine


@pytest.mark.parametrize("text", ["", "Layers:\n", "Layers:\nName: only-a-name\n\nI/O Tensors:\n"])
def test_short_or_empty_dumps_parse(text):
    doc = parse_layer_dump(text)
    assert isinstance(doc["Layers"], list) and doc["I/O Tensors"] == []
    parse_engine_info(doc)
