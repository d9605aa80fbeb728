"""A node the view is asked to show (search, the Properties panel's jump, a call) is never left under the minimap
or the legend floating over the canvas: on a small canvas, centring alone puts many of u2netp's nodes in the
minimap's corner."""

from __future__ import annotations

from PySide6.QtCore import QRectF

from app.ui.graph.overlays import clear_shift
from tests.support.ui import assert_clear, centred_would_be_covered
from tests.ui.conftest import open_and_wait


def test_clear_shift_takes_the_least_move():
    room = QRectF(0, 0, 400, 300)
    minimap = QRectF(250, 150, 140, 140)
    # Clear already: no move.
    assert clear_shift(QRectF(100, 100, 60, 40), [minimap], room) == (0.0, 0.0)
    # Under the minimap's top-left corner: up is shorter than left.
    dx, dy = clear_shift(QRectF(230, 140, 60, 40), [minimap], room)
    assert (dx, dy) == (0.0, -30.0)
    # Moving left of the minimap would put it under a legend on the left: it goes up instead.
    legend = QRectF(10, 160, 230, 130)
    dx, dy = clear_shift(QRectF(240, 200, 60, 40), [minimap, legend], room)
    moved = QRectF(240, 200, 60, 40).translated(dx, dy)
    assert not moved.intersects(minimap) and not moved.intersects(legend) and room.contains(moved)
    # Wider than the viewport: it stays centred across and moves up, clear of the minimap.
    wide = QRectF(-50, 160, 500, 60)
    dx, dy = clear_shift(wide, [minimap], room)
    assert dx == 0.0 and not wide.translated(dx, dy).intersects(minimap) and dy == -70.0
    # Bigger than the viewport both ways: left where it is.
    assert clear_shift(QRectF(-10, -10, 420, 320), [minimap], room) == (0.0, 0.0)


def test_a_node_shown_on_request_is_never_under_the_minimap(qtbot, window, model_paths):
    open_and_wait(qtbot, window, model_paths["u2netp"])
    window.resize(900, 600)  # a small canvas, as on a small screen or in a compare window's pane
    view = window.view
    qtbot.waitUntil(lambda: view.viewport().width() < 600 and view.minimap.isVisible(), timeout=5000)
    n = view.graph.node_count
    # A node that is clear when centred is centred, as before: only the nodes in the corner move.
    view.set_scale(0.6)
    clear = next(i for i in range(n) if not centred_would_be_covered(view, i, legend_too=True))
    view.center_on_node(clear, select=False, zoom_to_read=False)
    centre = view.mapToScene(view.viewport().rect().center())
    assert view.item.node_rect(clear).adjusted(-2, -2, 2, 2).contains(centre)
    view.set_scale(1.5)
    corner = [i for i in range(n) if centred_would_be_covered(view, i)]
    assert len(corner) >= 10, "no node would land under the minimap: the canvas is too big for this test"
    # A call (what the compare window and the precision work use), with and without the zoom to read.
    for i in corner:
        view.center_on_node(i, select=True)
        assert_clear(view, i)
    view.set_scale(0.9)
    for i in corner[::3]:
        view.center_on_node(i, select=False, zoom_to_read=False)
        assert_clear(view, i)
    # The Properties panel's jump to a tensor's producer.
    for i in corner[::5]:
        window.properties_panel.jumpToNode.emit(i)
        assert_clear(view, i)
    # Search's jump: the current match is shown clear of the minimap.
    bar = window.graph_page.search
    window.open_find()
    qtbot.waitUntil(lambda: view.minimap.isVisible(), timeout=5000)
    searched = 0
    for i in corner[::4]:
        if view.graph.onnx_index[i] < 0:
            continue
        bar.edit.setText(view.graph.names[i])
        bar.run_search()
        current = view.selection.current
        assert current is not None
        assert_clear(view, current)
        searched += 1
    assert searched >= 3
