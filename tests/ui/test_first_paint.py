"""A model is drawn before its shapes are known: the window shows the graph as soon as it is read and laid out, and
the shapes (edge labels, the panels) arrive after, into the same drawing."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from app.core.model import infer_shapes, load_model
from app.core.model.display_graph import KIND_OUTPUT
from tests.support import synthetic_graphs
from tests.support.shared import shared_models
from tests.support.ui import non_background_fraction
from tests.ui.conftest import open_and_wait

U2NETP = next((p for p in shared_models() if p.name == "u2netp.onnx"), None)


def _watch(window) -> dict:
    """What the window shows when the drawing arrives (`drawn`), before the shapes do (`loaded`)."""
    seen: dict = {"loaded": 0}

    def on_drawn(_drawing) -> None:  # connected after the window's own handler: the window has drawn it
        view = window.view
        seen["loaded_before_drawn"] = seen["loaded"]
        seen["pending"] = window.loader.shapes_pending()
        seen["item"] = view.item
        seen["nodes"] = view.graph.node_count if view.graph is not None else 0
        seen["labels"] = list(view.graph.edge_labels) if view.graph is not None else []
        seen["flat_labels"] = list(window.graph_page.picture.all_nodes.edge_labels)
        seen["ink"] = non_background_fraction(view.viewport().grab().toImage())
        seen["note"] = window.graph_page.pending_note.isVisible()
        seen["opened"] = window.opened

    def on_loaded(_opened) -> None:
        seen["loaded"] += 1

    window.loader.drawn.connect(on_drawn)
    window.loader.loaded.connect(on_loaded)
    return seen


def test_drawn_before_shapes_then_labelled(qtbot, window, tmp_path):
    path = tmp_path / "encoder.onnx"
    model = synthetic_graphs.transformer(3_000, scoped=True)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)
    seen = _watch(window)
    open_and_wait(qtbot, window, path, timeout=120_000)
    assert window.opened is not None, window.banner.text()

    # The drawing came first: boxes on screen, no edge label yet, the panels not filled, the wait said.
    assert seen["loaded_before_drawn"] == 0
    assert seen["pending"] is True
    assert seen["item"] is not None and seen["nodes"] > 0
    assert seen["ink"] > 0.002, "nothing painted in the first drawing"
    # No shape yet on any edge (a closed group's edge may say how many tensors it stands for).
    assert seen["labels"] and not any("×" in label for label in seen["labels"]), seen["labels"]
    assert seen["flat_labels"] and not any(seen["flat_labels"])
    assert seen["note"] is True
    assert seen["opened"] is None

    # Then the shapes, into the same drawing: the item stays, every edge has its shape, the note goes.
    view = window.view
    assert seen["loaded"] == 1
    assert view.item is seen["item"]
    assert view.graph.node_count == seen["nodes"]
    shapes = window.opened.shapes
    assert shapes.ok and shapes.known == shapes.total == len(model.graph.node)
    flat = window.graph_page.picture.all_nodes.edge_labels
    assert len(flat) == len(seen["flat_labels"]) and all(flat)
    assert "1×128×8" in flat  # the hidden state between the encoder layers
    labels = view.graph.edge_labels
    assert any("×" in label for label in labels), labels  # and the drawing on show says so
    assert not window.graph_page.pending_note.isVisible()
    assert not window.loader.shapes_pending()
    placed = view.item.edge_labels()
    assert any("×" in text for text in placed.texts)


def test_cancel_while_shapes_pending_takes_the_drawing_back(qtbot, window, tmp_path):
    path = tmp_path / "encoder.onnx"
    onnx.save(synthetic_graphs.transformer(2_000, scoped=True), path)
    drawn: list[object] = []
    window.loader.drawn.connect(drawn.append)
    window.open_path(path)
    qtbot.waitUntil(lambda: bool(drawn), timeout=60_000)
    assert window.view.item is not None and window.loader.shapes_pending()
    window.loader.cancel()
    assert not window.loader.shapes_pending()
    assert window.view.item is None  # nothing was open before: nothing shown, no half-opened model
    assert window.opened is None
    assert not window.graph_page.pending_note.isVisible()


@pytest.mark.skipif(U2NETP is None, reason="the shared models are not here")
def test_real_model_shows_its_shapes(qtbot, window):
    seen = _watch(window)
    open_and_wait(qtbot, window, U2NETP, timeout=120_000)
    opened = window.opened
    assert opened is not None, window.banner.text()
    assert seen["loaded_before_drawn"] == 0 and seen["item"] is not None
    expected = infer_shapes(load_model(U2NETP).model)  # the shapes, inferred here on their own
    assert opened.shapes.known == expected.known > 0
    # The shapes panel: one field per input, showing the model's own dims.
    for info in opened.summary.inputs:
        edit = window.shapes_panel.edits[info.name]
        assert edit.placeholderText() == "x".join(str(d) for d in info.shape)
    # Edge labels into the graph outputs carry the inferred shapes.
    graph = window.view.graph
    outs = {graph.edge_tensors[e]: graph.edge_labels[e] for e in range(len(graph.edge_labels))
            if graph.kinds[graph.edges[e][1]] == KIND_OUTPUT}
    assert outs
    for name, label in outs.items():
        assert label == expected.get(name).shape_text(), name
    summary = window.summary_panel.toPlainText()
    assert f"Shapes known for {expected.known:,} of {expected.total:,} tensors." in summary
    assert Path(opened.path) == U2NETP
