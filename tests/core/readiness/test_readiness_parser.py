"""Readiness rules taken from TensorRT's ONNX parser itself: Resize as its importer decides (cubic included),
dims sharing a dim_param in the shapes and in each optimization profile, ops mixing float types, and the
severity of every error-level code (a downgraded error lets a doomed build start).

tests/backends/test_check_vs_parser.py runs the same Resize and mixed-type cases through TensorRT for RTX's
parser and checks it answers as the check does."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from app.core.engine.dim_params import named_dims
from app.core.engine.profiles import (
    InputProfile,
    OptimizationProfile,
    ProfileError,
    parse_profile_args,
    profile_from_shapes,
    validate_profile,
)
from app.core.model.tensors import graph_inputs, value_info_to_tensor_info
from app.core.precision.plan import PrecisionPlan
from app.core.readiness import TRT_VERSIONS, check_model
from tests.support.models import fpn
from tests.support.readiness import (
    RESIZE_CASES,
    codes,
    mixed,
    model,
    nonzero,
    only,
    qdq,
    resize_model,
    scatter_add,
    vi,
)

F, H = TensorProto.FLOAT, TensorProto.FLOAT16

# ------------------------------------------------------------------------------------------------ Resize

@pytest.mark.parametrize("version", TRT_VERSIONS)
@pytest.mark.parametrize("case, kwargs, refused", RESIZE_CASES, ids=[c[0] for c in RESIZE_CASES])
def test_resize_follows_the_importer(case, kwargs, refused, version):
    report = check_model(resize_model(**kwargs), trt_version=version)
    if refused:
        f = only(report, "op-restriction")
        assert f.severity == "error" and f.nodes == ["rs"] and "Resize (1 node) has" in f.message
    else:
        assert "op-restriction" not in codes(report), report.findings


def test_resize_messages_name_what_is_refused():
    cubic = only(check_model(resize_model(mode="cubic", scales=[1, 2, 2, 2])), "op-restriction")
    assert "cubic resizing of dims other than the last 2" in cubic.message and "[1, 2, 2, 2]" in cubic.message
    ct = only(check_model(resize_model(mode="linear", scales=[1, 1, 2, 2],
                                       coordinate_transformation_mode="tf_crop_and_resize")), "op-restriction")
    assert "'tf_crop_and_resize'" in ct.message and "align_corners" in ct.message


def test_resize_restriction_text_follows_the_code():
    from app.core.readiness import load_support_table

    table = load_support_table()
    assert "cubic" in table.op("Resize").restriction and "innermost 2" in table.op("Resize").restriction
    assert any("onnxOpImporters.cpp" in s["url"] and s.get("commit") for s in table.sources)
    assert table.recorded >= "2026-11-23"


def test_scatter_elements_reduction_needs_the_plugin_rtx_lacks():
    """TensorRT 10/11 import a reducing ScatterElements as their ScatterElements plugin; RTX has no plugin
    library and refuses it ("Unsupported reduction type", a PaiNN model of the corpus)."""
    f = only(check_model(scatter_add(), trt_version="rtx"), "op-restriction")
    assert f.severity == "error" and f.nodes == ["scat"] and "reduction 'add'" in f.message
    for version in ("10", "11"):
        assert "op-restriction" not in codes(check_model(scatter_add(), trt_version=version))


# ------------------------------------------------------------------------------------------------ dim_param names

def two_named(shape_a=("n", "t"), shape_b=("n", "t")) -> onnx.ModelProto:
    return model([helper.make_node("Concat", ["a", "b"], ["y"], name="cat", axis=1)],
                 inputs=[vi("a", list(shape_a)), vi("b", list(shape_b))])


def classifier(hw: str = "?") -> onnx.ModelProto:
    """ppocr_cls's inputs: x is -1×3×?×? with H and W both named hw."""
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")], inputs=[vi("x", [1, 3, hw, hw])])


