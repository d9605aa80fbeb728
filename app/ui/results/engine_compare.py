"""Two imported TensorRT engines side by side in the Engine dock (`ImportComparison`, made by
`app.core.engine.compare_imports`): per ONNX node the time in each and the change, the precision that ran in each,
the fusions gained or lost; sortable, the biggest changes first. Double-click a row to show its node."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.core.engine import fusion_words, short_node
from app.core.results import ImportComparison, ImportedNodeChange
from app.ui.common.num_item import NumItem

COMPARE_COLUMNS = ("ONNX node", "A (ms)", "B (ms)", "Change (ms)", "Change", "Ran in A", "Ran in B", "Fusion")
SLOWER, FASTER = QColor("#b2182b"), QColor("#1b7837")


def _ms(x: float | None) -> str:
    return "" if x is None else f"{x:.4f}"


class EngineCompareView(QWidget):
    """The comparison's headline (the two engines, their totals and latency) over its table of nodes."""

    nodeActivated = Signal(str)  # an ONNX node key to show in the graph

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.doc: ImportComparison | None = None
        col = QVBoxLayout(self)
        col.setContentsMargins(0, 0, 0, 0)
        self.headline = QLabel()
        self.headline.setWordWrap(True)
        self.headline.setTextFormat(Qt.TextFormat.RichText)
        col.addWidget(self.headline)
        self.table = QTableWidget(0, len(COMPARE_COLUMNS))
        self.table.setHorizontalHeaderLabels(COMPARE_COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.setWordWrap(False)  # one line a node: the whole of a fusion is in its tooltip
        self.table.setSortingEnabled(True)
        header = self.table.horizontalHeader()
        header.setStretchLastSection(True)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.table.setColumnWidth(0, 240)
        self.table.cellDoubleClicked.connect(self._activated)
        col.addWidget(self.table, 1)

    def set_comparison(self, doc: ImportComparison) -> None:
        self.doc = doc
        self.headline.setText(headline(doc))
        self.table.setSortingEnabled(False)
        self.table.setRowCount(len(doc.nodes))
        for r, n in enumerate(doc.nodes):
            for c, item in enumerate(self._row(n)):
                self.table.setItem(r, c, item)
        self.table.setSortingEnabled(True)
        # the biggest changes first (compare_imports' order, kept by sorting on the size of the change)
        self.table.sortItems(COMPARE_COLUMNS.index("Change (ms)"), Qt.SortOrder.DescendingOrder)

    @staticmethod
    def _row(n: ImportedNodeChange) -> list[QTableWidgetItem]:
        size = abs(n.delta_ms) if n.delta_ms is not None else abs((n.ms_b or 0.0) - (n.ms_a or 0.0)) - 1e6
        delta = NumItem("" if n.delta_ms is None else f"{n.delta_ms:+.4f}", size)  # sorts by the size of the change
        rel = (n.delta_ms / n.ms_a) if n.delta_ms is not None and n.ms_a else None
        change = NumItem("only in " + n.only_in.upper() if n.only_in else "" if rel is None else f"{rel:+.0%}",
                         -1e9 if rel is None else rel)
        for num in (delta, change):
            if n.delta_ms:
                num.setForeground(QBrush(SLOWER if n.delta_ms > 0 else FASTER))
        first = QTableWidgetItem(short_node(n.node))
        first.setData(Qt.ItemDataRole.UserRole, n.node)
        first.setToolTip(n.node)
        ran_a, ran_b = QTableWidgetItem(n.precision_a.upper()), QTableWidgetItem(n.precision_b.upper())
        if n.precision_changed:
            for item in (ran_a, ran_b):
                font = item.font()
                font.setBold(True)
                item.setFont(font)
        words = fusion_words(n)
        fusion = QTableWidgetItem(words)
        fusion.setToolTip("\n".join(filter(None, [
            f"A: {n.layer_a} (with {len(n.fused_a)} other nodes)" if n.layer_a else "",
            f"B: {n.layer_b} (with {len(n.fused_b)} other nodes)" if n.layer_b else "", words])))
        return [first, NumItem(_ms(n.ms_a), -1.0 if n.ms_a is None else n.ms_a),
                NumItem(_ms(n.ms_b), -1.0 if n.ms_b is None else n.ms_b), delta, change, ran_a, ran_b, fusion]

    def node_rows(self) -> list[str]:
        """The nodes in the table's order as shown."""
        out = []
        for r in range(self.table.rowCount()):
            item = self.table.item(r, 0)
            out.append(str(item.data(Qt.ItemDataRole.UserRole)) if item is not None else "")
        return out

    def _activated(self, row: int, _col: int) -> None:
        item = self.table.item(row, 0)
        node = item.data(Qt.ItemDataRole.UserRole) if item is not None else None
        if node:
            self.nodeActivated.emit(str(node))


def headline(c: ImportComparison) -> str:
    """The two engines, their totals, latency and what changed, as the dock's rich text."""

    def total(ms: float | None) -> str:
        return "no profile" if ms is None else f"{ms:.3f} ms in its layers"

    def median(ms: float | None) -> str:
        return f", median latency {ms:.3f} ms" if ms is not None else ""

    lines = [f"<b>A</b>: {html.escape(c.label_a)} — {total(c.total_ms_a)}{median(c.median_ms_a)}",
             f"<b>B</b>: {html.escape(c.label_b)} — {total(c.total_ms_b)}{median(c.median_ms_b)}"]
    changed = [f"{c.precision_changes} precision change(s)", f"{c.fusion_changes} fusion change(s)"]
    if c.total_delta_ms is not None and c.total_ms_a and round(c.total_delta_ms, 3):
        sign = "slower" if c.total_delta_ms > 0 else "faster"
        changed.insert(0, f"B is {abs(c.total_delta_ms):.3f} ms ({abs(c.total_delta_ms) / c.total_ms_a:.0%}) {sign}")
    elif c.total_delta_ms is not None:
        changed.insert(0, "A and B take the same time in all (it moved between nodes)")
    if c.only_a or c.only_b:
        changed.append(f"{len(c.only_a)} node(s) only in A, {len(c.only_b)} only in B")
    lines.append(" · ".join(changed))
    lines += [f"<i>Note: {html.escape(n)}</i>" for n in c.notes]
    return "<br>".join(lines)
