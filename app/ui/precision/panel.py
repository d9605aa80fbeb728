"""The Precision dock: the plan's default, a sortable and filterable table of every node with the precision
its variant runs (marked, with the transform's reason, where that is not what was planned) and (after a
diagnosis) its error, and the diagnosis' "go to" buttons."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QPersistentModelIndex,
    QPoint,
    Qt,
    Signal,
)
from PySide6.QtGui import QAction, QBrush, QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from app.core.precision import PRECISIONS, PlannedNode
from app.core.results import DiagnoseResult, FallbackResult, LayerError
from app.ui.common.style import PRECISION_COLORS, PRECISION_LABELS
from app.ui.graph.node_colors import ERROR_BANDS, NONFINITE, error_band
from app.ui.precision.plan_controller import PlanController, differs_note, row_label

COLUMNS = ("Node", "Op", "Precision", "Set by", "Cosine", "Max |Δ|", "NaN/Inf", "Note")
COL_NODE, COL_OP, COL_PREC, COL_SOURCE, COL_COS, COL_MAX, COL_NONFINITE, COL_NOTE = range(len(COLUMNS))
SORT_ROLE = Qt.ItemDataRole.UserRole + 1
INDEX_ROLE = Qt.ItemDataRole.UserRole + 2


class NodeError:
    """A node's worst output in a diagnosis."""

    __slots__ = ("cosine", "max_abs", "nonfinite", "tensor")

    def __init__(self, cosine: float | None, max_abs: float | None, nonfinite: int, tensor: str) -> None:
        self.cosine, self.max_abs, self.nonfinite, self.tensor = cosine, max_abs, nonfinite, tensor


def node_errors(layers: Iterable[LayerError]) -> dict[str, NodeError]:
    """Diagnosis rows (one per tensor) reduced to one per node: its lowest cosine, largest |Δ|, new NaN/Inf."""
    out: dict[str, NodeError] = {}
    for r in layers:
        new_bad = max(0, (r.nan + r.inf) - (r.ref_nan + r.ref_inf))
        e = out.get(r.node)
        cos, mx = r.cosine, r.max_abs
        if e is None:
            out[r.node] = NodeError(cos, mx, new_bad, r.tensor)
            continue
        if cos is not None and (e.cosine is None or cos < e.cosine):
            e.cosine, e.tensor = cos, r.tensor
        if mx is not None and (e.max_abs is None or mx > e.max_abs):
            e.max_abs = mx
        e.nonfinite += new_bad
    return out


