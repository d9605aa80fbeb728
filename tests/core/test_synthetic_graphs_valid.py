"""The synthetic benchmark graphs are valid ONNX: the full checker (strict shape inference) passes, and the app's
own shape inference reaches every node's output."""

from __future__ import annotations

import onnx
import pytest

from app.core.model import infer_shapes
from tests.support import synthetic_graphs


@pytest.mark.parametrize("family", synthetic_graphs.FAMILIES)
@pytest.mark.parametrize("size", [300, 50_000])
def test_generator_passes_full_check(family: str, size: int) -> None:
    model = synthetic_graphs.make(family, size)
    assert abs(len(model.graph.node) - size) < max(0.1 * size, 250)  # the size asked for, roughly
    onnx.checker.check_model(model, full_check=True)


@pytest.mark.parametrize("family", synthetic_graphs.FAMILIES)
def test_every_tensor_gets_a_shape(family: str) -> None:
    model = synthetic_graphs.make(family, 2_000)
    shapes = infer_shapes(model)
    assert shapes.ok, shapes.message
    outputs = [o for node in model.graph.node for o in node.output]
    missing = [o for o in outputs if (info := shapes.get(o)) is None or info.shape is None]
    assert not missing


def test_scoped_transformer_is_valid() -> None:
    model = synthetic_graphs.transformer(3_000, scoped=True)
    onnx.checker.check_model(model, full_check=True)
    scoped = [node.name for node in model.graph.node if node.name.startswith("/encoder/layer.")]
    assert len(scoped) > 0.95 * len(model.graph.node)
