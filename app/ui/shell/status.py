"""The main window's status bar: what the last action said, hover hints (a label of their own: they never replace
what the last action said), a model's loading progress with its Cancel, and the zoom."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QProgressBar, QPushButton, QStatusBar


class StatusParts:
    def __init__(self, bar: QStatusBar, cancel: Callable[[], None]) -> None:
        self.status_label = QLabel("Ready")
        self.status_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.hint_label = QLabel("")
        self.hint_label.setStyleSheet("color:#7a7f87;")
        self.zoom_label = QLabel("")
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(220)
        self.progress.setTextVisible(False)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop opening this model (Esc)")
        self.cancel_button.clicked.connect(cancel)
        bar.addPermanentWidget(self.status_label, 3)
        bar.addPermanentWidget(self.hint_label, 2)
        bar.addPermanentWidget(self.progress)
        bar.addPermanentWidget(self.cancel_button)
        bar.addPermanentWidget(self.zoom_label)
        self.set_busy(False)

    def set_busy(self, busy: bool) -> None:
        self.progress.setVisible(busy)
        self.cancel_button.setVisible(busy)
        if busy:
            self.progress.setRange(0, 0)

    def show_progress(self, fraction: float, message: str) -> None:
        """A fraction from 0 to 1, or below 0 while the work cannot say how far it is."""
        if fraction < 0:
            self.progress.setRange(0, 0)
        else:
            self.progress.setRange(0, 1000)
            self.progress.setValue(int(fraction * 1000))
        self.status_label.setText(message)
