"""Find bar over the graph: type to highlight all matches, Enter / Shift+Enter to step through them."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QToolButton, QWidget

from app.core.model import DisplayGraph, SearchHit, search_graph


class SearchBar(QWidget):
    matchesChanged = Signal(list, object)  # all matching nodes, current node (or None)
    closed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(6, 3, 6, 3)
        self.edit = QLineEdit()
        self.edit.setPlaceholderText("Find node name, op type or tensor…  (Enter: next, Shift+Enter: previous)")
        self.edit.setClearButtonEnabled(True)
        self.edit.installEventFilter(self)
        self.count = QLabel("")
        self.count.setMinimumWidth(110)
        self.prev_button = QToolButton()
        self.prev_button.setText("▲")
        self.prev_button.setToolTip("Previous match (Shift+Enter)")
        self.next_button = QToolButton()
        self.next_button.setText("▼")
        self.next_button.setToolTip("Next match (Enter)")
        close = QToolButton()
        close.setText("✕")
        close.setToolTip("Close (Esc)")
        lay.addWidget(QLabel("Find:"))
        lay.addWidget(self.edit, 1)
        lay.addWidget(self.count)
        lay.addWidget(self.prev_button)
        lay.addWidget(self.next_button)
        lay.addWidget(close)
        self.graph: DisplayGraph | None = None
        self.hits: list[SearchHit] = []
        self.index = -1
        self._debounce = QTimer(self, singleShot=True, interval=150)
        self._debounce.timeout.connect(self.run_search)
        self.edit.textChanged.connect(lambda _t: self._debounce.start())
        self.edit.returnPressed.connect(self.next)
        self.next_button.clicked.connect(self.next)
        self.prev_button.clicked.connect(self.previous)
        close.clicked.connect(self.close_bar)

    def set_graph(self, graph: DisplayGraph | None) -> None:
        self.graph = graph
        self.run_search()

    def run_search(self) -> None:
        self.hits = search_graph(self.graph, self.edit.text()) if self.graph is not None else []
        self.index = 0 if self.hits else -1
        self._announce()

    def _announce(self) -> None:
        if not self.edit.text().strip():
            self.count.setText("")
        elif not self.hits:
            self.count.setText("<span style='color:#b3261e'>no matches</span>")
        else:
            hit = self.hits[self.index]
            self.count.setText(f"{self.index + 1} of {len(self.hits):,} ({hit.reason})")
        current = self.hits[self.index].node if self.index >= 0 else None
        self.matchesChanged.emit([h.node for h in self.hits], current)

    def step(self, delta: int) -> None:
        if self._debounce.isActive():
            self._debounce.stop()
            self.run_search()
            if delta > 0:
                return
        if not self.hits:
            return
        self.index = (self.index + delta) % len(self.hits)
        self._announce()

    def next(self) -> None:
        self.step(1)

    def previous(self) -> None:
        self.step(-1)

    def open_bar(self) -> None:
        self.show()
        self.edit.setFocus()
        self.edit.selectAll()

    def close_bar(self) -> None:
        self.hide()
        self.edit.clear()
        self.closed.emit()

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802
        if obj is self.edit and isinstance(event, QKeyEvent) and event.type() == QKeyEvent.Type.KeyPress:
            if event.key() == Qt.Key.Key_Escape:
                self.close_bar()
                return True
            if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and (
                    event.modifiers() & Qt.KeyboardModifier.ShiftModifier):
                self.previous()
                return True
        return super().eventFilter(obj, event)
