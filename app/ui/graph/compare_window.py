"""File ▸ Compare With Model…: two models side by side, their graphs coloured by a computed diff.

Both graphs are drawn as the main window draws one (by groups, shape arithmetic folded) in panes that follow each
other: selecting a node selects its match on the other side (opening the groups around it), zoom follows zoom, and
panning one keeps the other on the match of the node at its centre. A list steps through the changes (F3 /
Shift+F3); Compare Numerically runs both models on one random sample and finds where they start to disagree.
"""

from __future__ import annotations

import html
import threading
from functools import partial
from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QColor, QKeySequence, QResizeEvent, QShortcut
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from app.core.model import DisplayGraph, ModelDiff, OpenedModel, node_keys, regroup
from app.core.results import NumericDiff
from app.ui.common.screen_fit import fit_window
from app.ui.common.task_thread import Task, run_task
from app.ui.graph.node_colors import ERROR_BANDS, NONFINITE, NOT_AN_OP, NOT_MEASURED, error_band
from app.ui.graph.page import GraphPage
from app.ui.graph.view import GraphView

STATUS_COLORS = {  # what the diff says of a node, most telling first
    "removed": QColor("#e03131"),
    "added": QColor("#2f9e44"),
    "changed": QColor("#f59f00"),
    "folded": QColor("#74c0fc"),
    "same": QColor("#dee2e6"),
}
STATUS_WORDS = {"removed": "only in A", "added": "only in B", "changed": "changed", "folded": "Constant → weight",
                "same": "the same"}
_RANK = {s: k for k, s in enumerate(STATUS_COLORS)}


def diff_colors(graph: DisplayGraph, status_of: list[str | None]) -> tuple[list[QColor], dict]:
    """Per drawn node the colour of what the diff says of it (a group box: the most telling status inside, with the
    mix as a strip)."""
    colors, mix = [], {}
    for i, idx in enumerate(graph.onnx_index.tolist()):
        inside = graph.members.get(i) if idx < 0 else None
        if inside is not None:
            counts: dict[str, int] = {}
            for m in inside.tolist():
                s = status_of[m] if m < len(status_of) else None
                if s:
                    counts[s] = counts.get(s, 0) + 1
            top = min(counts, key=_RANK.__getitem__) if counts else None
            colors.append(STATUS_COLORS[top] if top else NOT_AN_OP)
            total = sum(counts.values())
            if total:
                mix[i] = [(STATUS_COLORS[s], counts[s] / total) for s in STATUS_COLORS if s in counts]
            continue
        s = status_of[idx] if 0 <= idx < len(status_of) else None
        colors.append(STATUS_COLORS[s] if s else NOT_AN_OP)
    return colors, mix


class _PathTitle(QLabel):
    """A pane's letter and its model's path, elided in the middle where the pane is narrower than the path (the
    whole path in the tooltip): a long path must not make the window wider than a small screen."""

    def __init__(self, letter: str, path: str) -> None:
        super().__init__()
        self.letter, self.path = letter, path
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setToolTip(path)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self._elide()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        fm = self.fontMetrics()
        room = max(40, self.width() - 2 * fm.horizontalAdvance(f"{self.letter} ") - 8)
        shown = fm.elidedText(self.path, Qt.TextElideMode.ElideMiddle, room)
        self.setText(f"<b>{self.letter}</b> {html.escape(shown)}")


class _Side(QWidget):
    """One model's pane: its name over its graph page."""

    def __init__(self, letter: str, opened: OpenedModel) -> None:
        super().__init__()
        col = QVBoxLayout(self)
        col.setContentsMargins(0, 0, 0, 0)
        self.title = _PathTitle(letter, str(opened.path))
        self.page = GraphPage()
        col.addWidget(self.title)
        col.addWidget(self.page, 1)
        self.opened = opened
        self.keys = node_keys(opened.doc.model.graph)
        self.index = {k: i for i, k in enumerate(self.keys)}
        self.page.show_root(opened.path.name, regroup(opened.picture))
        self.status_of: list[str | None] = [None] * len(self.keys)

    @property
    def view(self) -> GraphView:
        return self.page.view

    def drawn_of_key(self, key: str) -> int | None:
        """Open the groups around node `key` and return what draws it."""
        pic = self.page.picture
        i = self.index.get(key)
        if pic is None or i is None:
            return None
        flat = pic.all_nodes.node_of_onnx(i)
        return self.page.reveal(flat) if flat is not None else None

    def key_of_drawn(self, node: int) -> str | None:
        pic = self.page.picture
        if pic is None:
            return None
        inside = pic.graph.onnx_nodes(node)
        return self.keys[inside[0]] if inside else None


