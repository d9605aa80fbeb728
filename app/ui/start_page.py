"""The page shown before a model is open: open, demo, recent files, drop hint."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QListWidget, QListWidgetItem, QPushButton, QVBoxLayout, QWidget


class StartPage(QWidget):
    openRequested = Signal()
    demoRequested = Signal()
    recentRequested = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        outer = QVBoxLayout(self)
        outer.addStretch(1)
        col = QVBoxLayout()
        title = QLabel("<span style='font-size:28px; font-weight:600'>trtlab</span>")
        title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        col.addWidget(title)
        sub = QLabel("Open an ONNX model to see its graph, shapes and weights.\n"
                     "Drop a .onnx file anywhere in this window.")
        sub.setAlignment(Qt.AlignmentFlag.AlignCenter)
        sub.setStyleSheet("color: #5d6670;")
        col.addWidget(sub)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        self.open_button = QPushButton("Open model…")
        self.open_button.setDefault(True)
        self.open_button.setMinimumWidth(160)
        self.open_button.clicked.connect(self.openRequested)
        self.demo_button = QPushButton("Open the demo model")
        self.demo_button.setMinimumWidth(160)
        self.demo_button.setToolTip("A small residual classifier that trtlab generates, with real weights")
        self.demo_button.clicked.connect(self.demoRequested)
        buttons.addWidget(self.open_button)
        buttons.addWidget(self.demo_button)
        buttons.addStretch(1)
        col.addLayout(buttons)
        self.recent_label = QLabel("Recent models")
        self.recent_label.setStyleSheet("font-weight:600; margin-top:18px;")
        col.addWidget(self.recent_label)
        self.recent = QListWidget()
        self.recent.setMaximumHeight(180)
        self.recent.itemActivated.connect(lambda it: self.recentRequested.emit(it.data(Qt.ItemDataRole.UserRole)))
        col.addWidget(self.recent)
        holder = QHBoxLayout()
        holder.addStretch(1)
        inner = QWidget()
        inner.setLayout(col)
        inner.setMaximumWidth(560)
        holder.addWidget(inner, 2)
        holder.addStretch(1)
        outer.addLayout(holder)
        outer.addStretch(2)

    def set_recent(self, paths: list[str]) -> None:
        self.recent.clear()
        for p in paths:
            it = QListWidgetItem(f"{Path(p).name}    —    {Path(p).parent}")
            it.setData(Qt.ItemDataRole.UserRole, p)
            it.setToolTip(p)
            self.recent.addItem(it)
        self.recent_label.setVisible(bool(paths))
        self.recent.setVisible(bool(paths))
