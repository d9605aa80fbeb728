"""The graph canvas: zoom, pan, fit, selection (click, ctrl-click, rubber band), search marks, export."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from PySide6.QtCore import QPoint, QPointF, QRect, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QContextMenuEvent, QImage, QKeyEvent, QMouseEvent, QPainter, QResizeEvent, QWheelEvent
from PySide6.QtWidgets import QGraphicsScene, QGraphicsView, QWidget

from app.core.layout import GraphLayout
from app.core.model import KIND_GROUP, DisplayGraph, SelectionModel
from app.ui.common import style
from app.ui.graph import export as graph_export
from app.ui.graph.export import EXPORT_MAX_PIXELS, EXPORT_MAX_SIDE
from app.ui.graph.item import LOD_BOXES, LOD_LABELS, GraphItem
from app.ui.graph.overlays import LegendOverlay, MinimapOverlay, clear_shift

MAX_SCALE = 6.0
FIT_MARGIN = 0.97      # of the viewport a fitted graph fills
FIT_MIN_SCALE = LOD_BOXES  # a fit never goes below this: boxes stay outlined boxes, not a smear
OVERLAY_GAP = 8        # pixels kept between a node shown on request and the minimap or the legend


class GraphView(QGraphicsView):
    """Shows one DisplayGraph; selection lives in a SelectionModel shared with the rest of the UI."""

    nodeActivated = Signal(int)      # double-click on a node
    groupToggled = Signal(object, object)  # (group box to expand, None) or (None, expanded group to collapse)
    collapseAround = Signal(int)     # Backspace: collapse the group around this node
    foldToggled = Signal(int)        # a click on a node's shape-arithmetic badge
    zoomChanged = Signal(float)
    contextMenuRequested = Signal(object, QPoint)   # node under the cursor (or None), global position

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setScene(QGraphicsScene(self))
        self.setBackgroundBrush(style.BACKGROUND)
        self.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        self.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.MinimalViewportUpdate)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setResizeAnchor(QGraphicsView.ViewportAnchor.AnchorViewCenter)
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.setOptimizationFlag(QGraphicsView.OptimizationFlag.DontSavePainterState, True)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setStatusTip("Drag to pan · wheel to zoom · click to select, Ctrl+click to add, Shift+drag for a "
                          "rectangle · double-click an If/Loop/Scan node to open its subgraph · F fits, "
                          "Shift+F shows all of it")
        self.item: GraphItem | None = None
        self.graph: DisplayGraph | None = None
        self.selection = SelectionModel()
        self.selection.subscribe(self._on_selection)
        self._press_pos: QPoint | None = None
        self._band: QRectF | None = None
        self._band_additive = False
        self.rubberBandChanged.connect(self._on_rubber_band)
        self.minimap = MinimapOverlay(self, self)
        self.legend = LegendOverlay(self)
        self.horizontalScrollBar().valueChanged.connect(self.minimap.update)
        self.verticalScrollBar().valueChanged.connect(self.minimap.update)

    # ----------------------------------------------------------------- content
    def set_graph(self, graph: DisplayGraph, layout: GraphLayout,
                  selection: SelectionModel | None = None) -> None:
        """Show a graph (replacing the previous one)."""
        scene = self.scene()
        scene.clear()
        self.item = GraphItem(graph, layout)
        self.graph = graph
        scene.addItem(self.item)
        self._update_scene_rect()
        if selection is not None and selection is not self.selection:
            self.selection.unsubscribe(self._on_selection)
            self.selection = selection
            self.selection.subscribe(self._on_selection)
        self.minimap.set_item(self.item)
        self.legend.set_graph(graph)
        self._layout_overlays()
        # Place the edge labels now, just after the first frame, not on the first zoom in (10k nodes: ~0.3 s).
        QTimer.singleShot(0, self._place_labels)

    def relabel(self, graph: DisplayGraph) -> bool:
        """Show `graph` in place of the drawn one when it is the same drawing (the same boxes and edges) with other
        edge labels: the item, the view's place, the selection and the overlays stay; the new labels are placed on
        the event loop's next turn. False (nothing done) when it is another drawing."""
        old = self.graph
        if self.item is None or old is None or graph.node_count != old.node_count \
                or not np.array_equal(graph.edges, old.edges):
            return False
        self.item.graph = graph
        self.graph = graph
        self.item.update()
        QTimer.singleShot(0, self._place_labels)
        return True

    def _place_labels(self) -> None:
        if self.item is not None and self.graph is not None and self.graph.edge_labels:
            self.item.edge_labels()

    def _update_scene_rect(self, scale: float | None = None) -> None:
        """Room around the drawing (a viewport's worth at this zoom) so that any node can be centred."""
        if self.item is None:
            return
        s = scale or self.current_scale() or 1.0
        b = self.item.boundingRect()
        pad_w, pad_h = max(self.viewport().width(), 400) / s, max(self.viewport().height(), 300) / s
        self.scene().setSceneRect(b.adjusted(-pad_w, -pad_h, pad_w, pad_h))

    def clear(self) -> None:
        self.scene().clear()
        self.item = None
        self.graph = None
        self.minimap.set_item(None)
        self.legend.set_graph(None)

    # ----------------------------------------------------------------- zoom and navigation
    def current_scale(self) -> float:
        return float(self.transform().m11())

    def min_scale(self) -> float:
        if self.item is None:
            return 0.01
        b = self.item.boundingRect()
        vp = self.viewport().rect()
        fit = min(vp.width() / max(b.width(), 1.0), vp.height() / max(b.height(), 1.0))
        return min(fit * 0.5, 0.5)

    def set_scale(self, scale: float) -> None:
        scale = float(np.clip(scale, self.min_scale(), MAX_SCALE))
        cur = self.current_scale()
        if cur > 0 and not math.isclose(cur, scale):
            if scale < cur:
                self._update_scene_rect(scale)
            self.scale(scale / cur, scale / cur)
            self.zoomChanged.emit(scale)
            self.minimap.update()

    def zoom_by(self, factor: float) -> None:
        self.set_scale(self.current_scale() * factor)

    def zoom_in(self) -> None:
        anchor = self.transformationAnchor()
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorViewCenter)
        self.zoom_by(1.25)
        self.setTransformationAnchor(anchor)

    def zoom_out(self) -> None:
        anchor = self.transformationAnchor()
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorViewCenter)
        self.zoom_by(0.8)
        self.setTransformationAnchor(anchor)

    def fit_all(self) -> None:
        """Fit the graph to the view, in a way a person can use.

        A graph that fits whole at a scale where its boxes are still boxes is shown whole (never above
        100%). A tall graph (or one too big for that) is fitted to its width instead, no further out than
        FIT_MIN_SCALE, and shown from its top: scroll down to read on, the minimap shows where you are."""
        if self.item is None:
            return
        b = self.item.boundingRect()
        vp = self.viewport().rect()
        fit_w = FIT_MARGIN * vp.width() / max(b.width(), 1.0)
        whole = min(fit_w, FIT_MARGIN * vp.height() / max(b.height(), 1.0))
        if whole >= FIT_MIN_SCALE:
            self.fit_whole()
            return
        scale = min(max(fit_w, FIT_MIN_SCALE), 1.0)
        self._set_transform(scale)
        half_h = vp.height() / 2.0 / scale
        if b.width() * scale <= vp.width():
            x = b.center().x()
        else:  # wider than the view even at the floor scale: start where the graph starts, at its first node
            first = int(np.argmin(self.item.cy))
            x = float(np.clip(self.item.cx[first], b.left() + vp.width() / 2.0 / scale,
                              b.right() - vp.width() / 2.0 / scale))
        self.centerOn(QPointF(x, b.top() + half_h))
        self._after_view_change()

    def fit_whole(self) -> None:
        """The whole graph in view, however small that makes it (never above 100%)."""
        if self.item is None:
            return
        b = self.item.boundingRect()
        vp = self.viewport().rect()
        fit = FIT_MARGIN * min(vp.width() / max(b.width(), 1.0), vp.height() / max(b.height(), 1.0))
        self._set_transform(min(fit, 1.0))
        self.centerOn(b.center())
        self._after_view_change()

    def _set_transform(self, scale: float) -> None:
        self.resetTransform()
        self._update_scene_rect(scale)
        self.scale(scale, scale)

    def _after_view_change(self) -> None:
        self.zoomChanged.emit(self.current_scale())
        self.minimap.update()

    def show_start(self) -> None:
        """The first view of a graph: all of it when readable, else its inputs at a readable zoom."""
        if self.item is None:
            return
        b = self.item.boundingRect()
        vp = self.viewport().rect()
        fit = min(vp.width() / max(b.width(), 1.0), vp.height() / max(b.height(), 1.0))
        if fit >= 0.45:
            self.fit_all()
            return
        self.resetTransform()
        scale = max(0.8, fit)
        self.scale(scale, scale)
        top = self.mapToScene(vp.center()).y() - self.mapToScene(vp.topLeft()).y()
        first = int(np.argmin(self.item.cy))
        self.centerOn(QPointF(self.item.cx[first], b.top() + top))
        self.zoomChanged.emit(self.current_scale())
        self.minimap.update()

    def zoom_actual(self) -> None:
        self.set_scale(1.0)

    def center_on_node(self, i: int, select: bool = True, zoom_to_read: bool = True) -> None:
        if self.item is None:
            return
        if zoom_to_read and self.current_scale() < 0.6:
            self.set_scale(0.9)
        # Room around the drawing for this zoom (show_start zooms without it): a node at the drawing's edge can be
        # centred, and moved from under the minimap, rather than stopped by the end of the scroll range.
        self._update_scene_rect()
        self.centerOn(self.item.node_rect(i).center())
        self.keep_clear_of_overlays(self.item.node_rect(i))
        if select:
            self.selection.set([i], i)
        self.minimap.update()

    def covered_rects(self) -> list[QRect]:
        """Where the widgets floating over the canvas (the minimap, the legend) hide it, in viewport coordinates."""
        vp = self.viewport()
        return [QRect(vp.mapFrom(self, w.pos()), w.size()) for w in (self.minimap, self.legend) if w.isVisible()]

    def keep_clear_of_overlays(self, rect: QRectF) -> None:
        """Scroll the least that takes a scene rectangle (a node being shown) out from under the minimap and the
        legend, keeping it in the viewport: centred on a small canvas, a node can land under the minimap in its
        corner. One that is clear stays where it is."""
        box = self.viewportTransform().mapRect(rect)
        covers = [QRectF(r).adjusted(-OVERLAY_GAP, -OVERLAY_GAP, OVERLAY_GAP, OVERLAY_GAP)
                  for r in self.covered_rects()]
        dx, dy = clear_shift(box, covers, QRectF(self.viewport().rect()))
        # The node moves one way on screen when the scroll bars move the other; whole pixels, rounded away from
        # zero so that it clears the cover rather than stopping a fraction short.
        for bar, d in ((self.horizontalScrollBar(), dx), (self.verticalScrollBar(), dy)):
            if d:
                bar.setValue(bar.value() - int(math.copysign(math.ceil(abs(d)), d)))

    def visible_scene_rect(self) -> QRectF:
        return self.mapToScene(self.viewport().rect()).boundingRect()

    # ----------------------------------------------------------------- marks
    def set_matches(self, nodes: list[int] | np.ndarray, current: int | None = None) -> None:
        if self.item is None:
            return
        self.item.matches = np.asarray(list(nodes), dtype=np.int64)
        self.item.current_match = current
        self.item.update()

    def _on_selection(self) -> None:
        if self.item is not None:
            self.item.selected = self.selection.selected
            self.item.update()

    # ----------------------------------------------------------------- mouse and keys
    def wheelEvent(self, event: QWheelEvent) -> None:  # noqa: N802
        if self.item is None:
            return super().wheelEvent(event)
        delta = event.angleDelta().y() or event.angleDelta().x()
        if event.modifiers() & Qt.KeyboardModifier.ShiftModifier and not (
                event.modifiers() & Qt.KeyboardModifier.ControlModifier):
            return super().wheelEvent(event)  # shift+wheel scrolls
        self.zoom_by(math.pow(1.0015, delta))
        event.accept()

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        self._press_pos = event.position().toPoint()
        if event.button() == Qt.MouseButton.LeftButton and self.item is not None:
            mods = event.modifiers()
            badge = self.item.fold_badge_at(self.mapToScene(self._press_pos)) if self.item.graph.fold_badges else None
            if badge is not None and self.current_scale() >= LOD_LABELS:
                self.foldToggled.emit(badge)
                event.accept()
                return
            hit = self.item.node_at(self.mapToScene(self._press_pos))
            additive = bool(mods & (Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.MetaModifier))
            if hit is not None:
                if additive:
                    self.selection.toggle(hit)
                elif mods & Qt.KeyboardModifier.ShiftModifier:
                    self.selection.add([hit], hit)
                else:
                    self.selection.set([hit], hit)
                event.accept()
                return
            if mods & (Qt.KeyboardModifier.ShiftModifier | Qt.KeyboardModifier.ControlModifier):
                self._band_additive = additive or bool(mods & Qt.KeyboardModifier.ShiftModifier)
                self.setDragMode(QGraphicsView.DragMode.RubberBandDrag)
        if event.button() == Qt.MouseButton.MiddleButton:
            # Middle-drag pans whatever the mode: fake a left press in hand-drag mode.
            self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
            fake = QMouseEvent(event.type(), event.position(), event.globalPosition(),
                               Qt.MouseButton.LeftButton, Qt.MouseButton.LeftButton, event.modifiers())
            return super().mousePressEvent(fake)
        super().mousePressEvent(event)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        if event.button() == Qt.MouseButton.MiddleButton:
            fake = QMouseEvent(event.type(), event.position(), event.globalPosition(),
                               Qt.MouseButton.LeftButton, Qt.MouseButton.NoButton, event.modifiers())
            super().mouseReleaseEvent(fake)
            return
        super().mouseReleaseEvent(event)
        if self.dragMode() == QGraphicsView.DragMode.RubberBandDrag:
            self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
            if self._press_pos is not None:
                self._band = QRectF(self.mapToScene(self._press_pos),
                                    self.mapToScene(event.position().toPoint())).normalized()
            if self._band is not None and self.item is not None:
                nodes = self.item.nodes_inside(self._band).tolist()
                if self._band_additive:
                    self.selection.add(nodes)
                else:
                    self.selection.set(nodes)
            self._band = None
        elif (event.button() == Qt.MouseButton.LeftButton and self._press_pos is not None
              and (event.position().toPoint() - self._press_pos).manhattanLength() < 4
              and self.item is not None
              and self.item.node_at(self.mapToScene(event.position().toPoint())) is None):
            self.selection.clear()
        self._press_pos = None
        self.minimap.update()

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        if self.item is not None:
            at = self.mapToScene(event.position().toPoint())
            hit = self.item.node_at(at)
            if hit is not None and self.item.graph.kinds[hit] == KIND_GROUP:
                self.groupToggled.emit(hit, None)
                return
            if hit is not None:
                self.nodeActivated.emit(hit)
                return
            frame = self.item.frame_at(at)
            if frame is not None:
                self.groupToggled.emit(None, frame)
                return
        super().mouseDoubleClickEvent(event)

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:  # noqa: N802
        """Right-click: a node outside the selection becomes the selection, then the menu is asked for."""
        hit = self.item.node_at(self.mapToScene(event.pos())) if self.item is not None else None
        if hit is not None and hit not in self.selection:
            self.selection.set([hit], hit)
        self.contextMenuRequested.emit(hit, event.globalPos())
        event.accept()

    def _on_rubber_band(self, rect: QPoint, from_scene: QPointF, to_scene: QPointF) -> None:
        if not rect.isNull():
            self._band = QRectF(from_scene, to_scene).normalized()

    def select_in_rect(self, rect: QRectF, additive: bool = False) -> None:
        """Select the nodes wholly inside a scene rectangle (what a rubber band does)."""
        if self.item is None:
            return
        nodes = self.item.nodes_inside(rect).tolist()
        self.selection.add(nodes) if additive else self.selection.set(nodes)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802
        key = event.key()
        step = 80
        if key in (Qt.Key.Key_Plus, Qt.Key.Key_Equal):
            self.zoom_in()
        elif key == Qt.Key.Key_Minus:
            self.zoom_out()
        elif key in (Qt.Key.Key_0, Qt.Key.Key_F) and not event.modifiers():
            self.fit_all()
        elif key == Qt.Key.Key_F and event.modifiers() == Qt.KeyboardModifier.ShiftModifier:
            self.fit_whole()
        elif key == Qt.Key.Key_1 and not event.modifiers():
            self.zoom_actual()
        elif key == Qt.Key.Key_Escape:
            self.selection.clear()
        elif key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and self.selection.current is not None and self.item:
            node = self.selection.current
            if self.item.graph.kinds[node] == KIND_GROUP:
                self.groupToggled.emit(node, None)
            else:
                self.nodeActivated.emit(node)
        elif key == Qt.Key.Key_Backspace and self.selection.current is not None:
            self.collapseAround.emit(self.selection.current)
        elif key == Qt.Key.Key_A and event.modifiers() & Qt.KeyboardModifier.ControlModifier and self.graph:
            self.selection.set(range(self.graph.node_count))
        elif key in (Qt.Key.Key_Left, Qt.Key.Key_Right):
            bar = self.horizontalScrollBar()
            bar.setValue(bar.value() + (step if key == Qt.Key.Key_Right else -step))
        elif key in (Qt.Key.Key_Up, Qt.Key.Key_Down):
            bar = self.verticalScrollBar()
            bar.setValue(bar.value() + (step if key == Qt.Key.Key_Down else -step))
        else:
            super().keyPressEvent(event)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._update_scene_rect()
        self._layout_overlays()

    def _layout_overlays(self) -> None:
        vp = self.viewport().geometry()
        mm = self.minimap
        mm.fit_to(vp.height())
        mm.move(vp.right() - mm.width() - 10, vp.bottom() - mm.height() - 10)
        lg = self.legend
        lg.adjustSize()
        lg.move(vp.left() + 10, vp.bottom() - lg.height() - 10)

    # ----------------------------------------------------------------- export
    def show_overlays(self) -> None:
        """The minimap and the legend, where a graph is drawn and the user wants them (their "wanted" property,
        set by View ▸ Minimap and Legend)."""
        has = self.item is not None
        self.minimap.setVisible(has and self.minimap.property("wanted") is not False)
        self.legend.setVisible(has and self.legend.property("wanted") is not False)

    def render_image(self, max_side: int = EXPORT_MAX_SIDE, max_pixels: int = EXPORT_MAX_PIXELS,
                     scale: float = 1.0) -> QImage:
        """Render the whole graph, scaled down if it would exceed the size limits."""
        return graph_export.render_image(self, max_side, max_pixels, scale)

    def export_png(self, path: str | Path) -> Path:
        return graph_export.export_png(self, path)

    def export_svg(self, path: str | Path) -> Path:
        return graph_export.export_svg(self, path)
