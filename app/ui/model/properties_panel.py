"""Properties of the clicked node: attributes, inputs/outputs with shapes, weight statistics, subgraphs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import onnx
from onnx import AttributeProto
from PySide6.QtCore import QLocale, QModelIndex, QPersistentModelIndex, QRect, QSize, Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QHeaderView,
    QLabel,
    QPushButton,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.core.model import KIND_GROUP, KIND_OP, DisplayGraph, ShapeResult, WeightStats, find_tensor, weight_stats
from app.ui.common.plain_text import breakable, escape, tooltip

_WARN = QBrush(QColor("#b3261e"))
_MAX_LIST = 16
_MAX_DOC = 300  # the doc string shown in the tree; its tooltip has all of it


class _WrappingDelegate(QStyledItemDelegate):
    """Values wrap in their column, long names included (break points after '/', '_', '.', …), so nothing
    is cut off; the item's own text stays as it was (copying, tests and searches see the real value)."""

    def displayText(self, value: object, locale: QLocale | QLocale.Language) -> str:  # noqa: N802 (Qt API)
        return breakable(super().displayText(value, locale))

    def sizeHint(self, option: QStyleOptionViewItem,  # noqa: N802 (Qt API)
                 index: QModelIndex | QPersistentModelIndex) -> QSize:
        # A tree asks for row heights without telling the column's width, so wrapped text would get one
        # line: give the width here (less the indentation of the first column).
        tree = self.parent()
        assert isinstance(tree, QTreeWidget)  # the delegate of the tree it is made with
        width = tree.header().sectionSize(index.column())
        if index.column() == 0:
            depth, p = 1, index.parent()
            while p.isValid():
                depth, p = depth + 1, p.parent()
            width -= tree.indentation() * depth
        opt = QStyleOptionViewItem(option)
        opt.rect = QRect(0, 0, max(width, 16), 1)
        return super().sizeHint(opt, index)


def format_attribute(attr: AttributeProto) -> str:
    """A readable value for an ONNX attribute (long lists and tensors abbreviated)."""
    t = attr.type
    if t == AttributeProto.FLOAT:
        return f"{attr.f:g}"
    if t == AttributeProto.INT:
        return str(attr.i)
    if t == AttributeProto.STRING:
        return attr.s.decode("utf-8", "replace")
    if t == AttributeProto.FLOATS:
        vals = [f"{v:g}" for v in attr.floats]
    elif t == AttributeProto.INTS:
        vals = [str(v) for v in attr.ints]
    elif t == AttributeProto.STRINGS:
        vals = [s.decode("utf-8", "replace") for s in attr.strings]
    elif t == AttributeProto.TENSOR:
        dims = "×".join(map(str, attr.t.dims)) or "scalar"
        return f"tensor {onnx.helper.tensor_dtype_to_string(attr.t.data_type)} [{dims}]"
    elif t == AttributeProto.GRAPH:
        return f"graph '{attr.g.name}' ({len(attr.g.node)} nodes)"
    elif t == AttributeProto.GRAPHS:
        return f"{len(attr.graphs)} graphs"
    else:
        return AttributeProto.AttributeType.Name(t).lower()
    more = f", … ({len(vals)} values)" if len(vals) > _MAX_LIST else ""
    return "[" + ", ".join(vals[:_MAX_LIST]) + more + "]"


def _fmt(v: float | None) -> str:
    return "—" if v is None else f"{v:.6g}"