def _inputs(m: onnx.ModelProto):
    return [value_info_to_tensor_info(v) for v in graph_inputs(m.graph)]


def test_named_dims_reads_question_marks_as_a_name():
    assert named_dims(classifier().graph) == {"?": [("x", 2), ("x", 3)]}
    unnamed = model([helper.make_node("Relu", ["x"], ["y"])], inputs=[vi("x", [1, 3, None, None])])
    assert named_dims(unnamed.graph) == {}


@pytest.mark.parametrize("version", TRT_VERSIONS)
def test_shapes_giving_one_name_two_sizes(version):
    f = only(check_model(classifier(), trt_version=version, shapes={"x": (1, 3, 48, 192)}), "dim-param-conflict")
    assert f.severity == "error" and f.nodes == ["relu"]
    assert "The dims 'x' axis 2 and 'x' axis 3 share the name '?'" in f.message and "axis 3 = 192" in f.message
    assert "dim-param-conflict" not in codes(check_model(classifier(), trt_version=version,
                                                         shapes={"x": (1, 3, 48, 48)}))


@pytest.mark.parametrize("mins, opts, maxs, bad", [
    ((32, 32), (48, 48), (64, 64), None),              # the same range
    ((32, 48), (48, 48), (64, 64), None),              # different mins that overlap: builds (measured)
    ((32, 32), (48, 48), (64, 96), None),              # different maxes that overlap: builds (measured)
    ((32, 32), (48, 40), (64, 64), "opt sizes differ"),  # "Profile kOPT values are not self-consistent"
    ((16, 48), (32, 48), (32, 64), "do not overlap"),  # "contradictory IOptimizationProfile kMIN/kMAX"
])
def test_profiles_follow_what_tensorrt_builds(mins, opts, maxs, bad):
    profile = OptimizationProfile.of([InputProfile("x", (1, 3, *mins), (1, 3, *opts), (1, 3, *maxs))])
    report = check_model(classifier(), profile=profile, trt_version="rtx")
    if bad is None:
        assert "dim-param-conflict" not in codes(report), report.findings
    else:
        f = only(report, "dim-param-conflict")
        assert f.severity == "error" and bad in f.message and f.nodes == ["relu"]
    m = classifier()
    args = [f"x:1x3x{mins[0]}x{mins[1]}:1x3x{opts[0]}x{opts[1]}:1x3x{maxs[0]}x{maxs[1]}"]
    if bad is None:
        parse_profile_args(args, _inputs(m), dim_names=named_dims(m.graph))
    else:
        with pytest.raises(ProfileError) as err:
            parse_profile_args(args, _inputs(m), dim_names=named_dims(m.graph))
        assert bad in err.value.message and "'x' axis 2" in err.value.message and "rename" in err.value.fix


def test_profile_from_shapes_refuses_one_name_two_sizes():
    m = classifier()
    with pytest.raises(ProfileError) as err:
        profile_from_shapes(_inputs(m), {"x": (1, 3, 48, 192)}, dim_names=named_dims(m.graph))
    assert "different sizes" in err.value.message and "axis 3 = 192" in err.value.message
    assert profile_from_shapes(_inputs(m), {"x": (1, 3, 48, 48)}, dim_names=named_dims(m.graph)).is_static()


def test_profiles_read_real_names_from_the_inputs_alone():
    """Without the graph, names other than '?' still come from the inputs; '?' is left alone (unnamed dims
    read '?' too), and dim_names={} checks nothing."""
    m = two_named()
    profile = OptimizationProfile.of([InputProfile.fixed("a", (2, 5)), InputProfile.fixed("b", (3, 5))])
    with pytest.raises(ProfileError) as err:
        validate_profile(profile, _inputs(m))
    assert "'n'" in err.value.message and "'a' axis 0 = 2" in err.value.message
    validate_profile(profile, _inputs(m), dim_names={})
    question = OptimizationProfile.of([InputProfile.fixed("x", (1, 3, 48, 192))])
    validate_profile(question, _inputs(classifier()))  # '?' unknowable from TensorInfo alone
    with pytest.raises(ProfileError):
        validate_profile(question, _inputs(classifier()), dim_names=named_dims(classifier().graph))


