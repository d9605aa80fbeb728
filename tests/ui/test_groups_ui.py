"""The graph by groups in the real window: a BERT export opens as its blocks; a double-click opens a group and one on
its outline closes it; Backspace closes the group around the selection; search opens the groups around a match;
selecting a group plans every node inside it; colours roll up; shape arithmetic folds into badges that unfold on a
click; View ▸ Groups switches to the flat drawing and back; and a few hundred frames of panning and zooming with
groups opening and closing paint without a fault."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt

from app.core.model import KIND_GROUP, KIND_OP
from tests.support.models import residual_chain
from tests.support.ui import non_background_fraction, wait_for_size
from tests.ui.conftest import open_and_wait


def _box(window, title: str | None = None) -> int:
    g = window.view.graph
    return next(v for v in range(g.node_count) if g.kinds[v] == KIND_GROUP and (title is None or g.titles[v] == title))


def _double_click(qtbot, view, scene_point) -> None:
    pos = view.mapFromScene(scene_point)
    qtbot.mouseDClick(view.viewport(), Qt.MouseButton.LeftButton, pos=pos)


def test_a_bert_export_opens_by_groups_that_open_and_close(qtbot, window, model_paths):
    open_and_wait(qtbot, window, model_paths["g2p_bert_mlm"])
    page, view = window.graph_page, window.view
    assert page.grouped and window.menus.act_grouped.isChecked() and window.menus.act_grouped.isEnabled()
    assert page.folded and window.menus.act_fold.isChecked()
    assert view.item.frames, "the open groups are outlined"
    before = view.graph.node_count
    box = _box(window, "moments")
    group = view.graph.group_of[box]
    view.center_on_node(box, select=False)
    _double_click(qtbot, view, view.item.node_rect(box).center())
    assert group in page.picture.expanded and view.graph.node_count > before
    assert "Graph drawn by groups" in window.status_label.text()
    # the opened group is outlined; a double-click on its outline (not on a node) closes it again
    rect = next(r for g, r, _name, _d in view.item.frames if g == group)
    view.centerOn(rect.center())
    _double_click(qtbot, view, rect.topLeft() + (rect.bottomRight() - rect.topLeft()) * 0.02)
    assert group not in page.picture.expanded and view.graph.node_count == before
    # Enter on a selected box opens it; Backspace on a node inside closes it
    box = _box(window, "moments")
    view.selection.set([box], box)
    view.setFocus()
    qtbot.keyClick(view, Qt.Key.Key_Return)
    assert group in page.picture.expanded
    inside = next(v for v in range(view.graph.node_count)
                  if view.graph.kinds[v] == KIND_OP and "moments" in view.graph.names[v])
    view.selection.set([inside], inside)
    qtbot.keyClick(view, Qt.Key.Key_Backspace)
    assert group not in page.picture.expanded


def test_search_opens_the_groups_around_a_match(qtbot, window, model_paths):
    open_and_wait(qtbot, window, model_paths["g2p_bert_mlm"])
    page, view = window.graph_page, window.view
    target = "encoder_1/ffn_layernormalization/moments/SquaredDifference__53"
    assert target not in view.graph.names  # inside a closed group at first
    window.open_find()
    page.search.edit.setText("SquaredDifference__53")
    page.search.run_search()
    current = view.selection.current
    assert current is not None and view.graph.kinds[current] == KIND_OP and view.graph.names[current].endswith(target)
    assert view.visible_scene_rect().contains(view.item.node_rect(current).center())
    # a folded node found by name comes out of its badge
    page.search.edit.setText("Shape__437")
    page.search.run_search()
    current = view.selection.current
    assert view.graph.names[current] == "Shape__437" and view.graph.titles[current] == "Shape"


def test_a_selected_group_plans_every_node_inside_and_colours_roll_up(qtbot, window, model_paths):
    open_and_wait(qtbot, window, model_paths["g2p_bert_mlm"])
    view = window.view
    box = _box(window, "batchnorm")
    members = view.graph.members[box].tolist()
    view.selection.set([box], box)
    keys = window.precision.selected_node_keys()
    assert len(keys) == len(members) == 8
    window.precision.set_selected_precision("fp16")
    assert all(window.plan.plan.overrides.get(k) == "fp16" for k in keys)
    window.colors.set_color_mode("precision")
    item = view.item
    mix = item.node_mix[box]
    assert abs(sum(share for _c, share in mix) - 1.0) < 1e-9
    from app.ui.common.style import PRECISION_COLORS

    assert item.node_fill[box].name() == PRECISION_COLORS["fp16"].name()
    # the properties of a group: its size and what is inside
    view.selection.clear()
    view.selection.set([box], box)  # a click on the group's card
    assert "Group" in window.properties_panel.header.text()


def test_shape_arithmetic_badges_unfold_and_the_flat_drawing(qtbot, window, model_paths):
    open_and_wait(qtbot, window, model_paths["u2netp"])
    page, view = window.graph_page, window.view
    assert not page.grouped and page.folded and view.graph.node_count == 797 - 418
    assert not window.menus.act_grouped.isEnabled() or not window.menus.act_grouped.isChecked()
    node = next(iter(view.graph.fold_badges))
    count, shown = view.graph.fold_badges[node]
    assert not shown
    view.set_scale(1.0)
    view.center_on_node(node, select=False, zoom_to_read=False)
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton,
                     pos=view.mapFromScene(view.item.fold_badge_rect(node).center()))
    assert view.graph.node_count == 797 - 418 + count
    resize = next(v for v, (_n, on) in view.graph.fold_badges.items() if on)
    assert view.graph.titles[resize] == "Resize"
    window.menus.act_fold.trigger()
    assert not page.folded and view.graph.node_count == 797
    window.menus.act_fold.trigger()
    assert page.folded and view.graph.node_count == 797 - 418


def test_view_groups_switches_to_flat_and_back(qtbot, window, model_paths):
    open_and_wait(qtbot, window, model_paths["g2p_bert_mlm"])
    page, view = window.graph_page, window.view
    grouped_count = view.graph.node_count
    window.menus.act_grouped.trigger()
    assert not page.grouped and not view.item.frames and view.graph.node_count == 276 - 114
    window.menus.act_grouped.trigger()
    assert page.grouped and view.graph.node_count == grouped_count
    window.menus.act_collapse_all.trigger()
    assert view.graph.node_count < grouped_count
    window.menus.act_expand_all.trigger()
    assert view.graph.node_count == 276 - 114 and not any(view.graph.kinds == KIND_GROUP)
    window.menus.depth_actions[0].trigger()
    assert 0 < view.graph.node_count < 276 - 114


def test_groups_soak_at_1280_and_1600(qtbot, window, model_paths):
    """Minutes of use in a few seconds: at both window sizes, 150 frames of zooming and panning each, a group opened or
    closed every 15 frames; every frame paints something and nothing raises."""
    open_and_wait(qtbot, window, model_paths["g2p_bert_mlm"])
    page, view = window.graph_page, window.view
    rng = np.random.default_rng(3)
    for size in ((1280, 800), (1600, 1000)):
        window.resize(*size)
        wait_for_size(qtbot, window, size)
        for frame in range(150):
            if frame % 15 == 0:
                boxes = [v for v in range(view.graph.node_count) if view.graph.kinds[v] == KIND_GROUP]
                if boxes and frame % 30 == 0:
                    page.expand(int(rng.choice(boxes)))
                elif page.picture.expanded:
                    page.collapse(int(rng.choice(sorted(page.picture.expanded))))
            view.set_scale(float(rng.choice([0.08, 0.2, 0.5, 0.9, 1.5])))
            node = int(rng.integers(view.graph.node_count))
            view.center_on_node(node, select=False, zoom_to_read=False)
            img = view.viewport().grab().toImage()
            assert non_background_fraction(img) > 0.0005, f"blank frame {frame} at {size}"
    assert window.opened is not None


def test_a_big_flat_drawing_is_laid_out_on_a_thread(qtbot, window, tmp_path):
    """10,000 nodes without scopes open flat; grouped by runs they draw in boxes; back to flat, the layout runs on
    a thread while the window says so and stays usable, then the flat drawing replaces the boxes."""
    import onnx

    path = tmp_path / "chain10k.onnx"
    onnx.save(residual_chain(2500), path)
    open_and_wait(qtbot, window, path, timeout=60_000)
    page, view = window.graph_page, window.view
    assert not page.grouped and view.graph.node_count == 10_002 and window.menus.act_grouped.isEnabled()
    window.menus.act_grouped.trigger()
    assert page.grouped and view.graph.node_count < 100
    window.menus.act_grouped.trigger()
    assert page.busy and "Laying out 10,002 nodes" in window.status_label.text()
    window.menus.act_expand_all.trigger()  # ignored while the layout runs: nothing half-drawn
    qtbot.waitUntil(lambda: not page.busy, timeout=60_000)
    assert not page.grouped and view.graph.node_count == 10_002
    assert "flat: 10,002 of 10,002 nodes" in window.status_label.text()


def test_errors_and_times_roll_up_to_a_group(model_paths):
    """A closed group shows its worst node's error band (NaN/Inf worst of all) and its nodes' summed time, in its
    colour and in words on its card."""
    from app.core.model import open_model
    from app.ui.graph.node_colors import ERROR_BANDS, NONFINITE, TIME_BANDS, error_colors, time_colors

    g = open_model(model_paths["g2p_bert_mlm"]).picture.graph
    box = next(v for v in g.group_of if len(g.members[v]) >= 3)
    a, b, c = (int(m) for m in g.members[box][:3])
    notes, mix = {}, {}
    colors, legend = error_colors(g, {a: (0.999995, False), b: (0.9912, False), c: (0.99999, False)}, mix, notes)
    assert colors[box].name() == ERROR_BANDS[3][2].name() and notes[box] == "worst cos 0.991200"
    assert len(mix[box]) == 2 and sum(legend_n for _l, _c, legend_n in legend) == 3
    colors, _ = error_colors(g, {a: (0.999995, False), b: (None, True)}, None, notes)
    assert colors[box].name() == NONFINITE.name() and notes[box] == "NaN/Inf inside"
    share = [None] * len(g.graph.node)
    share[a], share[b] = 0.04, 0.07
    notes = {}
    colors, _ = time_colors(g, share, notes=notes)
    assert colors[box].name() == TIME_BANDS[0][2].name() and notes[box] == "11.0 % of the time"
