"""The Profile dock: where each node ran and how long it took (Run ▸ Profile, `trtlab profile`), and, when a
candidate was profiled against its reference, the two side by side: each node's time in both, the nodes only the
candidate runs, and the measured reasons it is slower. Double-clicking a row shows its node in the graph.

"Compare batches" profiles the same target at two batches (dim 0 of every input) and sets the two points side by
side per item: each op type's (or node's) time per item at both, its share of the run, and whether it stays
launch-bound (its time nearly flat with the batch: marked blue) or scales with the batch (compute-bound)."""

from __future__ import annotations

import html
import time

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.core.measure import device_word, node_devices, node_shares
from app.core.model import DisplayGraph
from app.core.results import NodeDelta, ProfileDelta, ProfileResult
from app.ui.common.num_item import NumItem
from app.ui.graph.node_colors import device_colors, time_colors

COLUMNS = ("Node", "Op", "Ran on", "Time (ms)", "Share")
AGAINST_COLUMNS = ("Reference (ms)", "Δ (ms)")
BOUND_TEXT = {"launch": "launch-bound", "compute": "scales (compute-bound)", "between": "partly", "": ""}
BOUND_COLORS = {"launch": "#dcebfb", "compute": "#fde7d2"}  # launch-bound rows blue, compute-bound orange
EMPTY = ("No profile yet: Run ▸ Profile (Ctrl+Alt+P) times every node of the first ticked candidate against the "
         "reference, on the backend you chose, and shows where each node ran.")


