"""The precision plan through the real window: set precision on graph nodes, see the colours and the table,
undo/redo, save/load, and a diagnosis of the plan's variant shown as a heat-map."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtWidgets import QMenu

from app.ui.common.style import PRECISION_COLORS
from app.ui.graph.node_colors import ERROR_BANDS, NONFINITE
from app.ui.precision.panel import COL_OP, fill_precision_menu
from tests.ui.conftest import open_and_wait


def _display_nodes(window, op: str) -> list[int]:
    g = window.graph_page.picture.graph
    return [i for i in range(g.node_count) if g.titles[i] == op and g.onnx_index[i] >= 0]


def _fill(window, node: int):
    return window.view.item.node_fill[node].name()


def test_set_precision_on_selected_nodes_colours_table_and_undo(qtbot, window, model_paths):
    open_and_wait(qtbot, window, model_paths["ppocr_cls_mobile_v2"])
    convs = _display_nodes(window, "Conv")[:3]
    window.view.selection.set(convs)
    window.view.setFocus()
    window.menus.precision_actions[1].trigger()          # Alt+2: FP16
    keys = [window.plan.key_of(int(window.graph_page.picture.graph.onnx_index[n])) for n in convs]
    assert window.plan.plan.overrides == {k: "fp16" for k in keys}
    # The graph switched to precision colours, with a legend that counts them.
    assert window.colors.color_mode == "precision" and window.colors.color_actions["precision"].isChecked()
    assert all(_fill(window, n) == PRECISION_COLORS["fp16"].name() for n in convs)
    other = _display_nodes(window, "Conv")[3]
    assert _fill(window, other) == PRECISION_COLORS["fp32"].name()
    assert window.view.legend.title == "Planned precision" and ("FP16", 3) in window.view.legend.entries
    assert "•" in window.windowTitle()  # unsaved plan
    # The table shows it; filter to the overridden rows.
    panel = window.precision_panel
    panel.filter_combo.setCurrentIndex(panel.filter_combo.findData("override"))
    assert panel.proxy.rowCount() == 3
    assert {panel.proxy.index(r, 2).data() for r in range(3)} == {"FP16"}
    # Undo and redo through the Edit menu's actions.
    window.menus.act_undo.trigger()
    assert window.plan.plan.overrides == {} and panel.proxy.rowCount() == 0
    assert _fill(window, convs[0]) == PRECISION_COLORS["fp32"].name()
    window.menus.act_redo.trigger()
    assert window.plan.plan.overrides == {k: "fp16" for k in keys}
    # Alt+0 puts them back on the default; Ctrl+Z undoes that too.
    window.view.selection.set(convs[:1])
    window.menus.precision_actions[4].trigger()
    assert keys[0] not in window.plan.plan.overrides
    window.menus.act_undo.trigger()
    assert window.plan.plan.overrides[keys[0]] == "fp16"


def test_context_menu_actions_and_op_rules(qtbot, window, model_paths):
    open_and_wait(qtbot, window, model_paths["ppocr_cls_mobile_v2"])
    ctl = window.plan
    key = ctl.rows[next(i for i, r in enumerate(ctl.rows) if r.op_type == "Conv")].key
    menu = QMenu()
    fill_precision_menu(menu, ctl, [key], ["Conv"])
    texts = [a.text() for a in menu.actions()]
    assert texts[0] == f"Precision of {key}" and "  INT8" in texts
    next(a for a in menu.actions() if a.text() == "  BF16").trigger()
    assert ctl.plan.overrides == {key: "bf16"}
    sub = next(a.menu() for a in menu.actions() if a.menu() is not None)
    assert sub.title() == "All Conv nodes"
    next(a for a in sub.actions() if a.text() == "FP16").trigger()
    conv_rows = [r for r in ctl.rows if r.op_type == "Conv"]
    assert ctl.plan.op_rules == {"Conv": "fp16"}
    assert sum(r.precision == "fp16" for r in conv_rows) == len(conv_rows) - 1  # the override wins
    # Table: sort by op, filter by text.
    panel = window.precision_panel
    panel.filter_edit.setText("conv")
    assert 0 < panel.proxy.rowCount() <= len(ctl.rows)
    assert all("conv" in panel.proxy.index(r, 0).data().lower() or panel.proxy.index(r, COL_OP).data() == "Conv"
               for r in range(panel.proxy.rowCount()))
    menu.deleteLater()


def test_plan_save_load_round_trip_and_bad_file(qtbot, window, model_paths, tmp_path):
    open_and_wait(qtbot, window, model_paths["ppocr_cls_mobile_v2"])
    ctl = window.plan
    ctl.set_default("fp16")
    ctl.set_nodes([ctl.rows[0].key], "fp32")
    path = tmp_path / "p.plan.json"
    assert window.plan_files.save_plan(path)
    saved = json.loads(path.read_text())
    assert saved["default"] == "fp16" and saved["overrides"] == {ctl.rows[0].key: "fp32"}
    assert saved["model"] == "ppocr_cls_mobile_v2.onnx" and "•" not in window.windowTitle()
    ctl.clear_overrides()
    ctl.set_default("fp32")
    assert window.plan_files.load_plan(path)
    assert ctl.plan.default == "fp16" and ctl.plan.overrides == {ctl.rows[0].key: "fp32"}
    window.menus.act_undo.trigger()  # loading is one undo step
    assert ctl.plan.default == "fp32"
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    assert not window.plan_files.load_plan(bad)
    assert window.banner.isVisible() and "not valid JSON" in window.banner.message
    assert ctl.plan.default == "fp32"  # nothing lost


def test_plan_survives_new_input_shapes(qtbot, window, model_paths):
    open_and_wait(qtbot, window, model_paths["ppocr_cls_mobile_v2"])
    window.plan.set_default("fp16")
    window.shapes_panel.edits["x"].setText("1x3x48x192")
    window.shapes_panel.apply()
    qtbot.waitUntil(lambda: not window.loader.is_busy(), timeout=30_000)
    assert window.plan.plan.default == "fp16" and window.plan.undo_stack.count() == 1


def test_diagnose_the_plan_through_the_window(qtbot, window, tmp_path):
    """A planted overflow: FP16 turns one Mul's output into Inf; the heat-map and 'go to' find it."""
    import onnx

    from tests.support.models import overflow_model

    path = tmp_path / "overflow.onnx"
    onnx.save(overflow_model(), str(path))
    open_and_wait(qtbot, window, path)
    window.plan.set_default("fp16")
    # Set by name: FP16's range rule (which would keep this Mul FP32, its values reach 1e6) respects the choice.
    window.plan.set_nodes(["scale2"], "fp16")
    panel = window.run_panel
    assert panel.precisions() == ["plan"]  # the plan is what runs unless other precisions are ticked
    for name, cb in panel.checks.items():
        cb.setChecked(name == "ort-cpu")
    with qtbot.waitSignal(window.jobs.finished, timeout=120_000) as sig:
        panel.diagnose_button.click()
    result = sig.args[1]
    assert result.status == "done", (result.error, result.log_tail)
    assert result.data["candidate"] == "ort-cpu:plan"
    doc = window.precision.diagnosis
    assert doc is not None and doc.first_nonfinite is not None
    assert window.colors.color_mode == "error" and window.precision_dock.isVisible()
    assert window.precision_panel.first_button.isEnabled() and window.precision.act_first_bad.isEnabled()
    g = window.graph_page.picture.graph
    first_row = next(r for r in window.plan.rows if r.key == doc.first_nonfinite)
    node = g.node_of_onnx(first_row.index)
    assert _fill(window, node) == NONFINITE.name()
    assert any(label == "NaN / Inf" for label, _ in window.view.legend.entries)
    window.view.selection.clear()
    window.precision.go_first_nonfinite()
    assert window.view.selection.selected == frozenset({node})
    sel = window.precision_panel.selected_keys()
    assert sel == [doc.first_nonfinite]
    # Back to precision colours and to error colours by the View actions.
    window.colors.color_actions["precision"].trigger()
    assert _fill(window, node) == PRECISION_COLORS["fp16"].name()
    window.colors.color_actions["error"].trigger()
    assert _fill(window, node) == NONFINITE.name()
    relu = g.node_of_onnx(0)  # before the overflow: FP16 rounding only
    assert _fill(window, relu) in {band[2].name() for band in ERROR_BANDS[:3]}


