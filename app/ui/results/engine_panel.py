"""The Engine dock: a TensorRT build's layers (the precision that actually ran, tactic, the ONNX nodes
fused into each), what differs from the plan, per-layer time after a benchmark, and "Save engine as…"; after an
import, "Compare with another import…", and two imported engines compared node by node (engine_compare.py)."""

from __future__ import annotations

import html
import time
from collections.abc import Mapping

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSizePolicy,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.core.results import BuildResult, ImportComparison, LayerTiming
from app.ui.common.num_item import NumItem
from app.ui.results.engine_compare import EngineCompareView

COLUMNS = ("Engine layer", "Type", "Ran in", "Time (ms)", "Share", "Tactic", "ONNX nodes")


class EnginePanel(QWidget):
    nodeActivated = Signal(str)      # an ONNX node key to show in the graph
    saveRequested = Signal()
    compareRequested = Signal()      # "Compare with another import…" (an imported engine on show)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.doc: BuildResult | None = None
        self.times: dict[str, LayerTiming] = {}
        self.times_at = 0.0
        col = QVBoxLayout(self)
        col.setContentsMargins(4, 4, 4, 4)
        top = QHBoxLayout()
        self.summary = QLabel("No engine yet: Run ▸ Build TensorRT Engine (Ctrl+Shift+B) builds the plan's variant.")
        self.summary.setWordWrap(True)
        self.save_button = QPushButton("Save engine as…")
        self.save_button.setEnabled(False)
        self.save_button.clicked.connect(self.saveRequested)
        self.compare_button = QPushButton("Compare with another import…")
        self.compare_button.setToolTip("Import a second engine's folder and compare it with this one, ONNX node by "
                                       "ONNX node (File ▸ Compare With Another TensorRT Import…)")
        self.compare_button.clicked.connect(self.compareRequested)
        self.compare_button.hide()
        self.layers_button = QPushButton("Show layers")
        self.layers_button.setToolTip("Back to the engine's layers (B's, the second import)")
        self.layers_button.clicked.connect(self._toggle_compare)
        self.layers_button.hide()
        for button in (self.compare_button, self.layers_button, self.save_button):  # their text's width, no more
            button.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Fixed)
        top.addWidget(self.summary, 1)
        top.addStretch(0)
        top.addWidget(self.compare_button)
        top.addWidget(self.layers_button)
        top.addWidget(self.save_button)
        col.addLayout(top)
        self.mismatches = QLabel()
        self.mismatches.setWordWrap(True)
        self.mismatches.setStyleSheet("background:#fff4e5; border:1px solid #f0b35a; padding:4px; color:#6b3d00;")
        self.mismatches.hide()
        col.addWidget(self.mismatches)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.setSortingEnabled(True)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.table.setColumnWidth(0, 260)
        self.table.cellDoubleClicked.connect(self._activated)
        col.addWidget(self.table, 1)
        self.compare = EngineCompareView()
        self.compare.hide()
        col.addWidget(self.compare, 1)

    def set_build(self, doc: BuildResult | None) -> None:
        """A build result (`app.backends.tasks.build:build_task`)."""
        self.doc = doc
        self.compare_button.hide()  # an import shows it again
        self.compare.doc = None  # a comparison belongs to the engines it compared
        self._show_compare(False)
        self.times = {}  # times belong to one engine
        self.times_at = 0.0
        self.save_button.setEnabled(doc is not None and bool(doc.engine))
        if doc is None:
            self.summary.setText("No engine yet: Run ▸ Build TensorRT Engine (Ctrl+Shift+B) builds the plan's variant.")
            self.mismatches.hide()
            self.table.setRowCount(0)
            return
        layers = doc.layers
        counts: dict[str, int] = {}
        for layer in layers:
            counts[layer.precision] = counts.get(layer.precision, 0) + 1
        mix = ", ".join(f"{n} {p.upper()}" for p, n in sorted(counts.items(), key=lambda kv: -kv[1]))
        rtx = doc.flavour == "rtx"
        product = "TensorRT for RTX" if rtx else "TensorRT"
        gpu, cc = html.escape(str(doc.gpu or "?")), doc.compute_capability or "?"
        where = f"for {gpu}, compute capability {cc}" if rtx else f"on {gpu} (sm {cc})"
        source = " · layers from the builder's log" if doc.layer_source == "builder log" else ""
        self.summary.setText(
            f"<b>{html.escape(doc.target)}</b>: {product} {doc.trt_version or '?'} {where}"
            f"{' · from the engine cache' if doc.cached else ''} · "
            f"{len(layers)} engine layers ({mix or 'no layer information'}){source}")
        if not doc.ok:
            errs = doc.parse_errors
            self.summary.setText(f"<b>TensorRT's ONNX parser refused the graph</b> ({len(errs)} error(s)); the nodes "
                                 "are marked on the graph. Double-click a row to show its node.")
            self.mismatches.setText("<br>".join(f"✗ {e.node or '?'} ({e.op or '?'}): {e.message} "
                                                f"<i>Fix: {e.fix}</i>" for e in errs[:8]))
            self.mismatches.show()
            self.table.setSortingEnabled(False)
            self.table.setRowCount(len(errs))
            for r, e in enumerate(errs):
                first = QTableWidgetItem(e.node or "?")
                first.setData(Qt.ItemDataRole.UserRole, [e.node] if e.node else [])
                cells = [first, QTableWidgetItem(e.op), QTableWidgetItem("refused"), QTableWidgetItem(""),
                         QTableWidgetItem(""), QTableWidgetItem(e.code), QTableWidgetItem(e.message)]
                for c, item in enumerate(cells):
                    self.table.setItem(r, c, item)
            self.table.setSortingEnabled(True)
            return
        warn = [m for m in doc.mismatches if m.severity == "warning"]
        extra = [f"TensorRT: {w}" for w in doc.warnings[:5]]
        if warn or extra:
            lines = [f"⚠ {m.message}" for m in warn[:8]] + extra
            if len(warn) > 8:
                lines.append(f"…and {len(warn) - 8} more nodes that did not run as planned.")
            self.mismatches.setText("<br>".join(lines))
            self.mismatches.show()
        else:
            self.mismatches.hide()
        self._fill()

    def set_times(self, times: Mapping[str, LayerTiming]) -> None:
        """Per engine layer timing from a trt benchmark (its `layer_times`)."""
        self.times = dict(times or {})
        self.times_at = time.monotonic()  # the graph's "time" colours show the newer of these and a profile
        self._fill()

    def show_imported(self, times: Mapping[str, LayerTiming], summary: str) -> None:
        """An engine built and run elsewhere (File ▸ Import TensorRT Results…), after `set_build` showed its layers:
        their times from trtexec's profile, the slowest first, and `summary` (where it ran) as the headline."""
        self.times = dict(times or {})
        self.times_at = time.monotonic()
        self._fill()
        self.table.sortItems(COLUMNS.index("Time (ms)"), Qt.SortOrder.DescendingOrder)
        self.summary.setText(html.escape(summary))
        self.compare_button.show()

    def show_comparison(self, doc: ImportComparison) -> None:
        """Two imported engines compared node by node, in place of the layers (`Show layers` goes back to them)."""
        self.compare.set_comparison(doc)
        self._show_compare(True)

    def _toggle_compare(self) -> None:
        self._show_compare(self.compare.isHidden())

    def _show_compare(self, on: bool) -> None:
        """The comparison (on) or the engine's layers in the dock; the button offers the other."""
        on = on and self.compare.doc is not None
        self.compare.setHidden(not on)
        self.table.setHidden(on)
        self.summary.setHidden(on)
        if on:
            self.mismatches.hide()
        self.layers_button.setText("Show layers" if on else "Show comparison")
        self.layers_button.setHidden(self.compare.doc is None)

    def _fill(self) -> None:
        layers = self.doc.layers if self.doc is not None else ()
        self.table.setSortingEnabled(False)
        self.table.setRowCount(len(layers))
        for r, layer in enumerate(layers):
            t = self.times.get(layer.name)
            nodes = list(layer.onnx_nodes)
            cells = [QTableWidgetItem(layer.name), QTableWidgetItem(layer.type),
                     QTableWidgetItem(layer.precision.upper()),
                     NumItem("" if t is None else f"{t.mean_ms:.4f}", -1.0 if t is None else t.mean_ms),
                     NumItem("" if t is None else f"{100 * t.share:.1f} %", -1.0 if t is None else t.share),
                     QTableWidgetItem(str(layer.tactic)), QTableWidgetItem(", ".join(nodes))]
            cells[0].setData(Qt.ItemDataRole.UserRole, nodes)
            cells[0].setToolTip(layer.name)
            cells[6].setToolTip("\n".join(nodes))
            for c, item in enumerate(cells):
                self.table.setItem(r, c, item)
        self.table.setSortingEnabled(True)

    def _activated(self, row: int, _col: int) -> None:
        item = self.table.item(row, 0)
        nodes = item.data(Qt.ItemDataRole.UserRole) if item is not None else None
        if nodes:
            self.nodeActivated.emit(nodes[0])
