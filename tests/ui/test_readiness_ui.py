"""The readiness check through the real window: run on open and on plan edits, findings clickable to their
nodes, badges on the graph, and a build that is expected to fail asks first."""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper

from app.ui.model.readiness_panel import SEVERITY_COLORS
from tests.conftest import weight_overflow_model
from tests.ui.conftest import open_and_wait


def _custom_op_model(path):
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["r"], name="relu"),
                           helper.make_node("FusedGemm", ["r", "r"], ["y"], name="fused", domain="com.microsoft")],
                          "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 9
    onnx.save(m, str(path))
    return path


def test_clean_model_is_checked_on_open(qtbot, window, model_paths):
    open_and_wait(qtbot, window, model_paths["u2netp"])
    report = window.readiness.report
    assert report is not None and report.errors == 0 and report.warnings == 0
    assert "Nothing found that stops a TensorRT build" in window.readiness_panel.summary.text()
    # In the layout, but behind the Precision tab: nothing to say, so it does not come forward.
    assert not window.readiness_dock.isHidden()
    assert window.readiness_dock.visibleRegion().isEmpty()
    assert window.view.item.badges == {}  # notes get no badge


def test_plan_edit_rechecks_and_badges_the_overflowing_node(qtbot, window, tmp_path):
    open_and_wait(qtbot, window, weight_overflow_model(tmp_path / "wov.onnx"))
    assert window.readiness.report.warnings == 0
    window.plan.set_default("fp16")
    qtbot.waitUntil(lambda: window.readiness.report.warnings == 1, timeout=3_000)
    g = window.graph_page.picture.graph
    mm2 = g.node_of_onnx(next(r.index for r in window.plan.rows if r.key == "mm2"))
    assert window.view.item.badges == {mm2: SEVERITY_COLORS["warning"]}
    tree = window.readiness_panel.tree
    finding = tree.topLevelItem(0).child(0)
    assert "mm2" in finding.text(1) and "FP16" in finding.text(0)
    window.readiness_panel._activated(finding)
    assert window.view.selection.selected == frozenset({mm2})
    window.menus.act_undo.trigger()
    qtbot.waitUntil(lambda: window.readiness.report.warnings == 0, timeout=3_000)
    assert window.view.item.badges == {}


def test_errors_make_a_build_ask_first(qtbot, window, tmp_path, monkeypatch):
    open_and_wait(qtbot, window, _custom_op_model(tmp_path / "custom.onnx"))
    report = window.readiness.report
    assert report.errors >= 1 and "expected to fail" in window.readiness_panel.summary.text()
    assert window.readiness_dock.isVisible()  # shown at once for a model TensorRT cannot take
    assert "✗" in window.readiness_dock.windowTitle()
    g = window.graph_page.picture.graph
    fused = g.node_of_onnx(1)
    assert window.view.item.badges.get(fused) == SEVERITY_COLORS["error"]
    asked = []
    monkeypatch.setattr(window.run_controller, "_confirm_build", lambda r: asked.append(r.errors) or False)
    assert window.run_controller.start_build() is None
    assert asked and "Build not started" in window.status_label.text()
    # TensorRT 10.x is checked too, from the same support table.
    window.readiness_panel.version.setCurrentIndex(1)
    assert window.readiness.report.trt_version == "10" and window.readiness.report.errors >= 1


def _scatter_add_model(tmp_path):
    """ScatterElements with reduction add: TensorRT 10/11 import it (their ScatterElements plugin), TensorRT for
    RTX, which has no plugins, refuses it (measured with 1.7.1)."""
    import numpy as np
    from onnx import numpy_helper

    idx = numpy_helper.from_array(np.zeros((1, 4), dtype=np.int64), "idx")
    g = helper.make_graph([helper.make_node("ScatterElements", ["x", "idx", "u"], ["y"], name="scat", axis=0,
                                            reduction="add")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4]),
                           helper.make_tensor_value_info("u", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])], [idx])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 9
    path = tmp_path / "scatter_add.onnx"
    onnx.save(m, str(path))
    return path


def test_tensorrt_for_rtx_is_a_target_in_the_window(qtbot, window, tmp_path):
    """ScatterElements reducing with add: TensorRT 11 takes it, TensorRT for RTX's parser refuses it (measured)."""
    open_and_wait(qtbot, window, _scatter_add_model(tmp_path))
    combo = window.readiness_panel.version
    assert combo.currentData() == "11" and window.readiness.report.errors == 0
    combo.setCurrentIndex(combo.findData("rtx"))
    qtbot.waitUntil(lambda: window.readiness.report.trt_version == "rtx", timeout=5_000)
    assert any("scat" in f.nodes and f.severity == "error" for f in window.readiness.report.findings)
    assert "TensorRT for RTX" in window.readiness_panel.summary.text()


def test_a_build_is_checked_against_the_tensorrt_that_builds(qtbot, window, tmp_path, monkeypatch):
    """With only TensorRT for RTX here a build uses it, so RTX's objection counts although the dock shows 11."""
    from app.ui.run.controller import engine_backend

    if engine_backend()[0] != "trt-rtx":
        import pytest

        pytest.skip("needs TensorRT for RTX as the engine backend (installed, and no TensorRT 10/11)")
    open_and_wait(qtbot, window, _scatter_add_model(tmp_path))
    assert window.readiness_panel.version.currentData() == "11" and window.readiness.report.errors == 0
    asked = []
    monkeypatch.setattr(window.run_controller, "_confirm_build", lambda report: asked.append(report) or False)
    assert window.run_controller.start_build() is None
    assert asked and asked[0].trt_version == "rtx" and window.readiness.report.trt_version == "rtx"
    assert any("scat" in f.nodes for f in asked[0].by_severity()["error"])
    assert "Build not started" in window.status_label.text()
