"""Shape-range analysis on models with the constraints real exporters write: a stride-4 FPN add, a Concat of a
down- and up-sampled branch, a Reshape into fixed rows, a position table of 512 rows. Each break names the node and
its dims; each rule is found by probing sizes; `check` and `build` use them."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from app.core.readiness import check_model
from app.core.readiness.shape_range import analyse, analyse_profile, dim_rule, shape_breaks
from tests.support.models import fpn
from tests.support.shared import model_shapes, shared_models


def _save(model: onnx.ModelProto, path) -> str:
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return str(path)


def _model(nodes, inputs, outputs, inits=(), opset: int = 17) -> onnx.ModelProto:
    m = helper.make_model(helper.make_graph(nodes, "m", inputs, outputs, list(inits)),
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _w(name: str, shape) -> onnx.TensorProto:
    return numpy_helper.from_array(np.ones(shape, np.float32), name)


def rows_of_16() -> onnx.ModelProto:
    """x[1, L] → Reshape to [-1, 16]: L must be a multiple of 16."""
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["y"], name="to_rows")]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "L"])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["R", 16])],
                  [numpy_helper.from_array(np.array([-1, 16], np.int64), "shape")])


def positions_512() -> onnx.ModelProto:
    """x[1, L, 8] + a 512-row position table sliced to L: L must be at most 512 (Slice clamps to the table)."""
    nodes = [helper.make_node("Shape", ["x"], ["s"], start=1, end=2, name="seq_len"),
             helper.make_node("Slice", ["table", "zero", "s", "zero"], ["pos"], name="positions"),
             helper.make_node("Add", ["x", "pos"], ["y"], name="add_positions")]
    inits = [_w("table", [512, 8]), numpy_helper.from_array(np.array([0], np.int64), "zero")]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "L", 8])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "L", 8])], inits)


def test_a_break_names_the_node_its_dims_and_the_input_shapes():
    found = shape_breaks(fpn(), {"x": (1, 1, 40, 42)})
    assert len(found) == 1 and found[0].node == "fpn_add" and found[0].op == "Add"
    assert found[0].message == "dims 21 and 22 do not broadcast (axis 3)"
    assert "x 1×1×40×42" in found[0].text()
    assert shape_breaks(fpn(), {"x": (1, 1, 40, 44)}) == []
    (b,) = shape_breaks(rows_of_16(), {"x": (1, 40)})
    assert b.node == "to_rows" and "40 values cannot be reshaped to [-1, 16]" in b.message
    (b,) = shape_breaks(positions_512(), {"x": (1, 600, 8)})
    assert b.node == "add_positions" and "512 and 600" in b.message


@pytest.mark.parametrize("model, name, axis, good, bad, expected, nearest", [
    (fpn, "x", 3, (1, 1, 40, 44), 42, {"multiple": 4}, [40, 44]),
    (rows_of_16, "x", 1, (1, 64), 40, {"multiple": 16}, [32, 48]),
    (positions_512, "x", 1, (1, 100, 8), 600, {"at_most": 512}, [512]),
])
def test_the_rule_on_a_dim_is_found_by_probing(model, name, axis, good, bad, expected, nearest):
    rule = dim_rule(model(), {name: good}, name, axis, bad)
    assert rule is not None
    assert {k: v for k, v in rule.to_json().items() if k in expected} == expected
    assert rule.nearest(bad) == nearest and not rule.ok(bad) and all(rule.ok(v) for v in nearest)


def test_a_profile_is_checked_at_its_corners_and_inside_its_range():
    from app.core.engine import InputProfile, OptimizationProfile

    bad = OptimizationProfile.of([InputProfile("x", (1, 1, 32, 32), (1, 1, 64, 64), (1, 1, 128, 130))])
    report = analyse_profile(fpn(), bad)
    assert [(w, b.node) for w, b in report.breaks] == [("max", "fpn_add")]
    assert report.fixes({"x": (1, 1, 128, 130)}) == ["x dim 3: 128 or 132 instead of 130 (a multiple of 4)"]
    # Corners that keep the rule: the build would start, but sizes inside the range break.
    good = OptimizationProfile.of([InputProfile("x", (1, 1, 32, 32), (1, 1, 64, 64), (1, 1, 128, 128))])
    report = analyse_profile(fpn(), good)
    assert report.breaks == [] and {(n, a) for n, a, _, _ in report.inside} == {("x", 2), ("x", 3)}


def test_check_reports_the_break_with_the_rule_and_the_nearest_sizes():
    report = check_model(fpn(), shapes={"x": (1, 1, 64, 42)}, trt_version="rtx")
    (f,) = [f for f in report.findings if f.code == "shape-break"]
    assert f.severity == "error" and f.nodes == ["fpn_add"]
    assert "x dim 3 must be a multiple of 4" in f.message
    assert "x dim 3: 40 or 44 instead of 42" in f.fix
    assert not [f for f in check_model(fpn(), shapes={"x": (1, 1, 64, 44)}, trt_version="rtx").findings
                if f.code == "shape-break"]


def test_the_shared_models_at_their_shapes_have_no_break(models_dir):
    """No false alarm: every shared model at the shapes its README gives (all ten: tests/support/shared.py)."""
    checked = 0
    for path in shared_models():
        shapes = {k: tuple(v) for k, v in model_shapes(path).items()}
        if shapes:
            report = analyse(onnx.load(str(path), load_external_data=False), shapes=shapes)
            assert report.breaks == [], (path.name, [b.text() for _, b in report.breaks])
            checked += 1
    assert checked >= 9


def test_deepfilternet_with_two_time_lengths_breaks_at_its_combining_add(models_dir):
    """A real model's cross-input constraint: its two inputs share the time axis."""
    model = onnx.load(str(models_dir / "deepfilternet3_enc.onnx"), load_external_data=False)
    (b,) = shape_breaks(model, {"feat_erb": (1, 1, 100, 32), "feat_spec": (1, 2, 101, 96)})
    assert b.node == "/combine/Add" and b.message == "dims 100 and 101 do not broadcast (axis 1)"


