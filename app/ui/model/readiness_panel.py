"""The Readiness dock: what would break (or surprise) a TensorRT build, found in a fraction of a second
before anything is built; each finding clickable to its node."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from app.ui.common.plain_text import escape, tooltip

if TYPE_CHECKING:
    from app.core.readiness import Report

SEVERITY_COLORS = {"error": QColor("#c62828"), "warning": QColor("#ef8f00"), "info": QColor("#1e88e5")}
_TITLES = {"error": "Errors — the build is expected to fail", "warning": "Warnings — it builds, not as you expect",
           "info": "Notes"}


def target_label(version: str) -> str:
    return "TensorRT for RTX (its default targets)" if version == "rtx" else f"TensorRT {version}.x"


class ReadinessPanel(QWidget):
    nodeActivated = Signal(str)          # a node key
    versionChanged = Signal(str)         # "10" | "11" | "rtx"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        col = QVBoxLayout(self)
        col.setContentsMargins(4, 4, 4, 4)
        top = QHBoxLayout()
        self.summary = QLabel("Open a model to check it.")
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.summary.setWordWrap(True)
        self.version = QComboBox()
        self.version.addItem("TensorRT 11.x", "11")
        self.version.addItem("TensorRT 10.x", "10")
        self.version.addItem("TensorRT for RTX", "rtx")
        self.version.setToolTip("The TensorRT version whose ONNX parser the model is checked against")
        self.version.currentIndexChanged.connect(lambda _: self.versionChanged.emit(self.version.currentData()))
        top.addWidget(self.summary, 1)
        top.addWidget(self.version)
        col.addLayout(top)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Finding", "Nodes", "Fix"])
        self.tree.setColumnWidth(0, 520)
        self.tree.setColumnWidth(1, 200)
        self.tree.setWordWrap(True)
        self.tree.itemActivated.connect(self._activated)
        self.tree.itemDoubleClicked.connect(self._activated)
        self.tree.currentItemChanged.connect(self._show_detail)
        col.addWidget(self.tree, 1)
        self.detail = QLabel()
        self.detail.setTextFormat(Qt.TextFormat.RichText)  # findings quote node names: escaped below
        self.detail.setWordWrap(True)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.detail.setStyleSheet("padding:4px; background:#f6f7f9; border:1px solid #dfe2e6;")
        self.detail.hide()
        col.addWidget(self.detail)
        self.report: Report | None = None

    def set_report(self, report: Report | None) -> None:
        self.report = report
        self.tree.clear()
        self.detail.hide()
        if report is None:
            self.summary.setText("Open a model to check it.")
            return
        groups = report.by_severity()
        parts = [f"{len(groups['error'])} error(s)", f"{len(groups['warning'])} warning(s)",
                 f"{len(groups['info'])} note(s)"]
        verdict = ("<b style='color:#c62828'>A TensorRT build is expected to fail.</b> " if report.errors else
                   "<b style='color:#2b8a3e'>Nothing found that stops a TensorRT build.</b> ")
        self.summary.setText(f"{verdict}{' · '.join(parts)} · {target_label(report.trt_version)} · checked in "
                             f"{1000 * report.seconds:.0f} ms")
        for sev in ("error", "warning", "info"):
            findings = groups[sev]
            if not findings:
                continue
            head = QTreeWidgetItem([f"{_TITLES[sev]} ({len(findings)})"])
            head.setForeground(0, QBrush(SEVERITY_COLORS[sev]))
            font = head.font(0)
            font.setBold(True)
            head.setFont(0, font)
            self.tree.addTopLevelItem(head)
            for f in findings:
                nodes = ", ".join(f.nodes[:3]) + (f" and {len(f.nodes) - 3} more" if len(f.nodes) > 3 else "")
                item = QTreeWidgetItem([f.message, nodes, f.fix])
                item.setData(0, Qt.ItemDataRole.UserRole, list(f.nodes))
                item.setToolTip(0, tooltip(f"{f.code}: {f.message}"))
                item.setToolTip(1, tooltip(", ".join(f.nodes[:50]) + (" …" if len(f.nodes) > 50 else "")))
                item.setToolTip(2, tooltip(f.fix))
                head.addChild(item)
            head.setExpanded(sev != "info")

    def _show_detail(self, item: QTreeWidgetItem | None, _previous: object = None) -> None:
        """The selected finding in full: long messages do not fit a row."""
        nodes = item.data(0, Qt.ItemDataRole.UserRole) if item is not None else None
        if item is None or nodes is None:
            self.detail.hide()
            return
        shown = escape(", ".join(nodes[:20])) + (" …" if len(nodes) > 20 else "")
        self.detail.setText(f"<b>{escape(item.text(0))}</b><br>Fix: {escape(item.text(2))}"
                            + (f"<br>Nodes: {shown}" if nodes else ""))
        self.detail.show()

    def _activated(self, item: QTreeWidgetItem, _col: int = 0) -> None:
        nodes = item.data(0, Qt.ItemDataRole.UserRole)
        if nodes:
            self.nodeActivated.emit(nodes[0])