class PropertiesPanel(QWidget):
    """A tree of the selected node's facts; double-click a tensor to go to its producer."""

    jumpToNode = Signal(int)
    openSubgraph = Signal(int, int)  # display node, subgraph index

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        self.header = QLabel("Click a node to see its properties.")
        self.header.setTextFormat(Qt.TextFormat.RichText)  # what it embeds from the model is escaped
        self.header.setWordWrap(True)
        self.header.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.header)
        self.tree = QTreeWidget()
        self.tree.setColumnCount(2)
        self.tree.setHeaderLabels(["Property", "Value"])
        self.tree.setColumnWidth(0, 150)
        self.tree.setAlternatingRowColors(True)
        self.tree.setWordWrap(True)
        self.tree.setTextElideMode(Qt.TextElideMode.ElideMiddle)  # only a value too long to wrap is shortened
        self.tree.setItemDelegate(_WrappingDelegate(self.tree))
        # Row heights follow the column widths: recomputed when a column or the panel is resized.
        self.tree.header().sectionResized.connect(lambda *_: self.tree.doItemsLayout())
        self.tree.header().setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        self.tree.itemDoubleClicked.connect(self._on_double_click)
        lay.addWidget(self.tree, 1)
        self.subgraph_buttons: list[QPushButton] = []
        self._buttons_box = QVBoxLayout()
        lay.addLayout(self._buttons_box)
        self.graph: DisplayGraph | None = None
        self.shapes: ShapeResult | None = None
        self.model_path: Path | None = None
        self.stats: dict[str, WeightStats] = {}

    def set_context(self, graph: DisplayGraph | None, shapes: ShapeResult | None,
                    model_path: Path | None) -> None:
        self.graph, self.shapes, self.model_path = graph, shapes, model_path
        self.show_node(None)

    def _tensor_text(self, name: str) -> str:
        info = self.shapes.get(name) if self.shapes is not None else None
        if info is None:
            return "type unknown"
        return f"{info.dtype} [{info.shape_text()}]"

    def show_node(self, node: int | None, selected_count: int = 0) -> None:
        self.tree.clear()
        self.stats = {}
        for b in self.subgraph_buttons:
            b.deleteLater()
        self.subgraph_buttons = []
        g = self.graph
        if g is None or node is None:
            self.header.setText(f"{selected_count:,} nodes selected." if selected_count > 1
                                else "Click a node to see its properties.")
            return
        name, title = g.names[node], g.titles[node]
        if g.kinds[node] == KIND_GROUP:
            self._show_group(node)
            return
        if g.kinds[node] != KIND_OP:
            self.header.setText(f"<b>{escape(title)}</b> {escape(name)}")
            self._add_section("Tensor", [(name, self._tensor_text(name))], tensors=True)
            consumers = [g.names[c] for c in g.consumers.get(name, [])]
            self._add_section("Used by", [(c, "") for c in consumers[:200]])
            return
        onnx_node = g.graph.node[int(g.onnx_index[node])]
        self.header.setText(f"<b>{escape(onnx_node.op_type)}</b> {escape(onnx_node.name or '(unnamed)')}"
                            + (f"<br>{selected_count:,} nodes selected" if selected_count > 1 else ""))
        facts: list[tuple[str, ...]] = [("name", onnx_node.name or "(unnamed)"), ("op type", onnx_node.op_type),
                                        ("domain", onnx_node.domain or "ai.onnx"), ("category", g.categories[node])]
        if onnx_node.doc_string:
            doc = onnx_node.doc_string
            facts.append(("doc", doc if len(doc) <= _MAX_DOC else doc[:_MAX_DOC] + " …", doc))
        self._add_section("Node", facts)
        attrs = [(a.name, format_attribute(a)) for a in onnx_node.attribute]
        if attrs:
            self._add_section("Attributes", attrs)
        weights = set(g.weights.get(node, []))
        self._add_section("Inputs", [(t or "(absent)", self._tensor_text(t) + ("  · weight" if t in weights else ""))
                                     for t in onnx_node.input], tensors=True)
        self._add_section("Outputs", [(t, self._tensor_text(t)) for t in onnx_node.output], tensors=True)
        for wname in g.weights.get(node, []):
            self._add_weight(wname)
        for k, (attr_name, sub) in enumerate(g.subgraphs.get(node, [])):
            b = QPushButton(f"Open subgraph '{attr_name}' ({len(sub.node)} nodes)")
            b.clicked.connect(lambda _=False, n=node, i=k: self.openSubgraph.emit(n, i))
            self._buttons_box.addWidget(b)
            self.subgraph_buttons.append(b)
        self.tree.expandAll()

    def _show_group(self, node: int) -> None:
        """A closed group: its scope, how many nodes and which ops are inside (double-click or Enter opens it)."""
        g = self.graph
        assert g is not None
        inside = g.members.get(node)
        ops = Counter(g.graph.node[m].op_type for m in (inside.tolist() if inside is not None else []))
        self.header.setText(f"<b>Group</b> {escape(g.titles[node])}<br><i>double-click or Enter opens it</i>")
        facts = [("nodes", f"{sum(ops.values()):,}"), ("op types", f"{len(ops):,}")]
        first = next((g.graph.node[m].name for m in (inside.tolist() if inside is not None else [])[:1]), "")
        if first:
            facts.append(("first node", first))
        self._add_section("Group", facts)
        self._add_section("Ops inside", [(op, f"{n:,}") for op, n in ops.most_common(40)])

    def _add_section(self, title: str, rows: Sequence[tuple[str, ...]], tensors: bool = False) -> QTreeWidgetItem:
        """Rows are (key, value) or (key, value, full value for the tooltip)."""
        top = QTreeWidgetItem(self.tree, [title, ""])
        top.setFirstColumnSpanned(True)  # a section title (e.g. a long weight name) uses the whole width
        top.setToolTip(0, tooltip(title))
        f = top.font(0)
        f.setBold(True)
        top.setFont(0, f)
        for key, value, *full in rows:
            it = QTreeWidgetItem(top, [key, value])
            it.setToolTip(0, tooltip(key))
            it.setToolTip(1, tooltip(full[0] if full else value))
            if tensors:
                it.setData(0, Qt.ItemDataRole.UserRole, key)
        return top

    def _add_weight(self, name: str) -> None:
        g = self.graph
        assert g is not None
        tensor = find_tensor(g.graph, name)
        if tensor is None:
            return
        s = weight_stats(tensor, self.model_path)
        self.stats[name] = s
        rows = [("shape", "×".join(map(str, s.shape)) or "scalar"), ("dtype", s.dtype), ("elements", f"{s.count:,}")]
        if s.note:
            rows.append(("note", s.note))
        if s.min is not None:
            rows += [("min", _fmt(s.min)), ("max", _fmt(s.max)), ("mean", _fmt(s.mean)), ("std", _fmt(s.std)),
                     ("zeros", f"{s.zeros:,} ({100.0 * s.zeros / max(s.count, 1):.1f}%)")]
        flagged = {"NaN / Inf": s.nan + s.inf, "FP16 overflow (>65504)": s.fp16_overflow,
                   "FP16 subnormal (<6.1e-5)": s.fp16_subnormal, "FP16 underflow to 0": s.fp16_underflow}
        rows += [("NaN / Inf", f"{s.nan:,} / {s.inf:,}")]
        rows += [(k, f"{v:,}") for k, v in flagged.items() if k != "NaN / Inf"]
        top = self._add_section(f"Weight {name}", rows)
        for i in range(top.childCount()):
            it = top.child(i)
            if it is not None and flagged.get(it.text(0), 0) > 0:
                it.setForeground(1, _WARN)
                it.setToolTip(1, tooltip("These values are not representable as they are in FP16."))

    def _on_double_click(self, item: QTreeWidgetItem, _col: int) -> None:
        name = item.data(0, Qt.ItemDataRole.UserRole)
        if not name or self.graph is None:
            return
        producer = self.graph.producer.get(name)
        if producer is not None:
            self.jumpToNode.emit(producer)