def test_names_across_inputs_in_a_profile():
    m = two_named()
    profile = OptimizationProfile.of([InputProfile("a", (1, 5), (4, 5), (8, 5)),
                                      InputProfile("b", (1, 5), (2, 5), (8, 5))])
    f = only(check_model(m, profile=profile), "dim-param-conflict")
    assert "'a' axis 0 opt 4" in f.message and "'b' axis 0 opt 2" in f.message and f.nodes == ["cat"]


def test_the_shared_classifier(model_paths):
    ppocr = onnx.load(model_paths["ppocr_cls_mobile_v2"])
    names = named_dims(ppocr.graph)
    assert names == {"?": [("x", 2), ("x", 3)]}
    with pytest.raises(ProfileError):
        profile_from_shapes(_inputs(ppocr), {"x": (1, 3, 48, 192)}, dim_names=names)
    f = only(check_model(ppocr, shapes={"x": (1, 3, 48, 192)}), "dim-param-conflict")
    assert f.severity == "error"


# ------------------------------------------------------------------------------------------------ mixed types

@pytest.mark.parametrize("op, types, attrs", [
    ("Add", (F, H), {}), ("Mul", (H, F), {}), ("Sub", (F, H), {}), ("Div", (F, H), {}),
    ("Concat", (F, H), {"axis": 0}), ("Where", (TensorProto.BOOL, F, H), {}), ("Equal", (F, H), {}),
    ("Max", (F, F, H), {}), ("Sum", (F, H, F), {}),
])
def test_mixed_float_inputs_are_an_error(op, types, attrs):
    for init in (False, True):
        f = only(check_model(mixed(op, types, init=init, **attrs)), "mixed-input-types")
        assert f.severity == "error" and f.nodes == ["n0"]
        assert f"{op} 'n0'" in f.message and "Float" in f.message and "Half" in f.message


def test_gemm_bias_and_matmul():
    w = numpy_helper.from_array(np.ones((4, 3), np.float32), "w")
    c = numpy_helper.from_array(np.ones(3, np.float16), "c")
    gemm = model([helper.make_node("Gemm", ["x", "w", "c"], ["y"], name="fc")], inputs=[vi("x", [2, 4])],
                 inits=[w, c])
    assert only(check_model(gemm), "mixed-input-types").nodes == ["fc"]
    mm = model([helper.make_node("MatMul", ["x", "wh"], ["y"], name="mm")], inputs=[vi("x", [2, 4])],
               inits=[numpy_helper.from_array(np.ones((4, 3), np.float16), "wh")])
    assert "'wh'" in only(check_model(mm), "mixed-input-types").message


def test_ops_that_take_mixed_types_are_not_flagged():
    """Pow's exponent, BatchNormalization's statistics, Where's condition and one type throughout all import."""
    assert "mixed-input-types" not in codes(check_model(mixed("Pow", (F, H))))
    assert "mixed-input-types" not in codes(check_model(mixed("Where", (TensorProto.BOOL, H, H))))
    assert "mixed-input-types" not in codes(check_model(mixed("Add", (H, H))))
    stats = [numpy_helper.from_array(np.ones(4, np.float16), n) for n in ("s", "b", "m", "v")]
    bn = model([helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="bn")],
               inputs=[vi("x", [1, 4, 2, 2])], inits=stats)
    assert "mixed-input-types" not in codes(check_model(bn))


