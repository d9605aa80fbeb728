"""The workspace stays: default docks, View ▸ Panels raising them, the layout kept across restarts, status
messages that hover hints do not replace."""

from __future__ import annotations

import gc

from PySide6.QtCore import QSettings
from PySide6.QtGui import QStatusTipEvent
from PySide6.QtWidgets import QApplication

from tests.support.ui import delete_now, wait_for_dock_layout
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
        window.menus.panel_actions[name].trigger()
        qtbot.waitUntil(lambda d=dock: _in_front(d), timeout=5_000)
    # A closed panel comes back too.
    window.summary_dock.close()
    assert not window.summary_dock.isVisible()
    window.menus.panel_actions["summary"].trigger()
    qtbot.waitUntil(lambda: _in_front(window.summary_dock), timeout=5_000)


def test_layout_and_geometry_survive_a_restart(qtbot, tmp_path, model_paths):
    from app.ui.shell.main_window import MainWindow

    ini = str(tmp_path / "settings.ini")
    first = MainWindow(QSettings(ini, QSettings.Format.IniFormat))
    qtbot.addWidget(first)
    first.resize(1280, 800)
    first.show()
    qtbot.waitExposed(first)
    open_and_wait(qtbot, first, model_paths["u2netp"])
    first.summary_dock.close()
    first.workspace.show_dock(first.run_dock)
    first.close()  # saves the layout, synchronously
    gc.collect()

    second = MainWindow(QSettings(ini, QSettings.Format.IniFormat))
    qtbot.addWidget(second)
    second.show()
    qtbot.waitExposed(second)
    # Qt keeps a restored window inside its screen (the offscreen platform's is 800 px wide); its window frame may
    # shift the restored size by a few pixels.
    avail = second.screen().availableGeometry()
    assert abs(second.width() - min(1280, avail.width())) <= 30, (second.size(), avail)
    assert abs(second.height() - min(800, avail.height())) <= 30, (second.size(), avail)
    # Before a model is open the start page stands alone.
    assert second.summary_dock.isHidden()
    open_and_wait(qtbot, second, model_paths["u2netp"])
    assert second.summary_dock.isHidden()  # the user closed it: it stays closed
    assert _in_front(second.run_dock) and _in_front(second.precision_dock)
    # View ▸ Panels ▸ Reset Layout brings the default back.
    second.reset_layout()
    qtbot.waitUntil(lambda: _in_front(second.summary_dock) and _in_front(second.properties_dock), timeout=5_000)
    second.close()


SAVED_DEFAULT = (
    "AAAA/wAAAAL9AAAAAwAAAAAAAAEsAAACnPwCAAAAAfsAAAAOAHMAdQBtAG0AYQByAHkBAAAAEwAAApwAAAC3AP///wAAAAEAAAFoAAACnPwCAAAAAfw"
    "AAAATAAACnAAAALoBAAAZ+gAAAAECAAAAAvsAAAAUAHAAcgBvAHAAZQByAHQAaQBlAHMBAAAAAP////8AAAByAP////sAAAAGAHIAdQBuAQAAAAD/////"
    "AAAAoAD///8AAAADAAAGQAAAARj8AQAAAAH8AAAAAAAABkAAAAGjAP////oAAAACAQAAAAX7AAAADgByAGUAcwB1AGwAdABzAAAAAAD/////AAABLAD/"
    "///7AAAACABqAG8AYgBzAAAAAAD/////AAABLAD////7AAAAEgBwAHIAZQBjAGkAcwBpAG8AbgEAAAAA/////wAAAaMA////+wAAAAwAZQBuAGcAaQBu"
    "AGUAAAAAAP////8AAAEsAP////sAAAASAHIAZQBhAGQAaQBuAGUAcwBzAQAAAAD/////AAABLAD///8AAAOgAAACnAAAAAQAAAAEAAAACAAAAAj8AAAA"
    "AA==")


