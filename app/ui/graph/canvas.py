"""What the widgets drawn over the graph canvas, and the graph export, need from the canvas.

`GraphView` has all of it; the overlays and the export read the canvas through this protocol, so that they
need not import the view that creates them (which would make an import cycle)."""

from __future__ import annotations

from typing import Protocol

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtWidgets import QGraphicsScene, QWidget

from app.core.model import DisplayGraph
from app.ui.graph.item import GraphItem


class GraphCanvas(Protocol):
    """A view showing one graph: its item and graph (None when empty), its scene and viewport."""

    item: GraphItem | None
    graph: DisplayGraph | None

    def scene(self) -> QGraphicsScene: ...

    def viewport(self) -> QWidget: ...

    def visible_scene_rect(self) -> QRectF: ...

    def centerOn(self, pos: QPointF) -> None: ...  # noqa: N802 (Qt's name)
