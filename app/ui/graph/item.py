"""One QGraphicsItem that paints a whole graph, drawing only what is exposed.

Tens of thousands of QGraphicsItems cost seconds to create and memory to keep; here nodes and edges
are numpy arrays, culled per paint by a vectorised rectangle test, with three levels of detail:
a pre-rendered overview image when zoomed far out, plain boxes at middle zoom, and boxes with
labels, arrowheads and edge shapes close up.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFontMetricsF, QImage, QPainter, QPainterPath, QPen, QPolygonF
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem, QWidget

from app.core.layout import EdgeLabels, GraphLayout, place_edge_labels
from app.core.model import KIND_GROUP, KIND_OP, DisplayGraph
from app.ui.common import style

LOD_BOXES = 0.12     # below: boxes without outline; above: outlined boxes
LOD_LABELS = 0.42    # above: op type and name inside boxes, arrowheads
LOD_EDGE_TEXT = 0.7  # above: tensor shapes on edges
_CHUNK = 512
_OVERVIEW_MAX_SIDE = 2048
_MARGIN = 40.0
_NO_LABELS = np.zeros(0, dtype=np.int64)


class GraphItem(QGraphicsItem):
    """Paints the nodes and edges of a DisplayGraph at the positions of a GraphLayout."""

    def __init__(self, graph: DisplayGraph, layout: GraphLayout) -> None:
        super().__init__()
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemUsesExtendedStyleOption, True)
        self.graph = graph
        self.layout = layout
        n = graph.node_count
        # node centres (not `x`/`y`: those are QGraphicsItem's position getters)
        self.cx = np.asarray(layout.x, dtype=np.float64)[:n]
        self.cy = np.asarray(layout.y, dtype=np.float64)[:n]
        w, h = graph.widths, graph.heights
        self.x0, self.x1 = self.cx - w / 2, self.cx + w / 2
        self.y0, self.y1 = self.cy - h / 2, self.cy + h / 2
        self._bounds = QRectF(-_MARGIN, -_MARGIN, float(layout.width) + 2 * _MARGIN,
                              float(layout.height) + 2 * _MARGIN)
        self.selected: frozenset[int] = frozenset()
        self.matches: np.ndarray = np.zeros(0, dtype=np.int64)
        self.current_match: int | None = None
        self.node_fill: list[QColor] | None = None  # per-node override (precision/heat-map overlays)
        self.badges: dict[int, QColor] = {}          # node -> colour of a corner dot (readiness findings)
        self._cat_colors = [style.GROUP if k == KIND_GROUP else style.CATEGORY_COLORS.get(
            c, style.CATEGORY_COLORS["Other"]) for c, k in zip(graph.categories, graph.kinds.tolist(), strict=True)]
        self.node_mix: dict[int, list[tuple[QColor, float]]] = {}  # group box -> its nodes' colours, by share
        self.node_note: dict[int, str] = {}                        # group box -> a line of words (worst error…)
        self.frames = self._frame_rects()                          # expanded groups: (group, rect, title, depth)
        self._cat_groups = self._group_by_color()
        self._groups = self._cat_groups
        self._title_colors = [style.text_on(c) for c in self._cat_colors]  # legible on each header fill
        self._edge_labels: tuple[list[str], EdgeLabels] | None = None     # placed once, on first close-up
        self.drawn_labels: np.ndarray = _NO_LABELS                        # edge labels of the last paint
        self._label_ascent = 0.0
        self._prepare_edges()
        self._title_font, self._name_font, self._label_font = (
            style.title_font(), style.name_font(), style.label_font())
        self.overview, self.overview_scale = self._render_overview()

    # ----------------------------------------------------------------- preparation
    def _group_by_color(self) -> list[tuple[QColor, np.ndarray]]:
        groups: dict[int, list[int]] = {}
        first: dict[int, QColor] = {}
        for i, c in enumerate(self._cat_colors):
            groups.setdefault(c.rgba(), []).append(i)
            first.setdefault(c.rgba(), c)
        return [(first[k], np.array(ix)) for k, ix in groups.items()]

    def _frame_rects(self) -> list[tuple[int, QRectF, str, int]]:
        """Each expanded group drawn as a box (a nested layout's frames): (group, rect, name, depth), outermost
        first."""
        meta = self.graph.frame_meta
        return [(g, QRectF(QPointF(x0, y0), QPointF(x1, y1)), meta[g][0], meta[g][1])
                for g, x0, y0, x1, y1 in getattr(self.layout, "frames", None) or [] if g in meta]

    def _prepare_edges(self) -> None:
        pts = np.asarray(self.layout.points, dtype=np.float64).reshape(-1, 2)
        offs = np.asarray(self.layout.edge_offsets, dtype=np.int64)
        e = len(offs) - 1
        self.points, self.offsets = pts, offs
        if e <= 0 or len(pts) == 0:
            self.e_x0 = self.e_x1 = self.e_y0 = self.e_y1 = np.zeros(0)
            self._chunks: list[tuple[QRectF, np.ndarray]] = []
            self._chunk_paths: dict[int, QPainterPath] = {}
            return
        starts = offs[:-1]
        self.e_x0 = np.minimum.reduceat(pts[:, 0], starts)
        self.e_x1 = np.maximum.reduceat(pts[:, 0], starts)
        self.e_y0 = np.minimum.reduceat(pts[:, 1], starts)
        self.e_y1 = np.maximum.reduceat(pts[:, 1], starts)
        order = np.argsort(self.e_y0, kind="stable")
        self._chunks = []
        for k in range(0, e, _CHUNK):
            ids = order[k:k + _CHUNK]
            rect = QRectF(QPointF(self.e_x0[ids].min(), self.e_y0[ids].min()),
                          QPointF(self.e_x1[ids].max(), self.e_y1[ids].max()))
            self._chunks.append((rect.adjusted(-2, -2, 2, 2), ids))
        self._chunk_paths = {}

    def _edges_path(self, ids: np.ndarray) -> QPainterPath:
        """One path for many polylines, built from numpy (pyqtgraph's arrayToQPath)."""
        segs = [self.points[self.offsets[i]:self.offsets[i + 1]] for i in ids]
        segs = [s for s in segs if len(s) >= 2]
        if not segs:
            return QPainterPath()
        allp = np.concatenate(segs)
        connect = np.ones(len(allp), dtype=np.int32)
        ends = np.cumsum([len(s) for s in segs]) - 1
        connect[ends] = 0
        return pg.arrayToQPath(allp[:, 0], allp[:, 1], connect=connect, finiteCheck=False)

    def _chunk_path(self, k: int) -> QPainterPath:
        path = self._chunk_paths.get(k)
        if path is None:
            path = self._edges_path(self._chunks[k][1])
            self._chunk_paths[k] = path
        return path

    def _render_overview(self) -> tuple[QImage, float]:
        """A small raster of the whole graph for far zoom levels and the minimap."""
        b = self._bounds
        scale = min(1.0, _OVERVIEW_MAX_SIDE / max(b.width(), b.height(), 1.0))
        w, h = max(1, int(b.width() * scale) + 1), max(1, int(b.height() * scale) + 1)
        img = QImage(w, h, QImage.Format.Format_ARGB32_Premultiplied)
        img.fill(style.BACKGROUND)
        p = QPainter(img)
        p.scale(scale, scale)
        p.translate(-b.left(), -b.top())
        pen = QPen(style.EDGE, 0)
        pen.setCosmetic(True)
        p.setPen(pen)
        for k in range(len(self._chunks)):
            p.drawPath(self._chunk_path(k))
        p.end()
        arr = np.frombuffer(img.bits(), dtype=np.uint8).reshape(h, img.bytesPerLine())[:, : w * 4]
        arr = arr.reshape(h, w, 4)
        px0 = np.clip(((self.x0 - b.left()) * scale).astype(int), 0, w - 1)
        px1 = np.clip(((self.x1 - b.left()) * scale).astype(int), 0, w - 1)
        py0 = np.clip(((self.y0 - b.top()) * scale).astype(int), 0, h - 1)
        py1 = np.clip(((self.y1 - b.top()) * scale).astype(int), 0, h - 1)
        for color, ids in self._fill_groups():
            bgra = np.array([color.blue(), color.green(), color.red(), 255], dtype=np.uint8)
            for i in ids:
                arr[py0[i]:py1[i] + 1, px0[i]:px1[i] + 1] = bgra
        return img, scale

    def _fill_groups(self) -> list[tuple[QColor, np.ndarray]]:
        if self.node_fill is None:
            return self._cat_groups
        groups: dict[int, list[int]] = {}
        first: dict[int, QColor] = {}
        for i, c in enumerate(self.node_fill):
            groups.setdefault(c.rgba(), []).append(i)
            first.setdefault(c.rgba(), c)
        return [(first[k], np.asarray(v, dtype=np.int64)) for k, v in groups.items()]

    # ----------------------------------------------------------------- queries
    def boundingRect(self) -> QRectF:  # noqa: N802 (Qt API)
        return self._bounds

    def node_rect(self, i: int) -> QRectF:
        return QRectF(QPointF(self.x0[i], self.y0[i]), QPointF(self.x1[i], self.y1[i]))

    def nodes_in(self, rect: QRectF) -> np.ndarray:
        return np.nonzero((self.x1 >= rect.left()) & (self.x0 <= rect.right())
                          & (self.y1 >= rect.top()) & (self.y0 <= rect.bottom()))[0]

    def nodes_inside(self, rect: QRectF) -> np.ndarray:
        """Nodes wholly inside a rectangle (rubber-band selection)."""
        return np.nonzero((self.x0 >= rect.left()) & (self.x1 <= rect.right())
                          & (self.y0 >= rect.top()) & (self.y1 <= rect.bottom()))[0]

    def node_at(self, p: QPointF) -> int | None:
        hits = np.nonzero((self.x0 <= p.x()) & (self.x1 >= p.x())
                          & (self.y0 <= p.y()) & (self.y1 >= p.y()))[0]
        return int(hits[-1]) if len(hits) else None

    def edges_in(self, rect: QRectF) -> np.ndarray:
        return np.nonzero((self.e_x1 >= rect.left()) & (self.e_x0 <= rect.right())
                          & (self.e_y1 >= rect.top()) & (self.e_y0 <= rect.bottom()))[0]

    # ----------------------------------------------------------------- painting
    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem,
              widget: QWidget | None = None) -> None:
        lod = QStyleOptionGraphicsItem.levelOfDetailFromTransform(painter.worldTransform())
        exposed = option.exposedRect if not option.exposedRect.isEmpty() else self._bounds
        self.drawn_labels = _NO_LABELS
        if lod < min(self.overview_scale, LOD_BOXES):  # a small graph's raster is full-size: never at readable zoom
            painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform, True)
            painter.drawImage(self._bounds, self.overview)
            self._paint_marks(painter, exposed, lod)
            return
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, lod >= LOD_BOXES)
        if self.frames:
            self._paint_frames(painter, exposed, lod)
        self._paint_edges(painter, exposed, lod)
        visible = self.nodes_in(exposed)
        if lod < LOD_LABELS:
            self._paint_boxes(painter, visible, lod)
        else:
            self._paint_detailed(painter, visible)
            if self.graph.fold_badges:
                self._paint_fold_badges(painter, exposed)
        self._paint_marks(painter, exposed, lod)

    def _paint_edges(self, painter: QPainter, exposed: QRectF, lod: float) -> None:
        pen = QPen(style.EDGE, 1.2 if lod >= LOD_LABELS else 0)
        pen.setCosmetic(lod < LOD_LABELS)
        painter.setPen(pen)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        for k, (rect, _ids) in enumerate(self._chunks):
            if rect.intersects(exposed):
                painter.drawPath(self._chunk_path(k))
        if lod < LOD_LABELS:
            return
        ids = self.edges_in(exposed)
        if len(ids) > 4000:
            return
        painter.setBrush(style.EDGE)
        painter.setPen(Qt.PenStyle.NoPen)
        dst = self.graph.edges[:, 1] if len(self.graph.edges) else np.zeros(0, dtype=np.int64)
        for i in ids:
            a, b = self.offsets[i], self.offsets[i + 1]
            if b - a < 2:
                continue
            tip = self.points[b - 1]
            t = int(dst[i])
            tip_y = min(tip[1], self.y0[t])
            painter.drawPolygon(QPolygonF([QPointF(tip[0], tip_y), QPointF(tip[0] - 4, tip_y - 8),
                                           QPointF(tip[0] + 4, tip_y - 8)]))
        if lod < LOD_EDGE_TEXT or not self.graph.edge_labels:
            return
        labels = self.edge_labels()
        ids = labels.in_rect(exposed.left(), exposed.top(), exposed.right(), exposed.bottom())
        self.drawn_labels = ids
        painter.setFont(self._label_font)
        painter.setPen(style.EDGE_LABEL)
        ascent = self._label_ascent
        for k in ids.tolist():
            painter.drawText(QPointF(labels.x0[k], labels.y0[k] + ascent), labels.texts[k])

    def edge_labels(self) -> EdgeLabels:
        """Where each edge's shape label goes, placed for the whole graph at once (see core/layout/edge_labels.py)."""
        current = self.graph.edge_labels
        if self._edge_labels is None or self._edge_labels[0] is not current:
            fm = QFontMetricsF(self._label_font)
            self._label_ascent = fm.ascent()
            placed = place_edge_labels(self.points, self.offsets, self.graph.edges, current, self.graph.edge_tensors,
                                       (self.x0, self.y0, self.x1, self.y1), fm.horizontalAdvance, fm.height())
            self._edge_labels = (current, placed)
        return self._edge_labels[1]

    def _fill_for(self, i: int) -> QColor:
        return self.node_fill[i] if self.node_fill is not None else self._cat_colors[i]

    def _paint_boxes(self, painter: QPainter, visible: np.ndarray, lod: float) -> None:
        shown = None
        if len(visible) < len(self.cx):
            shown = np.zeros(len(self.cx), dtype=bool)
            shown[visible] = True
        pen = QPen(style.NODE_BORDER, 0) if lod >= LOD_BOXES else Qt.PenStyle.NoPen
        painter.setPen(pen)
        for color, ids in self._groups:
            sel = ids if shown is None else ids[shown[ids]]
            if len(sel) == 0:
                continue
            painter.setBrush(color)
            painter.drawRects([self.node_rect(i) for i in sel.tolist()])

    def _paint_detailed(self, painter: QPainter, visible: np.ndarray) -> None:
        g = self.graph
        border = QPen(style.NODE_BORDER, 1.0)
        for i in visible.tolist():
            rect = self.node_rect(i)
            color = self._fill_for(i)
            if g.kinds[i] == KIND_GROUP:
                self._paint_group(painter, i, rect, color)
                continue
            painter.setPen(border)
            header = self._card(painter, rect, color)
            painter.setFont(self._title_font)
            painter.setPen(self._title_colors[i])
            painter.drawText(header.adjusted(6, 0, -6, 0), Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
                             g.titles[i])
            painter.setFont(self._name_font)
            painter.setPen(style.TEXT_DIM if g.kinds[i] == KIND_OP else style.TEXT)
            body = QRectF(rect.left() + 6, rect.top() + 20, rect.width() - 12, rect.height() - 20)
            name = painter.fontMetrics().elidedText(g.names[i], Qt.TextElideMode.ElideMiddle, int(body.width()))
            painter.drawText(body, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, name)

    def _paint_frames(self, painter: QPainter, exposed: QRectF, lod: float) -> None:
        """Expanded groups: a tinted outline with the group's name at its top left (double-click it to collapse)."""
        pen = QPen(style.FRAME_BORDER, 1.0, Qt.PenStyle.DashLine)
        pen.setCosmetic(lod < LOD_LABELS)
        painter.setFont(self._name_font)
        for _group, rect, name, depth in self.frames:
            if not rect.intersects(exposed):
                continue
            painter.setPen(pen)
            painter.setBrush(style.FRAME_FILLS[depth % 2])
            painter.drawRoundedRect(rect, 8, 8)
            if lod >= LOD_LABELS:
                painter.setPen(style.TEXT_DIM)
                painter.drawText(QRectF(rect.left() + 10, rect.top() + 3, rect.width() - 20, 16),
                                 Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, f"▾ {name}")

    def fold_badge_rect(self, i: int) -> QRectF:
        """Where node i's shape-arithmetic badge is drawn (left of its top edge)."""
        return QRectF(self.x0[i] + 4, self.y0[i] - 9, 44, 15)

    def fold_badge_at(self, p: QPointF) -> int | None:
        """The node whose shape-arithmetic badge is under scene point `p`."""
        for i in self.graph.fold_badges:
            if self.fold_badge_rect(i).contains(p):
                return i
        return None

    def _paint_fold_badges(self, painter: QPainter, exposed: QRectF) -> None:
        """'⋯ 12': twelve nodes of shape arithmetic (Shape, Gather, Concat…) compute this node's shape argument;
        click to show them ('▴ 12' folds them again)."""
        painter.setFont(self._label_font)
        for i, (count, shown) in self.graph.fold_badges.items():
            r = self.fold_badge_rect(i)
            if not r.intersects(exposed):
                continue
            painter.setPen(QPen(style.NODE_BORDER, 1.0))
            painter.setBrush(style.FOLD_BADGE)
            painter.drawRoundedRect(r, 7, 7)
            painter.setPen(style.TEXT)
            painter.drawText(r, Qt.AlignmentFlag.AlignCenter, f"{'▴' if shown else '⋯'} {count}")

    def frame_at(self, p: QPointF) -> int | None:
        """The innermost expanded group whose outline holds scene point `p` (None: none)."""
        inside = [(depth, group) for group, rect, _name, depth in self.frames if rect.contains(p)]
        return max(inside)[1] if inside else None

    @staticmethod
    def _card(painter: QPainter, rect: QRectF, color: QColor) -> QRectF:
        """A node's white card with its coloured header (pen: the card's border); returns the header's rect."""
        painter.setBrush(style.NODE_FILL)
        painter.drawRoundedRect(rect, 5, 5)
        header = QRectF(rect.left(), rect.top(), rect.width(), 20)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(color)
        hp = QPainterPath()
        hp.setFillRule(Qt.FillRule.WindingFill)
        hp.addRoundedRect(header, 5, 5)
        hp.addRect(QRectF(rect.left(), rect.top() + 10, rect.width(), 10))
        painter.drawPath(hp)
        return header

    def _paint_group(self, painter: QPainter, i: int, rect: QRectF, color: QColor) -> None:
        """A collapsed group: a stack of cards, its name in the header, its size and ops below, and a strip of its
        nodes' colours (their precisions, errors or times) when the graph is coloured by one of them."""
        g = self.graph
        painter.setPen(QPen(style.NODE_BORDER, 1.0))
        painter.setBrush(style.NODE_FILL)
        for off in (6.0, 3.0):
            painter.drawRoundedRect(rect.translated(off, off), 5, 5)
        header = self._card(painter, rect, color)
        painter.setFont(self._title_font)
        painter.setPen(self._title_colors[i])
        painter.drawText(header.adjusted(6, 0, -20, 0), Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
                         painter.fontMetrics().elidedText(g.titles[i], Qt.TextElideMode.ElideMiddle,
                                                          int(header.width() - 26)))
        painter.drawText(header.adjusted(0, 0, -6, 0), Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight, "⊞")
        painter.setFont(self._name_font)
        painter.setPen(style.TEXT_DIM)
        count, _, ops = g.names[i].partition(" · ")
        body = QRectF(rect.left() + 6, rect.top() + 21, rect.width() - 12, 16)
        painter.drawText(body, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, count)
        body = QRectF(rect.left() + 6, rect.top() + 35, rect.width() - 12, 14)
        note = self.node_note.get(i)
        if note:
            painter.setPen(style.TEXT)
        painter.drawText(body, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
                         painter.fontMetrics().elidedText(note or ops, Qt.TextElideMode.ElideRight, int(body.width())))
        mix = self.node_mix.get(i)
        if mix:
            x, w = rect.left() + 4, rect.width() - 8
            for c, share in mix:
                painter.fillRect(QRectF(x, rect.bottom() - 6, w * share, 4), c)
                x += w * share

    def _paint_badges(self, painter: QPainter, exposed: QRectF, lod: float) -> None:
        """A dot on the top-right corner of nodes with findings, big enough to see when zoomed out."""
        r = max(5.0, 4.0 / max(lod, 1e-6))
        pen = QPen(QColor("white"), 1.5)
        pen.setCosmetic(True)
        painter.setPen(pen)
        for i, color in self.badges.items():
            rect = self.node_rect(i)
            if rect.intersects(exposed):
                painter.setBrush(color)
                painter.drawEllipse(QPointF(rect.right(), rect.top()), r, r)

    def set_badges(self, badges: dict[int, QColor]) -> None:
        self.badges = dict(badges)
        self.update()

    def _paint_marks(self, painter: QPainter, exposed: QRectF, lod: float) -> None:
        """Selection and search highlights, drawn thick enough to see at any zoom."""
        if self.badges:
            self._paint_badges(painter, exposed, lod)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        grow = max(3.0, 2.5 / max(lod, 1e-6))
        for ids, color, width in ((self.matches, style.MATCH, 2.5), (list(self.selected), style.SELECTED, 3.0)):
            if len(ids) == 0:
                continue
            pen = QPen(color, width)
            pen.setCosmetic(True)
            painter.setPen(pen)
            for i in ids:
                r = self.node_rect(int(i))
                if r.intersects(exposed):
                    painter.drawRect(r.adjusted(-grow, -grow, grow, grow))
        if self.current_match is not None:
            pen = QPen(style.CURRENT_MATCH, 4.0)
            pen.setCosmetic(True)
            painter.setPen(pen)
            g = grow * 1.6
            painter.drawRect(self.node_rect(self.current_match).adjusted(-g, -g, g, g))

    def set_node_fill(self, colors: list[QColor] | None, mix: dict[int, list[tuple[QColor, float]]] | None = None,
                      notes: dict[int, str] | None = None) -> None:
        """Colour boxes by something else than their op category (None: back to categories); `mix`: for group
        boxes, their nodes' colours by share, drawn as a strip; `notes`: a line of words on a group's card in
        place of its ops (its worst error, its share of the time)."""
        if colors is not None and len(colors) != self.graph.node_count:
            raise ValueError(f"{len(colors)} colours for {self.graph.node_count} nodes")
        self.node_fill = colors
        self.node_mix = dict(mix or {})
        self.node_note = dict(notes or {})
        self._groups = self._fill_groups()
        self._title_colors = [style.text_on(c) for c in (colors if colors is not None else self._cat_colors)]
        self.overview, self.overview_scale = self._render_overview()
        self.update()

