"""The Profile dock: where each node ran and how long it took (Run ▸ Profile, `trtlab profile`), and, when a
candidate was profiled against its reference, the two side by side: each node's time in both, the nodes only the
candidate runs, and the measured reasons it is slower. Double-clicking a row shows its node in the graph."""

from __future__ import annotations

import html
import time

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.core.measure import device_word, node_devices, node_shares
from app.core.model import DisplayGraph
from app.core.results import NodeDelta, ProfileResult
from app.ui.common.num_item import NumItem
from app.ui.graph.node_colors import device_colors, time_colors

COLUMNS = ("Node", "Op", "Ran on", "Time (ms)", "Share")
AGAINST_COLUMNS = ("Reference (ms)", "Δ (ms)")
EMPTY = ("No profile yet: Run ▸ Profile (Ctrl+Alt+P) times every node of the first ticked candidate against the "
         "reference, on the backend you chose, and shows where each node ran.")


class ProfilePanel(QWidget):
    nodeActivated = Signal(str)      # a node key to show in the graph
    profileRequested = Signal()
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

    # ------------------------------------------------------------------ state
    def set_profile(self, doc: ProfileResult | None) -> None:
        """A profile job's result (`app.backends.tasks.profile:profile_task`), or None to clear."""
        self.doc = doc
        self.doc_at = time.monotonic()
        self.show_reference.setChecked(False)
        self.show_reference.setVisible(doc is not None and doc.against is not None)
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
        if doc.against is not None:
            a = doc.against
            text += (f"<br>against <b>{html.escape(a.backend)}</b>: {a.total_ms or 0:.3f} ms, "
                     f"{a.node_count} nodes")
        if doc.random_data:
            text += "<br><i>Profiled on random inputs.</i>"
        return text

    # ------------------------------------------------------------------ table
    def _fill(self) -> None:
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

    def _activated(self, row: int, _col: int) -> None:
        item = self.table.item(row, 0)
        keys = item.data(Qt.ItemDataRole.UserRole) if item is not None else None
        if keys:
            self.nodeActivated.emit(keys[0])
