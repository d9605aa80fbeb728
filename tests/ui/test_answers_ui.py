"""The answers in the window: each output's kind shown and set in the Run panel, the Answers tab's pictures (boxes on
the photos, masks and their |difference| maps), stepping through samples, and the kind choice kept in a project."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from tests.detector_models import save, topk_detector_model
from tests.ui.conftest import open_and_wait, run_jobs_and_wait


def _ink(widget) -> float:
    img = widget.grab().toImage()
    w, h = img.width(), img.height()
    dark = sum(1 for x in range(0, w, 3) for y in range(0, h, 3) if img.pixelColor(x, y).lightness() < 200)
    return dark / max(1, (w // 3) * (h // 3))


def test_a_detector_is_judged_by_its_boxes_and_a_kind_can_be_changed(qtbot, window, tmp_path):
    path = save(topk_detector_model(k=300), tmp_path, "topk.onnx")
    open_and_wait(qtbot, window, path)
    panel, view = window.run_panel, window.results_view
    box = panel.outputs_box
    # The kind is inferred from the graph (rows made through TopK) and shown with the reason.
    assert list(box.combos) == ["dets"]
    assert box.combos["dets"].currentText() == "auto (detections:xyxy)" and "TopK" in box.combos["dets"].toolTip()
    for name, cb in panel.checks.items():
        cb.setChecked(name == "ort-cpu")
    panel.set_precisions(["fp16"])
    panel.samples.setValue(3)
    run_jobs_and_wait(qtbot, window, panel.compare_button.click)
    out = view.state.output_entry("ort-cpu:fp16", "dets")
    assert out is not None and out.task is not None
    assert out.kind == "detections" and out.task.missed == 0 and out.task.extra_boxes == 0
    assert out.cosine is not None and out.cosine < 0.999  # the rows reorder; the boxes do not change: it passes
    assert view.scorecard.item(1, 1).text().startswith("✓") and "same boxes" in view.scorecard.item(1, 4).text()
    # The Answers tab shows the photo, FP32's boxes, and FP16's boxes over them, with pictures that are not blank.
    answers = view.answers_view
    assert view.tabs.currentWidget() is answers and answers.samples() == 3
    assert [p.has_picture() for p in answers.pictures] == [True, True, True]
    assert all(_ink(p) > 0.05 for p in answers.pictures)
    assert not answers.diff_box.isVisible()  # boxes have no |difference| map
    assert "Sample 1 of 3" in answers.sample_label.text()
    window.activateWindow()
    answers.setFocus()
    qtbot.waitUntil(answers.hasFocus, timeout=5_000)
    QTest.keyClick(answers, Qt.Key.Key_Right, Qt.KeyboardModifier.AltModifier)
    assert "Sample 2 of 3" in answers.sample_label.text()

    # Change… in Results opens the output's kind in the Run panel; "tensor" judges it element-wise next time.
    view.kind_button.click()
    assert window.run_dock.isVisible()
    box.combos["dets"].hidePopup()
    box.combos["dets"].setCurrentIndex(box.combos["dets"].findData("tensor"))
    assert box.kinds() == {"dets": "tensor"}
    results = run_jobs_and_wait(qtbot, window, panel.compare_button.click)
    assert results[0].data["output_kinds"]["dets"]["user"] is True
    out = view.state.output_entry("ort-cpu:fp16", "dets")
    assert out is not None and out.kind == "tensor" and out.task is None and out.judged_by == ("cos:0.999",)
    assert "kind: tensor" in view.kind_label.text()


def test_masks_and_their_difference_maps(qtbot, window, models_dir):
    open_and_wait(qtbot, window, models_dir / "u2netp.onnx")
    panel, view = window.run_panel, window.results_view
    assert all(c.currentText() == "auto (image:nchw)" for c in panel.outputs_box.combos.values())
    assert len(panel.outputs_box.combos) == 7
    for name, cb in panel.checks.items():
        cb.setChecked(name == "ort-cpu")
    panel.set_precisions(["fp16"])
    panel.samples.setValue(2)
    run_jobs_and_wait(qtbot, window, panel.compare_button.click)
    answers = view.answers_view
    assert view.output_combo.currentText() == "1959" and answers.samples() == 2
    # Input photo, FP32's mask, FP16's mask; then the |difference| map in FP16's place (Alt+D).
    assert len(answers.pictures) == 3 and all(p.has_picture() for p in answers.pictures)
    mask = answers.pictures[1].grab().toImage()
    assert mask.width() > 60
    assert answers.diff_box.isVisible() and not answers.diff_box.isChecked()
    window.activateWindow()
    answers.setFocus()
    qtbot.waitUntil(answers.hasFocus, timeout=5_000)
    QTest.keyClick(answers, Qt.Key.Key_D, Qt.KeyboardModifier.AltModifier)
    assert answers.diff_box.isChecked() and len(answers.pictures) == 3
    assert "masks overlap" in view.scorecard.item(1, 4).text()


def test_a_chosen_kind_is_saved_with_the_run_settings(qtbot, window, models_dir):
    from app.ui.run.settings import apply_settings, panel_settings

    open_and_wait(qtbot, window, models_dir / "u2netp.onnx")
    box = window.run_panel.outputs_box
    box.combos["1965"].setCurrentIndex(box.combos["1965"].findData("tensor"))
    saved = panel_settings(window.run_panel)
    assert saved["output_kinds"] == {"1965": "tensor"}
    box.set_kinds({})
    assert box.kinds() == {}
    apply_settings(window.run_panel, saved)
    assert box.kinds() == {"1965": "tensor"} and box.kind_of("1959") == "image:nchw"


def test_the_sample_photos_preprocessing_is_shown_and_editable(qtbot, window, models_dir):
    open_and_wait(qtbot, window, models_dir / "u2netp.onnx")
    panel = window.run_panel
    assert panel.source.currentData() == "auto" and panel.layout_combo.isEnabled()
    # ImageNet's normalisation, filled in from the photos fitted to u2netp's input, in the fields a person edits.
    assert panel.mean.text() == "0.485,0.456,0.406" and panel.std.text() == "0.229,0.224,0.225"
    src = panel.input_source()
    assert src["kind"] == "images" and src["path"].endswith("samples") and src["preprocess"]["mean"][0] == 0.485
    panel.mean.setText("0.5,0.5,0.5")
    assert panel.input_source()["preprocess"]["mean"] == [0.5, 0.5, 0.5]
    window.reload()  # the same model again: the edit stays
    qtbot.waitUntil(lambda: not window.loader.is_busy(), timeout=30_000)
    assert panel.mean.text() == "0.5,0.5,0.5"
    # A model with no image input: the default source is random data, and the image fields are off.
    open_and_wait(qtbot, window, models_dir / "magika_standard_v3_3.onnx")
    assert panel.input_source() is None and not panel.layout_combo.isEnabled()
