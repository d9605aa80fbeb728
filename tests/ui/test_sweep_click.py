"""Run in Run ▸ Benchmark Sweep… answers in short turns of the real window: the Sweep tab's plots are made while the
dialog is open (Run only sets them up), the Results dock comes forward and the window is painted again (its
updates, held while the dock came forward, are back on), and a second click before the dialog closes starts
nothing."""

from __future__ import annotations

from tests.support.ui import wait_for_dock_shown


def test_run_brings_the_results_forward_with_the_plots_made_while_the_dialog_was_open(qtbot, window, orientation):
    window.menus.act_sweep.trigger()
    dialog = window.run_controller.sweep_dialog
    assert dialog is not None and dialog.isVisible()
    view = window.results_view.sweep_view
    # While the dialog is open, each plot widget is made over a few turns of the event loop.
    qtbot.waitUntil(lambda: view.latency.has_plot and view.throughput.has_plot, timeout=10_000)
    made = (view.latency.plot, view.throughput.plot)
    for target, cb in dialog.checks.items():
        cb.setChecked(target == "ort-cpu:fp32")
    dialog.values_edit.setText("1,2")
    dialog.values_edit.textEdited.emit("1,2")
    dialog.iterations_edit.setText("3")
    dialog.warmup_edit.setText("1")
    finished = []
    window.jobs.finished.connect(lambda _job, r: finished.append(r))

    dialog.run_button.click()
    dialog.run_button.click()  # before the dialog has closed: nothing more starts
    assert len(window.run_controller.running) == 1, window.run_controller.last_refusal
    assert window.results_view.tabs.currentWidget() is view and view.running

    wait_for_dock_shown(qtbot, window, window.results_dock)
    qtbot.waitUntil(lambda: window.updatesEnabled() and not dialog.isVisible() and view.drawn, timeout=10_000)
    # The plots the dialog's turns made are the ones drawn on, at the room the Results dock was given.
    assert (view.latency.plot, view.throughput.plot) == made
    assert view.latency.has_data and view.throughput.has_data
    assert window.results_dock.height() >= window.height() * 0.5

    window.menus.act_cancel_all.trigger()
    qtbot.waitUntil(lambda: bool(finished) and not window.run_controller.running, timeout=60_000)
    # The dialog opens again ready to run.
    window.menus.act_sweep.trigger()
    assert dialog.isVisible() and dialog.run_button.isEnabled() and not dialog.sent
