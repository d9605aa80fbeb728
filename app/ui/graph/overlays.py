"""Widgets floating over the graph canvas: the minimap and the op-category legend."""

from __future__ import annotations

import html
import math
from collections import Counter

from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QMouseEvent, QPainter, QPainterPath, QPaintEvent, QPen, QPixmap
from PySide6.QtWidgets import QFrame, QGridLayout, QLabel, QStyleOptionGraphicsItem, QWidget

from app.core.model import DisplayGraph
from app.ui.common import style
from app.ui.graph.canvas import GraphCanvas
from app.ui.graph.item import GraphItem


def _area(r: QRectF) -> float:
    return max(0.0, r.width()) * max(0.0, r.height())


def clear_shift(box: QRectF, covers: list[QRectF], room: QRectF, rounds: int = 3) -> tuple[float, float]:
    """The shortest move (dx, dy) that takes `box` out from under every rectangle of `covers` (the overlays) and
    keeps it inside `room` (the viewport); all rectangles in one coordinate system.

    (0, 0) when the box is clear already. Moves tried: out of a cover it sits under, past each of the cover's four
    sides, then again out of whatever cover that lands it under. A box longer than the room on one side is not moved
    along that side (it stays centred there). Where no move clears it wholly (a box too big for the room the covers
    leave), the one that leaves least of it covered."""

    def covered(dx: float, dy: float) -> float:
        moved = box.translated(dx, dy)
        return sum(_area(moved.intersected(c)) for c in covers)

    if covered(0.0, 0.0) == 0.0:
        return 0.0, 0.0
    moves, frontier = [(0.0, 0.0)], [(0.0, 0.0)]
    for _ in range(rounds):
        found = []
        for dx, dy in frontier:
            b = box.translated(dx, dy)
            for c in covers:
                if b.intersects(c):
                    found += [(dx + c.left() - b.right(), dy), (dx + c.right() - b.left(), dy),
                              (dx, dy + c.top() - b.bottom()), (dx, dy + c.bottom() - b.top())]
        moves += found
        frontier = found

    def keeps_inside(dx: float, dy: float) -> bool:
        # inside the room on each side the box fits in; on a side it is longer than the room it stays centred
        moved = box.translated(dx, dy)
        x_ok = (dx == 0.0 if box.width() > room.width()
                else room.left() <= moved.left() and moved.right() <= room.right())
        y_ok = (dy == 0.0 if box.height() > room.height()
                else room.top() <= moved.top() and moved.bottom() <= room.bottom())
        return x_ok and y_ok

    inside = [m for m in moves if keeps_inside(*m)]
    if not inside:
        return 0.0, 0.0
    return min(inside, key=lambda m: (covered(*m), math.hypot(*m)))