def test_build_refuses_a_profile_whose_max_breaks_before_building(tmp_path, capsys):
    from app.cli.main import run_cli as main

    path = _save(fpn(), tmp_path / "fpn.onnx")
    code = main(["build", path, "--backend", "trt-rtx", "--profile", "x:1x1x32x32:1x1x64x64:1x1x128x130",
                 "-o", str(tmp_path / "e.plan")])
    err = capsys.readouterr().err
    assert code == 2 and "The profile's max makes the graph's shapes disagree: Add 'fpn_add'" in err
    assert "x dim 3: 128 or 132 instead of 130" in err and "--force" in err
    assert not (tmp_path / "e.plan").exists()


def test_check_takes_a_profile(tmp_path, capsys):
    from app.cli.main import run_cli as main

    path = _save(fpn(), tmp_path / "fpn.onnx")
    code = main(["check", path, "--trt-version", "rtx", "--profile", "x:1x1x32x32:1x1x64x64:1x1x128x130"])
    out = capsys.readouterr().out
    assert code == 1 and "[shape-break] At the profile's max" in out and "[profile-range-breaks]" in out


def skip_concat() -> onnx.ModelProto:
    """x[1,1,H,W] → Conv s2 → Resize ×2 → Concat(x, up) on channels: H and W must be even."""
    nodes = [helper.make_node("Conv", ["x", "w"], ["d"], strides=[2, 2], name="down"),
             helper.make_node("Resize", ["d", "", "scales"], ["up"], mode="nearest", name="up"),
             helper.make_node("Concat", ["x", "up"], ["y"], axis=1, name="skip_concat")]
    inits = [_w("w", [1, 1, 1, 1]), numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, "H", "W"])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, "H", "W"])], inits)


def test_a_concat_of_a_resampled_branch_needs_even_sizes():
    (b,) = shape_breaks(skip_concat(), {"x": (1, 1, 31, 32)})
    assert b.node == "skip_concat" and b.message == "inputs disagree on axis 2 (31 ≠ 32); only axis 1 may differ"
    rule = dim_rule(skip_concat(), {"x": (1, 1, 32, 32)}, "x", 2, 31)
    assert rule is not None and rule.multiple == 2 and rule.nearest(31) == [30, 32]


def test_a_time_budget_cuts_the_sampling_but_never_the_corners():
    """The window checks after every edit with a budget: breaks at min/opt/max are always found."""
    from app.core.engine import InputProfile, OptimizationProfile

    bad = OptimizationProfile.of([InputProfile("x", (1, 1, 32, 32), (1, 1, 64, 64), (1, 1, 128, 130))])
    report = analyse_profile(fpn(), bad, budget_s=0.0)
    assert [(w, b.node) for w, b in report.breaks] == [("max", "fpn_add")]
    assert report.cut and report.inside == [] and report.rules == []
    findings = check_model(fpn(), profile=bad, shape_budget_s=0.0).findings
    assert {f.code for f in findings} >= {"shape-break", "profile-range-partial"}


def test_remembered_answers_follow_the_graph_not_the_object():
    """The same node names and count, another Reshape target: the remembered answer of the first is not the second's
    (models made and dropped in turn can reuse one object id)."""
    for _ in range(3):
        assert len(shape_breaks(rows_of_16(), {"x": (1, 40)})) == 1
        other = rows_of_16()
        other.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.array([-1, 8], np.int64), "shape"))
        assert shape_breaks(other, {"x": (1, 40)}) == []
