"""An in-window message strip: errors a person can act on, without a blocking dialog."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QWidget

_STYLES = {
    "error": "background:#fdecea; border-bottom:1px solid #f5c2bd; color:#611a15;",
    "warning": "background:#fff4e5; border-bottom:1px solid #ffd8a8; color:#663c00;",
}


class ErrorBanner(QFrame):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("banner")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(10, 6, 6, 6)
        self.label = QLabel()
        self.label.setTextFormat(Qt.TextFormat.RichText)  # the message parts are escaped in show_message
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        close = QToolButton()
        close.setText("✕")
        close.setToolTip("Dismiss")
        close.clicked.connect(self.hide)
        lay.addWidget(self.label, 1)
        lay.addWidget(close)
        self.title = self.message = self.fix = ""
        self.hide()

    def show_message(self, title: str, message: str, fix: str = "", level: str = "error") -> None:
        self.title, self.message, self.fix = title, message, fix
        self.setStyleSheet(f"#banner {{ {_STYLES.get(level, _STYLES['error'])} }}")
        text = f"<b>{html.escape(title)}</b> — {html.escape(message)}"
        if fix:
            text += f"<br><i>{html.escape(fix)}</i>"
        self.label.setText(text)
        self.show()

    def text(self) -> str:
        return f"{self.title}: {self.message} {self.fix}".strip()