class ProfilePanel(QWidget):
    nodeActivated = Signal(str)      # a node key to show in the graph
    profileRequested = Signal()
    pointsRequested = Signal(int, int)  # profile the target at batch N against itself at batch M
    shownChanged = Signal()          # the table switched between the candidate's and the reference's profile

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.doc: ProfileResult | None = None
        self.doc_at = 0.0  # when it was set: the graph's "time" colours show the newer of it and engine times
        col = QVBoxLayout(self)
        col.setContentsMargins(4, 4, 4, 4)
        top = QHBoxLayout()
        self.summary = QLabel(EMPTY)
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.profile_button = QPushButton("Profile")
        self.profile_button.setToolTip("Time every node of the first ticked candidate against the reference "
                                       "(Ctrl+Alt+P)")
        self.profile_button.clicked.connect(self.profileRequested)
        top.addWidget(self.summary, 1)
        top.addWidget(self.profile_button, 0, Qt.AlignmentFlag.AlignTop)
        col.addLayout(top)
        points = QHBoxLayout()
        tip = ("Profile the same target at two batches (dim 0 of every input: the model's batch must be dynamic) and "
               "set them side by side per item: which op types stay launch-bound and which scale with the batch")
        self.batch = self._batch_box(8, tip)
        self.against_batch = self._batch_box(1, tip)
        self.points_button = QPushButton("Compare batches")
        self.points_button.setToolTip(tip)
        self.points_button.clicked.connect(
            lambda: self.pointsRequested.emit(self.batch.value(), self.against_batch.value()))
        self.by_node = QCheckBox("Each node")
        self.by_node.setToolTip("List each node at both batches instead of each op type")
        self.by_node.toggled.connect(lambda _on: self._fill())
        self.by_node.hide()
        for w in (QLabel("Compare"), self.batch, QLabel("against"), self.against_batch, self.points_button):
            points.addWidget(w)
        points.addStretch(1)
        points.addWidget(self.by_node)
        col.addLayout(points)
        self.why = QLabel()
        self.why.setWordWrap(True)
        self.why.setStyleSheet("background:#fff4e5; border:1px solid #f0b35a; padding:4px; color:#6b3d00;")
        self.why.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.why.hide()
        col.addWidget(self.why)
        self.show_reference = QCheckBox("Show the reference's profile instead")
        self.show_reference.setToolTip("The table lists the reference's own nodes and times")
        self.show_reference.toggled.connect(self._on_show_reference)
        self.show_reference.hide()
        col.addWidget(self.show_reference)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.table.cellDoubleClicked.connect(self._activated)
        col.addWidget(self.table, 1)

    @staticmethod
    def _batch_box(value: int, tip: str) -> QSpinBox:
        box = QSpinBox()
        box.setRange(1, 4096)
        box.setValue(value)
        box.setPrefix("batch ")
        box.setToolTip(tip)
        return box

    def points(self) -> ProfileDelta | None:
        """The two batches set side by side, when the profile on show compares two points of one target."""
        delta = self.doc.delta if self.doc is not None else None
        return delta if delta is not None and delta.reference_point else None

    # ------------------------------------------------------------------ state
    def set_profile(self, doc: ProfileResult | None) -> None:
        """A profile job's result (`app.backends.tasks.profile:profile_task`), or None to clear."""
        self.doc = doc
        self.doc_at = time.monotonic()
        self.show_reference.setChecked(False)
        self.show_reference.setVisible(doc is not None and doc.against is not None)
        points = self.points()
        self.show_reference.setText(f"Show {points.reference_point}'s profile instead" if points is not None
                                    else "Show the reference's profile instead")
        self.by_node.setVisible(points is not None)
        if points is not None:
            self.batch.setValue(points.candidate_items or self.batch.value())
            self.against_batch.setValue(points.reference_items or self.against_batch.value())
        if doc is None:
            self.summary.setText(EMPTY)
            self.why.hide()
            self.table.setRowCount(0)
            return
        self.summary.setText(self._summary(doc))
        warn = []
        if doc.fallback_nodes:
            names = doc.fallback_nodes
            warn.append(f"⚠ {len(names)} compute node(s) ran on the CPU in a GPU session: "
                        f"{html.escape(', '.join(names[:6]))}{' …' if len(names) > 6 else ''}")
        if doc.slower_because and doc.against is not None:
            against = doc.against
            warn.append(f"<b>{html.escape(doc.backend)} is slower than {html.escape(against.backend)}</b> "
                        f"({against.total_ms or 0:.3f} → {doc.total_ms or 0:.3f} ms) because:")
            warn += [f"• {html.escape(r)}" for r in doc.slower_because]
        self.why.setText("<br>".join(warn))
        self.why.setVisible(bool(warn))
        self._fill()

    def shown(self) -> ProfileResult | None:
        """The profile the table (and the graph's time and device colours) show: the candidate's, or the
        reference's when the box is ticked."""
        if self.doc is not None and self.show_reference.isChecked() and self.doc.against is not None:
            return self.doc.against
        return self.doc

    def _on_show_reference(self, _on: bool) -> None:
        self._fill()
        self.shownChanged.emit()

    def has(self, mode: str) -> bool:
        """Whether the profile on show can colour the graph by `mode` ("time" or "device")."""
        doc = self.shown() or ProfileResult()
        return any(n.model_node for n in doc.nodes) and mode in ("time", "device")

    def colors(self, mode: str, graph: DisplayGraph, keys: list[str], mix: dict | None = None, notes: dict | None = None
               ) -> tuple[list, list, str]:
        """The graph's colours, legend and legend title for `mode`; `keys` are the model's node keys by index;
        `mix` receives group boxes' colours by share, `notes` their share of the time."""
        doc = self.shown() or ProfileResult()
        name = doc.backend
        if mode == "time":
            shares = node_shares(doc)
            colors, legend = time_colors(graph, [shares.get(k) for k in keys], "not timed (folded or fused away)",
                                         notes)
            return colors, legend, f"Share of {name}'s node time"
        devices = node_devices(doc)
        fallback = {p for n in doc.fallback_nodes for p in n.split(" + ")}
        gpu = any(not p.startswith("CPU") for p in doc.placement)
        colors, legend = device_colors(graph, [devices.get(k) for k in keys], [k in fallback for k in keys], gpu,
                                       mix)
        return colors, legend, f"Where {name} ran each node"

    @staticmethod
    def _summary(doc: ProfileResult) -> str:
        total = doc.total_ms
        place = ", ".join(f"{device_word(p)} {n}" for p, n in doc.placement.items())
        outside = doc.outside_kernels_share
        text = (f"<b>{html.escape(doc.backend)}</b>: {'—' if total is None else f'{total:.3f}'} ms per run "
                f"(median of {doc.runs}), {doc.node_count} nodes · ran on {html.escape(place)}"
                + (f" · {100 * outside:.0f} % of the run outside kernels" if outside is not None else "")
                + (f" · {doc.casts} Casts ({doc.cast_ms or 0:.3f} ms)" if doc.casts else "")
                + (f" · {doc.copies} host↔device copies" if doc.copies else ""))
        points = doc.delta if doc.delta is not None and doc.delta.reference_point else None
        if points is not None:
            text = text.replace(f"<b>{html.escape(doc.backend)}</b>:",
                                f"<b>{html.escape(doc.backend)}</b> at {points.candidate_point}:", 1)
            text += "<br>" + "<br>".join(f"• {html.escape(line)}" for line in points.summary)
        elif doc.against is not None:
            a = doc.against
            text += (f"<br>against <b>{html.escape(a.backend)}</b>: {a.total_ms or 0:.3f} ms, "
                     f"{a.node_count} nodes")
        if doc.random_data:
            text += "<br><i>Profiled on random inputs.</i>"
        return text

    # ------------------------------------------------------------------ table
    def _fill(self) -> None:
        points = None if self.show_reference.isChecked() else self.points()
        if points is not None:
            self._fill_points(points)
            return
        doc = self.shown() or ProfileResult()
        compared = None if self.show_reference.isChecked() or self.doc is None else self.doc.delta
        delta: dict[str, NodeDelta] = {n.node: n for n in compared.nodes} if compared is not None else {}
        columns = COLUMNS + (AGAINST_COLUMNS if delta else ())
        nodes = list(doc.nodes)
        total = sum(float(n.ms) for n in nodes) or 1.0
        fallback = set(doc.fallback_nodes)
        self.table.setSortingEnabled(False)
        self.table.clear()
        self.table.setColumnCount(len(columns))
        self.table.setHorizontalHeaderLabels(columns)
        self.table.setRowCount(len(nodes))
        for r, n in enumerate(nodes):
            ms = float(n.ms)
            where = device_word(n.provider)
            cells = [QTableWidgetItem(n.node), QTableWidgetItem(n.op),
                     QTableWidgetItem(where + (" (fell back)" if n.node in fallback else "")),
                     NumItem(f"{ms:.4f}", ms), NumItem(f"{100 * ms / total:.1f} %", ms)]
            if delta:
                d = delta.get(n.node)
                if d is None:  # only the candidate runs it: a Cast, a copy
                    cells += [NumItem("", -1.0), NumItem("new", ms)]
                else:
                    cells += [NumItem(f"{d.reference_ms:.4f}", d.reference_ms),
                              NumItem(f"{d.delta_ms:+.4f}", d.delta_ms)]
            keys = [p for p in n.node.split(" + ") if p] if n.model_node else []
            cells[0].setData(Qt.ItemDataRole.UserRole, keys)
            cells[0].setToolTip(n.node)
            if n.node in fallback:
                cells[2].setForeground(Qt.GlobalColor.red)
            for c, item in enumerate(cells):
                self.table.setItem(r, c, item)
        self.table.setColumnWidth(0, 300)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(len(columns) - 1 if delta else 3, Qt.SortOrder.DescendingOrder)

    def _fill_points(self, d: ProfileDelta) -> None:
        """Two batches per item: each op type (or, with "Each node", each node) at both, launch-bound rows marked."""
        a, b = d.reference_point, d.candidate_point
        nodes = self.by_node.isChecked()
        rows = sorted(d.nodes, key=lambda n: -n.ms) if nodes else list(d.ops)
        columns = (("Node", "Op") if nodes else ("Op", "Nodes")) + (
            f"{a} (ms/item)", f"{b} (ms/item)", "Per item", "Time ×", f"Share at {a}", f"Share at {b}",
            "Follows the batch")
        self.table.setSortingEnabled(False)
        self.table.clear()
        self.table.setColumnCount(len(columns))
        self.table.setHorizontalHeaderLabels(columns)
        self.table.setRowCount(len(rows))
        run_a = sum(n.reference_ms for n in d.nodes) or 1.0
        run_b = sum(n.ms for n in d.nodes) or 1.0
        for r, n in enumerate(rows):
            ref, now = n.reference_per_item_ms or 0.0, n.per_item_ms or 0.0
            change = (now / ref - 1) if ref > 0 else 0.0
            share_a = n.reference_share if n.reference_share is not None else n.reference_ms / run_a
            share_b = n.share if n.share is not None else n.ms / run_b
            cells = ([QTableWidgetItem(n.node), QTableWidgetItem(n.op)] if nodes else
                     [QTableWidgetItem(n.op), NumItem(str(n.count), n.count)])
            cells += [NumItem(f"{ref:.4f}", ref), NumItem(f"{now:.4f}", now),
                      NumItem(f"{100 * change:+.0f} %", change),
                      NumItem("—" if n.ratio is None else f"{n.ratio:.2f}×", n.ratio or 0.0),
                      NumItem(f"{100 * share_a:.1f} %", share_a), NumItem(f"{100 * share_b:.1f} %", share_b),
                      QTableWidgetItem(BOUND_TEXT.get(n.bound, n.bound))]
            keys = [p for p in n.node.split(" + ") if p] if nodes else []
            cells[0].setData(Qt.ItemDataRole.UserRole, keys)
            cells[0].setToolTip(n.node or n.op)
            color = BOUND_COLORS.get(n.bound)
            for c, item in enumerate(cells):
                if color:
                    item.setBackground(QColor(color))
                self.table.setItem(r, c, item)
        self.table.resizeColumnsToContents()  # the headers name both batches: shown whole, with the sort arrow
        for c in range(len(columns)):
            self.table.setColumnWidth(c, min(self.table.columnWidth(c) + 14, 300))
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(len(columns) - 2, Qt.SortOrder.DescendingOrder)

    def _activated(self, row: int, _col: int) -> None:
        item = self.table.item(row, 0)
        keys = item.data(Qt.ItemDataRole.UserRole) if item is not None else None
        if keys:
            self.nodeActivated.emit(keys[0])
