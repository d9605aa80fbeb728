"""The graph page: breadcrumb for subgraphs, the find bar, and the canvas."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from app.core.model import GraphPicture
from app.ui.graph_view import GraphView
from app.ui.search_bar import SearchBar


@dataclass
class _Level:
    title: str
    picture: GraphPicture


class GraphPage(QWidget):
    """Holds a stack of graphs: the model's main graph and any subgraphs opened from it."""

    levelChanged = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        crumbs = QHBoxLayout()
        crumbs.setContentsMargins(6, 3, 6, 3)
        self.back_button = QPushButton("◀ Back")
        self.back_button.setToolTip("Back to the enclosing graph (Alt+Left)")
        self.back_button.clicked.connect(self.go_back)
        self.crumb = QLabel("")
        crumbs.addWidget(self.back_button)
        crumbs.addWidget(self.crumb, 1)
        self.crumb_bar = QWidget()
        self.crumb_bar.setLayout(crumbs)
        self.crumb_bar.hide()
        self.search = SearchBar()
        self.search.hide()
        self.view = GraphView()
        lay.addWidget(self.crumb_bar)
        lay.addWidget(self.search)
        lay.addWidget(self.view, 1)
        self.levels: list[_Level] = []
        self.search.matchesChanged.connect(self._on_matches)
        self.search.closed.connect(lambda: self.view.set_matches([], None))

    @property
    def picture(self) -> GraphPicture | None:
        return self.levels[-1].picture if self.levels else None

    def show_root(self, title: str, picture: GraphPicture) -> None:
        self.levels = [_Level(title, picture)]
        self._show_top()

    def push(self, title: str, picture: GraphPicture) -> None:
        self.levels.append(_Level(title, picture))
        self._show_top()

    def go_back(self) -> None:
        if len(self.levels) > 1:
            self.levels.pop()
            self._show_top()

    def _show_top(self) -> None:
        top = self.levels[-1]
        self.view.selection.clear()
        self.view.set_graph(top.picture.graph, top.picture.layout)
        self.view.show_start()
        self.search.set_graph(top.picture.graph)
        self.crumb_bar.setVisible(len(self.levels) > 1)
        self.crumb.setText("  ▸  ".join(level.title for level in self.levels))
        self.levelChanged.emit()

    def _on_matches(self, nodes: list[int], current: int | None) -> None:
        self.view.set_matches(nodes, current)
        if current is not None:
            self.view.center_on_node(current, select=True)
