"""A 10k-node graph opens in the real window and draws at every level of detail."""

from __future__ import annotations

import onnx

from app.ui.graph.item import LOD_BOXES, LOD_EDGE_TEXT, LOD_LABELS
from tests.support.models import residual_chain
from tests.support.ui import non_background_fraction
from tests.ui.conftest import open_and_wait


def test_ten_thousand_nodes(qtbot, window, tmp_path):
    path = tmp_path / "chain10k.onnx"
    onnx.save(residual_chain(2500), path)
    open_and_wait(qtbot, window, path, timeout=60_000)
    assert window.opened is not None, window.banner.text()
    view = window.view
    assert view.graph.node_count == 10_002
    item = view.item
    for scale in (item.overview_scale * 0.5, LOD_BOXES * 0.5, LOD_BOXES * 2, LOD_LABELS * 1.2, LOD_EDGE_TEXT * 1.5):
        view.set_scale(scale)
        view.center_on_node(5000, select=False, zoom_to_read=False)
        img = view.viewport().grab().toImage()
        # Far out a chain is a thin line: fewer coloured pixels, but never none.
        floor = 0.0005 if scale < LOD_BOXES else 0.002
        assert non_background_fraction(img) > floor, f"blank at scale {scale}"
    # Finding the last node jumps there.
    window.open_find()
    window.graph_page.search.edit.setText("mul2499")
    window.graph_page.search.run_search()
    last = view.graph.names.index("mul2499")
    assert view.selection.current == last
    assert view.visible_scene_rect().contains(item.node_rect(last).center())