class PlanTableModel(QAbstractTableModel):
    def __init__(self, ctl: PlanController) -> None:
        super().__init__()
        self.ctl = ctl
        self.errors: dict[str, NodeError] = {}
        ctl.changed.connect(self.refresh)

    def refresh(self, everything: bool = False) -> None:
        """New values for the same rows keep the view's selection and sorting; other changes reset.

        Only the span of rows that changed is announced: re-sorting 10k rows after every one-node edit is
        what a plan edit would otherwise cost on the GUI thread.
        """
        new = self.ctl.rows
        old = getattr(self, "_shown", None)
        self._shown = list(new)
        if old is not None and new and len(new) == len(old):
            changed = [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]
            if everything:
                changed = [0, len(new) - 1]
            if changed:
                self.dataChanged.emit(self.index(changed[0], 0), self.index(changed[-1], len(COLUMNS) - 1))
        else:
            self.beginResetModel()
            self.endResetModel()

    def set_errors(self, errors: dict[str, NodeError]) -> None:
        if not errors and not self.errors:
            return  # no diagnosis before or now: nothing the table shows changes
        self.errors = errors
        self.refresh(everything=True)

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else len(self.ctl.rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.ToolTipRole:
            return {COL_COS: "Lowest cosine similarity of the node's outputs against the FP32 reference",
                    COL_MAX: "Largest absolute difference of the node's outputs",
                    COL_NONFINITE: "NaN/Inf values the variant produced that the reference did not",
                    COL_SOURCE: "What set the planned precision: this node, a rule for its op type, or the default",
                    COL_PREC: "The precision the variant runs. 'kept': planned FP16/BF16/INT8, kept FP32 by the "
                              "transform (the note says why)",
                    }.get(section)
        return None

    def text(self, row: PlannedNode, col: int) -> str:
        """A cell's text."""
        err = self.errors.get(row.key)
        if col == COL_NODE:
            return row.key
        if col == COL_OP:
            return row.op_type
        if col == COL_PREC:
            return row_label(row)
        if col == COL_SOURCE:
            return "" if row.precision == "fixed" else row.source
        if col == COL_COS:
            return "" if err is None or err.cosine is None else f"{err.cosine:.6f}"
        if col == COL_MAX:
            return "" if err is None or err.max_abs is None else f"{err.max_abs:.3g}"
        if col == COL_NONFINITE:
            return "" if err is None else (f"{err.nonfinite:,}" if err.nonfinite else "0")
        return differs_note(row)

    def sort_key(self, col: int) -> Callable[[PlannedNode], Any]:
        """What a column sorts by, per row: node order, the errors as numbers, else the text."""
        errors = self.errors
        if col == COL_NODE:
            return lambda row: row.index  # node order (topological in a valid model)
        if col == COL_COS:
            def cosine(row: PlannedNode) -> float:
                err = errors.get(row.key)
                return math.inf if err is None or err.cosine is None else (-1e9 if err.nonfinite else err.cosine)
            return cosine
        if col == COL_MAX:
            def max_abs(row: PlannedNode) -> float:
                err = errors.get(row.key)
                return -1.0 if err is None or err.max_abs is None else err.max_abs
            return max_abs
        if col == COL_NONFINITE:
            def nonfinite(row: PlannedNode) -> int:
                err = errors.get(row.key)
                return -1 if err is None else err.nonfinite
            return nonfinite
        return lambda row: self.text(row, col)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        return self.cell(index.row(), index.column(), role) if index.isValid() else None

    def cell(self, source_row: int, col: int, role: int):
        """A cell's data for a role: `data` without a model index (the table's filter asks per row)."""
        row = self.ctl.rows[source_row]
        err = self.errors.get(row.key)
        if role == INDEX_ROLE:
            return row.index
        if role == Qt.ItemDataRole.DisplayRole:
            return self.text(row, col)
        if role == SORT_ROLE:
            return self.sort_key(col)(row)
        if role == Qt.ItemDataRole.ForegroundRole and col == COL_PREC:
            return QBrush(PRECISION_COLORS.get(row.precision, PRECISION_COLORS["fixed"]).darker(130))
        if role == Qt.ItemDataRole.FontRole and row.differs and col in (COL_PREC, COL_NOTE):
            font = QFont()
            font.setItalic(True)  # not what was planned: set apart from the rows that run as planned
            return font
        if role == Qt.ItemDataRole.BackgroundRole and col == COL_COS and err is not None:
            band = error_band(err.cosine, bool(err.nonfinite))
            if band == len(ERROR_BANDS):
                return QBrush(NONFINITE.lighter(250))
            if band >= 0:
                return QBrush(ERROR_BANDS[band][2].lighter(170))
        if role == Qt.ItemDataRole.ToolTipRole:
            if row.differs and col in (COL_PREC, COL_NOTE, COL_SOURCE):
                return (f"Planned {row.planned.upper()} (set by {row.source}); the variant runs it in "
                        f"{row.precision.upper()}: {row.reason}")
            if col == COL_NOTE or row.precision == "fixed":
                return row.reason or None
            if err is not None and col in (COL_COS, COL_MAX):
                return f"worst output: {err.tensor}"
        return None


class _Filter(QAbstractTableModel):
    """The table's rows: the plan's rows filtered and sorted, in Python, in one pass over the rows.

    What a QSortFilterProxyModel would do, without its cost on a big model: it compares rows through `data`,
    a call into Python per comparison, which took seconds on 50,000 rows (at every model opened, every plan
    edit and every click on a header). Here a sort is one `sorted()` of the rows by their sort keys, and a
    filter one list comprehension. A sort, a filter or an edit that moves rows is a layout change (the
    selection follows its rows); a new model resets."""

    def __init__(self, source: PlanTableModel) -> None:
        super().__init__()
        self.plan_model = source
        self.text = ""
        self.precision = ""
        self.sort_column = -1  # -1: the plan's order
        self.sort_order = Qt.SortOrder.AscendingOrder
        self.order: list[int] = []     # table row -> plan row
        self.position: list[int] = []  # plan row -> table row (-1: filtered out)
        source.modelAboutToBeReset.connect(self.beginResetModel)
        source.modelReset.connect(self._source_reset)
        source.dataChanged.connect(self._source_changed)
        self._compute()

    def sourceModel(self) -> PlanTableModel:  # noqa: N802 - Qt's name
        return self.plan_model

    # ----------------------------------------------------------------- the rows shown, in order
    def _accepts(self, row: PlannedNode) -> bool:
        if self.precision == "override" and row.source != "node":
            return False
        if self.precision == "measured" and row.key not in self.plan_model.errors:
            return False
        if self.precision == "differs" and not row.differs:
            return False
        if self.precision not in ("", "override", "measured", "differs") and row.precision != self.precision:
            return False
        return not self.text or self.text in row.key.lower() or self.text in row.op_type.lower()

    def _compute(self) -> None:
        rows = self.plan_model.ctl.rows
        n = len(rows)
        shown: list[int] = list(range(n)) if not (self.text or self.precision) else \
            [i for i in range(n) if self._accepts(rows[i])]
        col = self.sort_column
        if col == COL_NODE:  # the plan's rows are in node order already (row i is node i)
            if self.sort_order == Qt.SortOrder.DescendingOrder:
                shown.reverse()
        elif col >= 0:
            key = self.plan_model.sort_key(col)
            shown.sort(key=lambda i: key(rows[i]), reverse=self.sort_order == Qt.SortOrder.DescendingOrder)
        self.order = shown
        position = [-1] * n
        for table_row, plan_row in enumerate(shown):
            position[plan_row] = table_row
        self.position = position

    def _relayout(self) -> None:
        """The rows in their new order (and filter): the views' selection and current row follow their rows."""
        self.layoutAboutToBeChanged.emit()
        old_order = self.order
        persistent = self.persistentIndexList()
        self._compute()
        moved = []
        for p in persistent:
            r = p.row()
            plan_row = old_order[r] if 0 <= r < len(old_order) else -1
            table_row = self.position[plan_row] if 0 <= plan_row < len(self.position) else -1
            moved.append(self.index(table_row, p.column()) if table_row >= 0 else QModelIndex())
        self.changePersistentIndexList(persistent, moved)
        self.layoutChanged.emit()

    def _source_reset(self) -> None:
        self._compute()
        self.endResetModel()

    def _source_changed(self, top: QModelIndex, bottom: QModelIndex) -> None:
        old_order, old_position = self.order, self.position
        self._compute()
        if self.order != old_order:  # rows moved, or came in or out of the filter
            self.order, self.position = old_order, old_position
            self._relayout()
            return
        shown = [self.position[r] for r in range(top.row(), bottom.row() + 1) if self.position[r] >= 0]
        if shown:
            self.dataChanged.emit(self.index(min(shown), 0), self.index(max(shown), len(COLUMNS) - 1))

    # ----------------------------------------------------------------- what the view and the panel ask
    def set(self, text: str, precision: str) -> None:
        self.text, self.precision = text.strip().lower(), precision
        self._relayout()

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        self.sort_column, self.sort_order = column, order
        self._relayout()

    def mapToSource(self, index: QModelIndex | QPersistentModelIndex) -> QModelIndex:  # noqa: N802 - Qt's name
        if not index.isValid() or index.row() >= len(self.order):
            return QModelIndex()
        return self.plan_model.index(self.order[index.row()], index.column())

    def mapFromSource(self, index: QModelIndex | QPersistentModelIndex) -> QModelIndex:  # noqa: N802 - Qt's name
        r = index.row() if index.isValid() else -1
        table_row = self.position[r] if 0 <= r < len(self.position) else -1
        return self.index(table_row, index.column()) if table_row >= 0 else QModelIndex()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else len(self.order)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):  # noqa: N802
        return self.plan_model.headerData(section, orientation, role)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or index.row() >= len(self.order):
            return None
        return self.plan_model.cell(self.order[index.row()], index.column(), role)