def test_fallback_search_through_the_window_and_apply(qtbot, window, tmp_path):
    from tests.conftest import weight_overflow_model

    open_and_wait(qtbot, window, weight_overflow_model(tmp_path / "wov.onnx"))
    window.plan.set_default("fp16")
    panel = window.run_panel
    for name, cb in panel.checks.items():
        cb.setChecked(name == "ort-cpu")
    panel.min_cos.setValue(0.9999)
    panel.samples.setValue(4)
    with qtbot.waitSignal(window.jobs.finished, timeout=120_000) as sig:
        window.precision_panel.fallback_button.click()
    result = sig.args[1]
    assert result.status == "done", (result.error, result.log_tail)
    pp = window.precision_panel
    assert pp.fallback is not None and pp.fallback.keep_high_precision == ("mm2",) and pp.fallback.met
    assert pp.apply_button.isVisible() and "target met" in pp.fallback_label.text()
    pp.apply_button.click()
    assert window.plan.plan.overrides == {"mm2": "fp32"} and window.plan.plan.default == "fp16"
    assert window.colors.color_mode == "precision"
    window.menus.act_undo.trigger()
    assert window.plan.plan.overrides == {}


def test_fallback_on_an_all_fp32_plan_says_why(qtbot, window, tmp_path):
    from tests.conftest import weight_overflow_model

    open_and_wait(qtbot, window, weight_overflow_model(tmp_path / "wov.onnx"))
    for name, cb in window.run_panel.checks.items():
        cb.setChecked(name == "ort-cpu")
    assert window.run_panel.precisions() == ["fp16", "int8"]  # an all-FP32 plan: FP16 and INT8 are compared
    window.run_panel.set_precisions(["plan"])  # the plan itself, which changes nothing, is refused with the reason
    assert window.run_controller.start_fallback() is None
    assert window.banner.isVisible() and "FP32" in window.banner.message


