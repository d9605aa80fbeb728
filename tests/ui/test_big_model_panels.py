"""A big model's panels are filled after its shapes arrive, over several event-loop turns (the plan's rows and the
readiness check on worker threads), not in one long stretch: the drawing is labelled at once, the Precision table,
the Run panel and the Readiness dock follow, and `modelShown` says when all are in. Timings are the benchmark's
(benchmarks/first_paint.py); this checks what the user ends up with."""

from __future__ import annotations

import onnx
import pytest
from PySide6.QtCore import Qt

from app.ui.precision.panel import COL_NODE, COL_OP
from app.ui.precision.steps import FILL_LATER_NODES
from tests.support import synthetic_graphs

NODES = 6_000  # above FILL_LATER_NODES, small enough to open in a few seconds


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    path = tmp_path_factory.mktemp("big") / "encoder.onnx"
    model = synthetic_graphs.transformer(NODES, scoped=True)
    onnx.save(model, path)
    return path, model


def _open_and_watch(qtbot, window, path) -> dict:
    """Open `path`; what the window showed right after its own handler of `loaded`, and once it was shown."""
    seen: dict = {}

    def on_loaded(opened) -> None:  # connected after the window's handler: it has run
        seen["rows_at_loaded"] = len(window.plan.rows)
        seen["table_at_loaded"] = window.precision_panel.proxy.rowCount()
        seen["shown_at_loaded"] = "shown" in seen
        seen["labelled_at_loaded"] = any("×" in label for label in window.view.graph.edge_labels)

    window.loader.loaded.connect(on_loaded)
    window.modelShown.connect(lambda opened: seen.setdefault("shown", opened))
    with qtbot.waitSignal(window.modelShown, timeout=180_000):
        window.open_path(path)
    qtbot.waitUntil(lambda: not window.readiness.busy(), timeout=60_000)
    return seen


def test_big_model_panels_fill_after_the_drawing(qtbot, window, encoder):
    path, model = encoder
    assert len(model.graph.node) >= FILL_LATER_NODES
    seen = _open_and_watch(qtbot, window, path)
    assert window.opened is not None and seen["shown"] is window.opened, window.banner.text()

    # At `loaded` the drawing had its shapes at once; the plan, the table and `modelShown` came later.
    assert seen["labelled_at_loaded"]
    assert seen["rows_at_loaded"] == 0 and seen["table_at_loaded"] == 0
    assert not seen["shown_at_loaded"]

    # Then every panel: a row per node in the plan and in the table, in node order.
    nodes = len(model.graph.node)
    assert len(window.plan.rows) == nodes
    panel = window.precision_panel
    assert panel.proxy.rowCount() == nodes
    assert [panel.proxy.index(r, COL_NODE).data() for r in range(3)] == [row.key for row in window.plan.rows[:3]]
    assert sum(window.plan.counts().values()) == nodes and panel.summary.text() == window.plan.summary()
    # The readiness report, found on a worker thread, is on show with its summary and the dock's count.
    report = window.readiness.report
    assert report is not None
    assert window.readiness_panel.report is report
    assert "checked in" in window.readiness_panel.summary.text()
    # The Run panel knows the model's outputs.
    outputs = [o.name for o in window.opened.summary.outputs]
    assert outputs and set(window.run_panel.outputs_box.combos) == set(outputs)


def test_big_model_table_selects_sorts_and_filters(qtbot, window, encoder):
    path, model = encoder
    _open_and_watch(qtbot, window, path)
    panel, ctl = window.precision_panel, window.plan
    target = len(ctl.rows) // 2
    panel.select_node(target)
    assert panel.selected_keys() == [ctl.rows[target].key]
    # Activating the row shows its node in the graph.
    activated = []
    panel.nodeActivated.connect(activated.append)
    panel.table.activated.emit(panel.table.currentIndex())
    assert activated == [target]
    # Sorting by op keeps the selection on its row; every row is still there, in op order.
    panel.table.sortByColumn(COL_OP, Qt.SortOrder.AscendingOrder)
    ops = [panel.proxy.index(r, COL_OP).data() for r in range(panel.proxy.rowCount())]
    assert len(ops) == len(ctl.rows) and ops == sorted(ops)
    assert panel.selected_keys() == [ctl.rows[target].key]
    # A filter, then an edit that moves rows out of it: the table follows the plan.
    panel.filter_edit.setText("softmax")
    softmax = [r for r in ctl.rows if "softmax" in r.key.lower() or "softmax" in r.op_type.lower()]
    assert softmax and panel.proxy.rowCount() == len(softmax)
    panel.filter_edit.clear()
    panel.filter_combo.setCurrentIndex(panel.filter_combo.findData("override"))
    assert panel.proxy.rowCount() == 0
    ctl.set_nodes([r.key for r in softmax[:2]], "fp16")
    assert {panel.proxy.index(r, COL_NODE).data() for r in range(panel.proxy.rowCount())} == \
        {r.key for r in softmax[:2]}
    ctl.undo_stack.undo()
    assert panel.proxy.rowCount() == 0


def test_plan_edit_checks_a_big_model_again_off_the_gui_thread(qtbot, window, encoder):
    path, _model = encoder
    _open_and_watch(qtbot, window, path)
    first = window.readiness.report
    with qtbot.waitSignal(window.readiness.checked, timeout=60_000) as blocker:
        window.plan.set_default("fp16")
    assert blocker.args[0] is window.readiness.report and window.readiness.report is not first
    assert window.readiness_panel.report is window.readiness.report


def test_another_model_opened_while_filling_wins(qtbot, window, encoder, model_paths):
    path, _model = encoder
    small = model_paths["u2netp"]
    shown = []
    window.modelShown.connect(lambda opened: shown.append(opened.path.name))
    # The big model's shapes arrive; before its panels are filled, another model is opened.
    window.loader.loaded.connect(lambda opened: window.open_path(small) if opened.path == path else None)
    with qtbot.waitSignal(window.modelShown, timeout=180_000,
                          check_params_cb=lambda opened: opened.path == small):
        window.open_path(path)
    qtbot.waitUntil(lambda: not window.readiness.busy(), timeout=60_000)
    assert shown == [small.name]
    small_nodes = len(window.opened.doc.model.graph.node)
    assert window.opened.path == small and len(window.plan.rows) == small_nodes < FILL_LATER_NODES
    assert window.precision_panel.proxy.rowCount() == small_nodes
    assert window.readiness.report is not None and window.readiness_panel.report is window.readiness.report


def test_big_model_reopened_keeps_its_plan(qtbot, window, encoder):
    path, _model = encoder
    _open_and_watch(qtbot, window, path)
    window.plan.set_default("fp16")
    fp16 = window.plan.counts().get("fp16", 0)
    assert fp16 > 0
    with qtbot.waitSignal(window.modelShown, timeout=180_000):
        window.reload()  # the same file again (as new input shapes do): the plan and its undo step stay
    qtbot.waitUntil(lambda: not window.readiness.busy(), timeout=60_000)
    assert window.plan.plan.default == "fp16" and window.plan.undo_stack.count() == 1
    assert window.plan.counts().get("fp16", 0) == fp16
    assert window.precision_panel.default_combo.currentData() == "fp16"
