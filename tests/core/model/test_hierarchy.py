"""The groups in node names (issue: a 3-layer encoder showed as a hairline of unreadable boxes although every node
is named by its module). Real models: tesseranet (PyTorch, `/`), g2p (tf2onnx, `/`), u2netp (no scopes)."""

from __future__ import annotations

import json

import onnx
import pytest
from onnx import TensorProto, helper

from app.core.model import hierarchy, scope_of
from tests.cli.runner import trtlab


@pytest.mark.parametrize("name, scope", [
    ("/model/encoder/layer.0/attention/self/MatMul", ("model", "encoder", "layer.0", "attention", "self")),
    ("inner.encoder.layer.3.attention.query.weight_cast", ("inner", "encoder", "layer.3", "attention", "query")),
    ("StatefulPartitionedCall/masked_bert_model/encoder_0/ffn/add", ("StatefulPartitionedCall", "masked_bert_model",
                                                                     "encoder_0", "ffn")),
    ("Conv_0", ()), ("p2o.Conv.12", ()), ("", ()), ("Reshape@2", ()),
])
def test_scopes_of_the_exporters_naming_styles(name, scope):
    assert scope_of(name) == scope


def _chain(names: list[str]) -> onnx.GraphProto:
    nodes = [helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"], name=n) for i, n in enumerate(names)]
    return helper.make_graph(nodes, "g", [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [1])],
                             [helper.make_tensor_value_info(f"t{len(names)}", TensorProto.FLOAT, [1])])


def test_a_transformer_opens_as_its_layers_and_lone_groups_merge():
    names = [f"/model/encoder/layer.{i}/attention/{op}" for i in range(3) for op in ("q", "k", "v", "out")]
    names += [f"/model/encoder/layer.{i}/mlp/{op}" for i in range(3) for op in ("fc1", "gelu", "fc2")]
    (top,) = hierarchy(_chain(names))
    assert top.name == "model/encoder" and top.total == 21 and top.path == "model/encoder"
    assert [c.name for c in top.children.values()] == ["layer.0", "layer.1", "layer.2"]
    layer = top.children["layer.1"]
    assert {k: c.total for k, c in layer.children.items()} == {"attention": 4, "mlp": 3}


def test_nodes_without_scopes_come_in_runs_and_small_flat_graphs_have_none():
    assert hierarchy(_chain([f"Relu_{i}" for i in range(50)])) == []
    runs = hierarchy(_chain([f"Relu_{i}" for i in range(450)]))
    assert [g.total for g in runs] == [200, 200, 50] and runs[0].name == "Relu_0 … Relu_199"


def test_inspect_json_carries_the_tree_of_real_models(models_dir):
    doc = json.loads(trtlab("inspect", models_dir / "g2p_bert_mlm.onnx", "--json", "-").stdout)
    top = {g["name"]: g for g in doc["hierarchy"]}
    bert = top["StatefulPartitionedCall/masked_bert_model"]
    assert {c["name"] for c in bert["children"]} >= {"encoder_0", "encoder_1"}
    assert sum(g["nodes"] for g in doc["hierarchy"]) == doc["nodes"] == 274
    u2 = json.loads(trtlab("inspect", models_dir / "u2netp.onnx", "--json", "-").stdout)["hierarchy"]
    assert [g["nodes"] for g in u2] == [200, 200, 200, 200, 200, 55] and all(not g["children"] for g in u2)
