"""What inferring the outputs' kinds reads of a graph, on real models: the map of each tensor's producer is built
once per call (the per-output rules and the split heads share it: on a 50,000-node graph each map took 50 ms), and
the inputs' declared dims leave out initializers listed as graph inputs, with or without the user's dims."""

from __future__ import annotations

import onnx
import pytest

from app.core.measure import infer_output_kinds
from app.core.measure import kinds as per_output


@pytest.fixture
def u2netp(model_paths) -> onnx.ModelProto:
    return onnx.load(str(model_paths["u2netp"]))


def _counting(monkeypatch) -> list[int]:
    built: list[int] = []
    real = per_output._producers

    def counted(graph: onnx.GraphProto) -> dict[str, onnx.NodeProto]:
        built.append(len(graph.node))
        return real(graph)

    monkeypatch.setattr(per_output, "_producers", counted)
    return built


MASKS = {f"{n}": [1, 1, 320, 320] for n in range(1959, 1966)}  # u2netp's seven masks, as shape inference gives them


def test_the_producer_map_is_built_once(monkeypatch, u2netp):
    expected = infer_output_kinds(u2netp, MASKS, {"input.1": [1, 3, 320, 320]})
    built = _counting(monkeypatch)
    got = infer_output_kinds(u2netp, MASKS, {"input.1": [1, 3, 320, 320]})
    assert built == [len(u2netp.graph.node)]
    assert got == expected
    assert [k.kind for k in got.values()] == ["image"] * 7


def test_per_output_rules_take_the_callers_map(monkeypatch, u2netp):
    alone = per_output.infer_output_kinds(u2netp)
    prod = per_output.producers(u2netp.graph)
    built = _counting(monkeypatch)
    assert per_output.infer_output_kinds(u2netp, prod=prod) == alone
    assert built == []


def test_initializers_listed_as_inputs_are_no_inputs(u2netp):
    """Older exports (IR < 4) list every weight among the graph's inputs as well."""
    graph = u2netp.graph
    real = [i.name for i in graph.input]
    declared = {i.name: [d.dim_value or None for d in i.type.tensor_type.shape.dim] for i in graph.input}
    for t in list(graph.initializer)[:50]:
        graph.input.append(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    assert len(graph.input) == len(real) + 50
    assert per_output.declared_inputs(graph) == declared
    given = {real[0]: [1, 3, 320, 320]}
    assert per_output.declared_inputs(graph, given) == given
    # A graph input that is no initializer, not given, keeps its declared dims beside the given one.
    graph.input.append(onnx.helper.make_tensor_value_info("extra", onnx.TensorProto.FLOAT, [1, 2]))
    assert per_output.declared_inputs(graph, given) == {**given, "extra": [1, 2]}