class PrecisionPanel(QWidget):
    nodeActivated = Signal(int)               # ONNX node index: show it in the graph
    goFirstNonfinite = Signal()
    goWorst = Signal()
    fallbackRequested = Signal()
    applyFallback = Signal(object)           # the FallbackResult on show

    def __init__(self, ctl: PlanController, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctl = ctl
        col = QVBoxLayout(self)
        col.setContentsMargins(4, 4, 4, 4)
        top = QHBoxLayout()
        top.addWidget(QLabel("Default"))
        self.default_combo = QComboBox()
        for p in PRECISIONS:
            self.default_combo.addItem(PRECISION_LABELS[p], p)
        self.default_combo.setToolTip("The precision of every node without a rule or an override")
        self.default_combo.activated.connect(lambda _: ctl.set_default(self.default_combo.currentData()))
        top.addWidget(self.default_combo)
        self.summary = QLabel()
        self.summary.setStyleSheet("color:#5c6370;")
        self.summary.setToolTip("Nodes per precision the variant runs. 'kept': planned FP16/BF16/INT8, but the "
                                "transform keeps them FP32 (the table's note says why).")
        top.addWidget(self.summary, 1)
        self.save_button = QPushButton("Save…")
        self.save_button.setToolTip("Save the plan as JSON (for `trtlab --plan`)")
        self.load_button = QPushButton("Load…")
        self.load_button.setToolTip("Load a plan saved before (undo with Ctrl+Z)")
        top.addWidget(self.load_button)
        top.addWidget(self.save_button)
        col.addLayout(top)

        filt = QHBoxLayout()
        self.filter_edit = QLineEdit()
        self.filter_edit.setPlaceholderText("Filter by node name or op type…")
        self.filter_edit.setClearButtonEnabled(True)
        self.filter_combo = QComboBox()
        self.filter_combo.addItem("All nodes", "")
        for p in (*PRECISIONS, "fixed"):
            self.filter_combo.addItem(PRECISION_LABELS[p], p)
        self.filter_combo.addItem("Not as planned", "differs")
        self.filter_combo.setItemData(self.filter_combo.count() - 1, "Nodes the variant runs in another precision than "
                                      "planned: kept FP32 by the transform, or FP16 in the model itself",
                                      Qt.ItemDataRole.ToolTipRole)
        self.filter_combo.addItem("Overridden", "override")
        self.filter_combo.addItem("Measured", "measured")
        filt.addWidget(self.filter_edit, 1)
        filt.addWidget(self.filter_combo)
        col.addLayout(filt)

        diag = QHBoxLayout()
        self.diag_label = QLabel("No diagnosis yet: Run ▸ Diagnose measures every layer's error.")
        self.diag_label.setWordWrap(True)
        self.diag_label.setStyleSheet("color:#5c6370;")
        self.first_button = QPushButton("First NaN/Inf")
        self.first_button.setToolTip("Show the first node whose output turns NaN or Inf (Ctrl+Shift+N)")
        self.worst_button = QPushButton("Worst layer")
        self.worst_button.setToolTip("Show the node with the lowest cosine (Ctrl+Shift+W)")
        self.fallback_button = QPushButton("Find fallback…")
        self.fallback_button.setToolTip("Search for a few nodes to keep in higher precision so the target is met")
        self.first_button.clicked.connect(self.goFirstNonfinite)
        self.worst_button.clicked.connect(self.goWorst)
        self.fallback_button.clicked.connect(self.fallbackRequested)
        diag.addWidget(self.diag_label, 1)
        for b in (self.first_button, self.worst_button, self.fallback_button):
            diag.addWidget(b)
        col.addLayout(diag)
        fb = QHBoxLayout()
        self.fallback_label = QLabel()
        self.fallback_label.setWordWrap(True)
        self.apply_button = QPushButton("Apply to plan")
        self.apply_button.setToolTip("Keep these nodes in FP32 in the plan (Ctrl+Z undoes)")
        self.apply_button.clicked.connect(self._apply_fallback)
        fb.addWidget(self.fallback_label, 1)
        fb.addWidget(self.apply_button)
        col.addLayout(fb)
        self.fallback: FallbackResult | None = None
        self.show_fallback(None)
        self.first_button.setEnabled(False)
        self.worst_button.setEnabled(False)

        self.model = PlanTableModel(ctl)
        self.proxy = _Filter(self.model)
        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(COL_NODE, Qt.SortOrder.AscendingOrder)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setDefaultSectionSize(22)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        for c, w in ((COL_NODE, 220), (COL_OP, 110), (COL_PREC, 96), (COL_SOURCE, 70), (COL_COS, 80),
                     (COL_MAX, 70), (COL_NONFINITE, 60)):
            self.table.setColumnWidth(c, w)
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._table_menu)
        self.table.doubleClicked.connect(self._activated)
        self.table.activated.connect(self._activated)
        col.addWidget(self.table, 1)

        self.filter_edit.textChanged.connect(self._refilter)
        self.filter_combo.currentIndexChanged.connect(self._refilter)
        ctl.changed.connect(self._sync)
        self._sync()

    # ----------------------------------------------------------------- plan
    def _sync(self) -> None:
        i = self.default_combo.findData(self.ctl.plan.default)
        self.default_combo.setCurrentIndex(i)
        rules = ", ".join(f"{op} {p.upper()}" for op, p in sorted(self.ctl.plan.op_rules.items()))
        self.summary.setText(self.ctl.summary() + (f" · rules: {rules}" if rules else ""))

    def _refilter(self) -> None:
        self.proxy.set(self.filter_edit.text(), self.filter_combo.currentData())

    def selected_keys(self) -> list[str]:
        rows = {self.proxy.mapToSource(i).row() for i in self.table.selectionModel().selectedRows()}
        return [self.ctl.rows[r].key for r in sorted(rows) if r < len(self.ctl.rows)]

    def _activated(self, index: QModelIndex) -> None:
        src = self.proxy.mapToSource(index)
        if src.isValid():
            self.nodeActivated.emit(self.ctl.rows[src.row()].index)

    def _table_menu(self, pos: QPoint) -> None:
        keys = self.selected_keys()
        if not keys:
            return
        menu = QMenu(self)
        fill_precision_menu(menu, self.ctl, keys, [self.ctl.rows[self.proxy.mapToSource(
            self.table.indexAt(pos)).row()].op_type] if self.table.indexAt(pos).isValid() else [])
        menu.exec(self.table.viewport().mapToGlobal(pos))

    def select_node(self, onnx_index: int) -> None:
        """Select and show a node's row (clearing a filter that hides it)."""
        src = self.model.index(onnx_index, 0)
        idx = self.proxy.mapFromSource(src)
        if not idx.isValid():
            self.filter_edit.clear()
            self.filter_combo.setCurrentIndex(0)
            idx = self.proxy.mapFromSource(src)
        if idx.isValid():
            self.table.selectRow(idx.row())
            self.table.scrollTo(idx, QAbstractItemView.ScrollHint.PositionAtCenter)

    def _apply_fallback(self) -> None:
        if self.fallback is not None:
            self.applyFallback.emit(self.fallback)

    def show_fallback(self, doc: FallbackResult | None) -> None:
        """A fallback search's result, with the button that applies it."""
        self.fallback = doc
        self.fallback_label.setVisible(doc is not None)
        self.apply_button.setVisible(bool(doc and doc.keep_high_precision))
        if doc is None:
            return
        metric = doc.metric
        before, after = doc.before.get(metric), doc.after.get(metric)
        keep = doc.keep_high_precision
        fmt = (lambda v: "—" if v is None else f"{v:.6g}")
        verdict = ("<span style='color:#2b8a3e'><b>target met</b></span>" if doc.met else
                   f"<span style='color:#b3261e'><b>target not met</b></span>"
                   f"{' (' + doc.stopped + ')' if doc.stopped else ''}")
        names = ", ".join(keep[:6]) + (f" and {len(keep) - 6} more" if len(keep) > 6 else "")
        self.fallback_label.setText(
            f"Fallback for <b>{doc.candidate}</b>, {doc.target}: {verdict} — keep {len(keep)} node"
            f"{'s' if len(keep) != 1 else ''} in FP32{': ' + names if keep else ''}. {metric} {fmt(before)} → "
            f"{fmt(after)}; {doc.evaluations} evaluations in {doc.seconds:.1f} s"
            + (" · <span style='color:#b3261e'>random inputs</span>" if doc.random_data else ""))

    # ----------------------------------------------------------------- diagnosis
    def set_diagnosis(self, doc: DiagnoseResult | None) -> None:
        if doc is None:
            self.model.set_errors({})
            self.diag_label.setText("No diagnosis yet: Run ▸ Diagnose measures every layer's error.")
            self.first_button.setEnabled(False)
            self.worst_button.setEnabled(False)
            return
        self.model.set_errors(node_errors(doc.layers))
        first, worst = doc.first_nonfinite, doc.worst
        text = (f"<b>{doc.candidate}</b> vs {doc.reference}: "
                f"{doc.tensors_compared:,} tensors · first NaN/Inf: <b>{first or 'none'}</b> · "
                f"worst: <b>{worst or '—'}</b>")
        if doc.random_data:
            text += " · <span style='color:#b3261e'>random inputs</span>"
        self.diag_label.setText(text)
        self.first_button.setEnabled(bool(first))
        self.worst_button.setEnabled(bool(worst))
        self.table.sortByColumn(COL_COS, Qt.SortOrder.AscendingOrder)


def fill_precision_menu(menu: QMenu, ctl: PlanController, keys: list[str], op_types: list[str]) -> None:
    """The precision actions for some nodes: per node, and for all nodes of their op type."""
    title = f"{len(keys)} selected nodes" if len(keys) > 1 else keys[0]
    head = menu.addAction(f"Precision of {title}")
    head.setEnabled(False)
    for p in PRECISIONS:
        act: QAction = menu.addAction(f"  {PRECISION_LABELS[p]}", partial(ctl.set_nodes, keys, p))
        act.setShortcut(f"Alt+{PRECISIONS.index(p) + 1}")
    act = menu.addAction("  Use the default (remove override)", lambda: ctl.set_nodes(keys, None))
    act.setShortcut("Alt+0")
    for op in sorted(set(op_types))[:3]:
        sub = menu.addMenu(f"All {op} nodes")
        for p in PRECISIONS:
            sub.addAction(PRECISION_LABELS[p], partial(ctl.set_op_rule, op, p))
        sub.addAction("No rule for this op", partial(ctl.set_op_rule, op, None))
