"""The graph page: breadcrumb for subgraphs, the find bar, and the canvas; groups expand and collapse here."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtCore import QPoint, QPointF, Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from app.core.model import KIND_GROUP, NEST_LIMIT, GraphPicture, initial_expansion, regroup
from app.ui.graph.search_bar import SearchBar
from app.ui.graph.view import GraphView

if TYPE_CHECKING:
    from app.ui.common.task_thread import Task

BACKGROUND_FROM = 5000  # nodes from which a flat or all-open drawing is laid out on a thread (~0.1 s and more)


@dataclass
class _Level:
    title: str
    picture: GraphPicture



class GraphPage(QWidget):
    """Holds a stack of graphs: the model's main graph and any subgraphs opened from it. A graph with name scopes is
    drawn by groups (:mod:`app.core.model.grouping`): a group box expands in place (double-click, Enter), an expanded
    group's outline collapses it (double-click, Backspace), and search opens the groups around what it finds."""

    levelChanged = Signal()
    groupsChanged = Signal()   # the same graph drawn with other groups open: colours and marks are drawn again
    regroupStarted = Signal(str)  # a big drawing is being laid out on a thread: what to tell the user

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
        # Said while a drawing waits for its shapes (edge labels, tensor shapes in the panels).
        self.pending_note = QLabel("Inferring shapes… edge labels and tensor shapes follow.")
        self.pending_note.setContentsMargins(8, 2, 8, 2)
        self.pending_note.hide()
        self.view = GraphView()
        lay.addWidget(self.crumb_bar)
        lay.addWidget(self.search)
        lay.addWidget(self.pending_note)
        lay.addWidget(self.view, 1)
        self.levels: list[_Level] = []
        self.last_regroup_s = 0.0  # how long the last expand/collapse took (layout and drawing), for the status bar
        self.busy = False          # a big drawing is being laid out on a thread
        self.drawing: GraphPicture | None = None  # a drawing on show whose shapes are still being inferred
        self._before: list[_Level] = []           # what it replaced, shown again if its shapes never come
        self._task: Task | None = None
        self.search.matchesChanged.connect(self._on_matches)
        self.search.closed.connect(lambda: self.view.set_matches([], None))
        self.view.groupToggled.connect(self._on_group_toggled)
        self.view.collapseAround.connect(self.collapse_around)
        self.view.foldToggled.connect(self.toggle_fold)

    @property
    def picture(self) -> GraphPicture | None:
        return self.levels[-1].picture if self.levels else None

    def show_root(self, title: str, picture: GraphPicture) -> None:
        """Show a model's graph. The labelled picture of the drawing on show (:meth:`show_drawing`) replaces it in
        place: the view stays where it is, with its selection and groups, and only the edge labels change."""
        drawing, self.drawing, self._before = self.drawing, None, []
        self.pending_note.hide()
        if drawing is not None and self.levels and picture.all_nodes is drawing.all_nodes:
            self._label_drawing(title, drawing, picture)
            return
        self.levels = [_Level(title, picture)]
        self._show_top()

    def show_drawing(self, title: str, picture: GraphPicture) -> None:
        """Show a model's graph laid out before its shapes are known (edge labels blank, a note saying they
        follow); :meth:`show_root` with its labelled picture completes it, :meth:`set_shapes_pending` (False) before
        that takes it back."""
        if self.drawing is None:
            self._before = self.levels
        self.levels = [_Level(title, picture)]
        self.drawing = picture
        self.pending_note.show()
        self._show_top()

    def set_shapes_pending(self, pending: bool) -> None:
        """Shapes are no longer coming (`pending` False) for a drawing still waiting for them: the opening was
        cancelled or failed, and what was on show before comes back."""
        if pending or self.drawing is None:
            return
        before, self.drawing, self._before = self._before, None, []
        self.pending_note.hide()
        self.levels = before
        if before:
            self._show_top()
        else:
            self.view.clear()
            self.search.set_graph(None)
            self.levelChanged.emit()

    def _label_drawing(self, title: str, drawing: GraphPicture, labelled: GraphPicture) -> None:
        """The root level becomes `labelled`. Shown as it is when the drawing on show is still the first one;
        when groups were opened or closed meanwhile, that drawing is made again from the labelled picture."""
        root = self.levels[0]
        current = root.picture
        root.title, root.picture = title, labelled
        if len(self.levels) > 1:
            return  # a subgraph is on show: the main graph is drawn again when the user goes back to it
        if current is drawing:
            if self.view.relabel(labelled.graph):
                self.search.set_graph(labelled.all_nodes)
                self.levelChanged.emit()
            else:  # the shapes folded other nodes (shape arithmetic): another drawing, shown from its start
                self._show_top()
            return
        if self.busy:  # being drawn another way on a thread: that drawing reads the labels set on the flat graph
            root.picture = current
            return
        # Drawn another way since (groups opened, arithmetic unfolded): that way again, with the labels.
        base = replace(labelled, expanded=current.expanded, unfolded=current.unfolded,
                       fold=current.fold and labelled.folds is not None)
        root.picture = base
        self._regroup(current.expanded, None, keep_view=True)

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
        self.search.set_graph(top.picture.all_nodes)  # search finds nodes inside collapsed groups too
        self.crumb_bar.setVisible(len(self.levels) > 1)
        self.crumb.setText("  ▸  ".join(level.title for level in self.levels))
        self.levelChanged.emit()

    # ----------------------------------------------------------------- groups
    @property
    def can_group(self) -> bool:
        return self.picture is not None and self.picture.can_group

    @property
    def grouped(self) -> bool:
        return self.picture is not None and self.picture.grouped

    def set_grouped(self, on: bool) -> None:
        """Draw by groups (as the model opened: its layers) or flat (every node)."""
        pic = self.picture
        if pic is None or pic.tree is None or not pic.can_group or on == pic.grouped:
            return
        self._regroup(initial_expansion(pic.tree) if on else None, anchor=None)

    @property
    def can_fold(self) -> bool:
        return self.picture is not None and self.picture.folds is not None

    @property
    def folded(self) -> bool:
        return self.picture is not None and self.picture.folded

    def set_folded(self, on: bool) -> None:
        """Fold shape arithmetic into badges on the nodes it feeds (on), or draw every node of it."""
        pic = self.picture
        if pic is None or pic.folds is None or on == pic.folded:
            return
        self._regroup(pic.expanded, anchor=None, fold=on, unfolded=frozenset())

    def toggle_fold(self, node: int) -> None:
        """Show (or fold again) the shape arithmetic that feeds drawn node `node`."""
        pic = self.picture
        if pic is None or pic.graph.flat_of is None or node not in pic.graph.fold_badges:
            return
        c = int(pic.graph.flat_of[node])
        self._regroup(pic.expanded, anchor=c, unfolded=pic.unfolded ^ {c})

    def expand(self, node: int) -> bool:
        """Expand the group box `node` (a drawn node); False when it is no group box."""
        pic = self.picture
        if pic is None or not pic.grouped or node not in pic.graph.group_of:
            return False
        group = pic.graph.group_of[node]
        assert pic.expanded is not None
        self._regroup(pic.expanded | {group}, anchor=self._first_node_of(node))
        return True

    def collapse(self, group: int) -> bool:
        """Collapse an expanded group (and the groups inside it); False when it is not expanded."""
        pic = self.picture
        if pic is None or not pic.grouped or pic.tree is None or group not in (pic.expanded or set()):
            return False
        inside = set(pic.tree.descendants(group))
        assert pic.expanded is not None
        flat = pic.tree.nodes_in(group)
        self._regroup(pic.expanded - inside, anchor=int(flat[0]) if len(flat) else None)
        return True

    def collapse_around(self, node: int) -> bool:
        """Collapse the innermost expanded group around drawn node `node` (Backspace)."""
        pic = self.picture
        if pic is None or not pic.grouped or pic.tree is None:
            return False
        flat = self._first_node_of(node)
        path = pic.tree.path_to(flat) if flat is not None else []
        if node in pic.graph.group_of:  # a collapsed box: the group around it
            path = pic.tree.ancestors(pic.graph.group_of[node])[:-1]
        open_ = [g for g in path if g in (pic.expanded or set())]
        return self.collapse(open_[-1]) if open_ else False

    def expand_all(self) -> None:
        pic = self.picture
        if pic is not None and pic.tree is not None:
            self._regroup(set(range(pic.tree.count)), anchor=None)

    def collapse_all(self) -> None:
        self.collapse_to_depth(0)

    def collapse_to_depth(self, depth: int) -> None:
        """Show `depth` levels of groups (0: every top-level group a box)."""
        pic = self.picture
        if pic is not None and pic.tree is not None:
            tiny = {g for g in range(pic.tree.count) if int(pic.tree.size[g]) <= 1}
            self._regroup(pic.tree.by_depth(depth) | tiny, anchor=None)

    def reveal(self, flat_node: int) -> int | None:
        """Expand the groups around a node of the flat graph (search, "jump to node"); its drawn index."""
        pic = self.picture
        if pic is None:
            return None
        if pic.graph.shown_as is None:
            return flat_node
        unfolded = pic.unfolded
        if pic.folded and pic.folds is not None and pic.folds.into[flat_node] >= 0:
            unfolded = unfolded | {int(pic.folds.into[flat_node])}  # a folded node: show its chain
        path = set(pic.tree.path_to(flat_node)) if pic.grouped and pic.tree is not None else set()
        expanded = pic.expanded if pic.expanded is None else pic.expanded | path
        if expanded != pic.expanded or unfolded != pic.unfolded:
            self._regroup(expanded, anchor=flat_node, keep_view=False, unfolded=unfolded, background=False)
            pic = self.picture
        assert pic is not None and pic.graph.shown_as is not None
        return int(pic.graph.shown_as[flat_node])

    def _first_node_of(self, node: int) -> int | None:
        """A flat-graph node that drawn node `node` stands for (a box: its first node)."""
        pic = self.picture
        if pic is None or pic.graph.shown_as is None:
            return node
        if pic.graph.flat_of is not None and pic.graph.flat_of[node] >= 0:  # a node drawn as itself
            return int(pic.graph.flat_of[node])
        hits = np.nonzero(pic.graph.shown_as == node)[0]
        return int(hits[0]) if len(hits) else None

    def _regroup(self, expanded: set[int] | None, anchor: int | None, keep_view: bool = True, *,
                 fold: bool | None = None, unfolded: frozenset[int] | None = None,
                 background: bool | None = None) -> None:
        """Draw the top graph again with `expanded` groups open (None: flat), the view kept where `anchor` (a node of
        the flat graph) was, and the selection carried over to what stands for it now. A drawing of thousands of
        nodes (flat, or every group open) is laid out on a thread: the window stays responsive meanwhile
        (`background=False`: here and now, for search)."""
        pic = self.picture
        if pic is None or self.busy:
            return
        started = time.perf_counter()
        view = self.view
        before = pic.graph.shown_as
        old_pos = None
        if anchor is not None and before is not None and view.item is not None:
            old_pos = view.mapFromScene(view.item.node_rect(int(before[anchor])).center())
        flat_selected = self._flat_selection()
        if background is None:
            background = pic.all_nodes.node_count > BACKGROUND_FROM and (
                expanded is None or len(expanded) > NEST_LIMIT)
        if background:
            from app.ui.common.task_thread import run_task

            self.busy = True
            self.regroupStarted.emit(f"Laying out {pic.all_nodes.node_count:,} nodes…")
            QGuiApplication.setOverrideCursor(Qt.CursorShape.BusyCursor)

            def done(new: GraphPicture) -> None:
                self.busy = False
                QGuiApplication.restoreOverrideCursor()
                if self.picture is pic:  # not another model (or level) since
                    self._show_regrouped(new, anchor, keep_view, old_pos, flat_selected, started)

            def failed(message: str) -> None:
                self.busy = False
                QGuiApplication.restoreOverrideCursor()
                self.regroupStarted.emit(f"The graph could not be drawn that way: {message}")

            self._task = run_task(self, lambda: regroup(pic, expanded, fold=fold, unfolded=unfolded), done, failed)
            return
        self._show_regrouped(regroup(pic, expanded, fold=fold, unfolded=unfolded), anchor, keep_view, old_pos,
                             flat_selected, started)

    def _show_regrouped(self, new: GraphPicture, anchor: int | None, keep_view: bool, old_pos: QPoint | None,
                        flat_selected: list[int], started: float) -> None:
        view = self.view
        self.levels[-1].picture = new
        scale = view.current_scale()
        center = view.visible_scene_rect().center()
        view.selection.clear()  # its indices are the old drawing's
        view.set_graph(new.graph, new.layout)
        if keep_view and scale > 0:
            view.set_scale(scale)
            target = None
            if anchor is not None and old_pos is not None and view.item is not None:
                now = int(new.graph.shown_as[anchor]) if new.graph.shown_as is not None else anchor
                # the anchor's new position at the same spot on screen
                p = view.item.node_rect(now).center()
                vp = view.viewport().rect().center()
                target = QPointF(p.x() - (old_pos.x() - vp.x()) / scale, p.y() - (old_pos.y() - vp.y()) / scale)
            view.centerOn(target if target is not None else center)
        self.last_regroup_s = time.perf_counter() - started
        self.groupsChanged.emit()  # the window reads the new drawing (properties, colours, marks) first
        mapped = self._drawn(flat_selected)
        if mapped:
            view.selection.set(mapped, mapped[0])

    def _flat_selection(self) -> list[int]:
        """The selection as nodes of the flat graph (a selected box: all of its nodes)."""
        pic = self.picture
        sel = sorted(self.view.selection.selected)
        if pic is None or pic.graph.shown_as is None:
            return sel
        pick = np.isin(pic.graph.shown_as, np.asarray(sel, dtype=np.int64))
        return np.nonzero(pick)[0].tolist()

    def _drawn(self, flat: list[int]) -> list[int]:
        pic = self.picture
        if pic is None or pic.graph.shown_as is None:
            return flat
        return sorted({int(pic.graph.shown_as[i]) for i in flat})

    def _on_group_toggled(self, node: int | None, group: int | None) -> None:
        if node is not None and self.picture is not None and self.picture.graph.kinds[node] == KIND_GROUP:
            self.expand(node)
        elif group is not None:
            self.collapse(group)

    # ----------------------------------------------------------------- search
    def _on_matches(self, nodes: list[int], current: int | None) -> None:
        """Matches come as nodes of the flat graph: the current one's groups open; a box holding matches is marked."""
        drawn_current = self.reveal(current) if current is not None else None
        self.view.set_matches(self._drawn(list(nodes)), drawn_current)
        if drawn_current is not None:
            self.view.center_on_node(drawn_current, select=True)
