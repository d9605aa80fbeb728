"""The workspace stays: default docks, View ▸ Panels raising them, the layout kept across restarts, status
messages that hover hints do not replace."""

from __future__ import annotations

import gc

from PySide6.QtCore import QSettings
from PySide6.QtGui import QStatusTipEvent
from PySide6.QtWidgets import QApplication

from tests.ui.conftest import open_and_wait


def _in_front(dock) -> bool:
    """Shown and not behind another tab (a tabbed-away dock still reports isVisible())."""
    return dock.isVisible() and not dock.visibleRegion().isEmpty()


def test_default_layout_shows_precision_and_readiness(qtbot, window, model_paths):
    open_and_wait(qtbot, window, model_paths["u2netp"])
    for dock in (window.summary_dock, window.properties_dock, window.precision_dock):
        assert _in_front(dock), dock.objectName()
    assert not window.readiness_dock.isHidden() and not window.run_dock.isHidden()
    # The graph keeps most of the window.
    assert window.graph_page.height() > window.height() * 0.5


def test_view_menu_raises_a_tabbed_dock(qtbot, window, model_paths):
    open_and_wait(qtbot, window, model_paths["u2netp"])
    for name in ("readiness", "run", "precision", "properties"):
        dock = getattr(window, f"{name}_dock")
        window.panel_actions[name].trigger()
        qtbot.wait(20)
        assert _in_front(dock), name
    # A closed panel comes back too.
    window.summary_dock.close()
    assert not window.summary_dock.isVisible()
    window.panel_actions["summary"].trigger()
    qtbot.wait(20)
    assert _in_front(window.summary_dock)


def test_layout_and_geometry_survive_a_restart(qtbot, tmp_path, model_paths):
    from app.ui.main_window import MainWindow

    ini = str(tmp_path / "settings.ini")
    first = MainWindow(QSettings(ini, QSettings.Format.IniFormat))
    qtbot.addWidget(first)
    first.resize(1280, 800)
    first.show()
    qtbot.waitExposed(first)
    open_and_wait(qtbot, first, model_paths["u2netp"])
    first.summary_dock.close()
    first.show_dock(first.run_dock)
    first.close()
    qtbot.wait(10)
    gc.collect()

    second = MainWindow(QSettings(ini, QSettings.Format.IniFormat))
    qtbot.addWidget(second)
    second.show()
    qtbot.waitExposed(second)
    # (the offscreen platform's window frame may shift the restored size by a few pixels)
    assert abs(second.width() - 1280) <= 30 and abs(second.height() - 800) <= 30, second.size()
    # Before a model is open the start page stands alone.
    assert second.summary_dock.isHidden()
    open_and_wait(qtbot, second, model_paths["u2netp"])
    assert second.summary_dock.isHidden()  # the user closed it: it stays closed
    assert _in_front(second.run_dock) and _in_front(second.precision_dock)
    # View ▸ Panels ▸ Reset Layout brings the default back.
    second.reset_layout()
    qtbot.wait(20)
    assert _in_front(second.summary_dock) and _in_front(second.properties_dock)
    second.close()


def test_hover_hints_do_not_replace_the_status(qtbot, window, model_paths, tmp_path):
    open_and_wait(qtbot, window, model_paths["u2netp"])
    said = window.status_label.text()
    assert said.startswith("Opened u2netp.onnx")
    QApplication.sendEvent(window.view, QStatusTipEvent("Drag to pan · wheel to zoom"))
    assert window.status_label.text() == said and window.status_label.isVisible()
    assert window.hint_label.text() == "Drag to pan · wheel to zoom"
    # An export says where it went.
    out = tmp_path / "u2netp.png"
    assert window.export_to(out)
    assert str(out) in window.status_label.text() and out.stat().st_size > 0


def test_plot_export_says_where_in_the_status_bar(qtbot, window, model_paths, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog

    open_and_wait(qtbot, window, model_paths["magika_standard_v3_3"])
    window.shapes_panel.edits["bytes"].setText("1x2048")
    window.shapes_panel.apply()
    qtbot.waitUntil(lambda: not window.loader.is_busy(), timeout=30_000)
    window.run_panel.samples.setValue(2)
    with qtbot.waitSignal(window.jobs.finished, timeout=120_000) as sig:
        window.run_panel.compare_button.click()
    assert sig.args[1].status == "done", sig.args[1].error
    assert window.results_view.export_button.isEnabled()
    out = tmp_path / "plots"
    out.mkdir()
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *a, **k: str(out))
    window.results_view.export_button.click()
    assert str(out) in window.status_label.text() and "Exported" in window.status_label.text()
    assert any(out.glob("*.png")) and any(out.glob("*.svg"))