class CompareWindow(QMainWindow):
    """Model A against model B, from a diff (`app.core.model.diff_models`)."""

    numericDone = Signal()

    def __init__(self, a: OpenedModel, b: OpenedModel, diff: ModelDiff, shapes: dict | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Compare — {a.path.name} ↔ {b.path.name}")
        self.diff, self.shapes = diff, shapes
        self.a, self.b = _Side("A", a), _Side("B", b)
        self.pair_b = {n.a: n.b for n in diff.nodes if n.a and n.b}
        self.pair_a = {n.b: n.a for n in diff.nodes if n.a and n.b}
        for n in diff.nodes:
            if n.a:
                self.a.status_of[self.a.index[n.a]] = n.status
            if n.b:
                self.b.status_of[self.b.index[n.b]] = n.status
        self.numeric: NumericDiff | None = None
        self._syncing = False
        self._task: Task | None = None
        self._pan_timers: list[QTimer] = []  # per pane: the other follows a moment after it is panned

        panes = QSplitter(Qt.Orientation.Horizontal)
        panes.addWidget(self.a)
        panes.addWidget(self.b)
        counts = diff.counts()
        self.summary = QLabel(
            f"{counts.same:,} the same · <span style='color:#b26b00'>{counts.changed:,} changed</span> · "
            f"<span style='color:#2b8a3e'>{counts.added:,} only in B</span> · "
            f"<span style='color:#c92a2a'>{counts.removed:,} only in A</span>"
            + (f" · {counts.folded:,} Constants now weights" if counts.folded else "")
            + "".join(f"<br>{html.escape(line)}" for line in (*diff.inputs, *diff.outputs, *diff.opsets)))
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.summary.setWordWrap(True)  # long input or opset lines must not make the window wider than the screen
        self.changes = QListWidget()
        self.changes.setToolTip("Every node that differs: click one to show it on both sides (F3: next, Shift+F3: "
                                "previous)")
        for n in diff.nodes:
            if n.status in ("same", "folded"):
                continue
            item = QListWidgetItem(f"{STATUS_WORDS[n.status]:<10}  {n.op}  {n.b or n.a}"
                                   + (f" — {n.changes[0]}" if n.changes else ""))
            item.setForeground(STATUS_COLORS[n.status].darker(140))
            item.setData(Qt.ItemDataRole.UserRole, (n.a, n.b))
            item.setToolTip("\n".join(n.changes))
            self.changes.addItem(item)
        self.changes.currentRowChanged.connect(self._on_change_row)
        self.prev_button, self.next_button = QPushButton("◀ Previous"), QPushButton("Next ▶")
        self.prev_button.clicked.connect(lambda: self.step(-1))
        self.next_button.clicked.connect(lambda: self.step(1))
        self.numeric_button = QPushButton("Compare Numerically")
        self.numeric_button.setToolTip("Run both models on one random sample and compare every matched node's output: "
                                       "where do they start to disagree?")
        self.numeric_button.clicked.connect(self.compare_numerically)
        self.numeric_label = QLabel("")
        self.numeric_label.setWordWrap(True)
        buttons = QHBoxLayout()
        for w in (self.prev_button, self.next_button, self.numeric_button):
            buttons.addWidget(w)
        buttons.addWidget(self.numeric_label, 1)
        bottom = QWidget()
        col = QVBoxLayout(bottom)
        col.setContentsMargins(4, 4, 4, 4)
        col.addWidget(self.summary)
        col.addLayout(buttons)
        col.addWidget(self.changes, 1)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(panes)
        split.addWidget(bottom)
        split.setStretchFactor(0, 4)
        split.setStretchFactor(1, 1)
        self.setCentralWidget(split)
        QShortcut(QKeySequence(QKeySequence.StandardKey.FindNext), self, lambda: self.step(1))
        QShortcut(QKeySequence(QKeySequence.StandardKey.FindPrevious), self, lambda: self.step(-1))

        for side, other in ((self.a, self.b), (self.b, self.a)):
            side.view.selection.subscribe(partial(self._follow_selection, side, other))
            side.view.zoomChanged.connect(lambda scale, o=other: self._follow_zoom(o, scale))
            side.page.groupsChanged.connect(lambda s=side: self._colour(s))
            timer = QTimer(self)
            timer.setSingleShot(True)
            timer.setInterval(40)
            timer.timeout.connect(lambda s=side, o=other: self._follow_pan(s, o))
            self._pan_timers.append(timer)
            side.view.horizontalScrollBar().valueChanged.connect(lambda _v, t=timer: self._panned(t))
            side.view.verticalScrollBar().valueChanged.connect(lambda _v, t=timer: self._panned(t))
        self._colour(self.a)
        self._colour(self.b)
        # 1500×950 on a big screen, at most 90 % of a small one (1280×800: ~1150×720), centred on the screen the
        # main window is on
        fit_window(self, (1500, 950), parent)

    # ----------------------------------------------------------------- colours
    def _colour(self, side: _Side) -> None:
        pic, item = side.page.picture, side.view.item
        if pic is None or item is None:
            return
        if self.numeric is not None:
            colors, mix, legend = self._numeric_colors(side)
        else:
            colors, mix = diff_colors(pic.graph, side.status_of)
            shown = {s for s in side.status_of if s}
            legend = [(STATUS_WORDS[s], STATUS_COLORS[s], sum(1 for x in side.status_of if x == s))
                      for s in STATUS_COLORS if s in shown]
        item.set_node_fill(colors, mix)
        side.view.legend.set_entries("Numeric: B against A" if self.numeric is not None else "Diff", legend)
        side.view.minimap.update()

    def _numeric_colors(self, side: _Side) -> tuple[list[QColor], dict, list]:
        assert self.numeric is not None
        by_key = {}
        for r in self.numeric.rows:
            band = len(ERROR_BANDS) if r.shape_differs else error_band(r.cosine, False)
            by_key[r.a if side is self.a else r.b] = band
        status: list[int | None] = [None] * len(side.keys)
        for k, band in by_key.items():
            status[side.index[k]] = band
        pic = side.page.picture
        assert pic is not None
        colors: list[QColor] = []
        counts: dict[int, int] = {}
        for i, idx in enumerate(pic.graph.onnx_index.tolist()):
            members = pic.graph.members.get(i) if idx < 0 else None
            bands = [status[m] for m in (members.tolist() if members is not None else [idx] if idx >= 0 else [])
                     if status[m] is not None and status[m] >= 0]
            band = max(bands) if bands else -1
            colors.append(NONFINITE if band == len(ERROR_BANDS) else
                          ERROR_BANDS[band][2] if band >= 0 else NOT_MEASURED if idx >= 0 or members is not None
                          else NOT_AN_OP)
            if bands:
                counts[band] = counts.get(band, 0) + 1
        legend = [(label, c, counts[k]) for k, (_lo, label, c) in enumerate(ERROR_BANDS) if k in counts]
        if len(ERROR_BANDS) in counts:
            legend.append(("shapes differ", NONFINITE, counts[len(ERROR_BANDS)]))
        return colors, {}, legend

    # ----------------------------------------------------------------- following
    def _follow_selection(self, side: _Side, other: _Side) -> None:
        if self._syncing:
            return
        current = side.view.selection.current
        if current is None:
            return
        key = side.key_of_drawn(current)
        match = (self.pair_b if side is self.a else self.pair_a).get(key or "")
        if match is None:
            return
        self._syncing = True
        try:
            node = other.drawn_of_key(match)
            if node is not None:
                other.view.center_on_node(node, select=True, zoom_to_read=False)
                self._cancel_follow()
        finally:
            self._syncing = False

    def _follow_zoom(self, other: _Side, scale: float) -> None:
        if self._syncing:
            return
        self._syncing = True
        try:
            other.view.set_scale(scale)
        finally:
            self._syncing = False

    def _panned(self, timer: QTimer) -> None:
        """A pane scrolled: the other follows shortly, unless this window moved it (a node shown on both sides, or
        one following the other). Those moves place each side itself (a node shown clear of the pane's minimap),
        and following them back would undo that."""
        if not self._syncing:
            timer.start()  # with no argument: valueChanged's int would become the interval

    def _cancel_follow(self) -> None:
        """Drop a follow still to come from a pan just before: the panes were placed since."""
        for timer in self._pan_timers:
            timer.stop()

    def _follow_pan(self, side: _Side, other: _Side) -> None:
        """Keep the other pane on the match of the node nearest this pane's centre."""
        if self._syncing or side.view.item is None or other.view.item is None:
            return
        item = side.view.item
        c = side.view.visible_scene_rect().center()
        near = int(np.argmin((item.cx - c.x()) ** 2 + (item.cy - c.y()) ** 2)) if len(item.cx) else None
        key = side.key_of_drawn(near) if near is not None else None
        match = (self.pair_b if side is self.a else self.pair_a).get(key or "")
        pic = other.page.picture
        if match is None or pic is None:
            return
        i = other.index.get(match)
        node = pic.graph.node_of_onnx(i) if i is not None else None
        if node is not None:
            self._syncing = True
            try:
                other.view.centerOn(other.view.item.node_rect(node).center())
            finally:
                self._syncing = False

    # ----------------------------------------------------------------- changes
    def step(self, delta: int) -> None:
        n = self.changes.count()
        if n:
            self.changes.setCurrentRow((self.changes.currentRow() + delta) % n if self.changes.currentRow() >= 0
                                       else (0 if delta > 0 else n - 1))

    def _on_change_row(self, row: int) -> None:
        if row < 0:
            return
        a_key, b_key = self.changes.item(row).data(Qt.ItemDataRole.UserRole)
        self._show_pair(a_key, b_key)

    def _show_pair(self, a_key: str | None, b_key: str | None) -> None:
        self._syncing = True
        try:
            for side, key in ((self.a, a_key), (self.b, b_key)):
                node = side.drawn_of_key(key) if key else None
                if node is not None:
                    side.view.center_on_node(node, select=True)
                else:
                    side.view.selection.clear()
            self._cancel_follow()
        finally:
            self._syncing = False

    # ----------------------------------------------------------------- numbers
    def compare_numerically(self) -> None:
        from app.core.precision import diff_numerically

        a_model, b_model = self.a.opened.doc.model, self.b.opened.doc.model
        self.numeric_button.setEnabled(False)
        self.numeric_label.setText("Running both models on one random sample…")
        self._task = run_task(self, lambda: diff_numerically(a_model, b_model, self.diff, self.shapes),
                              self._numeric_done, self._numeric_failed)

    def _numeric_done(self, numeric: NumericDiff) -> None:
        self.numeric = numeric
        self.numeric_button.setEnabled(True)
        first = numeric.first_disagreement
        head = f"{numeric.compared:,} matched outputs compared on {numeric.inputs}"
        if first is None:
            self.numeric_label.setText(head + ": they agree everywhere (cosine ≥ 0.9999).")
        else:
            what = ("shapes differ" if first.shape_differs else
                    f"cosine {first.cosine:.6f}, max |Δ| {first.max_abs:.3g}"
                    + (f" ({100 * first.relative:.2g} % of the largest value)" if first.relative else ""))
            self.numeric_label.setText(f"{head}: they first disagree at <b>{html.escape(first.b)}</b> "
                                       f"(A: {html.escape(first.a)}), {what}.")
            self._show_pair(first.a, first.b)
        self._colour(self.a)
        self._colour(self.b)
        self.numericDone.emit()

    def _numeric_failed(self, message: str) -> None:
        self.numeric_button.setEnabled(True)
        self.numeric_label.setText(f"Could not run both models: {html.escape(message)}. Set the input shapes in the "
                                   "main window first if an input has free sizes.")
        self.numericDone.emit()


def load_for_compare(path: Path, a: OpenedModel,
                     cancel: threading.Event | None = None) -> tuple[OpenedModel, ModelDiff]:
    """Off the GUI thread: model B opened (laid out) and diffed against A."""
    from app.core.model import diff_models, open_model

    b = open_model(path, cancel=cancel.is_set if cancel else None)
    diff = diff_models(a.doc.model, b.doc.model, base_dir_a=str(a.path.parent), base_dir_b=str(b.path.parent))
    return b, diff


__all__ = ["CompareWindow", "diff_colors", "load_for_compare"]