def test_mixed_types_inside_a_loop_body_name_the_loop():
    body = helper.make_graph(
        [helper.make_node("Add", ["xin", "h16"], ["s"], name="inner_add"),
         helper.make_node("Identity", ["cond"], ["cond_out"])],
        "body", [vi("i", [], TensorProto.INT64), vi("cond", [], TensorProto.BOOL), vi("xin", [4])],
        [vi("cond_out", [], TensorProto.BOOL), vi("s", [4])],
        [numpy_helper.from_array(np.ones(4, np.float16), "h16")])
    trip = numpy_helper.from_array(np.array(2, np.int64), "trip")
    m = model([helper.make_node("Loop", ["trip", "", "x"], ["y"], name="loop", body=body)],
              inputs=[vi("x", [4])], inits=[trip])
    f = only(check_model(m), "mixed-input-types")
    assert f.nodes == ["loop"] and "in the body of Loop 'loop'" in f.message


def test_a_variant_file_is_checked_as_a_model(tmp_path):
    """check on a half variant whose Cast went missing: the variant is just a model to the check."""
    w16 = numpy_helper.from_array(np.ones((1, 4), np.float16), "w16")
    broken = model([helper.make_node("Add", ["x", "w16"], ["s"], name="add"),
                    helper.make_node("Relu", ["s"], ["y"], name="relu")], inits=[w16])
    path = tmp_path / "broken_fp16.onnx"
    onnx.save(broken, path)
    report = check_model(onnx.load(path), model_path=path, plan=PrecisionPlan(default="fp16"))
    assert only(report, "mixed-input-types").nodes == ["add"]


# ------------------------------------------------------------------------------------------------ severities

def _dyn() -> onnx.ModelProto:
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")], inputs=[vi("x", ["N", 4])])


def _gemm() -> onnx.ModelProto:
    w = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    return model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], inputs=[vi("x", [1, 4])], inits=[w])


def _two_gemms() -> onnx.ModelProto:
    w = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    return model([helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
                  helper.make_node("Gemm", ["h", "w"], ["y"], name="fc")], inputs=[vi("x", [1, 4])], inits=[w])


def _fp8() -> onnx.ModelProto:
    zp8 = helper.make_tensor("zp8", TensorProto.FLOAT8E4M3FN, [1], [0.0])
    s = numpy_helper.from_array(np.ones(1, np.float32), "s")
    return model([helper.make_node("QuantizeLinear", ["x", "s", "zp8"], ["q"], name="q8"),
                  helper.make_node("DequantizeLinear", ["q", "s", "zp8"], ["y"], name="dq8")], inits=[s, zp8],
                 opset=19)


def _squeeze() -> onnx.ModelProto:
    return model([helper.make_node("Squeeze", ["x"], ["y"], name="sq")], inputs=[vi("x", ["b", 1, 4])])


