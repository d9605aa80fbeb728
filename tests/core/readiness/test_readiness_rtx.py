"""Readiness for TensorRT for RTX, the third target next to TensorRT 10.x and 11.x: its operator column (measured
with tensorrt-rtx 1.7.1.116's parser), FP8 and Turing rules per compute-capability target, Squeeze without axes,
and dims sharing a dim_param (every target). Each rule was seen refusing a real build (test_rtx_models,
test_trt_rtx_build)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from app.core.engine.rtx import TargetError
from app.core.precision.plan import PrecisionPlan
from app.core.readiness import TRT_VERSIONS, check_model, load_support_table
from tests.support.readiness import codes, model, only, vi


def _gemm_model() -> onnx.ModelProto:
    w = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    return model([helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
                  helper.make_node("Relu", ["h"], ["y"], name="relu")], inputs=[vi("x", [1, 4])], inits=[w])


def test_rtx_is_a_third_target_with_its_own_operator_column():
    assert TRT_VERSIONS == ("10", "11", "rtx")
    table = load_support_table()
    assert table.label("rtx") == "TensorRT for RTX 1.7" and "supports_operator" in table.matrix("rtx")
    ops = table.operators
    assert ops["Swish"].supported_in("rtx") and ops["Conv"].supported_in("rtx")
    assert ops["DeformConv"].supported_in("11") and not ops["DeformConv"].supported_in("rtx")  # measured
    assert table.is_custom_op("TRT_Attention", "rtx")
    deform = model([helper.make_node("DeformConv", ["x", "w", "o"], ["y"], name="dc")], opset=19)
    assert "unsupported-op" in codes(check_model(deform, trt_version="rtx"))
    assert "unsupported-op" not in codes(check_model(deform, trt_version="11"))
    assert check_model(_gemm_model(), trt_version="trt-rtx").trt_version == "rtx"


@pytest.mark.parametrize("version", TRT_VERSIONS)
def test_cubic_resize_is_the_same_rule_on_every_target(version):
    """The importer takes cubic on TensorRT 10/11 as on RTX (the operator matrix leaves it out): 2 dims only."""
    roi = numpy_helper.from_array(np.array([], np.float32), "roi")
    for scales, refused in (([1, 1, 2, 2], False), ([1, 2, 2, 2], True)):
        s = numpy_helper.from_array(np.array(scales, np.float32), "scales")
        m = model([helper.make_node("Resize", ["x", "roi", "scales"], ["y"], name="up", mode="cubic")],
                  inputs=[vi("x", [1, 3, 8, 8])], inits=[roi, s])
        assert ("op-restriction" in codes(check_model(m, trt_version=version))) is refused, scales


def test_turing_refuses_fp32_and_int8_gemms_and_bf16():
    m = _gemm_model()
    assert check_model(m, trt_version="rtx").errors == 0  # the default targets have no Turing
    f = only(check_model(m, trt_version="rtx", targets="7.5,8.6"), "rtx-turing-fp32-gemm")
    assert f.severity == "error" and f.nodes == ["mm"] and "7.5" in f.fix
    for precision in ("fp32", "int8"):
        plan = PrecisionPlan(default=precision)
        assert "rtx-turing-fp32-gemm" in codes(check_model(m, plan=plan, trt_version="rtx", targets=("7.5",)))
    fp16 = check_model(m, plan=PrecisionPlan(default="fp16"), trt_version="rtx", targets=("7.5",))
    assert "rtx-turing-fp32-gemm" not in codes(fp16)
    bf16 = check_model(m, plan=PrecisionPlan(default="bf16"), trt_version="rtx", targets=("7.5",))
    assert set(only(bf16, "rtx-turing-bf16").nodes) == {"mm", "relu"}
    assert "rtx-turing-bf16" not in codes(check_model(m, plan=PrecisionPlan(default="bf16"), trt_version="rtx"))


def test_fp8_needs_ada_or_later_targets():
    zp8 = helper.make_tensor("zp8", TensorProto.FLOAT8E4M3FN, [1], [0.0])
    scale = numpy_helper.from_array(np.ones(1, np.float32), "s")
    m = model([helper.make_node("QuantizeLinear", ["x", "s", "zp8"], ["q"], name="q8"),
               helper.make_node("DequantizeLinear", ["q", "s", "zp8"], ["y"], name="dq8")],
              inputs=[vi("x", [1, 4])], inits=[scale, zp8], opset=19)
    f = only(check_model(m, trt_version="rtx"), "rtx-fp8-target")  # default set: 8.0 and 8.6 cannot
    assert f.severity == "error" and f.nodes == ["q8"] and "8.0, 8.6" in f.message and "--target-cc 8.9" in f.fix
    assert "rtx-fp8-target" not in codes(check_model(m, trt_version="rtx", targets="8.9,12.0"))
    assert "rtx-fp8-target" not in codes(check_model(m, trt_version="11"))


def test_squeeze_without_axes_over_a_dynamic_dim():
    m = model([helper.make_node("Relu", ["x"], ["r"], name="relu"),
               helper.make_node("Squeeze", ["r"], ["y"], name="sq")], inputs=[vi("x", ["batch", 1, 4])])
    warn = only(check_model(m, trt_version="rtx"), "rtx-squeeze-no-axes")
    assert warn.severity == "warning" and warn.nodes == ["sq"]
    err = only(check_model(m, trt_version="rtx", shapes={"x": (1, 1, 4)}), "rtx-squeeze-no-axes")
    assert err.severity == "error" and "make it 1" in err.message
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    fine = model([helper.make_node("Squeeze", ["x", "axes"], ["y"], name="sq")], inputs=[vi("x", ["batch", 1, 4])],
                 inits=[axes])
    assert "rtx-squeeze-no-axes" not in codes(check_model(fine, trt_version="rtx", shapes={"x": (1, 1, 4)}))


@pytest.mark.parametrize("version", ["10", "11", "rtx"])
def test_dims_sharing_a_dim_param_must_be_equal(version):
    m = model([helper.make_node("Concat", ["a", "b"], ["y"], name="cat", axis=1)],
              inputs=[vi("a", ["n", "t"]), vi("b", ["n", "t"])])
    f = only(check_model(m, trt_version=version, shapes={"a": (2, 5), "b": (3, 5)}), "dim-param-conflict")
    assert f.severity == "error" and f.nodes == ["cat"] and "'n'" in f.message and "axis 0 = 2" in f.message
    assert "dim-param-conflict" not in codes(check_model(m, trt_version=version, shapes={"a": (2, 5), "b": (2, 5)}))
    other = only(check_model(m, trt_version=version, shapes={"a": (2, 5), "b": (2, 7)}), "dim-param-conflict")
    assert "'t'" in other.message


def test_shared_models_that_rtx_refuses(model_paths, models_dir):
    ppocr = onnx.load(model_paths["ppocr_cls_mobile_v2"])
    f = only(check_model(ppocr, trt_version="rtx", shapes={"x": (1, 3, 48, 192)}), "dim-param-conflict")
    assert "'?'" in f.message and "axis 2 = 48" in f.message and "axis 3 = 192" in f.message
    assert check_model(ppocr, trt_version="rtx", shapes={"x": (1, 3, 48, 48)}).errors == 0
    plcmos = models_dir / "plcmos_v2.onnx"
    if plcmos.is_file():
        report = check_model(onnx.load(plcmos), trt_version="rtx",
                             shapes={"degraded_audio": (1, 1, 200, 257), "rater_embed": (1, 64)})
        assert only(report, "rtx-squeeze-no-axes").nodes == ["Squeeze_72"] and report.errors == 1


def test_targets_are_an_rtx_setting():
    with pytest.raises(ValueError):
        check_model(_gemm_model(), trt_version="11", targets="8.6")
    with pytest.raises(TargetError):
        check_model(_gemm_model(), trt_version="rtx", targets="9.0")
    doc = check_model(_gemm_model(), trt_version="rtx", targets="8.9,8.6").to_json("m.onnx")
    assert doc["trt_version"] == "rtx" and doc["targets"] == ["8.6", "8.9"]
    assert "targets" not in check_model(_gemm_model()).to_json()
