"""Search, the selection model and the generated demo model (no Qt)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort

from app.core.model.demo import build_demo_model, write_demo_model
from app.core.model.display_graph import build_display_graph
from app.core.model.loader import load_model
from app.core.model.search import search_graph
from app.core.model.selection import SelectionModel
from app.core.model.summary import summarize


def test_search_by_name_op_and_tensor(model_paths):
    g = build_display_graph(load_model(model_paths["u2netp"]).model.graph)
    by_op = search_graph(g, "sigmoid")
    assert len(by_op) == 7 and all(g.titles[h.node] == "Sigmoid" for h in by_op)
    exact = search_graph(g, "Conv_0")
    assert exact and exact[0].reason == "name" and g.names[exact[0].node] == "Conv_0"
    # '1959' is only a tensor name (an output): found through the output box and the node producing it.
    tensor_hits = search_graph(g, "1959")
    assert {h.reason for h in tensor_hits} <= {"name", "tensor"} and len(tensor_hits) >= 2
    assert search_graph(g, "   ") == []
    assert search_graph(g, "definitely-not-here") == []
    assert len({h.node for h in search_graph(g, "_")}) == len(search_graph(g, "_"))  # each node once


def test_selection_model_notifies_and_toggles():
    sel = SelectionModel()
    calls: list[frozenset[int]] = []
    sel.subscribe(lambda: calls.append(sel.selected))
    sel.set([1, 2], current=2)
    assert sel.selected == {1, 2} and sel.current == 2
    sel.set([1, 2], current=2)  # no change, no event
    assert len(calls) == 1
    sel.toggle(2)
    assert sel.selected == {1} and sel.current == 1  # a single selected node is the current one
    sel.toggle(5)
    assert sel.selected == {1, 5} and sel.current == 5
    sel.add([7])
    assert 7 in sel and len(sel) == 3
    sel.clear()
    assert len(sel) == 0 and calls[-1] == frozenset()
    assert len(calls) == 5


def test_demo_model_is_valid_and_runs(tmp_path):
    m = build_demo_model()
    onnx.checker.check_model(m, full_check=True)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).random((2, 3, 64, 64), dtype=np.float32)
    (probs,) = sess.run(None, {"image": x})
    assert probs.shape == (2, 10)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
    path = write_demo_model(tmp_path)
    s = summarize(load_model(path))
    assert s.producer == "trtlab demo" and s.ops["Conv"] == 9 and s.params > 50_000
    assert build_demo_model().SerializeToString() == m.SerializeToString()  # deterministic