ERROR_CODES = {
    "unsupported-op": lambda: check_model(model([helper.make_node("Unique", ["x"], ["y"], name="u")])),
    "unlisted-op": lambda: check_model(model([helper.make_node("NoSuchOp", ["x"], ["y"], name="u")])),
    "custom-domain": lambda: check_model(model([helper.make_node("Mine", ["x"], ["y"], name="u", domain="my")],
                                               extra_opsets={"my": 1})),
    "onnx-ml-op": lambda: check_model(model([helper.make_node("Normalizer", ["x"], ["y"], name="u",
                                                              domain="ai.onnx.ml")], extra_opsets={"ai.onnx.ml": 3})),
    "dynamic-quantization": lambda: check_model(model([helper.make_node("DynamicQuantizeLinear", ["x"],
                                                                        ["q", "s", "z"], name="dql")])),
    "qoperator-format": lambda: check_model(model([helper.make_node("QLinearConv", ["q", "s", "z", "w", "s", "z",
                                                                                    "s", "z"], ["y"], name="qc")])),
    "qdq-domain": lambda: check_model(model([helper.make_node("QuantizeLinear", ["x", "s"], ["y"], name="q",
                                                              domain="com.microsoft")],
                                            extra_opsets={"com.microsoft": 1})),
    "qdq-zero-point-not-zero": lambda: check_model(qdq(zp=np.int8(5))),
    "op-restriction": lambda: check_model(resize_model(mode="cubic", scales=[1, 2, 2, 2])),
    "io-dtype": lambda: check_model(model([helper.make_node("Identity", ["x"], ["y"], name="id")],
                                          inputs=[vi("x", [2], TensorProto.STRING)],
                                          outputs=[vi("y", [2], TensorProto.STRING)])),
    "shape-unknown-input": lambda: check_model(_dyn(), shapes={"images": (1, 4)}),
    "shape-mismatch": lambda: check_model(_dyn(), shapes={"x": (1, 5)}),
    "profile-unknown-input": lambda: check_model(
        _dyn(), profile=OptimizationProfile.of([InputProfile.fixed("images", (1, 4))])),
    "profile-mismatch": lambda: check_model(
        _dyn(), profile=OptimizationProfile.of([InputProfile("x", (8, 4), (4, 4), (1, 4))])),
    "dim-param-conflict": lambda: check_model(classifier(), shapes={"x": (1, 3, 48, 192)}),
    "plan-mixed-half": lambda: check_model(_two_gemms(), plan=PrecisionPlan(default="fp16",
                                                                            op_rules={"Gemm": "bf16"})),
    "mixed-input-types": lambda: check_model(mixed("Add", (F, H))),
    "rtx-fp8-target": lambda: check_model(_fp8(), trt_version="rtx"),
    "rtx-turing-bf16": lambda: check_model(_gemm(), plan=PrecisionPlan(default="bf16"), trt_version="rtx",
                                           targets="7.5"),
    "rtx-turing-fp32-gemm": lambda: check_model(_gemm(), trt_version="rtx", targets="7.5"),
    "rtx-squeeze-no-axes": lambda: check_model(_squeeze(), trt_version="rtx", shapes={"x": (1, 1, 4)}),
    "rtx-nonzero-plugin": lambda: check_model(nonzero(), trt_version="rtx"),
    "shape-break": lambda: check_model(fpn(), trt_version="11", shapes={"x": (1, 1, 64, 42)}),
}


@pytest.mark.parametrize("code", sorted(ERROR_CODES))
def test_every_error_code_is_an_error(code):
    """Each error-level code, triggered, is reported as an error: the build is expected to fail, so the GUI asks
    before building and `trtlab check` exits 1. (A warning would let the build start.)"""
    report = ERROR_CODES[code]()
    found = [f for f in report.findings if f.code == code]
    assert found, (code, report.findings)
    assert all(f.severity == "error" for f in found), (code, found)
    assert report.blocks_build


def test_the_severity_table_covers_every_error_code_in_the_sources():
    """A new error-level code gets a row in ERROR_CODES (the Q/DQ rules have their own table in
    test_readiness.py::test_each_qdq_rule)."""
    import re
    from pathlib import Path

    import app.core.readiness as readiness

    found: set[str] = set()
    for path in Path(readiness.__file__).parent.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        found |= set(re.findall(r'Finding\(\s*"error"(?: if \w+ else "warning")?,\s*"([a-z0-9-]+)"', text))
    found |= {"unsupported-op", "unlisted-op", "custom-domain", "onnx-ml-op", "dynamic-quantization",
              "qoperator-format", "qdq-domain"}  # check_ops picks the code in a variable
    assert {"op-restriction", "dim-param-conflict", "rtx-squeeze-no-axes", "mixed-input-types"} <= found  # it reads
    assert found <= set(ERROR_CODES), sorted(found - set(ERROR_CODES))


def test_nonzero_is_refused_for_rtx_only():
    """A Piper TTS model failed this way; TensorRT 10/11 ship the plugin."""
    rtx = check_model(nonzero(), trt_version="rtx")
    assert "rtx-nonzero-plugin" in codes(rtx) and only(rtx, "rtx-nonzero-plugin").nodes == ["nz"]
    assert "rtx-nonzero-plugin" not in codes(check_model(nonzero(), trt_version="11"))
