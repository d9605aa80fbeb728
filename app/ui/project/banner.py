"""A notice about the project with the actions it offers (Restore / Discard, Locate model…)."""

from __future__ import annotations

import html
from collections.abc import Callable

from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QToolButton, QWidget


class ProjectBanner(QFrame):
    """A notice about the project with the actions it offers (Restore / Discard, Locate model…)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("projectBanner")
        self.setStyleSheet("#projectBanner { background:#fff4e5; border-bottom:1px solid #ffd8a8; color:#663c00; }")
        self._row = QHBoxLayout(self)
        self._row.setContentsMargins(10, 6, 6, 6)
        self.label = QLabel()
        self.label.setWordWrap(True)
        self._row.addWidget(self.label, 1)
        self.buttons: dict[str, QPushButton] = {}
        close = QToolButton()
        close.setText("✕")
        close.setToolTip("Dismiss")
        close.clicked.connect(self.hide)
        self._close = close
        self._row.addWidget(close)
        self.kind = ""
        self.hide()

    def offer(self, kind: str, title: str, message: str, actions: list[tuple[str, Callable[[], None]]]) -> None:
        for b in self.buttons.values():
            b.deleteLater()
        self.buttons = {}
        self.kind = kind
        self.label.setText(f"<b>{html.escape(title)}</b> — {html.escape(message)}")
        for text, slot in actions:
            b = QPushButton(text)
            b.clicked.connect(slot)
            self._row.insertWidget(self._row.count() - 1, b)
            self.buttons[text] = b
        self.show()

    def text(self) -> str:
        return self.label.text()
