"""The Summary panel names the nodes that draw random numbers, and the inputs that scale their noise."""

from __future__ import annotations

from pathlib import Path

from app.core.model import ModelDoc, summarize
from app.ui.model.summary_panel import summary_html
from tests.support.models import vits_like_model


def test_summary_has_a_random_numbers_line():
    page = summary_html(summarize(ModelDoc(Path("vits_like.onnx"), vits_like_model(), 0)))
    assert "<b>Random numbers</b>" in page
    assert ("1 RandomNormalLike node (/RandomNormalLike); outputs differ run to run unless their seeds are fixed; "
            "their noise is scaled by input &#x27;scales&#x27;") in page


def test_a_model_without_random_nodes_has_no_such_line():
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    assert "Random numbers" not in summary_html(summarize(ModelDoc(Path("m.onnx"), helper.make_model(graph), 0)))