class MinimapOverlay(QWidget):
    """The graph in miniature with the visible area outlined; click or drag to move there.

    A graph that would be a thin strip at the minimap's size (a tall network is often 20–1000 times
    taller than wide) is drawn as wide as the minimap instead, and the minimap then shows the stretch
    around the view, scrolling with it; a track on its right edge shows the whole graph and where that
    stretch lies (click or drag the track to go anywhere)."""

    MAX_W, MIN_W = 200, 132
    MAX_H, MIN_H = 240, 90
    TRACK_W = 12
    THIN = 0.4   # a whole graph narrower than this share of the minimap is drawn wider, scrolling
    _PAD = 4.0

    def __init__(self, view: GraphCanvas, parent: QWidget) -> None:
        """`view`: the canvas drawn and moved; `parent`: the widget the minimap floats over (the canvas's widget)."""
        super().__init__(parent)
        self.view = view
        self.item: GraphItem | None = None
        self.setFixedSize(self.MAX_W, self.MAX_W)
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent, True)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setToolTip("Overview: click or drag to move the view; the strip on the right is the whole graph")
        self._option = QStyleOptionGraphicsItem()
        self._drag: QPointF | None = None     # last mouse position of a drag that moves the view
        self._track_drag = False
        self._cache: tuple | None = None      # see _content
        self._track_pix: tuple | None = None
        self.hide()

    def set_item(self, item: GraphItem | None) -> None:
        self.item = item
        self._cache = self._track_pix = None
        self.fit_to(self.view.viewport().height())
        self.setVisible(item is not None and self.property("wanted") is not False)
        self.update()

    def fit_to(self, room_h: int) -> None:
        """Size for the graph's shape: its aspect where that is at least MIN_W × MIN_H, else that minimum."""
        if self.item is None:
            return
        b = self.item.boundingRect()
        aspect = b.width() / max(b.height(), 1.0)
        max_h = max(self.MIN_H, min(self.MAX_H, int(room_h * 0.45)))
        if aspect >= 1:
            w, h = self.MAX_W, int(min(max(self.MAX_W / aspect, self.MIN_H), max_h))
        else:
            h = max_h
            w = int(min(max(h * aspect, self.MIN_W), self.MAX_W))
        self.setFixedSize(w, h)

    # ----------------------------------------------------------------- geometry
    def scrolls(self) -> bool:
        """Whether the graph, drawn whole, would be a thin strip: then it is drawn as wide as the minimap and
        scrolls (a track shows the whole)."""
        if self.item is None:
            return False
        b = self.item.boundingRect()
        inner = QRectF(self.rect()).adjusted(self._PAD, self._PAD, -self._PAD, -self._PAD)
        whole = min(inner.width() / b.width(), inner.height() / b.height())
        return b.width() * whole < self.THIN * inner.width()

    def _frame(self) -> tuple[QRectF, float, QPointF]:
        """The drawing area, the scale, and the scene point drawn at the area's top-left."""
        assert self.item is not None
        b = self.item.boundingRect()
        inner = QRectF(self.rect()).adjusted(self._PAD, self._PAD, -self._PAD, -self._PAD)
        if not self.scrolls():
            s = min(inner.width() / b.width(), inner.height() / b.height())
            w, h = b.width() * s, b.height() * s
            area = QRectF(inner.center().x() - w / 2, inner.center().y() - h / 2, w, h)
            return area, s, b.topLeft()
        inner.setRight(inner.right() - self.TRACK_W - 3)
        vis = self.view.visible_scene_rect()
        # As wide as the minimap, but always showing at least twice what the view shows (zoomed far out,
        # the view sees more than a minimap-wide drawing would): halved in steps, so that zooming redraws
        # the minimap every few steps, not on each.
        whole = min(inner.width() / b.width(), inner.height() / b.height())
        s = inner.width() / b.width()
        need = inner.height() / (2 * max(vis.height(), 1.0))
        if need < s:
            s /= 2.0 ** math.ceil(math.log2(s / need))
        s = max(whole, s)
        span_w, span = inner.width() / s, inner.height() / s  # scene extent shown
        left = b.left() - max(0.0, span_w - b.width()) / 2
        if span >= b.height():
            return inner, s, QPointF(left, b.top() - (span - b.height()) / 2)
        top = min(max(vis.center().y() - span / 2, b.top()), b.bottom() - span)
        return inner, s, QPointF(left, top)

    def _track(self) -> QRectF:
        r = QRectF(self.rect()).adjusted(self._PAD, self._PAD, -self._PAD, -self._PAD)
        return QRectF(r.right() - self.TRACK_W, r.top(), self.TRACK_W, r.height())

    def view_rect(self) -> QRectF:
        """Where the view's visible area is drawn, in this widget's coordinates."""
        area, s, origin = self._frame()
        vis = self.view.visible_scene_rect()
        r = QRectF(area.left() + (vis.left() - origin.x()) * s, area.top() + (vis.top() - origin.y()) * s,
                   vis.width() * s, vis.height() * s).intersected(area)
        c = r.center()  # never smaller than a few pixels: zoomed far in it must still be findable
        w, h = max(r.width(), 8.0), max(r.height(), 8.0)
        return QRectF(c.x() - w / 2, c.y() - h / 2, w, h)

    # ----------------------------------------------------------------- painting
    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802
        p = QPainter(self)
        # Opaque (every pixel painted here), so the canvas under the minimap is not painted on each frame too.
        p.fillRect(self.rect(), style.BACKGROUND)
        p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        p.setBrush(QColor("#ffffff"))
        p.setPen(QPen(QColor("#b8bcc2"), 1))
        p.drawRoundedRect(QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5), 6, 6)
        item = self.item
        if item is None:
            return
        area, s, origin = self._frame()
        pix, top = self._content(area, s, origin)
        dpr = pix.devicePixelRatio()
        p.drawPixmap(area, pix, QRectF(0, (origin.y() - top) * s * dpr, area.width() * dpr, area.height() * dpr))
        view = self.view_rect()
        shade = QPainterPath()
        shade.setFillRule(Qt.FillRule.OddEvenFill)
        shade.addRect(area)
        shade.addRect(view)
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(QColor(40, 48, 60, 30))   # the rest dimmed, so the visible part stands out
        p.drawPath(shade)
        p.setBrush(QColor(30, 136, 255, 36))
        p.setPen(QPen(style.SELECTED, 2))
        p.drawRect(view)
        if self.scrolls():
            self._paint_track(p, area, s, origin)

    def _content(self, area: QRectF, s: float, origin: QPointF) -> tuple[QPixmap, float]:
        """The graph at the minimap's scale over a stretch three minimaps tall around what is shown, and the
        stretch's top. Kept until the stretch scrolls out or the graph's colours or marks change: panning
        repaints the minimap every frame, and drawing a big graph again each time would slow the frame."""
        item = self.item
        assert item is not None
        b = item.boundingRect()
        refs = (item, item.node_fill, item.selected, item.matches, item.badges)
        values = (item.current_match, s, origin.x(), area.width(), area.height(), self.devicePixelRatioF())
        span = area.height() / s
        c = self._cache
        if (c is not None and all(x is y for x, y in zip(c[0], refs, strict=True)) and c[1] == values
                and c[2] <= origin.y() + 0.5 and origin.y() + span <= c[3] + 0.5):
            return c[4], c[2]
        height = max(span, min(3 * span, b.height()))
        top = origin.y() if span >= b.height() else min(max(origin.y() - span, b.top()), b.bottom() - height)
        dpr = self.devicePixelRatioF()
        size = QSize(max(1, round(area.width() * dpr)), max(1, round(height * s * dpr)))
        pix = c[4] if c is not None and c[4].size() == size else None
        if pix is None:
            # Drawn into again while its size holds: PySide6 6.11 keeps a few references to None each time a
            # painter opens on a new paint device, and the minimap redraws on every zoom step.
            pix = QPixmap(size)
        pix.setDevicePixelRatio(dpr)
        pix.fill(Qt.GlobalColor.transparent)
        p = QPainter(pix)
        p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        p.scale(s, s)
        p.translate(-origin.x(), -top)
        # The graph paints itself at this scale: the overview raster or boxes, in plan or heat-map colours,
        # with selection and search marks.
        self._option.exposedRect = QRectF(origin.x(), top, area.width() / s, height)
        drawn = item.drawn_labels
        item.paint(p, self._option, None)
        item.drawn_labels = drawn
        p.end()
        self._cache = (refs, values, top, top + height, pix)
        return pix, top

    def _paint_track(self, p: QPainter, area: QRectF, s: float, origin: QPointF) -> None:
        assert self.item is not None
        track = self._track()
        b = self.item.boundingRect()
        key = (self.item.overview.cacheKey(), track.size())
        if self._track_pix is None or self._track_pix[0] != key:  # the whole graph squeezed into the track
            img = self.item.overview.scaled(track.size().toSize(), Qt.AspectRatioMode.IgnoreAspectRatio,
                                            Qt.TransformationMode.SmoothTransformation)
            self._track_pix = (key, QPixmap.fromImage(img))
        p.drawPixmap(track.topLeft(), self._track_pix[1])
        p.setPen(QPen(QColor("#b8bcc2"), 1))
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawRect(track)
        k = track.height() / b.height()
        shown = QRectF(track.left(), track.top() + (origin.y() - b.top()) * k, track.width(),
                       max(3.0, area.height() / s * k))
        p.setBrush(QColor(30, 136, 255, 70))
        p.setPen(QPen(style.SELECTED, 1.5))
        p.drawRect(shown)

    # ----------------------------------------------------------------- mouse
    def _scene_at(self, pos: QPointF) -> QPointF:
        area, s, origin = self._frame()
        return QPointF(origin.x() + (pos.x() - area.left()) / s, origin.y() + (pos.y() - area.top()) / s)

    def _track_to(self, pos: QPointF) -> None:
        assert self.item is not None
        track, b = self._track(), self.item.boundingRect()
        y = b.top() + (pos.y() - track.top()) / track.height() * b.height()
        self.view.centerOn(QPointF(self.view.visible_scene_rect().center().x(), y))

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        if self.item is None or event.button() != Qt.MouseButton.LeftButton:
            return
        pos = event.position()
        self._track_drag = self.scrolls() and self._track().adjusted(-3, 0, 3, 0).contains(pos)
        if self._track_drag:
            self._track_to(pos)
        elif not self.view_rect().contains(pos):
            self.view.centerOn(self._scene_at(pos))
        # Dragging moves the view by the mouse's movement: the minimap may scroll under the mouse meanwhile,
        # so positions are not mapped again (that would run away).
        self._drag = pos
        self.update()
        event.accept()

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        if self._drag is None or self.item is None or not event.buttons() & Qt.MouseButton.LeftButton:
            return
        pos = event.position()
        if self._track_drag:
            self._track_to(pos)
        else:
            _, s, _ = self._frame()
            c = self.view.visible_scene_rect().center()
            self.view.centerOn(QPointF(c.x() + (pos.x() - self._drag.x()) / s, c.y() + (pos.y() - self._drag.y()) / s))
        self._drag = pos
        self.update()

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        self._drag = None
        self._track_drag = False


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
        entries = [(c, style.CATEGORY_COLORS[c], counts[c]) for c in order]
        if graph.group_of:  # closed groups (the drawing by groups)
            entries.append(("Group (double-click opens)", style.GROUP, len(graph.group_of)))
        self.set_entries("", entries)

    def set_entries(self, title: str, entries: list[tuple[str, QColor, int]]) -> None:
        """Any colour key: a title (e.g. 'Planned precision') and (label, colour, count) rows."""
        while self._grid.count():
            taken = self._grid.takeAt(0)
            w = taken.widget() if taken is not None else None
            if w is not None:
                w.hide()  # at once: deleteLater waits for the event loop, and the old row would show meanwhile
                w.deleteLater()
        self.entries = [(label, n) for label, _, n in entries]
        self.title = title
        if not entries:
            self.hide()
            return
        row0 = 0
        if title:
            head = QLabel(f"<b>{html.escape(title)}</b>")  # titles name runs and candidates: text, not markup
            head.setTextFormat(Qt.TextFormat.RichText)
            self._grid.addWidget(head, 0, 0, 1, 3)
            row0 = 1
        for row, (label, color, n) in enumerate(entries, start=row0):
            swatch = QLabel()
            swatch.setFixedSize(12, 12)
            swatch.setStyleSheet(f"background: {color.name()}; border-radius: 2px;")
            self._grid.addWidget(swatch, row, 0)
            name = QLabel(label)
            name.setTextFormat(Qt.TextFormat.PlainText)  # "cos < 0.99" is text, whatever Qt would guess
            self._grid.addWidget(name, row, 1)
            count = QLabel(f"{n:,}")
            count.setAlignment(Qt.AlignmentFlag.AlignRight)
            self._grid.addWidget(count, row, 2)
        for i in range(self._grid.count()):
            # New children of a visible frame are shown only later (queued): show them now, so the
            # size computed next counts them.
            cell = self._grid.itemAt(i)
            w = cell.widget() if cell is not None else None
            if w is not None:
                w.show()
        self.adjustSize()
        self.setVisible(self.property("wanted") is not False)