def _stray_tab_bars(window) -> list[list[str]]:
    """Dock tab bars on screen none of whose docks is shown: a bar drawn over the panel below it."""
    from PySide6.QtWidgets import QTabBar

    shown = {d.windowTitle() for d in window.findChildren(type(window.results_dock)) if d.isVisible()}
    bars = [b for b in window.findChildren(QTabBar) if b.isVisible()]
    return [[b.tabText(i) for i in range(b.count())] for b in bars
            if not any(b.tabText(i) in shown for i in range(b.count()))]


def test_a_restored_layout_draws_no_tab_bar_of_hidden_panels(qtbot, tmp_path, model_paths):
    """Second launch: the saved default layout (Results, Jobs and Engine hidden in the bottom tab group) came
    back with a lone "Results | Jobs" tab bar over the Precision table. Restored twice, resized, with Jobs shown
    and hidden again, no such bar is drawn, and the bottom panels stay one tab group."""
    import base64

    from PySide6.QtCore import QByteArray

    from app.ui.shell.main_window import MainWindow

    ini = str(tmp_path / "settings.ini")
    # The state a 1280×800 session saved on close (the default layout), as the report's settings file held it.
    QSettings(ini, QSettings.Format.IniFormat).setValue("window/state", QByteArray(base64.b64decode(SAVED_DEFAULT)))
    for size in ((1600, 1000), (1280, 800), (1600, 1000)):
        w = MainWindow(QSettings(ini, QSettings.Format.IniFormat))
        qtbot.addWidget(w)
        w.resize(*size)
        w.show()  # and a model opened at once, before the window is first laid out (as `trtlab MODEL` does)
        open_and_wait(qtbot, w, model_paths["ppocr_cls_mobile_v2"])
        wait_for_dock_layout(qtbot, w)  # the stray bar appeared once the layout had settled
        assert _stray_tab_bars(w) == [], size
        w.resize(size[0] - 200, size[1] - 100)
        w.workspace.show_dock(w.jobs_dock)
        qtbot.waitUntil(lambda w=w: w.precision_dock in w.tabifiedDockWidgets(w.jobs_dock), timeout=5_000)
        w.jobs_dock.hide()
        wait_for_dock_layout(qtbot, w)
        assert _stray_tab_bars(w) == [], size
        w.resize(*size)
        w.close()
        delete_now()
        gc.collect()


def test_hover_hints_do_not_replace_the_status(qtbot, window, model_paths, tmp_path):
    open_and_wait(qtbot, window, model_paths["u2netp"])
    said = window.status_label.text()
    assert said.startswith("Opened u2netp.onnx")
    QApplication.sendEvent(window.view, QStatusTipEvent("Drag to pan · wheel to zoom"))
    assert window.status_label.text() == said and window.status_label.isVisible()
    assert window.hint_label.text() == "Drag to pan · wheel to zoom"
    # An export says where it went.
    out = tmp_path / "u2netp.png"
    assert window.files.export_to(out)
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


def test_the_first_window_fits_the_screen_it_opens_on():
    from app.ui.shell.workspace import fitted_size

    assert fitted_size(1920, 1080) == (1400, 900)  # room to spare: the usual size
    w, h = fitted_size(1280, 800 - 40)  # a 1280×800 laptop with a 40-pixel panel
    assert w <= 1280 and h <= 760 and (w, h) == (1177, 699)
    assert fitted_size(1600, 1000) == (1400, 900)


def test_the_panels_menu_keeps_its_order_and_keys(window):
    """View ▸ Panels: Alt+Shift+1 … 9 open the same panels in every version (people learn them)."""
    order = ["summary", "properties", "run", "precision", "results", "jobs", "engine", "profile", "readiness"]
    assert [d.objectName() for d in window.model_docks()] == order
    keys = {name: act.shortcut().toString() for name, act in window.menus.panel_actions.items()}
    assert keys == {name: f"Alt+Shift+{k + 1}" for k, name in enumerate(order)}
