"""The page shown before a model is open: compare precisions (the guided flow), open, demo, recent files, drop
hint."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QListWidget, QListWidgetItem, QPushButton, QVBoxLayout, QWidget


class StartPage(QWidget):
    openRequested = Signal()
    demoRequested = Signal()
    compareRequested = Signal()
    recentRequested = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        outer = QVBoxLayout(self)
        outer.addStretch(1)
        col = QVBoxLayout()
        title = QLabel("<span style='font-size:28px; font-weight:600'>trtlab</span>")
        title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        col.addWidget(title)
        sub = QLabel("See how much faster FP16 and INT8 run than FP32, and whether the answers change.\n"
                     "Or open an ONNX model to see its graph, shapes and weights; drop a .onnx file anywhere here.")
        sub.setWordWrap(True)
        sub.setAlignment(Qt.AlignmentFlag.AlignCenter)
        sub.setStyleSheet("color: #5d6670;")
        col.addWidget(sub)
        # The guided comparison first, and largest: it is what someone new to the tool came to see.
        self.compare_button = QPushButton("Compare precisions…")
        self.compare_button.setToolTip("Step by step: a model (the demo model is one click), its input shapes, the "
                                       "precisions; then one Run and a scorecard")
        self.compare_button.setStyleSheet(
            "QPushButton { background:#1a73e8; color:white; border:none; border-radius:6px; padding:12px 28px; "
            "font-size:15px; font-weight:600; } QPushButton:hover { background:#1967d2; }")
        self.compare_button.clicked.connect(self.compareRequested)
        first = QHBoxLayout()
        first.addStretch(1)
        first.addWidget(self.compare_button)
        first.addStretch(1)
        col.addSpacing(12)
        col.addLayout(first)
        col.addSpacing(6)
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
