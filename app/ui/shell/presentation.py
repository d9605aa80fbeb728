"""View ▸ Presentation: larger text and only the graph and the results, for showing on a projector; toggled
back to the window exactly as it was (its dock state and its font)."""

from __future__ import annotations

from typing import Protocol

from PySide6.QtCore import QByteArray, QEvent, QObject, Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QDockWidget, QLabel, QMainWindow, QStackedWidget, QWidget

from app.ui.common.style import pass_font
from app.ui.results.view import ResultsView

# Large enough to read from the back of a meeting room at 1280×800, small enough that the Results view's
# scorecard and plots still fit side by side.
FONT_SCALE = 1.4


class PresentationHost(Protocol):
    """The main window: its docks, the Results dock and what is on show."""

    stack: QStackedWidget
    results_dock: QDockWidget
    results_view: ResultsView
    status_label: QLabel

    @property
    def graph_page(self) -> QWidget: ...  # read-only: the window's is a GraphPage

    def model_docks(self) -> list[QDockWidget]: ...


class Presentation(QObject):
    """Enters and leaves presentation mode on ``window``; `activeChanged(on)` says when (View ▸ Presentation's
    check follows it)."""

    activeChanged = Signal(bool)

    def __init__(self, window: QMainWindow, host: PresentationHost) -> None:
        super().__init__(window)
        self.host = host
        self.w = window
        self.active = False
        self._state = QByteArray()
        self._font: QFont | None = None    # the window's own font before, None when it had none (inherited)
        window.installEventFilter(self)

    def toggle(self) -> None:
        if self.active:
            self.leave()
        else:
            self.enter()

    def enter(self) -> None:
        if self.active:
            return
        w = self.w
        self._state = w.saveState()
        self._font = QFont(w.font()) if w.testAttribute(Qt.WidgetAttribute.WA_SetFont) else None
        big = QFont(w.font())
        size = big.pointSizeF() if big.pointSizeF() > 0 else 10.0
        big.setPointSizeF(size * FONT_SCALE)
        w.setFont(big)
        pass_font(w)
        h = self.host
        for dock in h.model_docks():
            if dock is not h.results_dock:
                dock.hide()
        graph_shown = h.stack.currentWidget() is h.graph_page
        if graph_shown and not h.results_view.state.empty:
            h.results_dock.show()
            h.results_dock.raise_()
        else:
            h.results_dock.hide()
        self.active = True
        self.activeChanged.emit(True)
        h.status_label.setText("Presentation mode: F11 (or Ctrl+Shift+P) goes back.")

    def leave(self) -> None:
        if not self.active:
            return
        w = self.w
        # An empty QFont resolves nothing: the window inherits the application's font again, as before.
        w.setFont(self._font if self._font is not None else QFont())
        if self._font is None:
            w.setAttribute(Qt.WidgetAttribute.WA_SetFont, False)
        pass_font(w)
        w.restoreState(self._state)
        self.active = False
        self.activeChanged.emit(False)
        self.host.status_label.setText("Presentation mode left.")

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        # The layout saved on close must be the user's own, not the presentation's few docks.
        if watched is self.w and event.type() == QEvent.Type.Close and self.active:
            self.leave()
        return False