def test_int8_plan_compared_through_the_window_says_random_calibration(qtbot, window, tmp_path):
    from tests.conftest import outlier_int8_model

    open_and_wait(qtbot, window, outlier_int8_model(tmp_path / "oi8.onnx"))
    ctl = window.plan
    ctl.set_default("int8")
    ctl.set_nodes(["mm1"], "fp32")  # the outlier MatMul stays float: the rest is INT8
    panel = window.run_panel
    for name, cb in panel.checks.items():
        cb.setChecked(name == "ort-cpu")
    panel.calib_method.setCurrentText("entropy")
    panel.calib_samples.setValue(8)
    panel.min_cos.setValue(0.99)
    with qtbot.waitSignal(window.jobs.finished, timeout=120_000) as sig:
        panel.compare_button.click()
    result = sig.args[1]
    assert result.status == "done", (result.error, result.log_tail)
    cand = result.data["candidates"][0]
    assert cand["name"] == "ort-cpu:plan" and cand["passed"]
    qtbot.waitUntil(lambda: not Path(result.workdir).exists(), timeout=5_000)  # the job's folder is cleaned
    notes = " ".join(result.data["notes"]["ort-cpu:plan"])
    assert "1 nodes quantized" in notes and "entropy calibration on 8 samples" in notes
    assert "CALIBRATED ON RANDOM DATA" in notes
    warning = window.results_view.warning
    assert warning.isVisible() and "ort-cpu:plan: INT8 calibrated on random data" in warning.text()


def test_table_selection_survives_plan_edits(qtbot, window, model_paths):
    open_and_wait(qtbot, window, model_paths["ppocr_cls_mobile_v2"])
    panel = window.precision_panel
    panel.table.selectRow(2)
    before = panel.selected_keys()
    assert len(before) == 1
    window.plan.set_nodes(before, "fp16")
    assert panel.selected_keys() == before
    window.menus.act_undo.trigger()
    assert panel.selected_keys() == before


def test_click_a_node_then_alt_2_makes_it_fp16(qtbot, window, model_paths):
    from PySide6.QtCore import Qt

    open_and_wait(qtbot, window, model_paths["ppocr_cls_mobile_v2"])
    g = window.graph_page.picture.graph
    conv = _display_nodes(window, "Conv")[0]
    window.view.center_on_node(conv, select=False)
    qtbot.waitUntil(lambda: window.view.viewport().rect().contains(
        window.view.mapFromScene(window.view.item.node_rect(conv).center())), timeout=5_000)
    pos = window.view.mapFromScene(window.view.item.node_rect(conv).center())
    qtbot.mouseClick(window.view.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    assert window.view.selection.selected == frozenset({conv})
    qtbot.keyClick(window.view, Qt.Key.Key_2, Qt.KeyboardModifier.AltModifier)
    key = window.plan.key_of(int(g.onnx_index[conv]))
    assert window.plan.plan.overrides == {key: "fp16"}
    assert _fill(window, conv) == PRECISION_COLORS["fp16"].name()
    qtbot.keyClick(window.view, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert window.plan.plan.overrides == {}


def test_plan_edits_survive_closing_the_window(qtbot, model_paths, tmp_path):
    from PySide6.QtCore import QSettings

    from app.ui.shell.main_window import MainWindow

    def make():
        w = MainWindow(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
        qtbot.addWidget(w)
        w.show()
        return w

    first = make()
    open_and_wait(qtbot, first, model_paths["ppocr_cls_mobile_v2"])
    first.plan.set_default("fp16")
    key = first.plan.rows[5].key
    first.plan.set_nodes([key], "fp32")
    first.close()   # no save dialog, no save: the edits were written as they were made
    second = make()
    open_and_wait(qtbot, second, model_paths["ppocr_cls_mobile_v2"])
    assert second.plan.plan.default == "fp16" and second.plan.plan.overrides == {key: "fp32"}
    assert "Restored" in second.status_label.text()
    second.menus.act_undo.trigger()  # the restore is one undo step
    assert second.plan.plan.default == "fp32"
    second.close()
