"""Widgets floating over the graph canvas: the minimap and the op-category legend."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QMouseEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QFrame, QGridLayout, QLabel, QWidget

from app.core.display_graph import DisplayGraph
from app.ui import style

if TYPE_CHECKING:
    from app.ui.graph_item import GraphItem
    from app.ui.graph_view import GraphView


class MinimapOverlay(QWidget):
    """The whole graph in miniature with the visible area outlined; click or drag to move there."""

    SIZE = 180

    def __init__(self, view: GraphView) -> None:
        super().__init__(view)
        self.view = view
        self.item: GraphItem | None = None
        self.setFixedSize(self.SIZE, self.SIZE)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setToolTip("Overview: click or drag to move the view")
        self.hide()

    def set_item(self, item: GraphItem | None) -> None:
        self.item = item
        if item is not None:
            b = item.boundingRect()
            aspect = b.width() / max(b.height(), 1.0)
            w = self.SIZE if aspect >= 1 else max(60, int(self.SIZE * aspect))
            h = self.SIZE if aspect < 1 else max(60, int(self.SIZE / aspect))
            self.setFixedSize(max(w, 60), max(h, 60))
        self.setVisible(item is not None and self.property("wanted") is not False)
        self.update()

    def _frame(self) -> tuple[QRectF, float]:
        """Where the scene's bounds land in this widget, and the scale."""
        assert self.item is not None
        b = self.item.boundingRect()
        inner = QRectF(self.rect()).adjusted(4, 4, -4, -4)
        s = min(inner.width() / b.width(), inner.height() / b.height())
        w, h = b.width() * s, b.height() * s
        return QRectF(inner.center().x() - w / 2, inner.center().y() - h / 2, w, h), s

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        p.setBrush(QColor(255, 255, 255, 235))
        p.setPen(QPen(QColor("#b8bcc2"), 1))
        p.drawRoundedRect(QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5), 6, 6)
        if self.item is None:
            return
        target, s = self._frame()
        p.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform, True)
        p.drawImage(target, self.item.overview)
        b = self.item.boundingRect()
        vis = self.view.visible_scene_rect()
        r = QRectF(target.left() + (vis.left() - b.left()) * s, target.top() + (vis.top() - b.top()) * s,
                   vis.width() * s, vis.height() * s).intersected(target.adjusted(-1, -1, 1, 1))
        p.setBrush(QColor(30, 136, 255, 40))
        p.setPen(QPen(style.SELECTED, 1.5))
        p.drawRect(r.adjusted(0, 0, max(0.0, 3 - r.width()), max(0.0, 3 - r.height())))

    def _move_to(self, pos: QPointF) -> None:
        if self.item is None:
            return
        target, s = self._frame()
        b = self.item.boundingRect()
        self.view.centerOn(QPointF(b.left() + (pos.x() - target.left()) / s,
                                   b.top() + (pos.y() - target.top()) / s))
        self.update()

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        self._move_to(event.position())

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        if event.buttons() & Qt.MouseButton.LeftButton:
            self._move_to(event.position())


class LegendOverlay(QFrame):
    """Colour key for the op categories present in the graph, with counts."""

    def __init__(self, view: QWidget) -> None:
        super().__init__(view)
        self.setObjectName("legend")
        self.setStyleSheet("#legend { background: rgba(255,255,255,230); border: 1px solid #b8bcc2;"
                           " border-radius: 6px; } QLabel { font-size: 11px; }")
        self._grid = QGridLayout(self)
        self._grid.setContentsMargins(8, 6, 8, 6)
        self._grid.setHorizontalSpacing(6)
        self._grid.setVerticalSpacing(2)
        self.entries: list[tuple[str, int]] = []
        self.title = ""
        self.hide()

    def set_graph(self, graph: DisplayGraph | None) -> None:
        """The op-category key for a graph (None: nothing to show)."""
        if graph is None:
            self.set_entries("", [])
            return
        counts = Counter(graph.categories)
        order = [c for c in style.CATEGORY_COLORS if c in counts]
        self.set_entries("", [(c, style.CATEGORY_COLORS[c], counts[c]) for c in order])

    def set_entries(self, title: str, entries: list[tuple[str, QColor, int]]) -> None:
        """Any colour key: a title (e.g. 'Planned precision') and (label, colour, count) rows."""
        while self._grid.count():
            w = self._grid.takeAt(0).widget()
            if w is not None:
                w.deleteLater()
        self.entries = [(label, n) for label, _, n in entries]
        self.title = title
        if not entries:
            self.hide()
            return
        row0 = 0
        if title:
            head = QLabel(f"<b>{title}</b>")
            self._grid.addWidget(head, 0, 0, 1, 3)
            row0 = 1
        for row, (label, color, n) in enumerate(entries, start=row0):
            swatch = QLabel()
            swatch.setFixedSize(12, 12)
            swatch.setStyleSheet(f"background: {color.name()}; border-radius: 2px;")
            self._grid.addWidget(swatch, row, 0)
            self._grid.addWidget(QLabel(label), row, 1)
            count = QLabel(f"{n:,}")
            count.setAlignment(Qt.AlignmentFlag.AlignRight)
            self._grid.addWidget(count, row, 2)
        for i in range(self._grid.count()):
            # New children of a visible frame are shown only later (queued): show them now, so the
            # size computed next counts them.
            self._grid.itemAt(i).widget().show()
        self.adjustSize()
        self.setVisible(self.property("wanted") is not False)
